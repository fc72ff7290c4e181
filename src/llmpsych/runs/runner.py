"""Start, resume and analyse runs: the glue between config, models, store, engine and task."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LlmpsychError, RunInterrupted
from ..models.client import ModelClient
from ..models.embedded import EmbeddedSettings
from ..models.urls import is_redacted
from ..report.files import atomic_write_text
from ..report.html import html_beside
from .clients import _open_cache, base_url_roles, open_clients
from .config import RunConfig, parse_run_config
from .engine import RunSummary, execute
from .executors import Executor, ExecutorSettings, LocalExecutor
from .executors import current as current_executor
from .manifest import build_manifest
from .notices import notice as notice  # the one notice line (its home: runs.notices)
from .params import params_report
from .record import record_from_store
from .store import STORE_FILE, RunStore, run_lock
from .task import Task, TaskUnits, task_class

MANIFEST_FILE = "manifest.json"
DEFAULT_WORKERS = 64


@dataclass
class RunOutcome:
    """A finished execution: where it lives, what happened, what was written."""

    run_dir: Path
    summary: RunSummary
    outputs: list[Path]


def check_executor(settings: ExecutorSettings | None = None) -> None:
    """Refuse settings that cannot run (before a run folder is made): a Ray address for the local
    executor, Ray asked for but not installed, or a cluster address where nothing answers."""
    settings = settings or current_executor()
    if settings.kind == "local" and settings.address is not None:
        raise ConfigError(
            "--ray-address applies to --executor ray", "add --executor ray, or drop the address"
        )
    if settings.kind == "ray":
        from .ray_executor import import_ray, probe

        import_ray()
        if settings.address is not None:
            probe(settings.address)


def make_executor(settings: ExecutorSettings | None = None) -> Executor:
    """The executor for ``settings`` (default: :func:`~llmpsych.runs.executors.current`)."""
    settings = settings or current_executor()
    check_executor(settings)
    if settings.kind == "local":
        return LocalExecutor()
    from .ray_executor import RayExecutor

    return RayExecutor(settings)


def new_run_dir(parent: Path, task: str) -> Path:
    """A fresh, timestamped run directory name."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = parent / f"{task}-{stamp}"
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = parent / f"{task}-{stamp}-{suffix}"
    return candidate


def _announce_code(config: RunConfig) -> None:
    """Name the Python code a config makes the run import and execute, before it is imported."""
    for target in task_class(config.task).code_imports(config):
        notice(f"this run imports and runs Python code: {target}")


#: What identifies a role's endpoint in the manifest; a resumed run that differs records the change.
_ENDPOINT_FIELDS = ("spec", "provider", "endpoint", "url", "key_from", "identity", "params")


def _endpoint_changes(manifest: dict[str, Any], clients: dict[str, ModelClient]) -> dict[str, Any]:
    before = manifest.get("models", {})
    for change in manifest.get("endpoint_changes", []):
        before = {**before, **change["models"]}
    changed = {}
    for role, client in clients.items():
        now = client.describe()
        old = before.get(role, {})
        # a manifest written by an older llmpsych lacks some fields: only those it has are compared
        if any(f in old and old[f] != now.get(f) for f in _ENDPOINT_FIELDS) or not old:
            changed[role] = now
    return changed


def _write_manifest(store: RunStore, manifest: dict[str, Any]) -> None:
    store.set_meta("manifest", manifest)
    atomic_write_text(store.path.parent / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")


async def _execute(
    task: Task[Any], store: RunStore, config: RunConfig, show_progress: bool, debug: bool, save_config: bool
) -> RunSummary:
    cache = _open_cache(config)
    threads = current_executor().threads_per_actor  # a sweep task's --actor-threads (0: every core)
    embedded = EmbeddedSettings(n_parallel=config.n_parallel, n_threads=threads)
    clients = open_clients(config, cache, task.model_roles(), embedded)
    if save_config:  # a resume's new base URL, kept once every role's endpoint resolved
        store.set_meta("config", config.stored())
    try:
        units = TaskUnits(task)  # read again for each pass below: a task's generator is never held whole
        count = len(units)
        for client in clients.values():  # a server's slots, asked once, recorded in the manifest
            await client.settle_concurrency()
        manifest = store.get_meta("manifest")
        if manifest is None:
            _write_manifest(store, build_manifest(config, clients, task.data_files(), count))
        else:
            # The run store's call keys keep naming each role's first endpoint: a resumed run replays
            # every stored answer, wherever the role is reached now.
            for role, client in clients.items():
                first = manifest.get("models", {}).get(role, {}).get("identity")
                if first:
                    client.call_identity = first
        if manifest is not None and (changed := _endpoint_changes(manifest, clients)):
            # A resumed run that reaches a role elsewhere (a new --base-url, environment or config file)
            # says so, and the manifest keeps both: the first endpoints and each change with its time.
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            manifest.setdefault("endpoint_changes", []).append({"at": stamp, "models": changed})
            _write_manifest(store, manifest)
            for role, info in changed.items():
                notice(f"resumed with a new endpoint for role {role}: {info['spec']} at {info.get('url')}")
        if store.unit_counts() and not store.same_unit_ids(units.ids()):
            raise ConfigError(
                "the task now expands into different work units than the stored run; "
                "resume it with the llmpsych version and data it was started with"
            )
        executor = make_executor()
        workers = executor.in_flight(config.workers or DEFAULT_WORKERS)  # per actor on Ray
        try:
            if store.unit_counts().get("done", 0) < count:  # nothing to run: no cluster to start
                # before the units are registered: a cluster that fails to start leaves no run behind
                await executor.open(task, config, clients, store)
            store.add_units((u.unit_id, u.payload) for u in units)
            return await execute(
                task,
                units,
                store,
                clients,
                config.seed,
                config.params,
                workers,
                show_progress,
                debug,
                executor,
            )
        finally:
            await executor.aclose()
    finally:
        for client in {id(c): c for c in clients.values()}.values():
            with suppress(Exception):
                await client.aclose()
        if cache is not None:
            if cache.broken:
                notice(
                    f"the response cache {cache.path} is damaged ({cache.broken}); the run went on without it"
                )
            if cache.bad_rows:
                notice(
                    f"{cache.bad_rows} damaged entries in the response cache {cache.path} were not "
                    "replayed: asked again and replaced"
                )
            cache.close()


def start_run(
    config: RunConfig, run_dir: Path, show_progress: bool = True, debug: bool = False
) -> RunOutcome:
    """Create a run directory, record the config, execute and analyse (holding the run's lock)."""
    _refuse_existing(run_dir)
    check_executor()
    _announce_code(config)
    task = task_class(config.task)(config)
    created = not run_dir.exists()
    parents = [p for p in run_dir.parents if not p.exists()]  # made by mkdir below (llmpsych-runs/)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the run directory {run_dir}: {exc.strerror}") from None
    with run_lock(run_dir):
        _refuse_existing(run_dir)  # another process may have started a run here meanwhile
        store = RunStore.in_dir(run_dir, create=True)
        store.set_meta("config", config.stored())
        store.set_meta("display", {"progress": show_progress})  # a resume shows the run the same way
        try:
            return _finish(task, store, config, run_dir, show_progress, debug)
        except LlmpsychError:
            # A set-up error (data, model file, checkpoint, ...) before any unit was registered: leave no
            # half-made run behind, so the corrected command can reuse the same --out.
            if created and _nothing_registered(run_dir):
                shutil.rmtree(run_dir, ignore_errors=True)
                for parent in parents:  # innermost first; a folder something else wrote into stays
                    with suppress(OSError):
                        parent.rmdir()
            raise


def refuse_linked_run_dir(out: Path, run_dir: Path) -> None:
    """Refuse a run folder below ``out`` that llmpsych names itself (a preset's) when it, or a folder
    between, is a symbolic link: a link planted there would make the run write, or resume, elsewhere."""
    folder = out
    for part in run_dir.relative_to(out).parts:
        folder = folder / part
        if folder.is_symlink():
            raise ConfigError(
                f"{folder} is a symbolic link; the run folders in {out} are llmpsych's own",
                "remove the link, or choose another --out",
            )


def _refuse_existing(run_dir: Path) -> None:
    store_file = run_dir / STORE_FILE
    if store_file.exists() or store_file.is_symlink():
        raise ConfigError(
            f"{run_dir} already holds a run", "use --resume to continue it, or choose a new --out"
        )


def _nothing_registered(run_dir: Path) -> bool:
    with RunStore.in_dir(run_dir) as store:
        return not store.units()


def resume_run(
    run_dir: Path, show_progress: bool | None = None, debug: bool = False, base_url: str | None = None
) -> RunOutcome:
    """Finish an interrupted run without re-sending completed requests (holding the run's lock).

    ``show_progress`` None: as the run was started (stored in the run; a progress bar for older runs).

    ``base_url`` (``--resume DIR --base-url URL``) replaces the run's base URL for the roles it applies to;
    the stored config takes it (credentials removed) and the manifest records the new endpoints. Given for
    a run in which no role takes a base URL, it is refused. A run started with credentials in its base URL
    needs ``--base-url`` again, since they were never stored.
    """
    RunStore.in_dir(run_dir).close()  # a missing, foreign or damaged store: one clear error, nothing made
    check_executor()
    with run_lock(run_dir):
        store = RunStore.in_dir(run_dir)
        try:
            raw = store.get_meta("config")
            if raw is None:
                raise ConfigError(f"the run in {run_dir} has no stored config; it cannot be resumed")
            config = parse_run_config(raw, f"{run_dir} (stored config)")
            if base_url is not None:
                config = config.model_copy(update={"base_url": base_url})
                if not base_url_roles(config):
                    raise ConfigError(
                        f"--base-url applies to no model role of the run in {run_dir}",
                        "it replaces the URL of roles naming openai-compatible/... (or another endpoint "
                        "without a URL of its own); this run has none",
                    )
            elif is_redacted(config.base_url):
                raise ConfigError(
                    f"the run in {run_dir} was started with credentials in its base URL, which are never "
                    "stored",
                    "resume it with --base-url and the full URL",
                )
            display = store.get_meta("display")
            shown = display.get("progress") if isinstance(display, dict) else None
            progress = show_progress if show_progress is not None else shown is not False
            _announce_code(config)
            task = task_class(config.task)(config)
            if base_url is None and (complete := _already_analysed(task, store, run_dir)) is not None:
                store.close()
                notice(
                    f"the run in {run_dir} is already complete ({complete.skipped} of {complete.total} units "
                    "done) and its tables and report are up to date: nothing to ask, nothing rewritten "
                    f"(`llmpsych analyze {run_dir}` writes them again)"
                )
                return RunOutcome(run_dir, complete, [])
        except BaseException:
            store.close()
            raise
        return _finish(task, store, config, run_dir, progress, debug, save_config=base_url is not None)


#: The store's meta key naming the state of the run its outputs were last written from.
ANALYSIS_META = "analysis"


def _analysis_state(store: RunStore) -> dict[str, Any]:
    """What the outputs of a complete run depend on: llmpsych's version, the units and the calls stored."""
    from .. import __version__

    return {"version": __version__, "units": store.unit_counts(), "calls": store.call_count()}


def _already_analysed(task: Task[Any], store: RunStore, run_dir: Path) -> RunSummary | None:
    """A summary of a complete run whose outputs were written from exactly this store by this version of
    llmpsych and are all still there, and whose task still expands into the stored units (data changed
    since: None, and the ordinary path refuses it); None when anything is left to ask or to write.

    Before, ``--resume`` of a finished run re-opened its models and re-wrote every table, plot and report
    without a word (73 s for an embedded-model PsychoBench run)."""
    counts = store.unit_counts()
    total = sum(counts.values())
    recorded = store.get_meta(ANALYSIS_META)
    if not total or counts.get("done", 0) != total or not isinstance(recorded, dict):
        return None
    outputs = recorded.get("outputs")
    if not isinstance(outputs, list) or not all(isinstance(name, str) for name in outputs):
        return None
    if {k: v for k, v in recorded.items() if k != "outputs"} != _analysis_state(store):
        return None
    if not all((run_dir / name).is_file() for name in outputs):
        return None
    if not store.same_unit_ids(unit.unit_id for unit in task.units()):
        return None
    return RunSummary(total=total, skipped=total)


def _remember_analysis(run_dir: Path, state: dict[str, Any], outputs: list[Path]) -> None:
    """Record that the outputs were written from the store in ``state`` (see :func:`_already_analysed`)."""
    names = []
    for path in outputs:
        with suppress(ValueError):
            names.append(str(path.resolve().relative_to(run_dir.resolve())))
    with RunStore.in_dir(run_dir) as store:
        store.set_meta(ANALYSIS_META, {**state, "outputs": names})


def _finish(
    task: Task[Any],
    store: RunStore,
    config: RunConfig,
    run_dir: Path,
    show_progress: bool,
    debug: bool,
    save_config: bool = False,
) -> RunOutcome:
    try:
        summary = asyncio.run(_execute(task, store, config, show_progress, debug, save_config))
        # the run's lock is held: the units are read when an analysis reads them (one pass: none held)
        record = (
            record_from_store(store, run_dir, lazy_units=True) if summary.done + summary.skipped else None
        )
        complete = summary.total > 0 and summary.done + summary.skipped == summary.total
        state = _analysis_state(store) if complete else None
    except KeyboardInterrupt:
        counts = store.unit_counts()
        raise RunInterrupted(
            f"interrupted: {counts.get('done', 0)} of {sum(counts.values())} units done, every answer "
            "received so far is saved",
            f"continue with: llmpsych run --resume {run_dir}",
        ) from None
    finally:
        store.close()
    if record is not None:
        # a task's fixed value that replaced the user's parameter in some calls: said, never silent
        for override in params_report(record).overrides:
            notice(f"the task fixed {override.line()} (the run's parameters are kept in its config)")
    outputs = html_beside(task.analyze(record)) if record is not None else []
    if state is not None:
        _remember_analysis(run_dir, state, outputs)
    return RunOutcome(run_dir, summary, outputs)


def analyze_run(run_dir: Path) -> list[Path]:
    """Re-analyse a run from its store alone (never calls a model), holding the run's lock.

    The store is read once (a :class:`~llmpsych.runs.record.RunRecord`) and the task built once from the
    stored config. A folder without a run store is an error, and nothing is created in it.
    """
    with RunStore.in_dir(run_dir, readonly=True) as store, run_lock(run_dir):
        # the store is checked before the lock file is made, and read once the lock is held
        record = record_from_store(store, run_dir, lazy_units=True)
        store.close()
        task = task_class(record.config.task)(record.config)
        return html_beside(task.analyze(record))
