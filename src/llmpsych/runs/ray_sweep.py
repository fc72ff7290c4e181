"""A sweep's runs as Ray tasks: one task per run, each writing its own run folder in the sweep folder.

A run's units are independent of the other runs', and one run already keeps an endpoint (or a copy of a
model) busy through its own concurrency, so a sweep spreads over a cluster by whole runs: each planned run
becomes one Ray task that starts or resumes its folder with the local executor (units in that worker
process, its own model clients, an embedded model loaded once per task). Units on actors inside a task
would pay Ray's per-unit cost twice for nothing. A task reserves ``cpus_per_actor`` / ``gpus_per_actor``
of the executor settings, and at most ``actors`` runs are in flight.

The run folder is the unit of resume, so each task writes its folder on the storage the sweep folder is
on (shared by every node), not a store returned to the driver: a finished run survives the driver's
death, and whole SQLite stores never travel through Ray's object store. The driver writes
:data:`MARKER_FILE` (a fresh token) into the sweep folder before submitting; a task on a node that does
not see that token refuses in one line. The driver does every folder check of
:func:`~llmpsych.runs.sweep.run_sweep` before submitting; a task starts or resumes its folder exactly as
the local loop does (:func:`~llmpsych.runs.sweep.start_or_resume`: run lock, stored config, base URL).
A task whose worker process dies is run again by Ray (:data:`TASK_RETRIES` times) and resumes the folder:
finished units are not asked again, and the store's key on (unit, call key) records no call twice.

Security: a task's arguments are the run's config in its stored form (what ``run.sqlite`` records: no API
key; a base URL carrying credentials is refused before anything is sent) and the folder; the worker's
clients read keys from the worker's own environment, as actors do.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LlmpsychError, RunInterrupted
from ..report.files import atomic_write_text
from . import executors
from .config import parse_run_config
from .context import no_person_here
from .executors import ExecutorSettings
from .node_paths import absolute_paths, check_on_node
from .notices import notice
from .planned import PlannedRun, start_or_resume

if TYPE_CHECKING:
    from .runner import RunOutcome

#: The file the driver writes into the sweep folder before submitting; its text is the sweep's token.
MARKER_FILE = ".ray-sweep"
#: Seconds Ctrl-C waits for the cancelled runs to save what they received (then it leaves anyway).
CANCEL_WAIT_S = 30.0
#: How often Ray runs a run's task again after its worker process died; each retry resumes the folder.
TASK_RETRIES = 3


class RunTaskLost(LlmpsychError):
    """A run whose task's worker process kept dying."""


def check_shareable(runs: Sequence[PlannedRun]) -> None:
    """Refuse a run whose base URL carries credentials: its stored form (what a task receives) has them
    removed, and a task argument is logged by Ray, so such a run cannot go to a task."""
    for run in runs:
        if run.config.stored().get("base_url") != run.config.base_url:
            raise ConfigError(
                f"the base URL of run {run.directory} carries credentials, which are never sent to Ray tasks",
                "give the key in the environment of every node and a base URL without it",
            )


def run_task(
    out: str,
    token: str,
    directory: str,
    stored: dict[str, Any],
    progress: bool,
    debug: bool,
    threads: int = 0,
) -> RunOutcome:
    """One run of a sweep, in a Ray worker: start or resume ``out/directory`` with the local executor (an
    embedded model with ``threads`` llama.cpp threads, 0: every core of the node)."""
    try:
        seen = (Path(out) / MARKER_FILE).read_text()
    except OSError:
        seen = None
    if seen != token:
        raise ConfigError(
            f"the sweep folder {out} is not on storage this node ({socket.gethostname()}) sees",
            "put --out on shared storage",
        )
    config = parse_run_config(stored, f"sweep run {directory} (stored config)")
    check_on_node(config, "the node of a sweep's Ray task")
    settings = ExecutorSettings(threads_per_actor=threads)  # not the environment's: units run here
    with executors.use(settings), no_person_here("a Ray task of a sweep"):
        return start_or_resume(PlannedRun(directory, config), Path(out), progress, debug)


def _failure(ray: Any, exc: BaseException, run_dir: Path) -> BaseException:
    """What a run's task raised, as the local loop would have raised it."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, ImportError) and (cause.name or "").partition(".")[0] == "llmpsych":
            return ConfigError(
                f"a Ray worker cannot import llmpsych for run {run_dir}",
                "every node needs the same llmpsych installed (pip install 'llmpsych[ray]')",
            )
        return cause if isinstance(cause, BaseException) else exc
    return RunTaskLost(
        f"the Ray task of run {run_dir} was lost {TASK_RETRIES + 1} times ({type(exc).__name__})",
        "run the same command again: the run resumes where it stopped",
    )


def run_on_ray(
    runs: Sequence[PlannedRun],
    out: Path,
    settings: ExecutorSettings,
    *,
    progress: bool,
    debug: bool,
    on_outcome: Callable[[PlannedRun, RunOutcome], None] | None,
) -> list[RunOutcome]:
    """Run ``runs`` (folders checked by the caller) as Ray tasks, at most ``settings.actors`` at once.

    One line per finished run (with ``progress``) and one per failed run, which does not stop the others;
    ``on_outcome`` is called in plan order as the runs before have finished. At the end the first failure
    in plan order is raised, as the local loop raises it; otherwise the outcomes, in plan order.
    """
    from .ray_executor import check_resources, connect, import_ray, live_nodes, shutdown_actors

    check_shareable(runs)
    out = out.expanduser().absolute()  # a task works in its node's folder, not in the driver's
    ray = import_ray()
    connect(settings)
    check_resources(settings, live_nodes(ray), all_at_once=False)  # Ray would wait for ever
    shutdown_actors()  # actors of an earlier run of this process would hold the CPUs the tasks need
    token = uuid.uuid4().hex
    marker = out / MARKER_FILE
    atomic_write_text(marker, token)
    remote = ray.remote(run_task).options(
        num_cpus=settings.cpus_per_actor,
        num_gpus=settings.gpus_per_actor,
        max_retries=TASK_RETRIES,  # the worker process died: the retry resumes the folder
        retry_exceptions=False,  # a run's own error is reported, not repeated
    )
    results: dict[int, RunOutcome | BaseException] = {}
    pending: dict[Any, tuple[int, float]] = {}
    upcoming = iter(range(len(runs)))
    reported = 0
    try:
        while reported < len(runs):
            while len(pending) < settings.actors and (index := next(upcoming, None)) is not None:
                run = runs[index]
                ref = remote.remote(
                    str(out),
                    token,
                    run.directory,
                    absolute_paths(run.config).stored(),
                    progress,
                    debug,
                    settings.threads_per_actor,
                )
                pending[ref] = (index, time.perf_counter())
            if pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, started = pending.pop(ref)
                    results[index] = _collect(ray, ref, out / runs[index].directory, started, progress)
            while reported < len(runs) and reported in results:
                result = results[reported]
                if on_outcome is not None and not isinstance(result, BaseException):
                    on_outcome(runs[reported], result)
                reported += 1
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref)  # the task's run stops as a local run does on Ctrl-C: every answer is kept
        if pending:  # let the runs save what they received before this process (and a private Ray) ends
            ray.wait(list(pending), num_returns=len(pending), timeout=CANCEL_WAIT_S)
        finished = sum(not isinstance(r, BaseException) for r in results.values())
        raise RunInterrupted(
            f"interrupted: {finished} of {len(runs)} runs finished, every answer received so far is saved",
            "run the same command again to continue",
        ) from None
    finally:
        if marker.is_file() and marker.read_text() == token:
            marker.unlink()
    outcomes: list[RunOutcome] = []
    for index in range(len(runs)):
        result = results[index]
        if isinstance(result, BaseException):
            raise result
        outcomes.append(result)
    return outcomes


def _collect(ray: Any, ref: Any, run_dir: Path, started: float, progress: bool) -> Any:
    """A finished task's outcome (a line with ``progress``), or its failure (always a line)."""
    try:
        outcome = ray.get(ref)
    except (ray.exceptions.RayTaskError, ray.exceptions.RayError) as exc:
        failure = _failure(ray, exc, run_dir)
        notice(f"run {run_dir} failed: {failure}")
        return failure
    if progress:
        summary = outcome.summary
        notice(
            f"run {run_dir}: {summary.done + summary.skipped} of {summary.total} units done, "
            f"{summary.failed} failed, {time.perf_counter() - started:.1f} s"
        )
    return outcome
