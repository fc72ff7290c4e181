"""People and models on the same items: does a scale have the same structure in a model as in people?

EmotionBench's PANAS (``panas_frame``): the 1,266 people of ``crowd.xlsx`` answered the 20 PANAS items
before and after imagining one situation; a model's released runs (``results/PANAS_Test/<model>-PANAS-
testing.csv``: its default runs, and its runs after each situation) answered the same items. Both are
read by EmotionBench's own readers (``emotion.crowd.load_crowd``, ``emotion.released.read_released_runs``)
and stacked into the item-level long format with ``source`` person/model and ``phase`` before/after.
``people_vs_models`` then tests, per phase, measurement invariance across ``source`` with PANAS's own two
subscales (Positive and Negative Affect) as the model.

Any other scale: an imported human sample (``psychobench import-answers``, ``source`` person) and model
runs of the same scale, through the same ``people_vs_models``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ..errors import DataError
from .invariance import InvarianceResult, measurement_invariance

PANAS_RELEASED = "results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"


def panas_frame(data_dir: Path | None = None, model_files: Sequence[Path] = ()) -> pd.DataFrame:
    """People (crowd.xlsx) and model runs (the released gpt-3.5-turbo file, or ``model_files``) on PANAS,
    in the long layout, with a ``phase`` column (before / after the situation) and ``factor``."""
    from ..data.sources import data_file
    from ..emotion.crowd import crowd_path, load_crowd
    from ..emotion.released import infer_model, read_released_runs
    from ..emotion.scales import load_scales

    panas = load_scales(data_dir)["PANAS"]
    subscale_of = {i: s.name for s in panas.subscales for i in s.item_indices}
    reverse = {item.index: item.reverse for item in panas.items}
    rows: list[dict[str, object]] = []

    def add(
        respondent: str, source: str, model: str, phase: str, factor: str, answers: dict[int, int] | None
    ) -> None:
        for item in panas.item_indices:
            value = None if answers is None else answers.get(item)
            rows.append(
                {
                    "respondent": respondent,
                    "source": source,
                    "model": model,
                    "persona": "",
                    "language": "",
                    "template": "",
                    "run": "",
                    "phase": phase,
                    "factor": factor,
                    "scale": panas.name,
                    "item": item,
                    "subscale": subscale_of.get(item, ""),
                    "reverse": reverse[item],
                    "response": math.nan if value is None else float(value),
                    "status": "missing" if value is None else "answered",
                    "min": float(panas.response_min),
                    "max": float(panas.response_max),
                }
            )

    for n, person in enumerate(load_crowd(crowd_path(data_dir), panas), start=1):
        add(f"person-{n}", "person", "", "before", person.factor, person.default)
        add(f"person-{n}", "person", "", "after", person.factor, person.evoked)
    files = list(model_files) or [data_file("EmotionBench", PANAS_RELEASED, data_dir)]
    for file in files:
        model = infer_model(file) or file.stem
        for run in read_released_runs(file):
            phase = "before" if run.group == "default" else "after"
            factor = "" if run.group == "default" else run.group
            who = f"{model}:{run.column}"
            add(who, "model", model, phase, factor, run.answers)
            if run.answers is None:
                for row in rows[-panas.n_items :]:
                    row["status"] = "invalid"
    return pd.DataFrame(rows)


def people_vs_models(
    frame: pd.DataFrame,
    *,
    scale: str | None = None,
    by: str = "source",
    split: str | None = "phase",
    min_n: int = 30,
    dif: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[str, InvarianceResult]]:
    """Invariance across people and models (``by``), separately for each value of ``split`` when the frame
    has that column (PANAS: before and after the situation)."""
    if "source" not in frame.columns:
        raise DataError("the item table has no source column (person / model)")
    sources = sorted(set(frame["source"].astype(str)) - {""})
    if by == "source" and not {"person", "model"} <= set(sources):
        raise DataError(
            "people and models are needed on the same items; the data hold only "
            + (", ".join(sources) or "neither"),
            hint="give an imported human sample (psychobench import-answers) and model runs",
        )
    parts: list[tuple[str, pd.DataFrame]]
    if split and split in frame.columns and frame[split].astype(str).ne("").any():
        parts = [
            (f"{split} {v}", frame[frame[split].astype(str) == v])
            for v in sorted(set(frame[split].astype(str)))
        ]
    else:
        parts = [("", frame)]
    out = []
    for name, part in parts:
        if progress is not None and name:
            progress(name)
        out.append(
            (name, measurement_invariance(part, by, scale=scale, min_n=min_n, dif=dif, progress=progress))
        )
    return out
