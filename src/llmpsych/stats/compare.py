"""Model runs against a human norm group, from summary statistics (the PsychoBench procedure).

The papers' procedure, per subscale and norm group (PsychoBench §3.7, EmotionBench §3.6):

1. a two-sided F-test for equal variances;
2. Student's t-test if the F-test does not reject (p > alpha), otherwise Welch's t-test;
3. significant when the t-test's two-sided p <= alpha (alpha = 0.01 in the papers).

This procedure is ``method="f-test"`` (the name ``"paper"`` is still accepted and means the same).
``method="welch"`` always uses Welch's test (what most statisticians now recommend) and
``method="student"`` always Student's. Each comparison also reports Hedges' g with a confidence
interval, Glass's delta (standardised by the human SD), and, through :func:`apply_holm`, Holm-adjusted
p-values across a family of comparisons.

``published`` is separate from the method: it is the switch for the original code's errata, and
:func:`compare_with_norm` takes it keyword-only with no default, so every caller states which it wants.
``published=True`` reproduces the original code exactly: it adds ``1e-8`` to both SDs before testing and
computes the F-test p-value as ``2 * (1 - F.cdf(larger variance / smaller variance))``, which can
exceed 1. The default instead uses the SDs as given (scipy handles one zero SD exactly: the Welch limit;
two zero SDs make the test undefined and it is reported as such) and caps the two-sided p at 1.

A test is **degenerate** (:func:`degenerate_reason`, the ``degenerate`` field) when the model's runs cannot
support it: they are not independent samples (the caller says why, e.g. logprob mode at temperature 0,
where every run sends the same requests), or their SD is 0 or near 0, meaning the model's share of the
Welch standard error (``sd_m² / n_m``) is below the human mean's own (``sd_h² / n_h``). The t-test then
only asks whether the human mean equals a constant, and with a norm sample of thousands it is "significant"
for any difference (measured: t = -30 to -93, p <= 1e-184 on identical logprob runs, while Hedges' g's
interval spanned 0). Such a comparison is left out of Holm's family (:func:`apply_holm`), and the valid
comparison is the model's score as one value in the human distribution: ``glass_delta`` is its z,
``(model mean − human mean) / human SD``, and ``human_percentile`` the share of the human norm below it
(100·Φ(z), assuming a normal norm distribution: the data files give only mean, SD and n).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from .descriptive import StatsError, summarize

Method = Literal["f-test", "welch", "student"]
#: Accepted on input (old configs, old callers): ``"paper"`` is the F-test-then-t procedure.
METHOD_ALIASES: dict[str, Method] = {"paper": "f-test"}
METHODS: tuple[Method, ...] = ("f-test", "welch", "student")
Alternative = Literal["two-sided", "less", "greater"]
PUBLISHED_SD_EPSILON = 1e-8


#: How the model differs from the human group (two-sided test at ``alpha``).
Direction = Literal["higher", "lower", "no difference"]


@dataclass(frozen=True)
class GroupStats:
    """Summary statistics of one group: mean, sample SD, and n (runs for a model, people for humans)."""

    mean: float
    sd: float
    n: int
    label: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int | np.integer) or self.n < 1:
            raise StatsError(f"group {self.label or '?'}: n must be a positive whole number, got {self.n!r}")
        if not math.isfinite(self.mean):
            raise StatsError(f"group {self.label or '?'}: mean must be a finite number, got {self.mean!r}")
        if not math.isfinite(self.sd) or self.sd < 0:
            raise StatsError(f"group {self.label or '?'}: sd must be a finite number >= 0, got {self.sd!r}")

    @classmethod
    def from_values(cls, values: Iterable[float], label: str = "") -> GroupStats:
        """Mean, sample SD and n of the non-``NaN`` values (e.g. one subscale's scores over runs)."""
        summary = summarize(values)
        if summary.n < 2:
            raise StatsError(f"group {label or '?'}: need at least 2 scored values, got {summary.n}")
        return cls(summary.mean, summary.sd, summary.n, label)

    @classmethod
    def of(cls, group: Any, label: str | None = None) -> GroupStats:
        """Accept a :class:`GroupStats`, a ``(mean, sd, n)`` tuple, or anything with mean/sd/n (a norm)."""
        if isinstance(group, GroupStats):
            return group if label is None else replace(group, label=label)
        if isinstance(group, tuple) and len(group) == 3:
            mean, sd, n = group
            return cls(float(mean), float(sd), int(n), label or "")
        name = label if label is not None else str(getattr(group, "label", "") or "")
        return cls(float(group.mean), float(group.sd), int(group.n), name)


@dataclass(frozen=True)
class FTestResult:
    """A variance-ratio F-test: ``f`` with ``(df_num, df_den)`` degrees of freedom."""

    f: float
    df_num: int
    df_den: int
    p_value: float
    alternative: Alternative


@dataclass(frozen=True)
class TTestResult:
    """An independent two-sample t-test from summary statistics."""

    t: float
    df: float
    p_value: float
    equal_var: bool


@dataclass(frozen=True)
class EffectSize:
    """Hedges' g (bias-corrected standardised mean difference) with a normal-approximation CI."""

    g: float
    ci_low: float
    ci_high: float
    se: float
    cohens_d: float
    confidence: float


def variance_f_test(
    a: Any, b: Any, *, alternative: Alternative = "two-sided", published: bool
) -> FTestResult:
    """F-test of ``var(a) = var(b)``; ``alternative="less"`` tests ``var(a) < var(b)``.

    Default: ``F = sd_a² / sd_b²`` with ``(n_a - 1, n_b - 1)`` df, two-sided ``p = min(1, 2·min tail)``.
    ``published=True``: the original code (``1e-8`` added to both SDs, ``F`` = larger over smaller
    variance, ``p = 2·(1 − cdf)``, two-sided only).
    """
    ga, gb = GroupStats.of(a), GroupStats.of(b)
    _require_two(ga, gb)
    if published:
        if alternative != "two-sided":
            raise StatsError("the published procedure only has a two-sided F-test")
        sd_a, sd_b = ga.sd + PUBLISHED_SD_EPSILON, gb.sd + PUBLISHED_SD_EPSILON
        if sd_a > sd_b:
            f, df1, df2 = sd_a**2 / sd_b**2, ga.n - 1, gb.n - 1
        else:
            f, df1, df2 = sd_b**2 / sd_a**2, gb.n - 1, ga.n - 1
        return FTestResult(f, df1, df2, float((1 - stats.f.cdf(f, df1, df2)) * 2), alternative)
    df1, df2 = ga.n - 1, gb.n - 1
    var_a, var_b = ga.sd**2, gb.sd**2
    if var_a == 0 and var_b == 0:
        return FTestResult(math.nan, df1, df2, math.nan, alternative)
    f = math.inf if var_b == 0 else var_a / var_b
    lower, upper = float(stats.f.cdf(f, df1, df2)), float(stats.f.sf(f, df1, df2))
    p = {"two-sided": min(1.0, 2 * min(lower, upper)), "less": lower, "greater": upper}[alternative]
    return FTestResult(f, df1, df2, p, alternative)


def t_test_from_stats(
    a: Any, b: Any, *, equal_var: bool, alternative: Alternative = "two-sided"
) -> TTestResult:
    """Student's (``equal_var=True``) or Welch's t-test of ``mean(a) = mean(b)`` via scipy."""
    ga, gb = GroupStats.of(a), GroupStats.of(b)
    _require_two(ga, gb)
    va, vb = ga.sd**2 / ga.n, gb.sd**2 / gb.n
    if equal_var:
        df = float(ga.n + gb.n - 2)
    elif va + vb > 0:
        df = (va + vb) ** 2 / (va**2 / (ga.n - 1) + vb**2 / (gb.n - 1))
    else:
        df = math.nan
    if ga.sd == 0 and gb.sd == 0:
        return TTestResult(math.nan, df, math.nan, equal_var)
    result = stats.ttest_ind_from_stats(
        ga.mean, ga.sd, ga.n, gb.mean, gb.sd, gb.n, equal_var=equal_var, alternative=alternative
    )
    return TTestResult(float(result.statistic), df, float(result.pvalue), equal_var)


def hedges_g(a: Any, b: Any, *, confidence: float = 0.95) -> EffectSize:
    """Hedges' g of ``a − b`` with the pooled SD, exact small-sample correction J, and the
    Hedges & Olkin (1985) normal-approximation CI: ``SE² = (n_a+n_b)/(n_a n_b) + g²/(2(n_a+n_b))``."""
    ga, gb = GroupStats.of(a), GroupStats.of(b)
    _require_two(ga, gb)
    df = ga.n + gb.n - 2
    pooled = math.sqrt(((ga.n - 1) * ga.sd**2 + (gb.n - 1) * gb.sd**2) / df)
    if pooled == 0:
        return EffectSize(math.nan, math.nan, math.nan, math.nan, math.nan, confidence)
    d = (ga.mean - gb.mean) / pooled
    correction = math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / math.sqrt(df / 2)
    g = correction * d
    se = math.sqrt((ga.n + gb.n) / (ga.n * gb.n) + g**2 / (2 * (ga.n + gb.n)))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return EffectSize(g, g - z * se, g + z * se, se, d, confidence)


@dataclass(frozen=True)
class NormComparison:
    """One model-versus-norm comparison, with both sides' n stated."""

    scale: str | None
    subscale: str | None
    model_label: str
    model_mean: float
    model_sd: float
    model_n: int
    human_label: str
    human_mean: float
    human_sd: float
    human_n: int
    difference: float
    method: Method
    f_statistic: float
    f_df_num: int
    f_df_den: int
    f_p_value: float
    equal_variance: bool
    test: Literal["student", "welch"]
    t_statistic: float
    t_df: float
    t_p_value: float
    alpha: float
    significant: bool
    direction: Direction
    hedges_g: float
    g_ci_low: float
    g_ci_high: float
    glass_delta: float
    published: bool
    p_holm: float | None = None
    significant_holm: bool | None = None
    note: str = ""
    degenerate: str = ""
    """Why the runs cannot support the t-test ("" when they can); see :func:`degenerate_reason`."""
    human_percentile: float = math.nan
    """Percentile of the model's mean in the human norm, 100·Φ(z) with z = ``glass_delta`` (normal norm)."""

    def as_row(self) -> dict[str, Any]:
        """A flat dict for a tidy table (one row per comparison)."""
        return asdict(self)


def compare_with_norm(
    model: Any,
    human: Any,
    *,
    alpha: float = 0.01,
    variance_alpha: float | None = None,
    method: Method | Literal["paper"] = "f-test",
    published: bool,
    confidence: float = 0.95,
    scale: str | None = None,
    subscale: str | None = None,
    dependence: str = "",
) -> NormComparison:
    """Test model runs against a human group; ``model``/``human`` are :class:`GroupStats`-like.

    ``variance_alpha`` is the F-test's level when choosing Student vs Welch (default: ``alpha``, as in
    the papers). Significance is ``p <= alpha``, as in the original code. ``dependence`` says why the
    model's runs are not independent samples ("" when they are); it, or a model SD near 0, marks the
    comparison ``degenerate`` (the test is still computed, for the record; :func:`apply_holm` leaves it
    out and a report shows the z and percentile instead).
    """
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be between 0 and 1, got {alpha}")
    method = normalize_method(method)
    gm, gh = GroupStats.of(model), GroupStats.of(human)
    _require_two(gm, gh)
    tested_m, tested_h = gm, gh
    if published:
        tested_m = replace(gm, sd=gm.sd + PUBLISHED_SD_EPSILON)
        tested_h = replace(gh, sd=gh.sd + PUBLISHED_SD_EPSILON)
    f_test = variance_f_test(gm, gh, published=published)
    level = alpha if variance_alpha is None else variance_alpha
    equal_variance = bool(f_test.p_value > level) if not math.isnan(f_test.p_value) else True
    use_student = {"f-test": equal_variance, "welch": False, "student": True}[method]
    t_test = t_test_from_stats(tested_m, tested_h, equal_var=use_student)
    significant = bool(t_test.p_value <= alpha) if not math.isnan(t_test.p_value) else False
    difference = gm.mean - gh.mean
    direction: Direction = "no difference" if not significant else ("higher" if difference > 0 else "lower")
    effect = hedges_g(gm, gh, confidence=confidence)
    glass = difference / gh.sd if gh.sd > 0 else math.nan
    percentile = 100 * float(stats.norm.cdf(glass)) if not math.isnan(glass) else math.nan
    note = ""
    if math.isnan(t_test.p_value):
        note = "both groups have zero variance: the t-test is undefined"
    return NormComparison(
        scale=scale,
        subscale=subscale,
        model_label=gm.label or "model",
        model_mean=gm.mean,
        model_sd=gm.sd,
        model_n=int(gm.n),
        human_label=gh.label or "human",
        human_mean=gh.mean,
        human_sd=gh.sd,
        human_n=int(gh.n),
        difference=difference,
        method=method,
        f_statistic=f_test.f,
        f_df_num=f_test.df_num,
        f_df_den=f_test.df_den,
        f_p_value=f_test.p_value,
        equal_variance=equal_variance,
        test="student" if use_student else "welch",
        t_statistic=t_test.t,
        t_df=t_test.df,
        t_p_value=t_test.p_value,
        alpha=alpha,
        significant=significant,
        direction=direction,
        hedges_g=effect.g,
        g_ci_low=effect.ci_low,
        g_ci_high=effect.ci_high,
        glass_delta=glass,
        published=published,
        note=note,
        degenerate=degenerate_reason(gm, gh, dependence=dependence),
        human_percentile=percentile,
    )


def degenerate_reason(model: Any, human: Any, *, dependence: str = "") -> str:
    """Why a t-test of ``model`` runs against ``human`` cannot be read as one ("": it can).

    ``dependence``: why the runs are not independent samples (given by the caller, who knows the run's
    settings). Otherwise the model's SD: 0 (every run gave the same score), or near 0, defined as a
    model variance of the mean below the human mean's, ``sd_m² / n_m < sd_h² / n_h``: the runs then add
    less to the test's standard error than the norm's own sampling error, so the test asks whether the
    human mean equals a constant (with 10 runs and 6,000 people: a model SD below 4 % of the human SD).
    """
    gm, gh = GroupStats.of(model), GroupStats.of(human)
    if dependence:
        return f"runs are not independent samples ({dependence})"
    if gm.sd == 0:
        return "model SD is 0 (every run gave the same score)"
    if gm.sd**2 / gm.n < gh.sd**2 / gh.n:
        limit = gh.sd * math.sqrt(gm.n / gh.n)
        return f"model SD {gm.sd:.3g} is near 0 (below human SD × √(runs / human n) = {limit:.3g})"
    return ""


def normalize_method(method: str) -> Method:
    """``method`` as one of :data:`METHODS`, mapping the old name ``"paper"`` to ``"f-test"``."""
    name = METHOD_ALIASES.get(method, method)
    if name not in METHODS:
        raise StatsError(f"unknown method {method!r} (use f-test, welch or student)")
    return name


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given); ``NaN`` stays ``NaN`` and is not counted."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(p))
    if finite.size == 0:
        return adjusted
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise StatsError("p-values must lie between 0 and 1")
    m = finite.size
    order = finite[np.argsort(p[finite], kind="stable")]
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def apply_holm(comparisons: Sequence[NormComparison], *, alpha: float | None = None) -> list[NormComparison]:
    """Copies of ``comparisons`` with Holm-adjusted p-values across the whole family.

    ``alpha`` defaults to each comparison's own alpha for ``significant_holm``. A ``degenerate``
    comparison is not a test: it is left out of the family (``p_holm`` and ``significant_holm`` None).
    """
    adjusted = holm_adjust([math.nan if c.degenerate else c.t_p_value for c in comparisons])
    out = []
    for comparison, p in zip(comparisons, adjusted, strict=True):
        level = comparison.alpha if alpha is None else alpha
        p_holm = None if math.isnan(p) else float(p)
        significant = None if p_holm is None else bool(p_holm <= level)
        out.append(replace(comparison, p_holm=p_holm, significant_holm=significant))
    return out


def comparisons_frame(comparisons: Iterable[NormComparison]) -> pd.DataFrame:
    """A tidy DataFrame, one row per comparison, columns as in :class:`NormComparison`."""
    rows = [c.as_row() for c in comparisons]
    columns = list(NormComparison.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)


def _require_two(*groups: GroupStats) -> None:
    for group in groups:
        if group.n < 2:
            raise StatsError(f"group {group.label or '?'}: need n >= 2 for a test, got n = {group.n}")
