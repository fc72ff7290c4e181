"""One sweep runner: many planned runs under one folder, with one resume rule.

Presets (GAMA-Bench, MAS-Resilience), a benchmark run on several models and any other experiment that makes
several runs plan them as :class:`PlannedRun` values and call :func:`run_sweep`. Run again with the same
folder, a sweep continues where it stopped:

* a run folder that does not exist yet is started;
* a run folder holding the same run (same :data:`IDENTITY` fields) is resumed: finished units are not asked
  again (a finished run sends nothing), and the stored config takes this invocation's endpoint, data folder,
  concurrency and cache settings;
* a run folder holding a different run is refused in one line, before anything is sent for it.

With the Ray executor (``--executor ray``) a sweep of more than one run hands each run to a Ray task
(:mod:`llmpsych.runs.ray_sweep`) after the same folder checks; each task starts or resumes its folder by
:func:`start_or_resume`, as the loop here does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import ConfigError
from ..report.files import atomic_write_text
from . import executors
from .planned import IDENTITY, PlannedRun, _refuse_other, same_run, start_or_resume
from .runner import RunOutcome, refuse_linked_run_dir
from .store import STORE_FILE, RunStore
from .task import task_class

#: The file a sweep writes into its folder: the planned runs, in order.
SWEEP_FILE = "sweep.json"


def run_sweep(
    runs: Sequence[PlannedRun],
    out: Path,
    *,
    progress: bool = True,
    debug: bool = False,
    on_outcome: Callable[[PlannedRun, RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Start or resume every planned run under ``out`` (the module's rule), in order; returns the outcomes.

    Every folder is checked before the first run starts, so a sweep that would meet a different run in its
    third folder is refused before it sends anything; every run still to start builds its task first (the
    task reads its data and checks its options, e.g. a mistyped scale name), so such an error is one line
    and leaves no folder behind. ``out/sweep.json`` lists the planned runs. With the
    Ray executor and more than one run, the runs are Ray tasks (:func:`~llmpsych.runs.ray_sweep.run_on_ray`);
    ``on_outcome`` is still called here, in plan order.
    """
    directories = [r.directory for r in runs]
    if len(set(directories)) != len(directories):
        raise ConfigError("two runs of this sweep would share a folder", ", ".join(sorted(directories)))
    for run in runs:
        run_dir = out / run.directory
        refuse_linked_run_dir(out, run_dir)
        if (run_dir / STORE_FILE).is_file():
            with RunStore.in_dir(run_dir) as store:
                _refuse_other(run_dir, store.get_meta("config") or {}, run.config.stored())
        else:
            task_class(run.config.task)(run.config)  # as start_run does, before anything is written
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        out / SWEEP_FILE,
        json.dumps([{"directory": r.directory, "label": r.label} for r in runs], indent=1),
    )
    settings = executors.current()
    if settings.kind == "ray" and len(runs) > 1:
        from .ray_sweep import run_on_ray

        return run_on_ray(runs, out, settings, progress=progress, debug=debug, on_outcome=on_outcome)
    outcomes = []
    for run in runs:
        outcome = start_or_resume(run, out, progress, debug)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(run, outcome)
    return outcomes


__all__ = ["IDENTITY", "SWEEP_FILE", "PlannedRun", "run_sweep", "same_run", "start_or_resume"]
