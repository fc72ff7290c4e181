"""Run engine: config, manifest, work units, SQLite store, concurrent execution and resume."""

from .config import RunConfig, load_run_config, parse_run_config
from .context import UnitContext
from .record import Calls, RunRecord, read_run
from .runner import RunOutcome, analyze_run, resume_run, start_run
from .store import RunStore
from .task import Task, WorkUnit, register_task

__all__ = [
    "Calls",
    "RunConfig",
    "RunOutcome",
    "RunRecord",
    "RunStore",
    "Task",
    "UnitContext",
    "WorkUnit",
    "analyze_run",
    "load_run_config",
    "parse_run_config",
    "read_run",
    "register_task",
    "resume_run",
    "start_run",
]
