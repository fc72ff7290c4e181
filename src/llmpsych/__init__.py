"""llmpsych: behavioural-science measurement of large language models.

The public names below are imported on first use, so ``import llmpsych`` (and ``llmpsych --help``) stays
cheap: ``llmpsych.load_runs(...)`` imports pandas only when it is called."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

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


def __getattr__(name: str) -> Any:
    """Import a public name from its module the first time it is asked for."""
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
