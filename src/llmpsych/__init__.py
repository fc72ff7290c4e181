"""llmpsych: behavioural-science measurement of large language models.

The public names below are imported on first use, so ``import llmpsych`` (and ``llmpsych --help``) stays
cheap: ``llmpsych.load_runs(...)`` imports pandas only when it is called."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .lazy import first_use

if TYPE_CHECKING:
    from .runs.frames import RunFrames, load_runs
    from .runs.record import RunRecord, read_run

#: public name -> the module defining it
_WHERE: dict[str, str] = {
    "RunFrames": "runs.frames",
    "load_runs": "runs.frames",
    "RunRecord": "runs.record",
    "read_run": "runs.record",
}

__all__ = ["RunFrames", "RunRecord", "__version__", "load_runs", "read_run"]


__getattr__ = first_use(__name__, _WHERE)
