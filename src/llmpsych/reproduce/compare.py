"""Each printed cell against its recomputation, with the cause of every difference."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .cells import STATUSES, Outcome, Recomputed, Status


def compare(recomputed: Iterable[Recomputed]) -> list[Outcome]:
    """Outcomes in the order given. A cell equal at its printed precision is reproduced (whatever cause
    is documented for it); a difference takes its documented cause; one without is unexplained."""
    out = []
    for r in recomputed:
        if r.value is not None and r.cell.equals(r.value):
            out.append(Outcome(r.cell, r.value, "reproduced", None))
            continue
        cause = r.cause
        status: Status = cause.kind if cause is not None else "unexplained"
        out.append(Outcome(r.cell, r.value, status, cause))
    return out


@dataclass
class Summary:
    """Counts of one table (or of all): printed cells and what each came to."""

    label: str
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def printed(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        c = self.counts
        parts = [f"{c['reproduced']:,} of {self.printed:,} printed cells reproduced"]
        named = (
            ("misprint", "misprint", "misprints"),
            ("convention", "convention", "conventions"),
            ("not-released", "not released", "not released"),
            ("not-in-data-dir", "not in the data folder", "not in the data folder"),
        )
        for status, one, many in named:
            if c[status]:
                parts.append(f"{c[status]:,} {one if c[status] == 1 else many}")
        parts.append(f"{c['unexplained']:,} unexplained")
        return f"{self.label}: " + "; ".join(parts)


def summarize(outcomes: Sequence[Outcome], label: str = "total") -> Summary:
    summary = Summary(label)
    for status in STATUSES:
        summary.counts[status] = 0
    summary.counts.update(o.status for o in outcomes)
    return summary
