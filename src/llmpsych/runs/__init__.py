"""Run engine: config, manifest, work units, SQLite store, concurrent execution and resume.

Names are imported on first use, so importing the package (e.g. for ``--help``) stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import first_use

if TYPE_CHECKING:
    from .calls import (
        StoredCall,
    )
    from .config import (
        RunConfig,
        parse_run_config,
    )
    from .context import (
        UnitContext,
    )
    from .frames import (
        RunFrames,
        load_runs,
    )
    from .record import (
        Calls,
        RunRecord,
        read_run,
    )
    from .runner import (
        RunOutcome,
        analyze_run,
        resume_run,
        start_run,
    )
    from .store import (
        RunStore,
    )
    from .task import (
        Task,
        WorkUnit,
        load_run_config,
        register_task,
    )

#: public name -> the submodule defining it
_WHERE: dict[str, str] = {
    "StoredCall": "calls",
    "RunConfig": "config",
    "load_run_config": "task",
    "parse_run_config": "config",
    "UnitContext": "context",
    "RunFrames": "frames",
    "load_runs": "frames",
    "Calls": "record",
    "RunRecord": "record",
    "read_run": "record",
    "RunOutcome": "runner",
    "analyze_run": "runner",
    "resume_run": "runner",
    "start_run": "runner",
    "RunStore": "store",
    "Task": "task",
    "WorkUnit": "task",
    "register_task": "task",
}

__all__ = [
    "Calls",
    "RunConfig",
    "RunFrames",
    "RunOutcome",
    "RunRecord",
    "RunStore",
    "StoredCall",
    "Task",
    "UnitContext",
    "WorkUnit",
    "analyze_run",
    "load_run_config",
    "load_runs",
    "parse_run_config",
    "read_run",
    "register_task",
    "resume_run",
    "start_run",
]


__getattr__ = first_use(__name__, _WHERE)
