"""One run of a sweep (:class:`PlannedRun`) and the rule that starts it, or resumes the same run found in
its folder (:func:`start_or_resume`); :mod:`llmpsych.runs.sweep` explains the rule. Below the sweep and its
Ray driver (:mod:`llmpsych.runs.ray_sweep`), which both start runs by it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LlmpsychError
from .clients import base_url_roles
from .config import RunConfig, parse_run_config
from .node_paths import absolute_paths
from .runner import RunOutcome, resume_run, start_run
from .store import STORE_FILE, RunStore, run_lock
from .task import task_class

#: Config fields that define what a run measures; the others (endpoint, data folder, concurrency, cache)
#: may change between invocations, and a resumed run takes the new values.
IDENTITY = ("task", "model", "models", "seed", "options", "params")


@dataclass(frozen=True)
class PlannedRun:
    """One run of a sweep: its folder (relative to the sweep's folder), its config and a label for tables."""

    directory: str
    config: RunConfig
    label: dict[str, Any] | None = None


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    """The :data:`IDENTITY` fields, with the options as the task reads them (a scale file named by its path
    in a plan and recorded with its text in a store compare equal when the text is the same; paths as
    absolute, as a sweep on Ray records them)."""
    with contextlib.suppress(LlmpsychError):
        config = absolute_paths(parse_run_config(dict(config))).model_dump(mode="json")
    fields = {k: config.get(k) for k in IDENTITY}
    try:
        options = task_class(str(config.get("task"))).validate_options(dict(config.get("options") or {}))
    except LlmpsychError:
        return fields  # compared as written; a plan the task refuses fails when it starts
    fields["options"] = options.model_dump(mode="json")
    return fields


def same_run(stored: dict[str, Any], planned: dict[str, Any]) -> bool:
    """Whether a stored config and a planned one describe the same measurement (:data:`IDENTITY`)."""
    return _comparable(stored) == _comparable(planned)


def _refuse_other(run_dir: Path, stored: dict[str, Any], planned: dict[str, Any]) -> None:
    old, new = _comparable(stored), _comparable(planned)
    if old != new:
        fields = ", ".join(k for k in IDENTITY if old[k] != new[k])
        raise ConfigError(
            f"{run_dir} holds a different run than this sweep plans (differs in: {fields})",
            "choose another --out, or delete that directory",
        )


def _adopt_stored(run_dir: Path, config: RunConfig) -> None:
    """Check that ``run_dir`` holds the run ``config`` plans, then let it take this invocation's settings."""
    planned = config.stored()
    with run_lock(run_dir), RunStore.in_dir(run_dir) as store:
        _refuse_other(run_dir, store.get_meta("config") or {}, planned)
        store.set_meta("config", planned)


def start_or_resume(run: PlannedRun, out: Path, progress: bool, debug: bool) -> RunOutcome:
    """Start ``run`` in its folder under ``out``, or resume the same run found there (the module's rule)."""
    run_dir = out / run.directory
    if (run_dir / STORE_FILE).is_file():
        _adopt_stored(run_dir, run.config)
        base_url = run.config.base_url if base_url_roles(run.config) else None  # never stored whole
        return resume_run(run_dir, progress, debug, base_url=base_url)
    return start_run(run.config, run_dir, progress, debug)
