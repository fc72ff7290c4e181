"""The confirmatory factor analysis behind ``invariance``: semopy, one model per group, one likelihood.

semopy 2.3 fits one group at a time: its ``semopy.multigroup`` fits each group separately and shares
nothing, so it cannot constrain a loading or an intercept to be equal across groups. This module therefore
stacks groups honestly: each group is an ordinary semopy ``Model`` (semopy parses the description, lays out
the matrices, picks the starting values and computes the model-implied covariance matrix and its derivative
for every parameter), and the groups are joined into the standard multi-group maximum-likelihood fit
function (Joreskog 1971; the one lavaan minimises)

    F = sum_g n_g/N * [ log|Sigma_g| + tr(S_g Sigma_g^-1) - log|S_g| - p
                        + (m_g - mu_g)' Sigma_g^-1 (m_g - mu_g) ]

with mu_g = nu_g + Lambda_g alpha_g, through a map from one global parameter vector to each group's
semopy vector (a shared loading is one global entry read by every group). Only the mean term, which
semopy's covariance-structure ``Model`` lacks, and its gradient are computed here. The statistic is
chi2 = sum_g n_g F_g (S_g with divisor n_g, as lavaan and semopy do), minimised with scipy's L-BFGS-B with
the closed-form gradient (``_Group.gradient``). Every level goes through this one function; at the
configural level the groups share nothing, and its chi2 equals the sum of semopy's own single-group fits
(a test checks that, and the closed-form gradient against semopy's).

Identification as lavaan's defaults: the first item of each factor loads 1 in every group, factor
variances and covariances are free in every group; with free intercepts (configural, metric) the means
are saturated and the latent means 0; at the scalar level the intercepts are shared, the latent means are
0 in the first group and free in the others.

Swapping the library means rewriting this module only: ``invariance`` calls ``fit_level`` and reads
``LevelFit``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

Level = Literal["configural", "metric", "scalar"]
LEVELS: tuple[Level, ...] = ("configural", "metric", "scalar")
ESTIMATOR = "ML (normal-theory maximum likelihood, semopy's MLW objective plus the mean structure)"


@dataclass(frozen=True)
class LevelFit:
    """One level's fit. ``converged`` False means no fit index may be shown (they are NaN then)."""

    level: Level
    converged: bool
    chi2: float
    df: int
    cfi: float
    tli: float
    rmsea: float
    srmr: float
    n: int
    parameters: int
    message: str = ""
    boundary: tuple[str, ...] = ()  # variances estimated at their bound 0 (Heywood cases), named
    loadings: pd.DataFrame | None = None  # group x (factor, item) unstandardised loadings


def model_description(factors: dict[str, list[str]]) -> str:
    """semopy syntax for a simple-structure CFA: one line per factor."""
    return "\n".join(f"{f} =~ {' + '.join(items)}" for f, items in factors.items())


def _semopy() -> Any:
    try:
        import semopy
    except ImportError as exc:  # pragma: no cover - the validity extra is part of "all"
        from ..errors import ConfigError

        raise ConfigError(
            "measurement invariance needs semopy", hint="pip install 'llmpsych[validity]'"
        ) from exc
    return semopy


class _Group:
    """One group's semopy model with its data, and the map of its parameters to the global vector."""

    def __init__(self, description: str, data: pd.DataFrame) -> None:
        semopy = _semopy()
        self.model = semopy.Model(description)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model.load(data=data)
        m = self.model
        self.observed: list[str] = list(m.vars["observed"])
        self.latent: list[str] = list(m.names_lambda[1])
        self.n = int(m.n_samples)
        self.p = len(self.observed)
        self.means = data[self.observed].to_numpy(dtype=float).mean(axis=0)
        self.keys: list[tuple[str, str, str]] = []
        self.bounds: list[tuple[float | None, float | None]] = []
        matrices = {"beta": m.mx_beta, "lambda": m.mx_lambda, "psi": m.mx_psi, "theta": m.mx_theta}
        names = {"beta": m.names_beta, "lambda": m.names_lambda, "psi": m.names_psi, "theta": m.names_theta}
        for param in m.parameters.values():
            if not param.active:
                continue
            loc = param.locations[0]
            kind = next(k for k, mx in matrices.items() if mx is loc.matrix)
            rows, cols = names[kind]
            i, j = loc.indices
            self.keys.append((kind, str(rows[i]), str(cols[j])))
            self.bounds.append(tuple(param.bound))
        self.start = np.array(m.param_vals, dtype=float)
        if any(key[0] == "beta" for key in self.keys):
            raise ValueError("regressions among factors are outside the simple-structure CFA fitted here")
        self.slots: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for kind, (rows, cols) in (
            ("lambda", names["lambda"]),
            ("psi", names["psi"]),
            ("theta", names["theta"]),
        ):
            at = [n for n, key in enumerate(self.keys) if key[0] == kind]
            r = np.array([list(rows).index(self.keys[n][1]) for n in at], dtype=int)
            c = np.array([list(cols).index(self.keys[n][2]) for n in at], dtype=int)
            mult = np.where((r != c) & (kind != "lambda"), 2.0, 1.0)
            self.slots[kind] = (r, c, mult, np.array(at, dtype=int))

    def value(self, x: np.ndarray, nu: np.ndarray | None, alpha: np.ndarray | None) -> tuple[float, Any]:
        """F_g and what its gradient needs; ``nu`` None means saturated means (no mean term)."""
        from semopy.utils import chol_inv2

        m = self.model
        m.update_matrices(x)
        sigma, (mm, c) = m.calc_sigma()
        try:
            inv, logdet = chol_inv2(sigma)
        except np.linalg.LinAlgError:
            return math.inf, None
        f = float(logdet - m.cov_logdet + np.einsum("ij,ji->", m.mx_cov, inv) - self.p)
        w = np.zeros(self.p)
        if nu is not None:
            mu = nu + (m.mx_lambda @ alpha if alpha is not None else 0.0)
            r = self.means - mu
            w = inv @ r
            f += float(r @ w)
        return f, (inv, w, mm, c)

    def gradient(
        self, x: np.ndarray, aux: Any, alpha: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """dF_g/d(semopy parameters), dF_g/d(nu), dF_g/d(alpha) at the point ``value`` was called.

        In closed form for a factor model without regressions among the factors (Sigma = L Psi L' + Theta;
        the simple-structure CFA this module builds): dF/dL = 2 C L Psi - 2 w alpha', dF/dPsi = L' C L,
        dF/dTheta = C, with C = Sigma^-1 - Sigma^-1 S Sigma^-1 - w w' and w = Sigma^-1 (m - mu); an
        off-diagonal entry of a symmetric matrix counts twice. semopy's per-parameter derivative loop
        (``calc_sigma_grad``) gives the same numbers (a test compares them) 20x slower at 44 items.
        """
        m = self.model
        inv, w, _mm, _c = aux
        cs = inv - inv @ m.mx_cov @ inv - np.outer(w, w)
        lam, psi = m.mx_lambda, m.mx_psi
        d_lambda = 2.0 * cs @ lam @ psi
        if alpha is not None:
            d_lambda -= 2.0 * np.outer(w, alpha)
        d_psi = lam.T @ cs @ lam
        mats = {"lambda": d_lambda, "psi": d_psi, "theta": cs}
        gx = np.empty(len(self.keys))
        for kind, (rows, cols, mult, at) in self.slots.items():
            gx[at] = mats[kind][rows, cols] * mult
        g_nu = -2.0 * w
        g_alpha = -2.0 * (lam.T @ w)
        return gx, g_nu, g_alpha

    def semopy_gradient(self, x: np.ndarray) -> np.ndarray:
        """semopy's own covariance-structure gradient (no mean term), for the test of ``gradient``."""
        return np.asarray(self.model.grad_mlw(x), dtype=float)

    def implied(self, x: np.ndarray, nu: np.ndarray | None, alpha: np.ndarray | None) -> tuple[Any, Any]:
        m = self.model
        m.update_matrices(x)
        sigma, _ = m.calc_sigma()
        mu = self.means.copy() if nu is None else nu + m.mx_lambda @ (alpha if alpha is not None else 0.0)
        return sigma, mu


def _srmr(groups: Sequence[_Group], implied: Sequence[tuple[Any, Any]], meanstructure: bool) -> float:
    """Bentler's SRMR as lavaan's ``srmr`` prints it: residuals of the covariances (and, with a mean
    structure, the means) standardised by the sample standard deviations, root mean square per group,
    weighted by n_g / N across groups."""
    total = sum(g.n for g in groups)
    out = 0.0
    for g, (sigma, mu) in zip(groups, implied, strict=True):
        s = g.model.mx_cov
        sd = np.sqrt(np.diag(s))
        resid = (s - sigma) / np.outer(sd, sd)
        iu = np.triu_indices(g.p)
        sq = list(resid[iu] ** 2)
        if meanstructure:
            sq.extend(((g.means - mu) / sd) ** 2)
        out += g.n / total * math.sqrt(float(np.mean(sq)))
    return out


def _indices(chi2: float, df: int, groups: Sequence[_Group]) -> tuple[float, float, float]:
    """CFI, TLI and RMSEA as lavaan computes them for (multi-group) ML."""
    n_total = sum(g.n for g in groups)
    chi2_b = 0.0
    for g in groups:
        s = g.model.mx_cov
        chi2_b += g.n * float(np.sum(np.log(np.diag(s))) - g.model.cov_logdet)
    df_b = sum(g.p * (g.p - 1) // 2 for g in groups)
    d = max(chi2 - df, 0.0)
    denom = max(chi2_b - df_b, chi2 - df, 0.0)
    cfi = 1.0 - d / denom if denom > 0 else 1.0
    tli = ((chi2_b / df_b) - (chi2 / df)) / ((chi2_b / df_b) - 1.0) if df > 0 and df_b > 0 else math.nan
    rmsea = math.sqrt(d / (df * n_total)) * math.sqrt(len(groups)) if df > 0 else math.nan
    return cfi, tli, rmsea


def fit_level(
    factors: dict[str, list[str]],
    data: Sequence[pd.DataFrame],
    level: Level,
    *,
    group_names: Sequence[str] | None = None,
    max_iter: int = 5000,
    progress: Callable[[str], None] | None = None,
) -> LevelFit:
    """Fit one invariance level to the groups' data (columns = the items named in ``factors``).

    Never raises on a numerical failure: a fit that did not converge is returned with ``converged=False``
    and the optimiser's message, and NaN in place of every index.
    """
    from scipy.optimize import minimize
    from threadpoolctl import threadpool_limits

    description = model_description(factors)
    groups = [_Group(description, d) for d in data]
    names = list(group_names) if group_names is not None else [str(i) for i in range(len(groups))]
    n_total = sum(g.n for g in groups)
    p = groups[0].p
    k = len(groups[0].latent)
    share_loadings = level in ("metric", "scalar")
    scalar = level == "scalar"

    # the global parameter vector: keys -> position
    index: dict[tuple[str, ...], int] = {}
    start: list[list[float]] = []
    bounds: list[tuple[float | None, float | None]] = []
    maps: list[np.ndarray] = []
    for gi, g in enumerate(groups):
        pos = []
        for key, s, b in zip(g.keys, g.start, g.bounds, strict=True):
            gkey = ("*", *key) if share_loadings and key[0] == "lambda" else (str(gi), *key)
            if gkey not in index:
                index[gkey] = len(start)
                start.append([])
                bounds.append(b)
            start[index[gkey]].append(float(s))
            pos.append(index[gkey])
        maps.append(np.array(pos, dtype=int))
    n_cov = len(start)
    x0 = [float(np.mean(v)) for v in start]
    nu_at = alpha_at = -1
    if scalar:
        nu_at = len(x0)
        x0.extend(float(np.mean([g.means[i] for g in groups])) for i in range(p))
        bounds.extend([(None, None)] * p)
        alpha_at = len(x0)
        x0.extend([0.0] * (k * (len(groups) - 1)))
        bounds.extend([(None, None)] * (k * (len(groups) - 1)))
    x0_arr = np.array(x0)
    weights = [g.n / n_total for g in groups]
    calls = [0]

    def split(x: np.ndarray, gi: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        xg = x[maps[gi]]
        if not scalar:
            return xg, None, None
        nu = x[nu_at : nu_at + p]
        alpha = np.zeros(k) if gi == 0 else x[alpha_at + (gi - 1) * k : alpha_at + gi * k]
        return xg, nu, alpha

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        calls[0] += 1
        if progress is not None and calls[0] % 250 == 0:
            progress(f"{level}: {calls[0]} evaluations")
        total = 0.0
        grad = np.zeros_like(x)
        for gi, g in enumerate(groups):
            xg, nu, alpha = split(x, gi)
            f, aux = g.value(xg, nu, alpha)
            if not math.isfinite(f):
                return 1e10, np.zeros_like(x)
            total += weights[gi] * f
            gx, g_nu, g_alpha = g.gradient(xg, aux, alpha)
            np.add.at(grad, maps[gi], weights[gi] * gx)
            if scalar:
                grad[nu_at : nu_at + p] += weights[gi] * g_nu
                if gi > 0:
                    grad[alpha_at + (gi - 1) * k : alpha_at + gi * k] += weights[gi] * g_alpha
        return total, grad

    n_params = len(x0_arr)
    # covariance moments less covariance parameters; at the scalar level also the means less (shared
    # intercepts + latent means); below it the means are saturated and add nothing
    df = len(groups) * p * (p + 1) // 2 - n_cov
    if scalar:
        df += len(groups) * p - (p + k * (len(groups) - 1))
    if df <= 0:
        return _failed(level, df, n_total, n_params, f"{df} degrees of freedom: the model is not identified")
    with warnings.catch_warnings(), threadpool_limits(1):
        # one BLAS thread: the matrices are small, and numpy's and scipy's two OpenBLAS pools spinning
        # against each other made each 44 x 44 Cholesky factorisation take 40 ms instead of 0.03 ms
        warnings.simplefilter("ignore")
        res = minimize(
            fun,
            x0_arr,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": max_iter, "maxfun": max_iter * 2, "ftol": 1e-13, "gtol": 1e-7},
        )
    value, grad = fun(res.x)
    if not res.success or not math.isfinite(value) or value >= 1e10:
        return _failed(
            level, df, n_total, n_params, f"the optimiser stopped without converging ({res.message})"
        )
    projected = np.where(_at_bound(res.x, bounds), 0.0, grad)
    if float(np.max(np.abs(projected))) > 1e-3:
        return _failed(
            level, df, n_total, n_params, "the gradient is not zero at the optimiser's stopping point"
        )
    chi2 = 0.0
    implied = []
    for gi, g in enumerate(groups):
        xg, nu, alpha = split(res.x, gi)
        f, _ = g.value(xg, nu, alpha)
        chi2 += g.n * f
        implied.append(g.implied(xg, nu, alpha))
    chi2 = max(chi2, 0.0)
    cfi, tli, rmsea = _indices(chi2, df, groups)
    srmr = _srmr(groups, implied, meanstructure=len(groups) > 1)
    boundary = tuple(
        sorted(
            {
                f"{key[1]} in {names[gi]}" if key[0] == "theta" else f"{key[1]}~~{key[2]} in {names[gi]}"
                for gi, g in enumerate(groups)
                for key, pos in zip(g.keys, maps[gi], strict=True)
                if key[0] in ("theta", "psi") and key[1] == key[2] and res.x[pos] <= 1e-6
            }
        )
    )
    rows = []
    for gi, g in enumerate(groups):
        g.model.update_matrices(res.x[maps[gi]])
        lam = g.model.mx_lambda
        for j, f_name in enumerate(g.latent):
            for i, item in enumerate(g.observed):
                if f_name in factors and item in factors[f_name]:
                    rows.append(
                        {"group": names[gi], "factor": f_name, "item": item, "loading": float(lam[i, j])}
                    )
    return LevelFit(
        level=level,
        converged=True,
        chi2=chi2,
        df=df,
        cfi=cfi,
        tli=tli,
        rmsea=rmsea,
        srmr=srmr,
        n=n_total,
        parameters=n_params,
        boundary=boundary,
        loadings=pd.DataFrame(rows),
    )


def _at_bound(x: np.ndarray, bounds: Sequence[tuple[float | None, float | None]]) -> np.ndarray:
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
    return (x <= lo + 1e-8) | (x >= hi - 1e-8)


def _failed(level: Level, df: int, n: int, params: int, message: str) -> LevelFit:
    nan = math.nan
    return LevelFit(level, False, nan, df, nan, nan, nan, nan, n, params, message=message)


def fit_single(factors: dict[str, list[str]], data: pd.DataFrame) -> LevelFit:
    """One group (no mean structure): semopy's own fit, indices as lavaan prints them (the textbook check)."""
    return fit_level(factors, [data], "configural")
