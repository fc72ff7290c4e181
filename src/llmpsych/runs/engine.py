"""Runs work units concurrently under the model limits, recording everything, with a progress bar."""

from __future__ import annotations

import asyncio
import time
import traceback
from dataclasses import dataclass, field

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..errors import LlmpsychError
from ..models.client import ModelClient
from ..models.types import GenerationParams
from .context import UnitContext
from .store import RunStore
from .task import Task, WorkUnit


@dataclass
class RunSummary:
    """What happened in one execution of a run."""

    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    calls_sent: int = 0
    calls_cached: int = 0
    calls_replayed: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


async def execute(
    task: Task,
    units: list[WorkUnit],
    store: RunStore,
    clients: dict[str, ModelClient],
    seed: int,
    params: GenerationParams,
    workers: int,
    show_progress: bool = True,
    debug: bool = False,
) -> RunSummary:
    """Run every unit not yet done; failures are recorded and reported, never lost."""
    done_ids = {row.unit_id for row in store.units("done")}
    pending = [unit for unit in units if unit.unit_id not in done_ids]
    summary = RunSummary(total=len(units), skipped=len(units) - len(pending))
    started = time.perf_counter()
    queue: asyncio.Queue[WorkUnit] = asyncio.Queue()
    for unit in pending:
        queue.put_nowait(unit)

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("[red]{task.fields[failures]}"),
        disable=not show_progress,
        transient=False,
    )
    bar = progress.add_task(task.name, total=len(units), completed=summary.skipped, rate="", failures="")

    def tick() -> None:
        elapsed = max(time.perf_counter() - started, 1e-9)
        finished = summary.done + summary.failed
        progress.update(
            bar,
            advance=1,
            rate=f"{finished / elapsed:.2f} units/s",
            failures=f"{summary.failed} failed" if summary.failed else "",
        )

    async def worker() -> None:
        while True:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            ctx = UnitContext(unit.unit_id, store, clients, seed, params)
            store.start_unit(unit.unit_id)
            try:
                result = await task.run_unit(unit, ctx)
            except Exception as exc:  # one unit's failure is recorded; the others go on
                message = f"{type(exc).__name__}: {exc}"
                if debug and not isinstance(exc, LlmpsychError):
                    message += "\n" + traceback.format_exc()
                store.fail_unit(unit.unit_id, message)
                summary.failed += 1
                summary.errors.append(f"{unit.unit_id}: {message}")
            else:
                store.finish_unit(unit.unit_id, result)
                summary.done += 1
            finally:
                summary.calls_sent += ctx.sent
                summary.calls_cached += ctx.cached
                summary.calls_replayed += ctx.replayed
            tick()

    with progress:
        await asyncio.gather(*(worker() for _ in range(max(1, min(workers, len(pending) or 1)))))
    summary.seconds = time.perf_counter() - started
    return summary
