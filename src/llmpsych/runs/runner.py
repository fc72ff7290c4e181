"""Start, resume and analyse runs: the glue between config, models, store, engine and task."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ConfigError, LlmpsychError, RunInterrupted
from ..models.cache import ResponseCache
from ..models.client import ModelClient, open_client
from ..models.embedded import EmbeddedSettings
from .config import RunConfig, parse_run_config
from .engine import RunSummary, execute
from .manifest import build_manifest
from .store import STORE_FILE, RunStore
from .task import Task, task_class

MANIFEST_FILE = "manifest.json"
DEFAULT_WORKERS = 64


@dataclass
class RunOutcome:
    """A finished execution: where it lives, what happened, what was written."""

    run_dir: Path
    summary: RunSummary
    outputs: list[Path]


def new_run_dir(parent: Path, task: str) -> Path:
    """A fresh, timestamped run directory name."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = parent / f"{task}-{stamp}"
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = parent / f"{task}-{stamp}-{suffix}"
    return candidate


def open_clients(config: RunConfig, cache: ResponseCache | None) -> dict[str, ModelClient]:
    """One client per model role; roles with the same spec share a client, one endpoint shares one limit."""
    embedded = EmbeddedSettings(n_parallel=config.n_parallel)
    by_spec: dict[str, ModelClient] = {}
    by_endpoint: dict[str, ModelClient] = {}
    clients: dict[str, ModelClient] = {}
    for role, spec in config.role_specs().items():
        if spec not in by_spec:
            client = open_client(
                spec,
                base_url=config.base_url,
                concurrency=config.concurrency,
                timeout=config.timeout,
                max_retries=config.max_retries,
                cache=cache,
                embedded=embedded,
            )
            if client.endpoint_key in by_endpoint:
                client.share_limit_with(by_endpoint[client.endpoint_key])
            by_endpoint.setdefault(client.endpoint_key, client)
            by_spec[spec] = client
        clients[role] = by_spec[spec]
    return clients


def _open_cache(config: RunConfig) -> ResponseCache | None:
    return ResponseCache(config.cache_path) if config.cache else None


async def _execute(
    task: Task, store: RunStore, config: RunConfig, show_progress: bool, debug: bool
) -> RunSummary:
    cache = _open_cache(config)
    clients = open_clients(config, cache)
    try:
        units = task.units()
        if store.get_meta("manifest") is None:
            manifest = build_manifest(config, clients, task.data_files(), len(units))
            store.set_meta("manifest", manifest)
            (store.path.parent / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
        known = {row.unit_id for row in store.units()}
        if known and known != {u.unit_id for u in units}:
            raise ConfigError(
                "the task now expands into different work units than the stored run; "
                "resume it with the llmpsych version and data it was started with"
            )
        store.add_units((u.unit_id, u.payload) for u in units)
        workers = config.workers or DEFAULT_WORKERS
        return await execute(
            task, units, store, clients, config.seed, config.params, workers, show_progress, debug
        )
    finally:
        for client in {id(c): c for c in clients.values()}.values():
            with suppress(Exception):
                await client.aclose()
        if cache is not None:
            cache.close()


def start_run(
    config: RunConfig, run_dir: Path, show_progress: bool = True, debug: bool = False
) -> RunOutcome:
    """Create a run directory, record the config, execute and analyse."""
    if (run_dir / STORE_FILE).exists():
        raise ConfigError(
            f"{run_dir} already holds a run", "use --resume to continue it, or choose a new --out"
        )
    task = task_class(config.task)(config)
    created = not run_dir.exists()
    store = RunStore.in_dir(run_dir)
    store.set_meta("config", config.model_dump(mode="json"))
    try:
        return _finish(task, store, config, run_dir, show_progress, debug)
    except LlmpsychError:
        # A set-up error (data, model file, checkpoint, ...) before any unit was registered: leave no
        # half-made run behind, so the corrected command can reuse the same --out.
        if created and _nothing_registered(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _nothing_registered(run_dir: Path) -> bool:
    store = RunStore.in_dir(run_dir)
    try:
        return not store.units()
    finally:
        store.close()


def resume_run(run_dir: Path, show_progress: bool = True, debug: bool = False) -> RunOutcome:
    """Finish an interrupted run without re-sending completed requests."""
    if not (run_dir / STORE_FILE).exists():
        raise ConfigError(f"no run found in {run_dir}", f"expected {run_dir / STORE_FILE}")
    store = RunStore.in_dir(run_dir)
    raw = store.get_meta("config")
    if raw is None:
        raise ConfigError(f"the run in {run_dir} has no stored config; it cannot be resumed")
    config = parse_run_config(raw, f"{run_dir} (stored config)")
    task = task_class(config.task)(config)
    return _finish(task, store, config, run_dir, show_progress, debug)


def _finish(
    task: Task, store: RunStore, config: RunConfig, run_dir: Path, show_progress: bool, debug: bool
) -> RunOutcome:
    try:
        summary = asyncio.run(_execute(task, store, config, show_progress, debug))
    except KeyboardInterrupt:
        counts = store.unit_counts()
        raise RunInterrupted(
            f"interrupted: {counts.get('done', 0)} of {sum(counts.values())} units done, every answer "
            "received so far is saved",
            f"continue with: llmpsych run --resume {run_dir}",
        ) from None
    finally:
        store.close()
    outputs = analyze_run(run_dir) if summary.done + summary.skipped else []
    return RunOutcome(run_dir, summary, outputs)


def analyze_run(run_dir: Path) -> list[Path]:
    """Re-analyse a run from its store alone (never calls a model)."""
    store = RunStore.in_dir(run_dir)
    try:
        raw = store.get_meta("config")
    finally:
        store.close()
    if raw is None:
        raise LlmpsychError(f"no run config stored in {run_dir}")
    config = parse_run_config(raw, f"{run_dir} (stored config)")
    return task_class(config.task)(config).analyze(run_dir)
