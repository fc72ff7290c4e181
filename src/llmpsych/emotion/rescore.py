"""Re-score a released EmotionBench run file into the papers' table (``emotionbench score-results``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..instruments.scale import Scale
from .changes import Scoring, change_table, measures, score_answers, summary_json, table_json
from .released import infer_model, infer_scale, read_released_runs


def score_released(
    path: str | os.PathLike[str],
    scale: Scale,
    *,
    scoring: Scoring = "paper",
    alpha: float = 0.01,
    published: bool = True,
) -> dict[str, Any]:
    """The default summary and the change table of a released file, as JSON.

    ``{"default": {measure: {mean, sd, n}}, "factors": {...}, "emotions": {...}, "overall": {...}}`` with
    each cell ``{"change", "mark", "n", ...}``; ``measure`` is ``positive``/``negative`` for PANAS and
    ``total`` otherwise. Invalid (unparseable) runs are skipped and counted under ``invalid_runs``.
    """
    names = measures(scale)
    runs = read_released_runs(path)
    default: dict[str, list[float]] = {m: [] for m in names}
    evoked: dict[str, dict[str, list[float]]] = {}
    invalid: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for run in runs:
        total[run.group] += 1
        if run.answers is None:
            invalid[run.group] += 1
            continue
        missing = scale.missing_items(run.answers)
        if missing:
            raise DataError(f"{path}: a {run.group} run has no answer to item {missing[0]} of {scale.name}")
        scores = score_answers(scale, run.answers, scoring)
        target = default if run.group == "default" else evoked.setdefault(run.group, {m: [] for m in names})
        for m in names:
            target[m].append(scores[m])
    if not any(default.values()):
        raise DataError(f"{path}: no valid default runs")
    table = change_table(default, evoked, names, alpha=alpha, published=published)
    return {
        "file": Path(path).name,
        "model": infer_model(path),
        "scale": scale.name,
        "scoring": scoring,
        "alpha": alpha,
        "published_procedure": published,
        "runs": sum(total.values()),
        "invalid_runs": dict(invalid),
        "default": {m: summary_json(default[m]) for m in names},
        **table_json(table),
    }


def scale_for_file(path: str | os.PathLike[str], scales: dict[str, Scale], name: str | None) -> Scale:
    """The scale to score ``path`` with: ``name`` if given, else the one in the file name."""
    if not Path(path).is_file():
        raise DataError(f"{path}: file not found")
    wanted = name or infer_scale(path)
    if wanted is None:
        raise DataError(
            f"{Path(path).name}: cannot tell the scale from the file name", "pass --scale PANAS|AGQ|..."
        )
    for key, scale in scales.items():
        if key.lower() == wanted.lower():
            return scale
    raise DataError(f"unknown EmotionBench scale {wanted!r} (available: {', '.join(scales)})")
