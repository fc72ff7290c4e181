"""Psychometric quality of a scale from its repeated administrations: internal consistency per
subscale (Cronbach's alpha with Feldt's interval, McDonald's omega with a seeded bootstrap interval),
corrected item-total correlations, acquiescence and the rate of valid answers.

The administrations (a PsychoBench run, an EmotionBench run, a grid's configuration × repeat) are the
respondents and the items the variables: n is the number of administrations that answered every item of
a subscale (listwise). A figure is *not meaningful* (a blank number and a note saying why) when n < 3,
when the subscale has fewer than 2 items, or when the administrations do not vary (the subscale score
for alpha; any item for omega and the item-total correlations). Works for any scale, official or a
scale file; the research packages compose it and name their administrations (:class:`Respondents`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ..report.markdown import table
from ..stats import valid_rate
from ..stats.reliability import (
    alpha_if_item_deleted,
    bootstrap_omega_interval,
    corrected_item_total,
    cronbach_alpha,
    feldt_alpha_interval,
    mcdonald_omega,
)
from .numbers import checked_csv, finite_number
from .scale import STORED_HINT, Scale

#: Fewest complete runs for which a consistency figure is reported.
MIN_RUNS = 3
NOT_MEANINGFUL = "not meaningful"


@dataclass(frozen=True)
class Respondents:
    """What a report calls one administration (the respondent), and where the administrations come from."""

    one: str = "run"
    source: str = "Computed from the repeated runs"
    caveat: str = (
        "Repeated runs of one model are not a sample of people: these figures say whether the items move "
        "together across runs, not whether the scale measures the same trait in the model as in people."
    )

    @property
    def many(self) -> str:
        """The plural (``runs``)."""
        return f"{self.one}s"


#: PsychoBench's respondents: its repeated runs.
RUNS = Respondents()

SUBSCALE_COLUMNS = [
    "scale",
    "subscale",
    "items",
    "n",
    "alpha",
    "alpha_ci_low",
    "alpha_ci_high",
    "alpha_note",
    "omega",
    "omega_ci_low",
    "omega_ci_high",
    "omega_resamples",
    "omega_note",
]
ITEM_COLUMNS = [
    "scale",
    "subscale",
    "item",
    "reverse",
    "n",
    "mean",
    "sd",
    "item_total_r",
    "alpha_if_deleted",
]
SCALE_COLUMNS = [
    "scale",
    "runs",
    "items",
    "reverse_items",
    "answers",
    "valid",
    "valid_rate",
    "valid_ci_low",
    "valid_ci_high",
    "midpoint",
    "acquiescence",
    "acquiescence_sd",
    "acquiescence_n",
    "acquiescence_note",
]


def stored_answer(scale: Scale, item: object, value: object, where: str) -> tuple[int, float]:
    """One stored item-level answer as (item, value), or one error naming ``where`` in the run store: an
    item the scale does not have, or a value that is not a number in the scale's range."""
    index = int(item) if isinstance(item, int | str) and str(item).isdigit() else None
    if index is None or index not in scale.item_indices:
        raise DataError(f"run store, {where}: answer to an unknown item {str(item)[:20]!r}", STORED_HINT)
    number = finite_number(value) if isinstance(value, int | float) else None
    if number is None or not scale.response_min <= number <= scale.response_max:
        raise DataError(
            f"run store, {where}: item {index} answer {str(value)[:20]!r} is not a number from "
            f"{scale.response_min} to {scale.response_max}",
            STORED_HINT,
        )
    return index, number


def raw_matrix(scale: Scale, answers: pd.DataFrame, column: str = "answer") -> pd.DataFrame:
    """Administrations (the ``run`` column) × items of the answers as given (before reverse keying; NaN:
    no valid answer)."""
    items = list(scale.item_indices)
    if answers.empty or column not in answers:
        return pd.DataFrame(columns=items, dtype=float)
    part = answers[answers["scale"] == scale.name]
    values = pd.to_numeric(part[column], errors="coerce")
    frame = pd.DataFrame({"run": part["run"], "item": part["item"], "value": values})
    wide = frame.pivot_table(index="run", columns="item", values="value", aggfunc="first", dropna=False)
    return wide.reindex(columns=items).astype(float).sort_index()


def keyed_matrix(scale: Scale, raw: pd.DataFrame) -> pd.DataFrame:
    """The raw matrix with reverse-keyed items turned (``min + max − value``)."""
    keyed = raw.copy()
    for index in scale.reverse_indices:
        if index in keyed:
            keyed[index] = scale.response_min + scale.response_max - keyed[index]
    return keyed


Rows = list[dict[str, Any]]

#: A one-factor loading below this (keyed answers) is an item measuring the opposite of its subscale.
AGAINST_KEY = -0.1


def _subscale_rows(
    scale: Scale, keyed: pd.DataFrame, seed: int, who: Respondents, copies: str = ""
) -> tuple[Rows, Rows]:
    subscales, items = [], []
    reverse = set(scale.reverse_indices)
    for sub in scale.subscales:
        data = keyed[list(sub.item_indices)].dropna(how="any")
        k, n = len(sub.item_indices), len(data)
        row: dict[str, Any] = dict.fromkeys(SUBSCALE_COLUMNS, math.nan)
        row |= {"scale": scale.name, "subscale": sub.name, "items": k, "n": n, "omega_resamples": 0}
        why = _why_not(k, n, data, who)
        if copies:  # the administrations are one computation repeated: whatever varies is not sampling
            why = dict.fromkeys(("alpha", "omega"), f"{NOT_MEANINGFUL}: {copies}")
        row["alpha_note"] = why["alpha"]
        row["omega_note"] = why["omega"]
        if not why["alpha"]:
            alpha = cronbach_alpha(data)
            interval = feldt_alpha_interval(alpha, n, k)
            row |= {"alpha": alpha, "alpha_ci_low": interval.low, "alpha_ci_high": interval.high}
        if not why["omega"]:
            omega = mcdonald_omega(data, max_iter=200)
            against = [
                i for i, value in zip(data.columns, omega.loadings, strict=True) if value < AGAINST_KEY
            ]
            if against:  # omega total adds the loadings up: a factor some items oppose is not the trait
                row["omega_note"] = (
                    f"{NOT_MEANINGFUL}: item {against[0]} loads against its key (omega assumes every keyed "
                    "item measures one factor in the same direction; see the item-total correlations)"
                )
            else:
                interval, used = bootstrap_omega_interval(data, seed=seed)
                row |= {
                    "omega": omega.omega,
                    "omega_ci_low": interval.low,
                    "omega_ci_high": interval.high,
                    "omega_resamples": used,
                }
        subscales.append(row)
        item_r = corrected_item_total(data) if not why["alpha"] else {}
        deleted = alpha_if_item_deleted(data) if not why["alpha"] and k >= 3 else {}
        for index in sub.item_indices:
            column = data[index] if n else pd.Series(dtype=float)
            items.append(
                {
                    "scale": scale.name,
                    "subscale": sub.name,
                    "item": index,
                    "reverse": index in reverse,
                    "n": n,
                    "mean": float(column.mean()) if n else math.nan,
                    "sd": float(column.std(ddof=1)) if n > 1 else math.nan,
                    "item_total_r": item_r.get(str(index), math.nan),
                    "alpha_if_deleted": deleted.get(str(index), math.nan),
                }
            )
    return subscales, items


def _why_not(k: int, n: int, data: pd.DataFrame, who: Respondents = RUNS) -> dict[str, str]:
    """Why alpha and omega are not meaningful for this subscale ('' when they are)."""
    if k < 2:
        reason = f"{NOT_MEANINGFUL}: the subscale has {k} item"
        return {"alpha": reason, "omega": reason}
    if n < MIN_RUNS:
        reason = f"{NOT_MEANINGFUL}: n = {n} complete {who.one}(s), need {MIN_RUNS}"
        return {"alpha": reason, "omega": reason}
    alpha = ""
    if data.sum(axis=1).var(ddof=1) == 0:
        alpha = f"{NOT_MEANINGFUL}: every {who.one} has the same subscale score"
    constant = [str(c) for c in data.columns if data[c].std(ddof=0) == 0]
    omega = f"{NOT_MEANINGFUL}: item {constant[0]} has the same answer in every {who.one}" if constant else ""
    if k < 3 and not (omega or alpha):  # a one-factor model of two items is not identified
        omega = f"{NOT_MEANINGFUL}: omega needs 3 items (one factor is not identified by 2)"
    return {"alpha": alpha, "omega": alpha or omega}


def _scale_row(scale: Scale, raw: pd.DataFrame, valid: pd.DataFrame, who: Respondents) -> dict[str, Any]:
    part = valid[valid["scale"] == scale.name] if not valid.empty else valid
    answered = int(part["valid"].sum()) if len(part) else 0
    asked = int(part["items"].sum()) if len(part) else 0
    rate = valid_rate(answered, asked)
    midpoint = (scale.response_min + scale.response_max) / 2
    per_run = _acquiescence_per_run(raw, midpoint)
    n = len(per_run)
    note = ""
    if n == 0:
        note = f"{NOT_MEANINGFUL}: no {who.one} has a valid answer"
    elif not scale.reverse_indices:
        note = "no reverse-keyed items: agreement and the trait cannot be told apart"
    return {
        "scale": scale.name,
        "runs": len(part),
        "items": scale.n_items,
        "reverse_items": len(scale.reverse_indices),
        "answers": asked,
        "valid": answered,
        "valid_rate": rate.rate,
        "valid_ci_low": rate.ci_low,
        "valid_ci_high": rate.ci_high,
        "midpoint": midpoint,
        "acquiescence": float(per_run.mean()) if n else math.nan,
        "acquiescence_sd": float(per_run.std(ddof=1)) if n > 1 else math.nan,
        "acquiescence_n": n,
        "acquiescence_note": note,
    }


#: Share of answers on one side of the midpoint, in both the forward-keyed and the reverse-keyed items,
#: from which a profile is called an acquiescence artefact (:func:`agreement`).
ARTEFACT_SHARE = 0.75


@dataclass(frozen=True)
class Agreement:
    """How a scale's raw answers (before reverse keying) lean, over every administration.

    An answer *agrees* when it is above the scale's midpoint and *disagrees* when below. The reverse-keyed
    items say the opposite of their subscale, so a respondent who agrees with most forward-keyed items AND
    most reverse-keyed ones is agreeing with statements and with their opposites: reverse keying then turns
    "agrees with everything" into mid-high subscale scores that are not the trait. The rule (documented in
    docs/quickstart.md and docs/psychobench.md): an **acquiescence artefact** when at least
    :data:`ARTEFACT_SHARE` of the forward-keyed answers and of the reverse-keyed answers agree (or,
    nay-saying, both disagree); not decidable without reverse-keyed answers."""

    scale: str
    administrations: int
    midpoint: float
    reverse_items: tuple[int, ...]
    answers: int
    agree: int
    disagree: int
    reverse_answers: int
    reverse_agree: int
    reverse_disagree: int
    acquiescence: float  # mean over administrations of (mean raw answer − midpoint); NaN: no answer

    @property
    def forward_answers(self) -> int:
        return self.answers - self.reverse_answers

    def _leans(self, forward: int, reverse: int) -> bool:
        return (
            self.forward_answers > 0
            and self.reverse_answers > 0
            and forward >= ARTEFACT_SHARE * self.forward_answers
            and reverse >= ARTEFACT_SHARE * self.reverse_answers
        )

    @property
    def artefact(self) -> str | None:
        """``"agreeing"`` or ``"disagreeing"`` when the profile is an acquiescence artefact, else None."""
        if self._leans(self.agree - self.reverse_agree, self.reverse_agree):
            return "agreeing"
        if self._leans(self.disagree - self.reverse_disagree, self.reverse_disagree):
            return "disagreeing"
        return None

    def line(self, who: Respondents = RUNS) -> str:
        """One line: the share of agreeing answers, with the reverse-keyed items' own share."""
        if not self.answers:
            return f"Acquiescence: {NOT_MEANINGFUL} (no valid answer)."
        mid = f"{self.midpoint:g}"
        agree = _share(self.agree, self.answers)
        text = f"Acquiescence: {agree} of the answers agree (above the midpoint {mid})"
        if self.reverse_items:
            items = ", ".join(map(str, self.reverse_items))
            text += (
                f", {_share(self.reverse_agree, self.reverse_answers)} of those to the reverse-keyed "
                f"item(s) {items}, which state the opposite of their subscale"
            )
        text += f"; {_share(self.disagree, self.answers)} disagree"
        if not math.isnan(self.acquiescence):
            text += (
                f"; mean answer before reverse keying {self.acquiescence:+.2f} from the midpoint "
                f"(n = {self.administrations} {who.many})"
            )
        return text + "."

    def warning(self, subscales: tuple[str, ...] = ()) -> str:
        """Plain words on what the scores mean ('' when the rule finds no artefact)."""
        if not self.reverse_items:
            return (
                "The scale has no reverse-keyed items, so agreeing and having the trait cannot be told apart."
            )
        lean = self.artefact
        if lean is None:
            return ""
        names = " and ".join(subscales) or "the subscales"
        pct = f"{ARTEFACT_SHARE:.0%}"
        return (
            f"Warning: this profile is an acquiescence artefact. The model gave {lean} answers to the "
            f"statements AND to their opposites (the reverse-keyed items): at least {pct} of each lean the "
            f"same way. Reverse keying turns such {lean} answers into scores that look like a trait, so the "
            f"{names} scores say how the model answers questionnaires, not how much {names} it has."
        )

    def to_json(self) -> dict[str, Any]:
        """The counts, the rule's verdict, and the line and warning as printed."""
        return {
            "scale": self.scale,
            "administrations": self.administrations,
            "midpoint": self.midpoint,
            "reverse_items": list(self.reverse_items),
            "answers": self.answers,
            "agree": self.agree,
            "disagree": self.disagree,
            "reverse_answers": self.reverse_answers,
            "reverse_agree": self.reverse_agree,
            "reverse_disagree": self.reverse_disagree,
            "acquiescence": None if math.isnan(self.acquiescence) else self.acquiescence,
            "artefact_rule": f">= {ARTEFACT_SHARE:g} of forward- and of reverse-keyed answers on one side",
            "artefact": self.artefact,
        }


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole}" + (f" ({part / whole:.0%})" if whole else "")


def _acquiescence_per_run(raw: pd.DataFrame, midpoint: float) -> pd.Series:
    """Each administration's mean raw answer minus the midpoint (administrations without an answer left
    out)."""
    return (raw.mean(axis=1, skipna=True) - midpoint).dropna()


def agreement(scale: Scale, raw: pd.DataFrame) -> Agreement:
    """The :class:`Agreement` of a raw matrix (:func:`raw_matrix`: administrations × items, before
    reverse keying)."""
    midpoint = (scale.response_min + scale.response_max) / 2
    values = raw.reindex(columns=list(scale.item_indices))
    reverse = [i for i in scale.reverse_indices if i in values]
    back = values[reverse]
    per_run = _acquiescence_per_run(values, midpoint)
    return Agreement(
        scale=scale.name,
        administrations=len(per_run),
        midpoint=midpoint,
        reverse_items=tuple(scale.reverse_indices),
        answers=int(values.notna().sum().sum()),
        agree=int((values > midpoint).sum().sum()),
        disagree=int((values < midpoint).sum().sum()),
        reverse_answers=int(back.notna().sum().sum()),
        reverse_agree=int((back > midpoint).sum().sum()),
        reverse_disagree=int((back < midpoint).sum().sum()),
        acquiescence=float(per_run.mean()) if len(per_run) else math.nan,
    )


@dataclass(frozen=True)
class Repeats:
    """How far a scale's administrations differ: how many there are, and how many of its items got a
    different answer in some administration (``spread``: the largest range of one item's answers)."""

    administrations: int
    items: int
    varying: int
    spread: float


def repeats(scales: dict[str, Scale], answers: pd.DataFrame, column: str = "answer") -> dict[str, Repeats]:
    """:class:`Repeats` of each scale with two or more administrations holding an answer."""
    out: dict[str, Repeats] = {}
    for scale in scales.values():
        raw = raw_matrix(scale, answers, column).dropna(how="all")
        if len(raw) < 2:
            continue
        varies = raw.nunique(dropna=False) > 1
        ranges = (raw.max() - raw.min()).fillna(0.0)
        out[scale.name] = Repeats(len(raw), raw.shape[1], int(varies.sum()), float(ranges.max()))
    return out


def quality_tables(
    scales: dict[str, Scale],
    answers: pd.DataFrame,
    valid: pd.DataFrame,
    *,
    column: str = "answer",
    seed: int = 0,
    who: Respondents = RUNS,
    copies: str = "",
) -> dict[str, pd.DataFrame]:
    """``quality`` (scale, subscale), ``quality_items`` (scale, subscale, item) and ``quality_scales``
    (scale) of the administered ``scales``. ``answers`` has one row per (scale, run, item) with the value
    in ``column`` (``value`` in PsychoBench's logprob mode, the probability-weighted answer); ``valid``
    one row per (scale, run) with ``valid`` (items with a valid answer) and ``items`` (items asked); the
    ``run`` column names the administration, whatever ``who`` calls it. ``copies``: why the
    administrations are not samples (PsychoBench's logprob mode at temperature 0), which makes every
    alpha and omega not meaningful."""
    subscales: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    per_scale: list[dict[str, Any]] = []
    for scale in scales.values():
        raw = raw_matrix(scale, answers, column)
        sub_rows, item_rows = _subscale_rows(scale, keyed_matrix(scale, raw), seed, who, copies)
        subscales += sub_rows
        items += item_rows
        per_scale.append(_scale_row(scale, raw, valid, who))
    return {
        "quality": pd.DataFrame(subscales, columns=SUBSCALE_COLUMNS),
        "quality_items": pd.DataFrame(items, columns=ITEM_COLUMNS),
        "quality_scales": pd.DataFrame(per_scale, columns=SCALE_COLUMNS),
    }


# -- report ------------------------------------------------------------------------------------------
def _estimate(value: float, low: float, high: float, note: object) -> str:
    if isinstance(note, str) and note:
        return note
    if math.isnan(value):
        return NOT_MEANINGFUL
    interval = " [interval not meaningful]" if math.isnan(low) else f" [{low:.2f}, {high:.2f}]"
    return f"{value:.2f}{interval}"


def _weakest_item(items: pd.DataFrame, key: dict[str, Any]) -> str:
    match = pd.Series(True, index=items.index)
    for name, value in key.items():
        match &= items[name] == value
    part = items[match].dropna(subset=["item_total_r"])
    if part.empty:
        return "–"
    row = part.iloc[part["item_total_r"].argmin()]
    return f"item {int(row['item'])}: {row['item_total_r']:.2f}"


QUALITY_EXPLAINED = (
    "{source}: the {many} are the respondents and the items the variables, so **n** "
    "is the number of {many} that answered every item of the subscale (listwise). Answers are reverse-keyed "
    "first. Alpha is Cronbach's, with Feldt's analytic 95 % interval; omega is McDonald's omega total "
    "from one factor (iterated principal axes), with a percentile bootstrap 95 % interval over {many} "
    "({resamples} resamples, seed {seed}; a resample in which an item does not vary is skipped, and with "
    "fewer than half of them left the interval is not meaningful). A figure is *not meaningful* when "
    "n < 3, when the subscale has fewer than 2 items (omega: 3), or when the {many} do not vary (the "
    "subscale score for alpha; any item for omega). {caveat} Weakest item: the lowest corrected item-total "
    "correlation (the item against the sum of the others)."
)


def explained(who: Respondents, *, seed: int, resamples: int) -> str:
    """The paragraph saying what the quality figures are and what n is."""
    return QUALITY_EXPLAINED.format(
        source=who.source, many=who.many, caveat=who.caveat, seed=seed, resamples=resamples
    )


def subscale_view(
    quality: pd.DataFrame, items: pd.DataFrame | None, keys: tuple[str, ...] = ()
) -> pd.DataFrame:
    """The report's table of alpha and omega per subscale (``keys``: the grouping columns shown first;
    the weakest item when ``items`` are given)."""
    rows = quality.to_dict("records")
    view = pd.DataFrame(
        {
            **{key: quality[key] for key in keys},
            "scale": quality["scale"],
            "subscale": quality["subscale"],
            "items": quality["items"],
            "n": quality["n"],
            "alpha [95% CI]": [
                _estimate(r["alpha"], r["alpha_ci_low"], r["alpha_ci_high"], r["alpha_note"]) for r in rows
            ],
            "omega [95% CI]": [
                _estimate(r["omega"], r["omega_ci_low"], r["omega_ci_high"], r["omega_note"]) for r in rows
            ],
        }
    )
    if items is not None:
        view["weakest item (r)"] = [
            _weakest_item(items, {k: r[k] for k in (*keys, "scale", "subscale")}) for r in rows
        ]
    return view


def scale_view(per_scale: pd.DataFrame, who: Respondents = RUNS, keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """The report's table of valid answers and acquiescence per scale."""
    return pd.DataFrame(
        {
            **{key: per_scale[key] for key in keys},
            "scale": per_scale["scale"],
            who.many: per_scale["runs"],
            "valid rate [95% CI]": [
                NOT_MEANINGFUL if math.isnan(rate) else f"{rate:.2f} [{low:.2f}, {high:.2f}]"
                for rate, low, high in zip(
                    per_scale["valid_rate"],
                    per_scale["valid_ci_low"],
                    per_scale["valid_ci_high"],
                    strict=True,
                )
            ],
            "reverse-keyed items": [f"{r.reverse_items} of {r.items}" for r in per_scale.itertuples()],
            "acquiescence (n)": [_acquiescence(r) for r in per_scale.itertuples()],
            "note": [r.acquiescence_note or "" for r in per_scale.itertuples()],
        }
    )


def quality_section(
    tables: dict[str, pd.DataFrame],
    *,
    seed: int,
    resamples: int,
    imported: bool = False,
    who: Respondents = RUNS,
    keys: tuple[str, ...] = (),
) -> str:
    """The report's "Psychometric quality" section (``keys``: grouping columns the tables carry, e.g. an
    EmotionBench condition)."""
    quality, items, per_scale = tables["quality"], tables["quality_items"], tables["quality_scales"]
    text = [explained(who, seed=seed, resamples=resamples)]
    if not quality.empty:
        text.append(table(subscale_view(quality, items, keys)))
    if not per_scale.empty:
        text.append(
            (
                "Valid answers: non-empty cells of the imported file, out of every item"
                if imported
                else "Valid answers: parsed, in range, not refused, out of every item asked"
            )
            + f", with a Wilson 95 % interval. Acquiescence: each {who.one}'s mean answer over all items "
            f"*before* reverse keying, minus the scale midpoint, then mean ± sd over {who.many} (positive: "
            "the model agrees more than the keys would balance out). It separates agreement from the trait "
            "only when the scale has reverse-keyed items."
        )
        text.append(table(scale_view(per_scale, who, keys)))
    text.append("Per item (mean, sd, item-total r, alpha if deleted): quality_items.csv.")
    return "\n\n".join(text)


def _acquiescence(row: Any) -> str:
    if math.isnan(row.acquiescence):
        return NOT_MEANINGFUL
    sd = "" if math.isnan(row.acquiescence_sd) else f" ± {row.acquiescence_sd:.2f}"
    return f"{row.acquiescence:+.2f}{sd} ({row.acquiescence_n}) around {row.midpoint:g}"


# -- several runs ------------------------------------------------------------------------------------
_QUALITY = ("scale", "subscale", "items", "n", "alpha", "alpha_ci_low", "alpha_ci_high", "omega")


def comparison_quality(models: dict[Path, str]) -> pd.DataFrame:
    """Each run's ``quality.csv`` (runs analysed before it existed are left out), with a ``model``
    column; a damaged file is a one-line error naming it."""
    parts = []
    for run_dir, label in models.items():
        path = run_dir / "quality.csv"
        if not path.is_file():
            continue
        frame = checked_csv(path, (*_QUALITY, "alpha_note", "omega_note"), _QUALITY[2:])
        if frame.duplicated(["scale", "subscale"]).any():
            raise DataError(f"{path}: a (scale, subscale) appears twice")
        frame.insert(0, "model", label)
        frame.insert(1, "run_dir", str(run_dir))
        parts.append(frame)
    if not parts:
        return pd.DataFrame(columns=["model", "run_dir", *_QUALITY, "alpha_note", "omega_note"])
    return pd.concat(parts, ignore_index=True)


def comparison_quality_section(quality: pd.DataFrame) -> str:
    """Alpha and omega of every run side by side: rows (scale, subscale), one column per model."""
    rows = []
    models = list(dict.fromkeys(quality["model"]))
    for (scale, subscale), part in quality.groupby(["scale", "subscale"], sort=False):
        row: dict[str, Any] = {"Scale": scale, "Subscale": subscale}
        for model in models:
            hit = part[part["model"] == model]
            if hit.empty:
                row[model] = "–"
                continue
            r = hit.iloc[0]
            row[model] = f"α {_figure(r['alpha'])} / ω {_figure(r['omega'])} (n {int(r['n'])})"
        rows.append(row)
    return (
        "Cronbach's alpha and McDonald's omega per subscale over each model's runs (n: runs with every item "
        "answered; intervals and item-level figures are in each run's report and quality.csv). "
        "Not meaningful: n < 3, fewer than 2 items, or runs that do not vary.\n\n" + table(pd.DataFrame(rows))
    )


def _figure(value: float) -> str:
    return NOT_MEANINGFUL if math.isnan(value) else f"{value:.2f}"


def grouped_quality_tables(
    scales: dict[str, Scale],
    answers: pd.DataFrame,
    valid: pd.DataFrame,
    keys: tuple[str, ...],
    *,
    column: str = "answer",
    seed: int = 0,
    who: Respondents = RUNS,
) -> dict[str, pd.DataFrame]:
    """:func:`quality_tables` of each group of administrations sharing the ``keys`` columns (groups in the
    order ``valid`` first lists them), the key columns first in every table."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for group, part in valid.groupby(list(keys), sort=False):
        values = group if isinstance(group, tuple) else (group,)
        match = pd.Series(True, index=answers.index)
        for key, value in zip(keys, values, strict=True):
            match &= answers[key] == value
        tables = quality_tables(scales, answers[match], part, column=column, seed=seed, who=who)
        for name, frame in tables.items():
            for i, (key, value) in enumerate(zip(keys, values, strict=True)):
                frame.insert(i, key, [value] * len(frame))
            parts.setdefault(name, []).append(frame)
    if not parts:
        empty = quality_tables({}, answers, valid, column=column, seed=seed, who=who)
        return {name: frame.reindex(columns=[*keys, *frame.columns]) for name, frame in empty.items()}
    return {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}
