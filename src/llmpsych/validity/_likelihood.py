"""The graded response model's marginal likelihood on a quadrature grid, for what is computed *after* an
estimation library has fitted the item parameters: standard errors, the convergence check, respondent
estimates (EAP), information and item fit. Nothing here estimates item parameters.

The model (Samejima's graded response model; with two categories it is the 2PL): an item ``j`` with
categories ``0..K_j-1`` has a discrimination ``a_j`` and increasing thresholds ``b_j1 < ... < b_j(K-1)``;
``P(X_j >= k | theta) = logistic(a_j (theta - b_jk))``. Respondents' ``theta`` is standard normal (the
scale is identified by it, as in mirt's and girth's defaults).

The per-respondent score vectors (the derivative of each respondent's log marginal likelihood by every
item parameter) give the information as their cross-product (mirt's ``SE.type = "crossprod"``, the
empirical cross-product or "XPD" estimate) and the gradient of the whole likelihood, whose Newton step is
the convergence check. Cost: ``n x items x quadrature points x categories`` floats; 2,500 respondents x 44
items x 61 points x 5 categories take about 0.3 s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]

#: Quadrature: 61 equally spaced points on [-6, 6] weighted by the standard normal density.
QUADRATURE_POINTS = 41
QUADRATURE_BOUND = 4.5


def quadrature() -> tuple[Floats, Floats]:
    """Points and normalised weights of the standard normal on the grid."""
    theta = np.linspace(-QUADRATURE_BOUND, QUADRATURE_BOUND, QUADRATURE_POINTS)
    weights = np.exp(-0.5 * theta**2)
    return theta, weights / weights.sum()


@dataclass(frozen=True)
class ItemParameters:
    """One item's discrimination and increasing thresholds (one fewer than its categories)."""

    a: float
    b: tuple[float, ...]

    @property
    def categories(self) -> int:
        return len(self.b) + 1


def cumulative(item: ItemParameters, theta: Floats) -> Floats:
    """``P(X >= k | theta)`` for ``k = 0..K`` (columns; ``k = 0`` is 1 and ``k = K`` is 0)."""
    star = np.ones((theta.size, item.categories + 1))
    star[:, -1] = 0.0
    for k, b in enumerate(item.b, start=1):
        star[:, k] = 1.0 / (1.0 + np.exp(-item.a * (theta - b)))
    return star


def category_probabilities(item: ItemParameters, theta: Floats) -> Floats:
    """``P(X = k | theta)`` (points x categories), floored at 1e-300 so that logs stay finite."""
    star = cumulative(item, theta)
    return np.maximum(star[:, :-1] - star[:, 1:], 1e-300)


@dataclass(frozen=True)
class Posterior:
    """Each respondent's log marginal likelihood and posterior weights over the quadrature points."""

    loglik: Floats  # (n,)
    weights: Floats  # (n, points)
    theta: Floats  # (points,)

    @property
    def eap(self) -> Floats:
        return self.weights @ self.theta

    @property
    def psd(self) -> Floats:
        mean = self.eap
        second = self.weights @ (self.theta**2)
        return np.sqrt(np.maximum(second - mean**2, 0.0))


def posterior(items: list[ItemParameters], data: NDArray[np.int64]) -> Posterior:
    """``data``: respondents x items, categories ``0..K_j-1``, ``-1`` where there is no answer."""
    theta, prior = quadrature()
    log_like = np.zeros((data.shape[0], theta.size))
    for j, item in enumerate(items):
        probs = np.log(category_probabilities(item, theta))  # points x K
        answered = data[:, j] >= 0
        log_like[answered] += probs[:, data[answered, j]].T
    log_joint = log_like + np.log(prior)
    top = log_joint.max(axis=1, keepdims=True)
    joint = np.exp(log_joint - top)
    total = joint.sum(axis=1, keepdims=True)
    return Posterior((np.log(total) + top)[:, 0], joint / total, theta)


def scores(items: list[ItemParameters], data: NDArray[np.int64], post: Posterior) -> Floats:
    """Respondents x parameters: d log L_i / d(a_j, b_j1, ..., b_j(K-1)) for each item in turn."""
    theta = post.theta
    columns: list[Floats] = []
    for j, item in enumerate(items):
        star = cumulative(item, theta)
        slope = star * (1.0 - star)  # d P*_k / d(a (theta - b_k)), points x (K + 1); 0 at both ends
        probs = category_probabilities(item, theta)
        answered = data[:, j] >= 0
        x = np.where(answered, data[:, j], 0)
        # d log P(X = k) / d a = [slope_k (theta - b_k) - slope_{k+1} (theta - b_{k+1})] / P_k
        spread = np.zeros_like(star)
        for k, b in enumerate(item.b, start=1):
            spread[:, k] = slope[:, k] * (theta - b)
        d_a = (spread[:, :-1] - spread[:, 1:]) / probs  # points x K
        columns.append(np.where(answered, (post.weights * d_a[:, x].T).sum(axis=1), 0.0))
        for k in range(1, item.categories):
            # b_k enters P(X = k) as -P*_k and P(X = k - 1) as +P*_k; d P*_k / d b_k = -a slope_k
            d_b = np.zeros_like(probs)
            d_b[:, k] = item.a * slope[:, k] / probs[:, k]
            d_b[:, k - 1] = -item.a * slope[:, k] / probs[:, k - 1]
            columns.append(np.where(answered, (post.weights * d_b[:, x].T).sum(axis=1), 0.0))
    return np.column_stack(columns)


def item_information(item: ItemParameters, theta: Floats) -> Floats:
    """Fisher information of one item at each ``theta``: sum_k P'_k^2 / P_k."""
    star = cumulative(item, theta)
    derivative = item.a * (star * (1.0 - star))
    p_prime = derivative[:, :-1] - derivative[:, 1:]
    return np.asarray((p_prime**2 / category_probabilities(item, theta)).sum(axis=1), dtype=np.float64)


def expected_and_variance(item: ItemParameters, theta: Floats) -> tuple[Floats, Floats]:
    """The expected category and its variance at each ``theta``."""
    probs = category_probabilities(item, theta)
    k = np.arange(item.categories)
    mean = probs @ k
    return mean, probs @ (k**2) - mean**2


def simulate(items: list[ItemParameters], n: int, seed: int) -> tuple[NDArray[np.int64], Floats]:
    """Answers (``0..K_j-1``) of ``n`` standard normal respondents to ``items``, and their thetas."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n)
    data = np.zeros((n, len(items)), dtype=np.int64)
    for j, item in enumerate(items):
        star = cumulative(item, theta)[:, 1:-1]
        data[:, j] = (rng.random(n)[:, None] < star).sum(axis=1)
    return data, theta
