"""Run engine: config, manifest, work units, SQLite store, concurrent execution and resume."""

from .config import RunConfig, load_run_config, parse_run_config
from .context import UnitContext
from .runner import RunOutcome, analyze_run, resume_run, start_run
from .store import RunStore
from .task import Task, WorkUnit, register_task

__all__ = [
    "RunConfig",
    "RunOutcome",
    "RunStore",
    "Task",
    "UnitContext",
    "WorkUnit",
    "analyze_run",
    "load_run_config",
    "parse_run_config",
    "register_task",
    "resume_run",
    "start_run",
]
