"""The 2-D map of BFI results: a PCA projection and the region of all possible results.

The thesis fits the PCA on the data points of four models and keeps the 5→2 matrix fixed. The released
analysis fitted it on all 5^5 integer vectors instead; their covariance is a multiple of the identity,
so *every* orthonormal basis is principal and the "PCA" picked is numerical noise (with LAPACK it is
two of the original axes). :func:`fit_projection` therefore offers ``"data"`` (the analysed points, the
default), ``"full-grid"`` (the released choice) or any matrix of points to fit on.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np

FitOn = Literal["data", "full-grid"]


@dataclass(frozen=True)
class Projection:
    """``(x - mean) @ components.T``; components are orthonormal rows, signs fixed (largest entry > 0)."""

    mean: np.ndarray
    components: np.ndarray
    explained_variance_ratio: np.ndarray
    fitted_on: str

    def transform(self, points: np.ndarray) -> np.ndarray:
        """Project ``n × 5`` points to ``n × 2``."""
        return np.asarray((np.asarray(points, dtype=float) - self.mean) @ self.components.T, dtype=float)


def full_grid(levels: int = 5, dims: int = 5) -> np.ndarray:
    """All ``levels^dims`` integer result vectors (the released ``reference/full.json``)."""
    return np.array(list(itertools.product(range(1, levels + 1), repeat=dims)), dtype=float)


def corners(low: float = 1.0, high: float = 5.0, dims: int = 5) -> np.ndarray:
    """The ``2^dims`` extreme result vectors (the released ``reference/conner.json``)."""
    return np.array(list(itertools.product((low, high), repeat=dims)), dtype=float)


def fit_pca(
    points: np.ndarray, n_components: int = 2, label: str = "data", solver: Literal["svd", "eigh"] = "svd"
) -> Projection:
    """Principal axes of ``points``: SVD of the centred matrix, or eigh of the covariance (what
    scikit-learn >= 1.5 does for tall matrices; it decides the released full-grid basis)."""
    x = np.asarray(points, dtype=float)
    mean = x.mean(axis=0)
    if solver == "eigh":
        values, vectors = np.linalg.eigh(np.cov(x - mean, rowvar=False))
        order = np.argsort(values, kind="stable")[::-1]
        vt, variance = vectors[:, order].T, values[order]
    else:
        _, singular, vt = np.linalg.svd(x - mean, full_matrices=False)
        variance = singular**2
    components = vt[:n_components].copy()
    for row in components:
        if row[np.argmax(np.abs(row))] < 0:
            row *= -1
    ratio = variance[:n_components] / variance.sum() if variance.sum() else np.zeros(n_components)
    return Projection(mean, components, ratio, label)


def fit_projection(data: np.ndarray, fit_on: FitOn | np.ndarray = "data") -> Projection:
    """The projection for a map: fitted on the data, on the full 5^5 grid, or on given points."""
    if isinstance(fit_on, str):
        if fit_on == "data":
            return fit_pca(data, label="data")
        if fit_on == "full-grid":
            return fit_pca(full_grid(dims=np.asarray(data).shape[1]), label="full-grid", solver="eigh")
        raise ValueError(f"unknown projection fit {fit_on!r} (data or full-grid)")
    return fit_pca(fit_on, label=f"{len(fit_on)} given points")


def region(projection: Projection, low: float = 1.0, high: float = 5.0) -> np.ndarray:
    """The convex hull (closed polygon, counter-clockwise) of the projected corner vectors."""
    points = projection.transform(corners(low, high, projection.mean.shape[0]))
    return convex_hull(points)


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain; returns the hull vertices, the first repeated at the end."""
    pts = sorted(map(tuple, np.round(np.asarray(points, dtype=float), 12)))
    pts = list(dict.fromkeys(pts))
    if len(pts) < 3:
        return np.array(pts + pts[:1])

    def cross(o: tuple[float, ...], a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, ...]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list[tuple[float, ...]] = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    hull = lower[:-1] + upper[:-1]
    return np.array(hull + hull[:1])
