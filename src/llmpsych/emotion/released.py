"""The authors' released run files (``results/.../<model>-<scale>-testing.csv``), read as runs.

Layout (spec §8.1): for each item order ``k`` a ``question-k`` column (the prompt, then the presented
statements) and an ``order-k`` column (the item numbers in presented order); then one answer column per
run, ``General_test-t_order-k`` for the default runs and ``<Emotion>-<f>_scenario-<s>_test-t_order-k``
(``f`` and ``s`` 0-based) for the evoked runs. The first cell of an answer column is the situation line
(blank for default runs), the others the answers in presented order. A run with any missing or
non-numeric answer is kept as invalid (``answers=None``, the reason in ``problem``) so it is counted, not
silently dropped. An answer is a whole number written with ASCII digits (all 83,580 released answers
are): ``3.0``, ``2e5``, ``nan``, ``inf``, ``+3`` or ``٣`` make the run invalid. Two answer columns of the
same name, or an item listed twice in one order, are an error naming the file and the column.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError
from ..instruments.numbers import whole_number
from ..userfiles import MAX_DATA_FILE_BYTES, read_text
from .situations import factor_id

_DEFAULT = re.compile(r"^General_test-(?P<test>\d+)_order-(?P<order>\d+)$")
_EVOKED = re.compile(
    r"^(?P<emotion>[A-Za-z]+)-(?P<factor>\d+)_scenario-(?P<scenario>\d+)_test-(?P<test>\d+)"
    r"_order-(?P<order>\d+)$"
)
_NAME = re.compile(r"^(?P<model>.+)-(?P<scale>PANAS|AGQ|BDI|BFNE|DASS-21|FDS|FSS|GASP|MJS)-testing\.csv$")


@dataclass(frozen=True)
class ReleasedRun:
    """One run of a released file: ``group`` is ``"default"`` or a factor id such as ``Anger-1``."""

    group: str
    situation: int | None  # 0-based position among the factor's evaluated situations
    test: int
    order: int
    answers: dict[int, int] | None  # item number -> answer; None when the run is unparseable
    column: str = ""  # the answer column's header, to name the run in a message
    problem: str | None = None  # why ``answers`` is None
    shown: tuple[int, ...] = ()  # the item numbers in the order the statements were presented

    @property
    def shuffled(self) -> bool:
        """Whether the statements were shown in another order than 1, 2, ..., n (where a reply numbered
        by position would name other items than it answered; ``docs/scales.md``, "Positional replies")."""
        return self.shown != tuple(range(1, len(self.shown) + 1))

    @property
    def valid(self) -> bool:
        """Whether every item has a numeric answer."""
        return self.answers is not None


def infer_scale(path: str | os.PathLike[str]) -> str | None:
    """The scale named in a released file name (``gpt-3.5-turbo-PANAS-testing.csv`` -> ``PANAS``)."""
    match = _NAME.match(Path(path).name)
    return match.group("scale") if match else None


def infer_model(path: str | os.PathLike[str]) -> str | None:
    """The model named in a released file name."""
    match = _NAME.match(Path(path).name)
    return match.group("model") if match else None


def _answer(cell: str) -> int | None:
    return whole_number(cell)


def read_released_runs(path: str | os.PathLike[str]) -> list[ReleasedRun]:
    """Every run of a released testing CSV, in column order."""
    return list(iter_released_runs(path))


def iter_released_runs(path: str | os.PathLike[str]) -> Iterator[ReleasedRun]:
    """Like :func:`read_released_runs`, one run at a time."""
    file = Path(path)
    text = read_text(file, "released run file", MAX_DATA_FILE_BYTES, encoding="utf-8-sig")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise DataError(f"{file}: cannot read as UTF-8 CSV ({exc})") from None
    if len(rows) < 2:
        raise DataError(f"{file}: expected a header and at least one answer row")
    header, body = rows[0], rows[1:]
    orders: dict[int, list[int]] = {}
    for col, name in enumerate(header):
        if name.startswith("order-"):
            key = int(name.removeprefix("order-"))
            texts = [row[col].strip() for row in body[1:] if col < len(row) and row[col].strip()]
            numbers = [whole_number(i) for i in texts]
            if any(n is None for n in numbers):
                raise DataError(f"{file}: column {name} holds a non-numeric item number")
            if len(set(numbers)) != len(numbers):
                twice = next(n for n in numbers if numbers.count(n) > 1)
                raise DataError(f"{file}: column {name} lists item {twice} twice")
            orders[key] = [n for n in numbers if n is not None]
    if not orders:
        raise DataError(f"{file}: no order-k column; is this a released EmotionBench testing file?")
    found = False
    seen: set[str] = set()
    for col, name in enumerate(header):
        default, evoked = _DEFAULT.match(name), _EVOKED.match(name)
        match = default or evoked
        if match is None:
            continue
        if name in seen:
            raise DataError(
                f"{file}: answer column {name} appears twice (column {col + 1})", "give each run once"
            )
        seen.add(name)
        found = True
        order_key = int(match.group("order"))
        if order_key not in orders:
            raise DataError(f"{file}: column {name} refers to order-{order_key}, which is missing")
        ids = orders[order_key]
        cells = [row[col] if col < len(row) else "" for row in body]
        given = cells[1 : 1 + len(ids)]
        given += [""] * (len(ids) - len(given))  # a truncated file: the missing answers are blank
        values = [_answer(c) for c in given]
        bad = next((k for k, v in enumerate(values) if v is None), None)
        answers = (
            None if bad is not None else {i: v for i, v in zip(ids, values, strict=True) if v is not None}
        )
        problem = None
        if bad is not None:
            cell = given[bad].strip()
            what = f"{cell[:20]!r} is not a whole number" if cell else "is missing"
            problem = f"row {bad + 3}: the answer to item {ids[bad]} {what}"
        if evoked is not None:
            group = factor_id(evoked.group("emotion"), int(evoked.group("factor")) + 1)
            situation: int | None = int(evoked.group("scenario"))
        else:
            group, situation = "default", None
        yield ReleasedRun(
            group,
            situation,
            int(match.group("test")),
            order_key,
            answers,
            column=name,
            problem=problem,
            shown=tuple(ids),
        )
    if not found:
        raise DataError(f"{file}: no answer columns (General_test-… or <Emotion>-<f>_scenario-…)")
