"""Re-score a released EmotionBench run file into the papers' table (``emotionbench rescore``).

Three ways to score, which differ only for scales with reverse-keyed items or a doubled sum (AGQ, BFNE,
DASS-21 of the released ones; PANAS and the other five give the same numbers under the first two):

* **published** (``published=True``, the default for released data): the numbers the thesis prints
  (Tables 5.7 and 5.15): plain sums of the raw answers, no reverse keys, no ×2, with the original code's
  F-test details. This is *not* what the authors' code computes for AGQ, BFNE and DASS-21: their printed
  defaults (128.3, 39.0, 32.5) are plain sums, while their ``run_emotionbench.py`` reverse-keys AGQ
  items 7, 18 and BFNE items 2, 4, 7, 10 and doubles DASS-21 (117.3, 42.2, 65.0 on the same answers).
* **authors' code** (``authors_code=True``): what ``run_emotionbench.py`` computes: reverse keys and the
  scale's own mode (``SUM*2`` for DASS-21), with the same original F-test details.
* **corrected** (``published=False``): reverse keys and the scale's mode, with the plain F-test.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError
from ..instruments.scale import Scale, ScoringError
from .changes import change_table, measures, score_answers, summary_json, table_json
from .released import ReleasedRun, infer_model, infer_scale, read_released_runs


def score_released(
    path: str | os.PathLike[str],
    scale: Scale,
    *,
    published: bool = True,
    authors_code: bool = False,
    alpha: float = 0.01,
) -> dict[str, Any]:
    """The default summary and the change table of a released file, as JSON.

    ``published`` (default ``True``: this is the authors' data) gives the thesis's printed numbers (plain
    sums, the original F-test details); ``authors_code`` the combination of the authors' code (reverse
    keys and ×2 where the scale says, the original F-test details; needs ``published``); ``published=False``
    applies the corrections (reverse keys, ×2 where the scale says, the plain F-test). See the module
    docstring; ``scoring`` in the result names the one used.

    ``{"default": {measure: {mean, sd, n}}, "factors": {...}, "emotions": {...}, "overall": {...}}`` with
    each cell ``{"change", "mark", "n", ...}``; ``measure`` is ``positive``/``negative`` for PANAS and
    ``total`` otherwise. Invalid runs (an answer missing, not a whole number, or outside the scale's
    range, e.g. 99 on a 1-5 scale) are left out and counted under ``invalid_runs`` (per group) and
    ``invalid_reasons``; ``invalid_examples`` names the first few by column and row. ``missing``: the
    factors, situations and runs of the released design the file lacks (:func:`design_gaps`), so a file
    with columns removed is never re-scored as if it were whole.
    """
    if authors_code and not published:
        raise ConfigError("--authors-code and --corrected are two different scorings", "choose one of them")
    keyed = authors_code or not published  # reverse keys and the scale's mode (x2 for DASS-21)
    names = measures(scale)
    runs = read_released_runs(path)
    default: dict[str, list[float]] = {m: [] for m in names}
    evoked: dict[str, dict[str, list[float]]] = {}
    invalid: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    examples: list[str] = []
    total: Counter[str] = Counter()
    gaps = design_gaps(scale, runs)
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
        scores = score_answers(scale, run.answers, published=not keyed)
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
        "scoring": scoring_name(published, authors_code),
        "alpha": alpha,
        "runs": sum(total.values()),
        "runs_per_group": dict(total),
        "invalid_runs": dict(invalid),
        "invalid_reasons": dict(reasons),
        "invalid_examples": examples,
        "missing": gaps,
        "positional": released_positional(runs),
        "default": {m: summary_json(default[m]) for m in names},
        **table_json(table),
    }


def scoring_name(published: bool, authors_code: bool = False) -> str:
    """``published``, ``authors-code`` or ``corrected`` (see the module docstring)."""
    return "authors-code" if authors_code else "published" if published else "corrected"


#: Situations the authors evaluated per factor (``scenario-0`` … ``scenario-4``; fewer where the factor
#: has fewer situations: Jealousy-3 has 2, Jealousy-4 3).
RELEASED_SITUATIONS = 5


def design_gaps(scale: Scale, runs: Sequence[ReleasedRun]) -> list[str]:
    """What the released design asks for and ``runs`` lack, one line each (empty when complete).

    The design is the authors' grid: every factor of the scale's emotion (all 36 factors for PANAS,
    :data:`~llmpsych.emotion.situations.EXPECTED_COUNTS`), each with its first
    :data:`RELEASED_SITUATIONS` situations (or all, if fewer), each run as many times as the file's
    evoked runs are (their largest ``test`` number + 1), and as many default runs as the default runs'
    largest ``test`` number + 1. A factor, a situation or a
    run the file does not have is named with the runs it has, e.g. ``factor Anger-3: 0 of 50 runs``;
    the table's n are then smaller than the design's."""
    from .situations import EMOTIONS, EXPECTED_COUNTS, factor_id
    from .task import SCALE_EMOTION

    if not runs:
        return []
    # runs per situation, and default runs, as many as the file's largest test number says (the released
    # PANAS file has 50 default runs and 10 per situation)
    tests = max((r.test for r in runs if r.group != "default"), default=-1) + 1
    default_tests = max((r.test for r in runs if r.group == "default"), default=-1) + 1
    emotion = SCALE_EMOTION.get(scale.name)
    emotions = [emotion] if emotion else list(EMOTIONS)
    have: Counter[tuple[str, int | None]] = Counter((r.group, r.situation) for r in runs)
    gaps = []
    defaults = have[("default", None)]
    if defaults < default_tests:
        gaps.append(f"default: {defaults} of {default_tests} runs")
    for name in emotions:
        for k, count in enumerate(EXPECTED_COUNTS[name], start=1):
            factor = factor_id(name, k)
            situations = min(count, RELEASED_SITUATIONS)
            got = sum(have[(factor, s)] for s in range(situations))
            if got >= situations * tests:
                continue
            short = [s + 1 for s in range(situations) if have[(factor, s)] < tests]
            where = "" if got == 0 else f" (situation {', '.join(map(str, short))} short)"
            gaps.append(f"factor {factor}: {got} of {situations * tests} runs{where}")
    return gaps


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
