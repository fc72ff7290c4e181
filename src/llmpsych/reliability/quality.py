"""Psychometric quality of a perturbation grid run (an instrument's grid, or the BFI grid): per subscale
over every data point, and per level of each grid factor.

Each data point (configuration × repeat) is one administration of the scale: the respondents for
internal consistency. The configurations differ in template, item version, language, framing and persona,
so the pooled figures say whether the items hang together across all those prompts; the per-level figures
(e.g. alpha per language) show a level in which they stop doing so, such as a translation whose alpha
drops. n is given per row; a level with fewer than 3 complete data points is not meaningful.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from ..instruments.quality import (
    Respondents,
    grouped_quality_tables,
    quality_section,
    quality_tables,
    stored_answer,
    subscale_view,
)
from ..instruments.scale import Scale
from ..report.markdown import table
from ..runs.items import Administration, ScaleItems, Status
from ..runs.store import UnitRow
from ..stats.reliability import BOOTSTRAP_RESAMPLES
from .grid import GRID_FACTORS

#: The grid's respondents: its data points.
DATA_POINTS = Respondents(
    one="data point",
    source="Computed from the grid's data points (one per configuration and repeat)",
    caveat=(
        "Data points of one model are not a sample of people: these figures say whether the items move "
        "together across the grid's prompts, not whether the scale measures the same trait in the model as "
        "in people."
    ),
)
LEVEL_KEYS = ("factor", "level")


def answer_frames(
    units: list[UnitRow], scale: Scale, factors: Sequence[str] = GRID_FACTORS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Item-level answers on the scale's range (factor levels, scale, run, item, answer) and valid counts
    (factor levels, scale, valid, items), one data point per finished unit."""
    answers, valid = [], []
    for number, unit in enumerate(units):
        result = unit.result or {}
        levels = {f: (result.get("config") or {}).get(f) for f in factors}
        given = result.get("answers") or {}
        for item, value in given.items():
            index, answer = stored_answer(scale, item, value, f"unit {unit.unit_id}")
            answers.append({**levels, "scale": scale.name, "run": number, "item": index, "answer": answer})
        valid.append({**levels, "scale": scale.name, "valid": len(given), "items": scale.n_items})
    return (
        pd.DataFrame(answers, columns=[*factors, "scale", "run", "item", "answer"]),
        pd.DataFrame(valid, columns=[*factors, "scale", "valid", "items"]),
    )


def grid_quality(
    units: list[UnitRow], scale: Scale, seed: int, factors: Sequence[str] = GRID_FACTORS
) -> dict[str, pd.DataFrame]:
    """``quality``, ``quality_items`` and ``quality_scales`` over every data point, and
    ``quality_levels`` (factor, level, scale, subscale) for each factor with more than one level."""
    answers, valid = answer_frames(units, scale, factors)
    scales = {scale.name: scale}
    tables = quality_tables(scales, answers, valid, seed=seed, who=DATA_POINTS)
    parts = []
    for factor in factors:
        if valid[factor].nunique() < 2:
            continue
        by_level = grouped_quality_tables(
            scales,
            answers.assign(level=answers[factor]),
            valid.assign(level=valid[factor]),
            ("level",),
            seed=seed,
            who=DATA_POINTS,
        )
        parts.append(by_level["quality"].assign(factor=factor))
    if parts:
        levels = pd.concat(parts, ignore_index=True)
        tables["quality_levels"] = levels[[*LEVEL_KEYS, *levels.columns.drop(list(LEVEL_KEYS))]]
    return tables


def grid_quality_section(tables: dict[str, pd.DataFrame], seed: int) -> str:
    """The report's "Psychometric quality" section: all data points, then per factor level."""
    text = [quality_section(tables, seed=seed, resamples=BOOTSTRAP_RESAMPLES, who=DATA_POINTS)]
    levels = tables.get("quality_levels")
    if levels is not None and not levels.empty:
        text.append(
            "Per level of each factor with more than one level (the data points at that level; n per "
            "row; every figure in quality_levels.csv):\n\n" + table(subscale_view(levels, None, LEVEL_KEYS))
        )
    return "\n\n".join(text)


def grid_administrations(
    units: list[UnitRow], scale: Scale, left_out: Collection[str] = ()
) -> list[Administration]:
    """Each finished unit (a data point) as an administration of ``scale`` for the item-level long
    format, its template, language and persona as group columns; a unit in ``left_out`` (its reply
    followed the positions, not the statements) has every item ``invalid``."""
    shape = ScaleItems.of(scale)
    found = []
    for number, unit in enumerate(units, start=1):
        result = unit.result or {}
        levels = result.get("config") or {}
        groups = {f: str(levels[f]) for f in ("template", "language", "persona") if levels.get(f) is not None}
        if unit.unit_id in left_out:
            invalid: dict[int, Status] = dict.fromkeys(scale.item_indices, "invalid")
            found.append(Administration(shape, number, {}, invalid, groups))
            continue
        answers = dict(
            stored_answer(scale, item, value, f"unit {unit.unit_id}")
            for item, value in (result.get("answers") or {}).items()
            if value is not None
        )
        found.append(Administration(shape, number, answers, {}, groups))
    return found
