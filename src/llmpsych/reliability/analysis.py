"""The thesis's statistics on data points (one OCEAN vector per configuration).

- :func:`describe`: mean ± SD per dimension (Table 3.6).
- :func:`factor_comparisons`: each factor level against all other data points (Table 3.3).
- :func:`variance_tests`: one-sided F-tests of a lower LLM variance than the human norm (§3.3.1).
- :func:`group_table`: mean ± SD per steering target (Tables 3.13-3.15).
- :func:`extreme_tests`: min/max personality profiles against the default cloud (Table 3.10).
- :func:`paired_group_tests`: two groups of runs, e.g. item orderings (Table 3.5) or dated runs
  (test-retest, Table 3.7).

The statistical procedure and the original code's details are two separate choices.
``method="f-test"`` is the authors' procedure (``hypothesis_testing`` in their ``Analysis/tools.py``): a
two-sided F-test at alpha 0.001 chooses Student's or Welch's test (``"paper"`` is accepted as its old
name); ``"welch"`` (always Welch: no variance pre-test, the usual recommendation) and ``"student"`` are the
alternatives. ``published=True`` adds the original code's details: population SDs (``ddof = 0``) plus
``1e-8`` and the uncapped F-test p; ``published=False`` uses sample SDs as given. Re-analysing the
released data defaults to published (it reproduces Tables 3.3 and 3.10); own runs default to corrected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..stats.compare import (
    METHOD_ALIASES,
    METHODS,
    PUBLISHED_SD_EPSILON,
    GroupStats,
    Method,
    holm_adjust,
    t_test_from_stats,
    variance_f_test,
)
from ..stats.descriptive import StatsError
from .published import DIMENSIONS, HUMAN_N, HUMAN_SD, PROFILE_TARGET, profile_short
from .saves import FACTORS

#: What each method does, as reports and the CLI say it.
METHOD_NOTES: dict[str, str] = {
    "f-test": "the authors' procedure: a two-sided F-test at alpha 0.001 chooses Student's or Welch's test",
    "welch": "Welch's test, no variance pre-test (the alternative to the authors' procedure)",
    "student": "Student's test",
}
#: What ``published`` does to every method, as reports and the CLI say it.
PUBLISHED_NOTES: dict[bool, str] = {
    True: "published: population SDs plus 1e-8, as the original code (reproduces the thesis)",
    False: "corrected: sample SDs as given",
}


def method_name(method: str) -> Method:
    """``method`` as one of :data:`METHODS` (``"paper"``, the old name of ``"f-test"``, is accepted)."""
    name = METHOD_ALIASES.get(method, method)
    if name not in METHODS:
        raise StatsError(f"unknown t-test method {method!r}", f"use one of {', '.join(METHODS)}")
    return name


PAPER_VARIANCE_ALPHA = 0.001


def describe(frame: pd.DataFrame, dims: Sequence[str] = DIMENSIONS) -> pd.DataFrame:
    """Per dimension: n, mean, sample SD (ddof = 1), min, max."""
    rows = []
    for dim in dims:
        values = frame[dim].dropna()
        rows.append(
            {
                "dimension": dim,
                "n": int(values.size),
                "mean": float(values.mean()),
                "sd": float(values.std(ddof=1)),
                "min": float(values.min()),
                "max": float(values.max()),
            }
        )
    return pd.DataFrame(rows)


def two_sample(
    x: Iterable[float], y: Iterable[float], method: Method | str = "f-test", *, published: bool
) -> dict[str, float | str]:
    """``mean(x) − mean(y)`` with its t-test (the authors' procedure or a fixed test)."""
    method = method_name(method)
    a = np.asarray(x if isinstance(x, np.ndarray) else list(x), dtype=float)
    b = np.asarray(y if isinstance(y, np.ndarray) else list(y), dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2:
        return {
            "n_x": int(a.size),
            "n_y": int(b.size),
            "mean_x": float(a.mean()) if a.size else math.nan,
            "mean_y": float(b.mean()) if b.size else math.nan,
            "difference": float(a.mean() - b.mean()) if a.size and b.size else math.nan,
            "t": math.nan,
            "df": math.nan,
            "p": math.nan,
            "test": "none (n < 2)",
        }
    ddof, eps = (0, PUBLISHED_SD_EPSILON) if published else (1, 0.0)
    ga = GroupStats(float(a.mean()), float(a.std(ddof=ddof)), int(a.size))
    gb = GroupStats(float(b.mean()), float(b.std(ddof=ddof)), int(b.size))
    if method == "f-test":
        f = variance_f_test(ga, gb, published=published)
        equal = bool(f.p_value > PAPER_VARIANCE_ALPHA) if not math.isnan(f.p_value) else True
    else:
        equal = method == "student"
    t = t_test_from_stats(
        GroupStats(ga.mean, ga.sd + eps, ga.n), GroupStats(gb.mean, gb.sd + eps, gb.n), equal_var=equal
    )
    return {
        "n_x": int(a.size),
        "n_y": int(b.size),
        "mean_x": float(a.mean()),
        "mean_y": float(b.mean()),
        "difference": float(a.mean() - b.mean()),
        "t": t.t,
        "df": t.df,
        "p": t.p_value,
        "test": "student" if t.equal_var else "welch",
    }


def factor_comparisons(
    frame: pd.DataFrame,
    factors: Sequence[str] = FACTORS,
    dims: Sequence[str] = DIMENSIONS,
    method: Method | str = "f-test",
    *,
    published: bool,
) -> pd.DataFrame:
    """One row per (factor level, dimension): level minus the rest, t-test, Holm over the family."""
    rows = []
    values = frame[list(dims)].to_numpy(dtype=float)
    for factor in factors:
        if factor not in frame or frame[factor].nunique() < 2:
            continue
        for level in frame[factor].unique():
            inside = (frame[factor] == level).to_numpy()
            for k, dim in enumerate(dims):
                rows.append(
                    {
                        "factor": factor,
                        "level": level,
                        "dimension": dim,
                        **two_sample(values[inside, k], values[~inside, k], method, published=published),
                    }
                )
    table = pd.DataFrame(rows)
    if not table.empty:
        table["p_holm"] = holm_adjust(table["p"].tolist())
    return table


def variance_tests(
    frame: pd.DataFrame,
    human_sd: dict[str, float] | None = None,
    human_n: int = HUMAN_N,
    dims: Sequence[str] = DIMENSIONS,
) -> pd.DataFrame:
    """``F = s²_human / s²_LLM``, one-sided (H1: the LLM varies less), per dimension."""
    human_sd = human_sd or HUMAN_SD
    rows = []
    for dim in dims:
        if frame[dim].notna().sum() < 2:
            continue
        model = GroupStats.from_values(frame[dim], "model")
        human = GroupStats(0.0, human_sd[dim], human_n, "human")
        test = variance_f_test(human, model, alternative="greater", published=False)
        rows.append(
            {
                "dimension": dim,
                "model_sd": model.sd,
                "model_n": model.n,
                "human_sd": human.sd,
                "human_n": human.n,
                "f": test.f,
                "df_num": test.df_num,
                "df_den": test.df_den,
                "p": test.p_value,
            }
        )
    return pd.DataFrame(rows)


def group_table(frame: pd.DataFrame, by: str, dims: Sequence[str] = DIMENSIONS) -> pd.DataFrame:
    """Mean and SD (ddof = 1) of every dimension per group, groups in order of first appearance."""
    rows = []
    for group, part in frame.groupby(by, sort=False):
        row: dict[str, object] = {by: group, "n": len(part)}
        for dim in dims:
            row[f"{dim}_mean"] = float(part[dim].mean())
            row[f"{dim}_sd"] = float(part[dim].std(ddof=1))
        rows.append(row)
    return pd.DataFrame(rows)


def extreme_tests(
    default: pd.DataFrame,
    steered: pd.DataFrame,
    by: str = "append_label",
    method: Method | str = "f-test",
    *,
    published: bool,
) -> pd.DataFrame:
    """Table 3.10: each profile's target dimension against the default cloud, tested by ``method``.

    ``"f-test"`` with ``published=True`` reproduces all ten printed t values to their two decimals
    (E-min −59.34): on the released saves the F-test keeps equal variances for E-min and A-min (p 0.85,
    0.09), so those two are Student's tests and the other eight Welch's. ``"welch"`` corrected (sample SDs,
    no pre-test) gives E-min −58.84 and A-min −12.39 instead of −13.23; the column ``test`` says which
    test each row used.

    The SD columns are the SDs the test used (``sd_ddof``): population SDs when published, which is
    also what the table prints (C-max 0.1847 prints 0.18 and N-max 0.9547 prints 0.95, where Table 3.14's
    sample SDs print 0.19 and 0.96), sample SDs otherwise.
    """
    method = method_name(method)
    ddof = 0 if published else 1
    rows = []
    for label, part in steered.groupby(by, sort=False):
        short = profile_short(str(label))
        if short not in PROFILE_TARGET:
            continue
        dim, side = PROFILE_TARGET[short]
        result = two_sample(part[dim], default[dim], method, published=published)
        rows.append(
            {
                "dimension": dim,
                "side": side,
                "profile": short,
                "default_mean": float(default[dim].mean()),
                "default_sd": float(default[dim].std(ddof=ddof)),
                "assigned_mean": float(part[dim].mean()),
                "assigned_sd": float(part[dim].std(ddof=ddof)),
                "sd_ddof": ddof,
                **{k: result[k] for k in ("n_x", "n_y", "difference", "t", "df", "p", "test")},
                "method": method,
                "published": published,
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    rank = table["dimension"].map(DIMENSIONS.index) * 2 + (table["side"] == "max")
    return table.iloc[rank.argsort(kind="stable")].reset_index(drop=True)


def paired_group_tests(
    groups: dict[str, pd.DataFrame],
    dims: Sequence[str] = DIMENSIONS,
    method: Method | str = "student",
    *,
    published: bool = False,
) -> pd.DataFrame:
    """Every pair of groups (e.g. orderings, or dated runs of one model), per dimension."""
    names = list(groups)
    rows = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            for dim in dims:
                result = two_sample(groups[first][dim], groups[second][dim], method, published=published)
                rows.append({"x": first, "y": second, "dimension": dim, **result})
    return pd.DataFrame(rows)


def retest_extremes(runs: dict[str, pd.DataFrame], dims: Sequence[str] = DIMENSIONS) -> pd.DataFrame:
    """Test-retest (Table 3.7): the lowest and the highest dated run of each dimension against all runs."""
    pooled = pd.concat(runs.values(), ignore_index=True)
    rows = []
    for dim in dims:
        means = {name: float(part[dim].mean()) for name, part in runs.items()}
        for side, name in (
            ("min", min(means, key=means.__getitem__)),
            ("max", max(means, key=means.__getitem__)),
        ):
            result = two_sample(runs[name][dim], pooled[dim], "student", published=False)
            p = float(result["p"])
            rows.append(
                {
                    "dimension": dim,
                    "side": side,
                    "run": name,
                    "average": float(pooled[dim].mean()),
                    "average_sd": float(pooled[dim].std(ddof=1)),
                    "extreme": result["mean_x"],
                    "extreme_sd": float(runs[name][dim].std(ddof=1)),
                    "p": result["p"],
                    "equal_mean": bool(p > 0.05) if not math.isnan(p) else True,
                }
            )
    return pd.DataFrame(rows)


def validity_by_level(frame: pd.DataFrame, factors: Sequence[str] = FACTORS) -> pd.DataFrame:
    """Mean valid-answer rate and incomplete configurations per factor level (own runs only)."""
    if "valid_rate" not in frame:
        return pd.DataFrame()
    rows = []
    for factor in factors:
        if factor not in frame:
            continue
        for level, part in frame.groupby(factor, sort=False):
            rates = part["valid_rate"].astype(float)
            rows.append(
                {
                    "factor": factor,
                    "level": level,
                    "configurations": len(part),
                    "valid_rate": float(rates.mean()),
                    "incomplete": int((rates < 1).sum()),
                }
            )
    return pd.DataFrame(rows)


def factor_f_tests(frame: pd.DataFrame, factors: Sequence[str], dims: Sequence[str]) -> pd.DataFrame:
    """One-way ANOVA per (factor, dimension): do the factor's levels differ at all? Holm over the family.

    ``eta_squared`` is the share of the variance between levels. With no variance within levels the F
    is infinite (p 0) when the level means differ and undefined (NaN) when they do not.
    """
    from scipy.stats import f as f_dist

    rows = []
    for factor in factors:
        if factor not in frame or frame[factor].nunique() < 2:
            continue
        for dim in dims:
            part = frame[[factor, dim]].dropna()
            groups = [g[dim].to_numpy(dtype=float) for _, g in part.groupby(factor, sort=False)]
            k, n = len(groups), int(part.shape[0])
            grand = float(part[dim].mean()) if n else math.nan
            between = float(sum(g.size * (g.mean() - grand) ** 2 for g in groups))
            within = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
            df_b, df_w = k - 1, n - k
            if k < 2 or df_w < 1:
                f_value, p = math.nan, math.nan
            elif within == 0:
                f_value, p = (math.inf, 0.0) if between > 0 else (math.nan, math.nan)
            else:
                f_value = (between / df_b) / (within / df_w)
                p = float(f_dist.sf(f_value, df_b, df_w))
            total = between + within
            rows.append(
                {
                    "factor": factor,
                    "dimension": dim,
                    "levels": k,
                    "n": n,
                    "f": f_value,
                    "df_between": df_b,
                    "df_within": df_w,
                    "p": p,
                    "eta_squared": between / total if total > 0 else math.nan,
                }
            )
    table = pd.DataFrame(rows)
    if not table.empty:
        table["p_holm"] = holm_adjust(table["p"].tolist())
    return table
