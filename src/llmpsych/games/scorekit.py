"""What every game's scorer shares: the scoring versions and the checks a log must pass.

A game's own 0-100 formula lives in its module (e.g. :func:`llmpsych.games.guessing.guessing_score`);
:func:`llmpsych.games.scoring.score` dispatches to it through the registry.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

ScoringVersion = Literal["thesis", "arxiv_v4"]
VERSIONS: tuple[ScoringVersion, ...] = ("thesis", "arxiv_v4")


def check_version(version: str) -> None:
    """A ValueError unless ``version`` is one of :data:`VERSIONS`."""
    if version not in VERSIONS:
        raise ValueError(f"unknown scoring version {version!r} (use one of {', '.join(VERSIONS)})")


def every_round(table: Sequence[Sequence[object]], what: str) -> None:
    """A ValueError unless there is a round and every round has at least one player."""
    if not table or any(len(row) == 0 for row in table):
        raise ValueError(f"no {what} to score: every round needs at least one player")


def finite(
    table: Sequence[Sequence[float]], what: str, low: float | None = 0.0, high: float | None = None
) -> None:
    """Every value a finite number within [low, high] (a NaN would make the score NaN, an infinity or a
    negative bid any value at all)."""
    for j, row in enumerate(table, 1):
        for i, value in enumerate(row, 1):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"round {j} player {i}: {what} {value!r} is not a finite number")
            if (low is not None and value < low) or (high is not None and value > high):
                where = "negative" if high is None else f"outside {low:g}-{high:g}"
                raise ValueError(f"round {j} player {i}: {what} {value:g} is {where}")


def mean(values: Sequence[float]) -> float:
    """The exact mean (math.fsum) of a non-empty sequence."""
    return math.fsum(values) / len(values)


def above_bound(rows: Iterable[tuple[int, int, float, float, str]]) -> list[str]:
    """``"round J player I: WHAT VALUE > BOUND"`` for each ``(j, i, value, bound, what)`` above its bound."""
    return [
        f"round {j} player {i}: {what} {value:g} > {bound:g}"
        for j, i, value, bound, what in rows
        if value > bound
    ]
