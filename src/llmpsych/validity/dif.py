"""Item-level differential functioning: ordinal logistic regression DIF (Zumbo 1999).

For each item, three proportional-odds models of the item's answer are fitted (statsmodels'
``OrderedModel``, logit link): (1) on the matching score alone, (2) plus group, (3) plus group and the
group x score interaction. The matching score is the respondent's total over the other items of the same
subscale (the rest score; the whole scale when there are no subscales), standardised. An item is flagged
when the likelihood-ratio test of (3) against (1) (uniform and non-uniform DIF together,
2 x (groups - 1) degrees of freedom) is significant after Holm's correction across the items AND the
effect size, the gain in Nagelkerke's R^2 from (1) to (3), is at least moderate by Jodoin & Gierl (2001):
below .035 negligible (A), .035 to .070 moderate (B), .070 or more large (C). With thousands of answers
the test alone flags trivial differences; the effect-size rule is what keeps the flag meaningful.

References: Zumbo, B. D. (1999). A handbook on the theory and methods of differential item functioning
(DIF): logistic regression modeling as a unitary framework. Ottawa: Department of National Defense.
Jodoin, M. G., & Gierl, M. J. (2001). Evaluating type I error and power rates using an effect size measure
with the logistic regression procedure for DIF detection. Applied Measurement in Education, 14(4), 329-349.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

METHOD = (
    "ordinal logistic regression DIF (Zumbo 1999): likelihood-ratio test of group and group x rest-score "
    "terms, Holm-corrected across items, with the Nagelkerke R^2 gain graded by Jodoin & Gierl (2001): "
    "< .035 negligible, .035-.070 moderate, >= .070 large; flagged when significant and at least moderate"
)
MODERATE = 0.035
LARGE = 0.070


@dataclass(frozen=True)
class ItemDif:
    item: str
    subscale: str
    n: int
    lr: float  # likelihood-ratio chi2 of model 3 against model 1
    df: int
    p: float
    p_holm: float
    delta_r2: float  # Nagelkerke R^2 gain, model 1 -> model 3
    grade: str  # "negligible" | "moderate" | "large" | "not estimable"
    flagged: bool
    note: str = ""


def _nagelkerke(ll: float, ll0: float, n: int) -> float:
    cox_snell = 1.0 - math.exp(2.0 * (ll0 - ll) / n)
    max_cs = 1.0 - math.exp(2.0 * ll0 / n)
    return cox_snell / max_cs if max_cs > 0 else math.nan


def _score(model: Any, params: np.ndarray) -> np.ndarray:
    """d loglike / d params for OrderedModel's parameterisation: (beta, t_0, log(t_1 - t_0), ...)."""
    k = model.k_vars
    low, upp = model._bounds(params)
    prob = model.prob(low, upp) + 1e-20
    f_low = np.where(np.isfinite(low), model.pdf(np.where(np.isfinite(low), low, 0.0)), 0.0)
    f_upp = np.where(np.isfinite(upp), model.pdf(np.where(np.isfinite(upp), upp, 0.0)), 0.0)
    g_beta = model.exog.T @ ((f_low - f_upp) / prob)
    n_th = len(params) - k
    y = np.asarray(model.endog, dtype=int)
    g_t = np.zeros(n_th)
    np.add.at(g_t, y[y < n_th], (f_upp / prob)[y < n_th])
    np.add.at(g_t, y[y > 0] - 1, -(f_low / prob)[y > 0])
    tail = np.cumsum(g_t[::-1])[::-1]  # sum over m >= j
    g_th = np.empty(n_th)
    g_th[0] = tail[0]
    g_th[1:] = np.exp(params[k + 1 :]) * tail[1:]
    return np.concatenate([g_beta, g_th])


def _ordered_ll(y: Any, x: np.ndarray, start: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Fit statsmodels' proportional-odds model (logit link); its log-likelihood and parameters."""
    from scipy.special import expit
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    class _Logit(OrderedModel):  # type: ignore[misc]
        # the same logistic cdf and pdf as scipy.stats.logistic, without the per-call argument checking
        # of scipy's distribution layer, which took 75% of the time (90 s for 44 items x 2,500 answers)
        def cdf(self, v: Any) -> Any:
            return expit(v)

        def pdf(self, v: Any) -> Any:
            e = expit(v)
            return e * (1.0 - e)

        def score(self, params: Any) -> Any:
            # the analytic gradient of statsmodels' own log-likelihood (its default is a numerical one:
            # ~14 likelihood evaluations per step); tests/test_validity_invariance.py compares the two
            return _score(self, np.asarray(params, dtype=float))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _Logit(y, x, distr="logit").fit(
            method="bfgs", disp=False, maxiter=1000, start_params=start, skip_hessian=True
        )
    if not res.mle_retvals.get("converged", False):
        raise ArithmeticError("the ordinal model did not converge")
    return float(res.llf), np.asarray(res.params, dtype=float)


def item_dif(wide: pd.DataFrame, groups: pd.Series, subscales: dict[str, list[str]]) -> list[ItemDif]:
    """DIF for every item of ``wide`` (respondents x items, complete rows) across ``groups`` (aligned)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small matrices: one BLAS thread is faster (see _sem.fit_level)
        return _item_dif(wide, groups, subscales)


def _item_dif(wide: pd.DataFrame, groups: pd.Series, subscales: dict[str, list[str]]) -> list[ItemDif]:
    from scipy.stats import chi2

    codes = pd.Categorical(groups.to_numpy())
    dummies = pd.get_dummies(codes, drop_first=True, dtype=float).to_numpy()
    out: list[tuple[str, str, int, float, int, float, float, str]] = []
    for sub, items in subscales.items():
        for item in items:
            rest_items = [i for i in items if i != item] or [i for i in wide.columns if i != item]
            rest = wide[rest_items].sum(axis=1).to_numpy(dtype=float)
            sd = rest.std()
            z = (rest - rest.mean()) / (sd if sd > 0 else 1.0)
            y_raw = wide[item].to_numpy()
            levels = np.unique(y_raw)
            n = len(y_raw)
            if len(levels) < 2:
                out.append((item, sub, n, math.nan, 0, math.nan, math.nan, "the item has one answer only"))
                continue
            y = pd.Categorical(y_raw, categories=levels, ordered=True)
            counts = np.bincount(y.codes, minlength=len(levels)).astype(float)
            ll0 = float(np.sum(counts * np.log(counts / n)))
            x1 = z[:, None]
            x3 = np.column_stack([z, dummies, dummies * z[:, None]])
            try:
                ll1, params1 = _ordered_ll(y, x1)
                # model 3 starts where model 1 ended, its extra coefficients at 0
                start3 = np.concatenate([params1[:1], np.zeros(x3.shape[1] - 1), params1[1:]])
                ll3, _ = _ordered_ll(y, x3, start3)
            except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
                out.append((item, sub, n, math.nan, 0, math.nan, math.nan, f"not estimable: {exc}"))
                continue
            lr = max(2.0 * (ll3 - ll1), 0.0)
            df = 2 * dummies.shape[1]
            dr2 = _nagelkerke(ll3, ll0, n) - _nagelkerke(ll1, ll0, n)
            out.append((item, sub, n, lr, df, float(chi2.sf(lr, df)), dr2, ""))
    from ..stats.compare import holm_adjust

    ps = [o[5] for o in out if not math.isnan(o[5])]
    adjusted = iter(holm_adjust(ps)) if ps else iter(())
    result = []
    for item, sub, n, lr, df, p, dr2, note in out:
        if math.isnan(p):
            result.append(ItemDif(item, sub, n, lr, df, p, math.nan, math.nan, "not estimable", False, note))
            continue
        ph = float(next(adjusted))
        grade = "large" if dr2 >= LARGE else "moderate" if dr2 >= MODERATE else "negligible"
        result.append(ItemDif(item, sub, n, lr, df, p, ph, dr2, grade, ph < 0.05 and dr2 >= MODERATE, note))
    return result
