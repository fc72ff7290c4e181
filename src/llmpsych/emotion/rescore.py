"""Re-score a released EmotionBench run file into the papers' table (``emotionbench rescore``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..instruments.scale import Scale, ScoringError
from .changes import change_table, measures, score_answers, summary_json, table_json
from .released import ReleasedRun, infer_model, infer_scale, read_released_runs


def score_released(
    path: str | os.PathLike[str],
    scale: Scale,
    *,
    published: bool = True,
    alpha: float = 0.01,
) -> dict[str, Any]:
    """The default summary and the change table of a released file, as JSON.

    ``published`` (default ``True``: this is the authors' data) scores and tests as their code did;
    ``False`` applies the corrections (reverse keys, ×2 where the scale says, the plain F-test).

    ``{"default": {measure: {mean, sd, n}}, "factors": {...}, "emotions": {...}, "overall": {...}}`` with
    each cell ``{"change", "mark", "n", ...}``; ``measure`` is ``positive``/``negative`` for PANAS and
    ``total`` otherwise. Invalid runs (an answer missing, not a whole number, or outside the scale's
    range, e.g. 99 on a 1-5 scale) are left out and counted under ``invalid_runs`` (per group) and
    ``invalid_reasons``; ``invalid_examples`` names the first few by column and row.
    """
    names = measures(scale)
    runs = read_released_runs(path)
    default: dict[str, list[float]] = {m: [] for m in names}
    evoked: dict[str, dict[str, list[float]]] = {}
    invalid: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    examples: list[str] = []
    total: Counter[str] = Counter()
    for run in runs:
        total[run.group] += 1
        problem = run.problem if run.answers is None else _out_of_range(scale, run.answers)
        if run.answers is None or problem is not None:
            invalid[run.group] += 1
            reasons[_reason(problem)] += 1
            if len(examples) < 5:
                examples.append(f"{run.column}: {problem}")
            continue
        missing = scale.missing_items(run.answers)
        if missing:
            raise DataError(
                f"{path}: run {run.column} has no answer to item {missing[0]} of {scale.name}",
                "the file lists fewer statements than the scale has: is it cut short?",
            )
        scores = score_answers(scale, run.answers, published=published)
        target = default if run.group == "default" else evoked.setdefault(run.group, {m: [] for m in names})
        for m in names:
            target[m].append(scores[m])
    if not any(default.values()):
        why = (
            f" ({invalid['default']} invalid, e.g. {examples[0]})" if invalid["default"] and examples else ""
        )
        raise DataError(f"{path}: no valid default runs{why}")
    table = change_table(default, evoked, names, alpha=alpha, published=published)
    return {
        "file": Path(path).name,
        "model": infer_model(path),
        "scale": scale.name,
        "published": published,
        "alpha": alpha,
        "runs": sum(total.values()),
        "runs_per_group": dict(total),
        "invalid_runs": dict(invalid),
        "invalid_reasons": dict(reasons),
        "invalid_examples": examples,
        "positional": released_positional(runs),
        "default": {m: summary_json(default[m]) for m in names},
        **table_json(table),
    }


def released_positional(runs: list[ReleasedRun]) -> dict[str, Any]:
    """What can be said of positional replies (``docs/scales.md``) in a released file: its answers are
    stored by presented position, without the reply text, so a reply numbered 1, 2, 3, ... cannot be
    told from one that named the items; it would have been scored as the wrong items only in a run shown
    in a shuffled order. The 9 released gpt-3.5-turbo files show every run in the order 1..n (0 such
    runs)."""
    shuffled = sum(run.shuffled for run in runs)
    return {
        "runs": len(runs),
        "shuffled_runs": shuffled,
        "detectable": False,
        "note": (
            f"{shuffled} of {len(runs)} released runs were shown in a shuffled order; the file keeps answers "
            "by position without the reply text, so positional replies cannot be counted"
            + ("" if shuffled else ", and in the order 1..n position and item number agree")
        ),
    }


def summary_published(summary: dict[str, Any]) -> bool:
    """Whether a summary (``summary.json`` of a run, or :func:`score_released`) was scored published;
    summaries written before the ``published`` switch say ``scoring: paper|corrected`` instead."""
    if "published" in summary:
        return bool(summary["published"])
    return bool(summary.get("scoring", "paper") == "paper")


def _out_of_range(scale: Scale, answers: dict[int, int]) -> str | None:
    """The first answer the scale cannot have (an item it lacks, or a value outside its range)."""
    for item, value in answers.items():
        try:
            scale.check_answer(item, value)
        except ScoringError as exc:
            return str(exc)
    return None


def _reason(problem: str | None) -> str:
    text = problem or ""
    if "outside" in text:
        return "answer outside the scale's range"
    if "has no item" in text:
        return "answer to an item the scale does not have"
    if "missing" in text:
        return "answer missing"
    return "answer not a whole number"


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
