"""Where a task's analysis keeps its scores: each task names its tables in ``Task.score_tables`` (a tuple of
:class:`ScoreTable`), and :func:`llmpsych.load_runs` reads them into one long ``scores`` frame.

A long table has one score per row; a wide table has one column per measure. Columns the file does not hold
as such (a configuration id, a repeat counted from 1) are derived by the table's ``prepare`` function, which
the task's own package supplies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DataError

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is read: a mistaken command line is refused without it

    from .record import RunRecord

Prepare = Callable[["pd.DataFrame", Path, "RunRecord"], "pd.DataFrame"]


@dataclass(frozen=True)
class ScoreTable:
    """One table a task's analysis writes into the run folder, and which of its columns mean what.

    A long table has one score per row in ``value``, its measure in column ``measure`` (``None``: the
    measure is ``value``'s own name). A wide table gives ``keys``, its columns that are not scores: every
    other column is one measure. ``factors`` (a perturbation grid's template, language, persona, ...) are
    copied into same-named columns of the scores frame (:meth:`Task.score_factor_columns
    <llmpsych.runs.task.Task.score_factor_columns>`).
    ``prepare`` derives columns the file does not hold as such (a configuration id, a repeat from the
    store) before any of this; it raises :class:`DataError` naming the file.

    ``range`` says what every score of the table is on (``"1-5"``: means of 1-5 answers, ``"0-100"``: a
    GAMA-Bench score), taken from the scale's or game's own definition (:func:`range_text`), never from
    the values; a table whose rows differ gets a ``range`` column from ``prepare`` instead. Without
    either, the rows' ``range`` is empty: not declared."""

    file: str
    group: str | None
    repeat: str | None
    item: str | None = None
    measure: str | None = None
    value: str = "score"
    keys: tuple[str, ...] | None = None
    factors: tuple[str, ...] = ()
    prepare: Prepare | None = None
    range: str | None = None


def range_text(low: float, high: float) -> str:
    """A score range as the ``range`` column shows it: ``1-5``, ``0-100``, ``4-20``."""
    return f"{low:g}-{high:g}"


def require_columns(table: pd.DataFrame, path: Path, columns: Iterable[str]) -> None:
    """DataError naming the file and the first of ``columns`` it lacks."""
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise DataError(f"{path}: no column {absent[0]!r}", "re-run `llmpsych analyze RUN_DIR`")


def whole_numbers(values: pd.Series, path: Path, column: str) -> pd.Series:
    """``values`` as whole numbers; DataError naming the file at the first that is not one."""
    import pandas as pd

    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() | (numbers != numbers.round())
    if bad.any():
        shown = str(values[bad].iloc[0])[:20]
        raise DataError(f"{path}: {column} {shown!r} is not a whole number")
    return numbers.astype(int)


__all__ = ["Prepare", "ScoreTable", "range_text", "require_columns", "whole_numbers"]
