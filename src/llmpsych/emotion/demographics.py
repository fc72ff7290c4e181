"""The human subjects by demographic group: n, PANAS before and after the situation, per group.

The thesis (Huang, Ch. 5, 000:1827-1839; V1 appendix B, 001:4358-4380) asks every respondent five
questions first (year of birth, gender, country, employment, education) and plots, per group of each, the
number of people and the group's average PANAS positive and negative affect before and after imagining
the situation (Figs. 5.3-5.7). The figures are images: the text prints no per-group number, only the total
of 1,266 responses (000:1819), so the per-group values here are recomputed from ``crowd.xlsx`` and the
tests check the total, the five groupings and the pooled row against the human table.

Grouping:

* ``age``: survey year (2023, the year of the crowd study; ``survey_year``) minus the year of birth, in
  the bands 18-24, 25-34, 35-44, 45-54, 55-64, 65+ (and "under 18" should a file hold one). A year of
  birth must be a whole number between 1900 and the survey year; anything else is a ``DataError`` naming
  the sheet cell, a blank one is "(no answer)".
* ``gender``, ``employment``, ``education``: the answer as written.
* ``region``: the country answered ("Which country are you from?"); the file has no coarser region.

Answers are shown, never interpreted: whitespace and control characters collapse to one space, and an
answer longer than 60 characters is cut (an edited file cannot break a table row or a console line).

Statistics per group and affect: each respondent's evoked minus own default, with the paired t-test at
alpha (:func:`~llmpsych.emotion.crowd.paired_cell`, as for the human table). A group with fewer than
``min_n`` = 34 people is flagged *small*: 34 is the per-factor minimum the authors' power analysis asks
for (Cohen's d = 0.5, alpha 0.05, power 0.8; 000:1819), so a small group's marks are weak evidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ..instruments.numbers import whole_number
from ..instruments.scale import Scale
from ..stats import format_mean_sd
from .changes import score_answers
from .crowd import PairedCell, Respondent, paired_cell

#: The five groupings of the thesis's Figs. 5.3-5.7, in its order.
DIMENSIONS: tuple[str, ...] = ("age", "gender", "region", "education", "employment")
#: The ``crowd.xlsx`` answer each grouping reads (see :func:`~llmpsych.emotion.crowd.load_crowd`).
SOURCE_KEY = {
    "age": "year_of_birth",
    "gender": "gender",
    "region": "country",
    "education": "education",
    "employment": "employment",
}
#: Minimum responses per group for the authors' power target (d = 0.5, alpha 0.05, power 0.8; 000:1819).
MIN_GROUP_N = 34
#: The crowd study ran in 2023 (V1 paper); age = survey year - year of birth, so within a year.
SURVEY_YEAR = 2023
AGE_BANDS: tuple[tuple[str, int, int | None], ...] = (
    ("18-24", 18, 24),
    ("25-34", 25, 34),
    ("35-44", 35, 44),
    ("45-54", 45, 54),
    ("55-64", 55, 64),
    ("65+", 65, None),
)
NO_ANSWER = "(no answer)"
ALL = "All respondents"
_MAX_LABEL = 60
_EARLIEST_BIRTH = 1900
#: Natural orders where the answers have one (others follow by size, then name).
_ORDER = {
    "age": ["under 18", *(band[0] for band in AGE_BANDS)],
    "education": [
        "None",
        "Primary school",
        "Lower secondary school",
        "Upper secondary school",
        "University - Bachelors",
        "University - Masters",
        "University - Doctorate",
    ],
    "employment": ["Student", "Employed", "Unemployed", "Retired"],
}
_SPACE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


def clean_label(value: object) -> str:
    """An answer as a one-line label: control characters and runs of whitespace become one space, at most
    60 characters; blank or missing is "(no answer)"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NO_ANSWER
    text = _SPACE.sub(" ", str(value)).strip()
    if not text:
        return NO_ANSWER
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def age_band(age: int) -> str:
    """The band of an age in whole years (``"25-34"``)."""
    for label, low, high in AGE_BANDS:
        if age >= low and (high is None or age <= high):
            return label
    return "under 18"


def group_of(person: Respondent, by: str, survey_year: int = SURVEY_YEAR) -> str:
    """The group of ``person`` under grouping ``by`` (one of :data:`DIMENSIONS`)."""
    if by not in SOURCE_KEY:
        raise DataError(f"unknown grouping {by!r}", f"use one of {', '.join(DIMENSIONS)}")
    key = SOURCE_KEY[by]
    value = person.info.get(key)
    if by != "age":
        return clean_label(value)
    if clean_label(value) == NO_ANSWER:
        return NO_ANSWER
    where = person.info_cells.get(key, f"respondent {person.factor}/S{person.situation}")
    year = whole_number(value)
    if year is None and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        year = int(value)
    if year is None:
        raise DataError(f"{where}: year of birth {str(value)[:20]!r} is not a whole number")
    if not _EARLIEST_BIRTH <= year <= survey_year:
        raise DataError(f"{where}: year of birth {year} is outside {_EARLIEST_BIRTH}-{survey_year}")
    return age_band(survey_year - year)


@dataclass(frozen=True)
class GroupRow:
    """One group: its label, the people in it, and the paired PA and NA cells."""

    group: str
    people: int
    positive: PairedCell
    negative: PairedCell
    small: bool

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (``NaN`` as ``None``)."""
        return {
            "group": self.group,
            "people": self.people,
            "small": self.small,
            "positive": self.positive.to_json(),
            "negative": self.negative.to_json(),
        }


def _sort_key(by: str, counts: dict[str, int]) -> Any:
    order = {label: i for i, label in enumerate(_ORDER.get(by, []))}

    def key(label: str) -> tuple[int, int, int, str]:
        last = label == NO_ANSWER
        return (int(last), order.get(label, len(order)), -counts[label], label.lower())

    return key


def group_table(
    people: Sequence[Respondent],
    panas: Scale,
    by: str,
    *,
    alpha: float = 0.01,
    min_n: int = MIN_GROUP_N,
    survey_year: int = SURVEY_YEAR,
) -> list[GroupRow]:
    """One row per group of ``by`` (natural order, then by size), then a row pooling everyone.

    ``people`` counts everyone in the group; each cell's ``n`` counts those with complete PANAS answers
    before and after (a respondent with a blank item leaves that cell only).
    """
    scored = [
        (
            group_of(p, by, survey_year),
            score_answers(panas, p.default, published=True),
            score_answers(panas, p.evoked, published=True),
        )
        for p in people
    ]
    counts: dict[str, int] = {}
    for label, _, _ in scored:
        counts[label] = counts.get(label, 0) + 1

    def row(label: str, chosen: list[tuple[str, dict[str, float], dict[str, float]]]) -> GroupRow:
        cells = {
            m: paired_cell([c[1][m] for c in chosen], [c[2][m] for c in chosen], alpha)
            for m in ("positive", "negative")
        }
        return GroupRow(label, len(chosen), cells["positive"], cells["negative"], len(chosen) < min_n)

    rows = [
        row(label, [s for s in scored if s[0] == label])
        for label in sorted(counts, key=_sort_key(by, counts))
    ]
    rows.append(row(ALL, scored))
    return rows


def demographic_counts(
    people: Sequence[Respondent], survey_year: int = SURVEY_YEAR
) -> dict[str, dict[str, int]]:
    """People per group for each of the five groupings (in the tables' order)."""
    out: dict[str, dict[str, int]] = {}
    for by in DIMENSIONS:
        counts: dict[str, int] = {}
        for person in people:
            label = group_of(person, by, survey_year)
            counts[label] = counts.get(label, 0) + 1
        out[by] = {label: counts[label] for label in sorted(counts, key=_sort_key(by, counts))}
    return out


def _change(cell: PairedCell) -> str:
    if math.isnan(cell.change):
        return "n/a"
    return f"{cell.mark if cell.n >= 2 else 'no test'} ({cell.change:+.1f})"


def group_frame(rows: Sequence[GroupRow], by: str) -> pd.DataFrame:
    """The table as printed: group, n, PA and NA before and after (M ± SD), paired changes, small flag."""
    records = []
    for r in rows:
        p, n = r.positive, r.negative
        records.append(
            {
                by: r.group,
                "n": r.people,
                "PA before": format_mean_sd(p.default_mean, p.default_sd),
                "PA after": format_mean_sd(p.evoked_mean, p.evoked_sd),
                "NA before": format_mean_sd(n.default_mean, n.default_sd),
                "NA after": format_mean_sd(n.evoked_mean, n.evoked_sd),
                "ΔPA (paired)": _change(p),
                "ΔNA (paired)": _change(n),
                "small": "yes" if r.small else "",
            }
        )
    return pd.DataFrame(records)


def group_csv_frame(rows: Sequence[GroupRow], by: str) -> pd.DataFrame:
    """The table as numbers (one column per statistic), for CSV and pandas."""
    records = []
    for r in rows:
        record: dict[str, Any] = {"grouping": by, "group": r.group, "people": r.people, "small": r.small}
        for name, cell in (("pa", r.positive), ("na", r.negative)):
            record |= {
                f"{name}_n": cell.n,
                f"{name}_before_mean": cell.default_mean,
                f"{name}_before_sd": cell.default_sd,
                f"{name}_after_mean": cell.evoked_mean,
                f"{name}_after_sd": cell.evoked_sd,
                f"{name}_change": cell.change,
                f"{name}_mark": cell.mark,
                f"{name}_p": cell.p_value,
                f"{name}_dz": cell.dz,
            }
        records.append(record)
    return pd.DataFrame(records)


def markdown_cell(text: object) -> str:
    """A value safe inside a Markdown table cell (``|`` escaped)."""
    return str(text).replace("|", "\\|")


def group_markdown(rows: Sequence[GroupRow], by: str, min_n: int = MIN_GROUP_N) -> str:
    """The Markdown table with a note saying what n is and what *small* means."""
    frame = group_frame(rows, by).map(markdown_cell)
    note = (
        f"n = people in the group (each answered PANAS before and after one situation). small: n < {min_n} "
        "(the authors' power analysis asks for 34 responses per factor: d = 0.5, alpha 0.05, power 0.8), so "
        "its marks are weak evidence. Changes: after − before, paired t-test (↑/↓ p ≤ alpha, — otherwise)."
    )
    return f"{frame.to_markdown(index=False)}\n\n{note}"


def group_chart(rows: Sequence[GroupRow], by: str, path: Path, min_n: int = MIN_GROUP_N) -> Path | None:
    """Grouped bars per group: PA and NA before and after (mean ± sd); labels carry n, small groups a "*".

    Returns ``None`` without matplotlib.
    """
    from ..report.charts import grouped_bar_chart

    labels = [f"{r.group} (n={r.people}){' *' if r.small else ''}" for r in rows]

    def bars(attr_mean: str, attr_sd: str, measure: str) -> list[tuple[float, float] | None]:
        out: list[tuple[float, float] | None] = []
        for r in rows:
            cell = getattr(r, measure)
            mean = getattr(cell, attr_mean)
            out.append(None if math.isnan(mean) else (mean, getattr(cell, attr_sd)))
        return out

    series = {
        "PA before": bars("default_mean", "default_sd", "positive"),
        "PA after": bars("evoked_mean", "evoked_sd", "positive"),
        "NA before": bars("default_mean", "default_sd", "negative"),
        "NA after": bars("evoked_mean", "evoked_sd", "negative"),
    }
    small = any(r.small for r in rows)
    title = f"Humans by {by}: PANAS before / after the situation (mean ± sd)"
    if small:
        title += f"\n* n < {min_n}: small group"
    return grouped_bar_chart(labels, series, path, title, ylim=(0, 55))
