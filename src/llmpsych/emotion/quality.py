"""Psychometric quality of an EmotionBench run's scale, per condition.

Every run is one administration of the scale. The default runs (no situation) are repeated
administrations under one condition: the respondents for internal consistency, like PsychoBench's runs.
Each factor's runs, pooled over its situations, are a second kind of condition: the situations move the
emotional state the items should track together, much as people differ in a study; one situation's runs
(five by default) differ only by sampling and are too few for a figure. n is given per row.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..instruments.quality import Respondents, grouped_quality_tables, quality_section, stored_answer
from ..instruments.scale import Scale
from ..stats.reliability import BOOTSTRAP_RESAMPLES

#: EmotionBench's respondents: its runs, grouped by condition.
EMOTION_RUNS = Respondents(
    source=(
        "Computed per condition from the runs in it: **default** is the runs without a situation "
        "(repeated administrations under one condition, the respondents for internal consistency), and "
        "each factor (e.g. *evoked: Anger-1*) pools its runs over all its situations"
    ),
    caveat=(
        "Repeated runs of one model are not a sample of people: these figures say whether the items move "
        "together across runs, not whether the scale measures the same emotions in the model as in people. "
        "In a factor the situations add real differences in state; in the default runs the only "
        "differences are sampling noise, so a low alpha there can mean stable answers as well as "
        "inconsistent items (see the item sd in quality_items.csv)."
    ),
)
KEYS = ("condition",)


def condition(result: dict[str, Any]) -> str:
    """``default``, or the run's kind and factor (``evoked: Anger-1``)."""
    kind = str(result.get("kind", ""))
    return kind if kind == "default" else f"{kind}: {result.get('factor', '')}"


def answer_frames(scale: Scale, results: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Item-level answers (condition, scale, run, item, answer) and valid counts (condition, scale, valid,
    items), one administration per stored result; a refused run has no valid answer. A stored answer that
    is not a number in the scale's range is one error naming the run."""
    answers, valid = [], []
    for number, result in enumerate(results):
        group = condition(result)
        where = f"{result.get('kind')} {result.get('factor', '')} situation {result.get('situation')}"
        given = {} if result.get("refused") else (result.get("answers") or {})
        kept = dict(
            stored_answer(scale, item, value, f"{where} run {result.get('run')}")
            for item, value in given.items()
            if value is not None
        )
        answers += [
            {"condition": group, "scale": scale.name, "run": number, "item": item, "answer": value}
            for item, value in kept.items()
        ]
        valid.append({"condition": group, "scale": scale.name, "valid": len(kept), "items": scale.n_items})
    return (
        pd.DataFrame(answers, columns=["condition", "scale", "run", "item", "answer"]),
        pd.DataFrame(valid, columns=["condition", "scale", "valid", "items"]),
    )


def emotion_quality(scale: Scale, results: list[dict[str, Any]], seed: int) -> dict[str, pd.DataFrame]:
    """``quality``, ``quality_items`` and ``quality_scales``, one block of rows per condition (default
    first)."""
    answers, valid = answer_frames(scale, results)
    order = {name: i for i, name in enumerate(dict.fromkeys(["default", *valid["condition"]]))}
    valid = valid.sort_values("condition", key=lambda c: c.map(order), kind="stable")
    return grouped_quality_tables({scale.name: scale}, answers, valid, KEYS, seed=seed, who=EMOTION_RUNS)


def emotion_quality_section(tables: dict[str, pd.DataFrame], seed: int) -> str:
    """The report's "Psychometric quality" section."""
    return quality_section(tables, seed=seed, resamples=BOOTSTRAP_RESAMPLES, who=EMOTION_RUNS, keys=KEYS)
