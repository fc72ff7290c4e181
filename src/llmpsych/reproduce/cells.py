"""Printed cells, their recomputation and the cause of a difference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: What a printed cell came to: reproduced, or a difference with a documented cause, or unexplained.
Status = Literal["reproduced", "misprint", "convention", "not-released", "not-in-data-dir", "unexplained"]
CauseKind = Literal["misprint", "convention", "not-released", "not-in-data-dir"]
STATUSES: tuple[Status, ...] = (
    "reproduced",
    "misprint",
    "convention",
    "not-released",
    "not-in-data-dir",
    "unexplained",
)


def decimals(text: str) -> int:
    """Digits after the decimal point of a printed number (``"41.4"`` -> 1, ``"-21.44"`` -> 2)."""
    return len(text.split(".", 1)[1]) if "." in text else 0


@dataclass(frozen=True)
class PrintedCell:
    """One number as the thesis or paper printed it, with where it is printed.

    ``printed`` keeps the printed text, so its precision is the printed one (``"0.50"`` is two decimals).
    ``citation`` is a seed line (``000:2955``) or a table and source (``thesis Table 6.8``)."""

    system: str
    table: str
    row: str
    column: str
    printed: str
    citation: str

    @property
    def value(self) -> float:
        return float(self.printed)

    @property
    def decimals(self) -> int:
        return decimals(self.printed)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.system, self.table, self.row, self.column)

    def equals(self, recomputed: float) -> bool:
        """The recomputed value rounds to the printed one at the printed precision (ties either way)."""
        half = 0.5 * 10.0**-self.decimals
        return abs(recomputed - self.value) <= half + 1e-9


def printed(value: float, places: int) -> str:
    """A number stored as a float (``41.4``) as printed with ``places`` decimals."""
    return f"{value:.{places}f}"


@dataclass(frozen=True)
class Cause:
    """Why a recomputed cell differs from the printed one (or has no recomputation).

    ``switch``: for a convention, the option that reproduces the printed value."""

    kind: CauseKind
    note: str
    switch: str | None = None


@dataclass(frozen=True)
class Recomputed:
    """A reproducer's answer for one printed cell: the recomputed value (None: the data do not give it)
    and, when the reproducer knows it, the cause of its absence or difference."""

    cell: PrintedCell
    value: float | None
    cause: Cause | None = None


@dataclass(frozen=True)
class Outcome:
    """A printed cell compared with its recomputation."""

    cell: PrintedCell
    recomputed: float | None
    status: Status
    cause: Cause | None

    @property
    def equal(self) -> bool:
        return self.status == "reproduced"

    def describe(self) -> str:
        c = self.cell
        got = "none" if self.recomputed is None else f"{self.recomputed:.{c.decimals + 2}f}"
        why = f" [{self.status}: {self.cause.note}]" if self.cause is not None else f" [{self.status}]"
        return (
            f"{c.system} {c.table} | {c.row} | {c.column}: printed {c.printed} ({c.citation}), "
            f"llmpsych {got}{why}"
        )
