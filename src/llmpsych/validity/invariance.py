"""Measurement invariance: does a scale measure the same construct in every group a user names?

Multi-group confirmatory factor analysis of the scale's own subscale structure (each item loads on its
subscale; one factor when the scale has none) at three nested levels: configural (the same structure),
metric (the same loadings) and scalar (the same loadings and intercepts), estimated by maximum likelihood
(semopy behind ``_sem``), with chi2, df, CFI, RMSEA and SRMR as lavaan prints them.

Decision rule (Chen 2007): a level holds when, against the level below it, CFI drops by at most .010 AND
RMSEA rises by at most .015 (both thresholds can be changed; the likelihood-ratio test and the change in
SRMR are shown beside them but do not decide, since with hundreds of respondents per group the chi2 test
rejects trivial differences). The configural model is called acceptable when CFI >= .90 and RMSEA <= .08
(a conventional bar; Hu & Bentler 1999 propose .95 and .06); when it is not, the later levels are reported
with that caveat. A level is tested only when the level below it held.

Chen, F. F. (2007). Sensitivity of goodness of fit indexes to lack of measurement invariance. Structural
Equation Modeling, 14(3), 464-504. Hu, L., & Bentler, P. M. (1999). Cutoff criteria for fit indexes in
covariance structure analysis. Structural Equation Modeling, 6(1), 1-55.

The data must support the model, or nothing is fitted and the reasons are returned (``refused``): fewer
respondents in a group than ``min_n`` or than the number of items (the covariance matrix is then
singular), an item with one answer only in some group (named), a subscale with too few items to be
identified, a model with no degrees of freedom. Respondents with a missing, invalid or refused answer to
any item are left out (listwise), and the count left out is reported per group. A level whose fit did not
converge is reported as such, never with fit indices.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import DataError
from . import _sem
from .dif import METHOD as DIF_METHOD
from .dif import ItemDif, item_dif

_NOT_GROUPS = {"respondent", "scale", "item", "subscale", "reverse", "response", "status", "min", "max"}
CONFIGURAL_CFI = 0.90
CONFIGURAL_RMSEA = 0.08
LEVEL_WORDS = {
    "configural": "the same structure (configural)",
    "metric": "the same loadings (metric invariance)",
    "scalar": "the same loadings and intercepts (scalar invariance)",
}
MEANING = {
    "metric": "the items measure the same construct in every group, so relations with the score "
    "(correlations, regressions) can be compared across groups",
    "scalar": "the items have the same origin in every group, so mean scores can be compared across groups",
}


@dataclass(frozen=True)
class GroupInfo:
    name: str
    respondents: int
    complete: int  # respondents with a valid answer to every item (the n used)

    @property
    def left_out(self) -> int:
        return self.respondents - self.complete


@dataclass(frozen=True)
class Step:
    """One level against the level below it, under the decision rule."""

    level: str
    holds: bool | None  # None: not tested (and ``reason`` says why)
    d_cfi: float = math.nan
    d_rmsea: float = math.nan
    d_srmr: float = math.nan
    d_chi2: float = math.nan
    d_df: int = 0
    p: float = math.nan
    reason: str = ""


@dataclass
class InvarianceResult:
    scale: str
    by: str
    groups: list[GroupInfo]
    factors: dict[str, list[str]]  # subscale -> item labels
    refused: list[str] = field(default_factory=list)
    fits: list[_sem.LevelFit] = field(default_factory=list)
    group_fits: dict[str, _sem.LevelFit] = field(default_factory=dict)  # the model in each group alone
    steps: list[Step] = field(default_factory=list)
    dif: list[ItemDif] = field(default_factory=list)
    dif_note: str = ""
    notes: list[str] = field(default_factory=list)
    delta_cfi: float = 0.01
    delta_rmsea: float = 0.015
    estimator: str = _sem.ESTIMATOR

    @property
    def rule(self) -> str:
        return (
            f"Chen (2007): a level holds when CFI drops by at most {self.delta_cfi:.3f} and RMSEA rises by "
            f"at most {self.delta_rmsea:.3f} against the level below it"
        )

    def fits_frame(self) -> pd.DataFrame:
        """One row per level; fit indices are blank (NaN) for a level that did not converge."""
        steps = {s.level: s for s in self.steps}
        rows = []
        for f in self.fits:
            s = steps.get(f.level)
            rows.append(
                {
                    "level": f.level,
                    "converged": f.converged,
                    "chi2": f.chi2,
                    "df": f.df,
                    "cfi": f.cfi,
                    "rmsea": f.rmsea,
                    "srmr": f.srmr,
                    "n": f.n,
                    "delta_cfi": s.d_cfi if s else math.nan,
                    "delta_rmsea": s.d_rmsea if s else math.nan,
                    "delta_srmr": s.d_srmr if s else math.nan,
                    "delta_chi2": s.d_chi2 if s else math.nan,
                    "delta_df": s.d_df if s else math.nan,
                    "p_delta_chi2": s.p if s else math.nan,
                    "holds": "" if s is None or s.holds is None else ("yes" if s.holds else "no"),
                    "note": f.message or (s.reason if s else ""),
                }
            )
        return pd.DataFrame(rows)

    def dif_frame(self) -> pd.DataFrame:
        return pd.DataFrame([d.__dict__ for d in self.dif])

    def groups_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"group": g.name, "respondents": g.respondents, "n_used": g.complete, "left_out": g.left_out}
                for g in self.groups
            ]
        )

    def headline(self) -> str:
        """One sentence: what the scale (or subscale) measures alike across the groups, and what not."""
        one = len(self.factors) == 1 and self.scale not in self.factors
        what = f"The {self.scale} {next(iter(self.factors))} items" if one else f"The {self.scale} items"
        across = (
            f"across the {len(self.groups)} groups of {self.by} ({', '.join(g.name for g in self.groups)})"
        )
        if self.refused:
            return (
                f"{what} {across}: not tested ({self.refused[0]}{'; ...' if len(self.refused) > 1 else ''})."
            )
        steps = {s.level: s for s in self.steps}
        flagged = [d.item for d in self.dif if d.flagged]
        items = f"; items that function differently: {', '.join(flagged)}" if flagged else ""
        metric, scalar = steps.get("metric"), steps.get("scalar")
        configural = steps.get("configural")
        fit = next((f for f in self.fits if f.level == "configural" and f.converged), None)
        # A structure that fits poorly in every group makes the levels above it only indicative: said first,
        # so that the sentence never reads as a finding it is not.
        caveat = (
            ""
            if configural is not None and configural.holds
            else "Only indicative, as the subscale structure itself fits poorly"
            + (f" (CFI {fit.cfi:.3f}, RMSEA {fit.rmsea:.3f}): " if fit is not None else ": ")
        )
        if caveat:
            what = what[0].lower() + what[1:]
        if metric is None or metric.holds is None:
            why = metric.reason if metric else (configural.reason if configural is not None else "")
            return f"{caveat}{what} {across}: invariance not established ({why}){items}."
        if not metric.holds:
            return (
                f"{caveat}{what} do not measure the same construct {across} (metric invariance does not hold)"
                f"{items}."
            )
        if scalar is not None and scalar.holds:
            return (
                f"{caveat}{what} measure the same construct with the same origin {across} (scalar invariance "
                f"holds: means comparable){items}."
            )
        tail = (
            "scalar not tested"
            if scalar is None or scalar.holds is None
            else "but not scalar: means not comparable"
        )
        return f"{caveat}{what} measure the same construct {across} (metric invariance holds, {tail}){items}."

    def summary_lines(self) -> list[str]:
        """A report a researcher can read without knowing SEM."""
        groups = ", ".join(f"{g.name} (n={g.complete})" for g in self.groups)
        head = f"{self.scale} across {self.by}: {len(self.groups)} groups: {groups}."
        lines = [head]
        left = [g for g in self.groups if g.left_out]
        if left:
            lines.append(
                "Left out (a missing, invalid or refused answer to some item): "
                + ", ".join(f"{g.left_out} of {g.respondents} in {g.name}" for g in left)
                + "."
            )
        if self.refused:
            lines.append("Not tested: the data cannot support the model:")
            lines.extend(f"  - {r}" for r in self.refused)
            return lines
        subs = ", ".join(f"{s} ({len(items)} items)" for s, items in self.factors.items())
        lines.append(f"Model: each item loads on its own subscale: {subs}; {self.estimator}.")
        for name, gf in self.group_fits.items():
            if gf.converged:
                small = (
                    f"; only {gf.n / gf.parameters:.1f} respondents per free parameter (fewer than 5, "
                    "Bentler & "
                    "Chou 1987): the estimates are unstable"
                    if gf.n < 5 * gf.parameters
                    else ""
                )
                lines.append(
                    f"In {name} alone: chi2 {gf.chi2:.2f} on {gf.df} df, CFI {_f(gf.cfi)}, "
                    f"RMSEA {_f(gf.rmsea)}, "
                    f"SRMR {_f(gf.srmr)} (n={gf.n}{small})."
                )
            else:
                lines.append(f"In {name} alone: the model did not converge ({gf.message}); no fit is shown.")
        fits = {f.level: f for f in self.fits}
        conf = fits.get("configural")
        if conf is not None and conf.converged:
            ok = conf.cfi >= CONFIGURAL_CFI and conf.rmsea <= CONFIGURAL_RMSEA
            verdict = (
                "fits acceptably in every group"
                if ok
                else f"fits poorly (acceptable: CFI >= {CONFIGURAL_CFI:.2f} and "
                f"RMSEA <= {CONFIGURAL_RMSEA:.2f}), "
                "so the subscales do not hold together as designed and the tests below are only indicative"
            )
            lines.append(
                f"Same structure (configural): CFI {_f(conf.cfi)}, RMSEA {_f(conf.rmsea)}: "
                f"the model {verdict}."
            )
        for s in self.steps:
            if s.level == "configural":
                if s.holds is None and s.reason:
                    lines.append(f"Same structure (configural): not established: {s.reason}.")
                continue
            words = LEVEL_WORDS[s.level]
            if s.holds is None:
                lines.append(f"{words[0].upper()}{words[1:]}: not tested: {s.reason}.")
            elif s.holds:
                lines.append(
                    f"{words[0].upper()}{words[1:]} holds (CFI change {_signed(s.d_cfi)}, RMSEA change "
                    f"{_signed(s.d_rmsea)}): {MEANING[s.level]}."
                )
            else:
                lines.append(
                    f"{words[0].upper()}{words[1:]} does not hold (CFI change {_signed(s.d_cfi)}, "
                    "RMSEA change "
                    f"{_signed(s.d_rmsea)}): {_negation(s.level)}."
                )
        for f in self.fits:
            if f.converged and f.boundary:
                lines.append(
                    f"Note ({f.level}): a variance estimated at 0 (Heywood case): {', '.join(f.boundary)}."
                )
        flagged = [d for d in self.dif if d.flagged]
        if self.dif_note:
            lines.append(f"Item functioning: {self.dif_note}.")
        elif self.dif:
            if flagged:
                items = ", ".join(
                    f"item {d.item} ({d.subscale}, {d.grade}, R2 gain {d.delta_r2:.3f})"
                    if d.subscale
                    else f"item {d.item} ({d.grade}, R2 gain {d.delta_r2:.3f})"
                    for d in flagged
                )
                lines.append(f"Items that function differently across {self.by}: {items}.")
            else:
                lines.append(f"No item functions differently across {self.by} (at least moderate DIF).")
            missing = [d for d in self.dif if d.grade == "not estimable"]
            if missing:
                lines.append(
                    "DIF not estimable for: " + ", ".join(f"item {d.item} ({d.note})" for d in missing) + "."
                )
        lines.extend(self.notes)
        return lines


def _negation(level: str) -> str:
    if level == "metric":
        return (
            "the items do not weigh the construct the same way in every group; scores (and their "
            "correlations) should not be compared across groups"
        )
    return (
        "the same construct level gives different answers in different groups; mean scores should not "
        "be compared across groups"
    )


def _f(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def _signed(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:+.3f}"


def _first_per_item(df: pd.DataFrame) -> tuple[list[int], list[str]]:
    first = df.groupby("item")["subscale"].first()
    return [int(i) for i in first.index.to_numpy()], [str(v) for v in first.to_numpy()]


def _var(i: int) -> str:
    return f"i{i}"


def measurement_invariance(
    frame: pd.DataFrame,
    by: str | Sequence[str],
    *,
    scale: str | None = None,
    subscale: str | None = None,
    min_n: int = 30,
    dif: bool = True,
    delta_cfi: float = 0.01,
    delta_rmsea: float = 0.015,
    progress: Callable[[str], None] | None = None,
) -> InvarianceResult:
    """Test configural, metric and scalar invariance of one scale across the groups of ``by``.

    ``frame`` is the item-level long format (``items.item_frame``); ``by`` names one grouping column or
    several (their values joined with " / "). Raises ``DataError`` only for a frame that is not in that
    format; data that cannot support the model come back as ``InvarianceResult.refused`` reasons.
    """
    by_cols = [by] if isinstance(by, str) else list(by)
    need = {"respondent", "scale", "item", "subscale", "response", *by_cols}
    missing_cols = sorted(need - set(frame.columns))
    if missing_cols:
        raise DataError(
            f"the item table has no column {', '.join(missing_cols)}",
            hint="group by one of: "
            + ", ".join(c for c in frame.columns if c not in need and c not in _NOT_GROUPS),
        )
    scales = sorted(set(frame["scale"].astype(str)))
    if scale is None:
        if len(scales) != 1:
            raise DataError(
                f"the item table holds {len(scales)} scales ({', '.join(scales)})",
                hint="name one with --scale",
            )
        scale = scales[0]
    elif scale not in scales:
        raise DataError(f"no answers to scale {scale!r}", hint="scales present: " + ", ".join(scales))
    label = " / ".join(by_cols)
    df = frame[frame["scale"].astype(str) == scale].copy()
    if subscale is not None:
        present = sorted(set(df["subscale"].astype(str)) - {""})
        if subscale not in present:
            raise DataError(
                f"scale {scale} has no subscale {subscale!r}", hint="subscales: " + ", ".join(present)
            )
        df = df[df["subscale"].astype(str) == subscale]
    group = df[by_cols[0]].astype(str)
    for col in by_cols[1:]:
        group = group + " / " + df[col].astype(str)
    df["_group"] = group
    blank = (df[by_cols].astype(str) == "").any(axis=1)
    unknown = df[blank]["respondent"].nunique()
    df = df[~blank]
    notes = []
    if unknown:
        notes.append(f"{unknown} respondents with no {label} recorded were left out.")
    df["_key"] = df["_group"] + "\x00" + df["respondent"].astype(str)
    dup = df.duplicated(["_key", "item"]).sum()
    if dup:
        raise DataError(
            f"{dup} answers repeat a (respondent, item) pair in scale {scale}",
            hint="one answer per respondent and item",
        )
    subscale_of: dict[int, str] = {int(i): str(s) for i, s in zip(*_first_per_item(df), strict=True)}
    items = sorted(subscale_of)
    wide = df.pivot(index="_key", columns="item", values="response").reindex(columns=items)
    group_of = df.groupby("_key")["_group"].first().reindex(wide.index)
    complete = wide.notna().all(axis=1)
    infos = []
    for g in sorted(group_of.unique()):
        in_g = group_of == g
        infos.append(GroupInfo(str(g), int(in_g.sum()), int((in_g & complete).sum())))
    result = InvarianceResult(
        scale, label, infos, {}, notes=notes, delta_cfi=delta_cfi, delta_rmsea=delta_rmsea
    )

    # the model: each item on its subscale (one factor when the scale has none)
    names = sorted({s for s in subscale_of.values() if s})
    if names:
        factors = {s: [str(i) for i in items if subscale_of[i] == s] for s in names}
        loose = [str(i) for i in items if not subscale_of[i]]
        if loose:
            notes.append(f"Items without a subscale left out of the model: {', '.join(loose)}.")
    else:
        factors = {scale: [str(i) for i in items]}
    result.factors = factors
    used = [int(i) for its in factors.values() for i in its]

    refused = result.refused
    if len(infos) < 2:
        refused.append(f"{len(infos)} group of {label} in the data; invariance needs at least 2")
    for g in infos:
        if g.complete < max(min_n, len(used) + 1):
            why = (
                f"fewer than the {min_n} required"
                if g.complete < min_n
                else f"not more than the {len(used)} items"
            )
            refused.append(f"group {g.name}: {g.complete} complete respondents, {why}")
    many = len(factors) > 1
    for s, its in factors.items():
        if len(its) < (2 if many else 3):
            refused.append(
                f"subscale {s}: {len(its)} item(s), too few to identify a factor ({2 if many else 3} needed)"
            )
    data = wide[complete]
    groups_c = group_of[complete]
    for g in infos:
        block = data[groups_c == g.name]
        if len(block) < 2:
            continue
        for i in used:
            values = block[i].unique()
            if len(values) == 1:
                refused.append(f"item {i} in group {g.name}: every answer is {values[0]:g} (no variance)")
    p = len(used)
    k = len(factors)
    free = p - k + p + k * (k + 1) // 2
    if p * (p + 1) // 2 - free <= 0 and not refused:
        refused.append(f"{p} items and {k} factors leave no degrees of freedom")
    if refused:
        return result

    renamed = {s: [_var(int(i)) for i in its] for s, its in factors.items()}
    internal = {f"f{n}": v for n, v in enumerate(renamed.values())}
    back = {f"f{n}": s for n, s in enumerate(renamed)}
    blocks = []
    for g in infos:
        block = data[groups_c == g.name][used].astype(float)
        block.columns = [_var(i) for i in used]
        blocks.append(block.reset_index(drop=True))
    for i, g in enumerate(infos):
        corr = np.linalg.matrix_rank(np.cov(blocks[i].to_numpy().T))
        if corr < p:
            refused.append(
                f"group {g.name}: the answers to some items are exact combinations of others "
                f"(rank {corr} of {p})"
            )
    if refused:
        return result

    for g, block in zip(infos, blocks, strict=True):
        if progress is not None:
            progress(f"fitting the model in {g.name} alone")
        result.group_fits[g.name] = _sem.fit_single(internal, block)
    previous: _sem.LevelFit | None = None
    for level in _sem.LEVELS:
        if progress is not None:
            progress(f"fitting the {level} model ({len(infos)} groups, {p} items)")
        if previous is not None and not previous.converged:
            result.steps.append(Step(level, None, reason=f"the {previous.level} model did not converge"))
            break
        prior = result.steps[-1] if result.steps else None
        if prior is not None and prior.holds is False and prior.level != "configural":
            result.steps.append(Step(level, None, reason=f"{prior.level} invariance does not hold"))
            break
        fit = _sem.fit_level(internal, blocks, level, group_names=[g.name for g in infos], progress=progress)
        if fit.loadings is not None and len(fit.loadings):
            fit.loadings["factor"] = fit.loadings["factor"].map(back)
            fit.loadings["item"] = fit.loadings["item"].str.slice(1)
        result.fits.append(fit)
        if level == "configural":
            ok = fit.converged and fit.cfi >= CONFIGURAL_CFI and fit.rmsea <= CONFIGURAL_RMSEA
            result.steps.append(Step(level, ok if fit.converged else None, reason=fit.message))
        elif not fit.converged:
            result.steps.append(
                Step(level, None, reason=f"the {level} model did not converge ({fit.message})")
            )
        else:
            assert previous is not None
            from scipy.stats import chi2 as chi2_dist

            d_cfi = fit.cfi - previous.cfi
            d_rmsea = fit.rmsea - previous.rmsea
            d_chi2 = fit.chi2 - previous.chi2
            d_df = fit.df - previous.df
            holds = (-d_cfi <= delta_cfi + 1e-12) and (d_rmsea <= delta_rmsea + 1e-12)
            result.steps.append(
                Step(
                    level,
                    holds,
                    d_cfi,
                    d_rmsea,
                    fit.srmr - previous.srmr,
                    d_chi2,
                    d_df,
                    float(chi2_dist.sf(max(d_chi2, 0.0), d_df)) if d_df > 0 else math.nan,
                )
            )
        previous = fit
    if dif:
        if progress is not None:
            progress(f"item-level DIF ({p} items)")
        wide_dif = data[used].copy()
        wide_dif.columns = [str(i) for i in used]
        result.dif = item_dif(wide_dif.reset_index(drop=True), groups_c.reset_index(drop=True), factors)
    else:
        result.dif_note = "item-level DIF not computed (switched off)"
    return result


__all__ = ["DIF_METHOD", "GroupInfo", "InvarianceResult", "Step", "measurement_invariance"]
