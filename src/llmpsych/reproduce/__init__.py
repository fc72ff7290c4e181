"""``llmpsych reproduce``: the published tables recomputed from the authors' released data.

Each printed number is a :class:`~llmpsych.reproduce.cells.PrintedCell` with its citation; each
published table has a reproducer (:mod:`llmpsych.reproduce.registry`) that recomputes its cells with the
library's own code from the released data; :func:`~llmpsych.reproduce.compare.compare` decides, cell by
cell, whether the recomputation equals the printed value at its printed precision and, where it does
not, gives the documented cause (a misprint, a convention and the switch that reproduces it, data not
released) or calls the difference unexplained. See ``docs/reproduce.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import first_use

if TYPE_CHECKING:
    from .cells import Cause, Outcome, PrintedCell, Recomputed
    from .compare import Summary, compare, summarize

#: public name -> the module defining it, imported on first use: ``llmpsych run`` imports the
#: ``reproduce`` command's module (its signature), not the tables' machinery
_WHERE = {
    "Cause": "cells",
    "Outcome": "cells",
    "PrintedCell": "cells",
    "Recomputed": "cells",
    "Summary": "compare",
    "compare": "compare",
    "summarize": "compare",
}

__all__ = ["Cause", "Outcome", "PrintedCell", "Recomputed", "Summary", "compare", "summarize"]


__getattr__ = first_use(__name__, _WHERE)
