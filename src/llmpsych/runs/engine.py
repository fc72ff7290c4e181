"""Runs work units concurrently under the model limits, recording everything, with a progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, cast

from rich import get_console

from ..errors import LlmpsychError
from ..models.client import ModelClient
from ..models.types import GenerationParams
from .context import UnitContext
from .executors import Executor, LocalExecutor
from .group_commit import GroupCommit
from .store import RunStore, fail_unit_statements, finish_unit_statements, start_unit_statements
from .task import Task, WorkUnit

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


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


def remaining_seconds(
    elapsed: float, sent: int, units_left: int, calls_per_unit: float | None, calls_in_flight: float
) -> float | None:
    """Seconds left: the model calls still to make, at the rate calls were answered so far in this execution.

    Counting calls rather than units keeps the estimate right from the first answer: with many units in
    flight (concurrency) no unit finishes until most of their calls are done, so a rate of finished
    units says nothing early and then too much. ``sent`` counts calls answered by a model only (answers from
    the response cache or replayed from the store cost no time); ``calls_in_flight`` is what unfinished
    units have already asked (each counted up to ``calls_per_unit`` − 1: a unit still running has a call
    left at least, so a long last unit, such as a game after short questionnaires, does not read 0:00:00).
    """
    if sent <= 0 or elapsed <= 0 or calls_per_unit is None:
        return None
    return seconds_for_calls(max(0.0, units_left * calls_per_unit - calls_in_flight), elapsed, sent)


def seconds_for_calls(calls_left: float, elapsed: float, answered: int) -> float:
    """``calls_left`` at the pace the ``answered`` model calls of the last ``elapsed`` seconds came back.

    This is the calls' real latency spread over the calls in flight: the mean latency ``L`` of the
    answered calls divided by how many were in flight on average (their summed latencies over ``elapsed``)
    is ``elapsed / answered``. It therefore counts what a user sees and a latency alone does not: calls
    queued behind a single llama.cpp slot, a machine shared with other work, a rate-limited endpoint.
    """
    return calls_left * elapsed / answered


#: The ETA's pace is that of the last this many answered calls (all of them while there are fewer).
PACE_WINDOW_CALLS = 10


class _Eta:
    """The ETA shown in the progress bar: the calls still to make (:meth:`calls_left`) at the pace of the
    last :data:`PACE_WINDOW_CALLS` answered calls (:func:`seconds_for_calls`); ``-:--:--`` until a model
    has answered and the calls still to make are known.

    The recent pace, not the pace since the start: the quickstart's administrations (40-51 answer tokens
    each) took 45-200 s a call on a 2-core machine at load 5-11, its game's calls (9 answer tokens) 1.4-6 s,
    and a pace over all answers read 0:53:03 when the game had under two minutes left; the load on a
    shared machine changes too.

    Each unit's calls come from the task (:meth:`Task.unit_calls`, e.g. a 5-seat x 5-round game: 25, a
    questionnaire: 1); a unit the task does not size counts the mean of the finished units (before any
    has finished: the task's :meth:`Task.calls_per_unit`). Sized per unit,
    a game after short questionnaires no longer reads as "one call left" (it did: the quickstart showed
    0:00:30-0:01:46 for 9 minutes). It is re-estimated whenever another call has been answered and counts
    down in between, but never below what the current silence implies (the next answer cannot come
    before now).
    """

    def __init__(
        self,
        units: int,
        calls_hint: float | None,
        started: float,
        planned: dict[str, float | None] | None = None,
    ) -> None:
        self.units_left = units
        self.calls_hint = calls_hint
        #: calls each pending unit is expected to make (unit id -> calls; None: not known)
        self.planned = planned
        self.started = started
        self.finished_units = 0
        self.finished_calls = 0  # calls of any kind made by finished units
        self.finished_sent = 0
        self.finished_ids: set[str] = set()
        self.live: dict[str, UnitContext] = {}
        #: (when, calls answered by then), from when each new answer was first seen
        self._marks: list[tuple[float, int]] = []
        self._anchor: tuple[tuple[int, int, int], float, float, float] | None = None

    def unit_done(self, ctx: UnitContext) -> None:
        self.live.pop(ctx.unit_id, None)
        self.units_left -= 1
        self.finished_units += 1
        self.finished_calls += ctx.sent + ctx.cached + ctx.replayed
        self.finished_sent += ctx.sent
        if self.planned is not None:  # only a table of sized units needs to know which ones finished
            self.finished_ids.add(ctx.unit_id)

    def calls_per_unit(self) -> float | None:
        if self.finished_units:
            return self.finished_calls / self.finished_units
        return self.calls_hint

    def _expected(self, unit_id: str | None) -> float | None:
        """Calls the unit is expected to make in all: the task's figure for it, else the finished units'
        mean, else the task's hint for any unit."""
        planned = None if self.planned is None or unit_id is None else self.planned.get(unit_id)
        return planned if planned is not None else self.calls_per_unit()

    def calls_left(self) -> float | None:
        """Model calls still to make: every unit not started in full, every running unit what it has not
        made yet but one at least (a unit still running has a call left); None when a unit cannot be sized."""
        total = 0.0
        if self.planned is None:
            waiting: list[str | None] = [None] * max(0, self.units_left - len(self.live))
        else:
            waiting = [u for u in self.planned if u not in self.live and u not in self.finished_ids]
        for unit_id in waiting:
            expected = self._expected(unit_id)
            if expected is None:
                return None
            total += expected
        for unit_id, ctx in self.live.items():
            expected = self._expected(unit_id)
            if expected is None:
                return None
            total += max(expected - (ctx.sent + ctx.cached + ctx.replayed), 1.0)
        return total

    def _window(self) -> tuple[float, int]:
        """Where the pace is measured from: (when, calls answered by then); the start while fewer than
        :data:`PACE_WINDOW_CALLS` calls were answered."""
        first = self._marks[0] if self._marks else (self.started, 0)
        sent = self._marks[-1][1] if self._marks else 0
        return first if sent - first[1] >= PACE_WINDOW_CALLS else (self.started, 0)

    def text(self, now: float) -> str:
        if self.units_left <= 0:
            return "0:00:00"
        sent = self.finished_sent + sum(c.sent for c in self.live.values())
        made = self.finished_calls + sum(c.sent + c.cached + c.replayed for c in self.live.values())
        state = (sent, self.units_left, made)
        if sent > 0 and (not self._marks or self._marks[-1][1] != sent):
            self._marks.append((now, sent))
            base = [m for m in self._marks if m[1] <= sent - PACE_WINDOW_CALLS]
            self._marks = base[-1:] + [m for m in self._marks if m[1] > sent - PACE_WINDOW_CALLS]
        since, before = self._window()
        if self._anchor is None or self._anchor[0] != state:
            left = self.calls_left()
            last = self._marks[-1][0] if self._marks else now
            estimate = (
                None
                if left is None or sent <= before or last <= since
                else seconds_for_calls(left, last - since, sent - before)
            )
            self._anchor = None if estimate is None or left is None else (state, now, estimate, left)
        if self._anchor is None:
            return "-:--:--"
        _, when, estimate, left = self._anchor
        # even if the next answer came right now
        floor = seconds_for_calls(max(0.0, left - 1), now - since, sent - before + 1)
        seconds = int(max(estimate - (now - when), floor))
        return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


#: Seconds between two progress lines when the output is not a terminal (``LLMPSYCH_PROGRESS_INTERVAL``).
PROGRESS_INTERVAL_S = 10.0
#: ... and the share of the units that must have finished since the last line (the later of the two wins).
PROGRESS_STEP = 0.10
#: A line after this many intervals even without that share, so a slow run still shows it is alive.
PROGRESS_QUIET_INTERVALS = 6


def progress_interval() -> float:
    """``LLMPSYCH_PROGRESS_INTERVAL`` in seconds (> 0), else :data:`PROGRESS_INTERVAL_S`."""
    try:
        value = float(os.environ.get("LLMPSYCH_PROGRESS_INTERVAL", PROGRESS_INTERVAL_S))
    except ValueError:
        return PROGRESS_INTERVAL_S
    return value if value > 0 else PROGRESS_INTERVAL_S


def rate_text(finished: int, elapsed: float) -> str:
    """Units per second, or per minute or hour when fewer (a slow run showed ``0.00 units/s``)."""
    rate = finished / elapsed
    if rate >= 0.1:
        return f"{rate:.2f} units/s"
    return f"{60 * rate:.2f} units/min" if 60 * rate >= 0.1 else f"{3600 * rate:.2f} units/h"


class _Lines:
    """Progress as plain lines, for output that is not a terminal (a pipe, a log file, a batch job).

    A line is printed when :func:`progress_interval` seconds *and* :data:`PROGRESS_STEP` of the units
    have passed since the last one (whichever comes later), or after :data:`PROGRESS_QUIET_INTERVALS`
    intervals without one, and once at the end: ``psychobench: 40/88 units (45%), 0.52 units/s,
    ETA 0:01:32, 2 failed``.
    """

    def __init__(self, name: str, total: int, done: int, started: float, out: TextIO) -> None:
        self.name, self.total, self.done, self.failed = name, total, done, 0
        self.started, self.out = started, out
        self.interval = progress_interval()
        self.last_time, self.last_done = started, done
        self.rate, self.eta = "", "-:--:--"

    def line(self) -> str:
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        parts = [f"{self.name}: {self.done}/{self.total} units{share}"]
        parts += [self.rate] if self.rate else []
        parts += [f"ETA {self.eta}"]
        parts += [f"{self.failed} failed"] if self.failed else []
        return ", ".join(parts)

    def emit(self, now: float) -> None:
        print(self.line(), file=self.out, flush=True)
        self.last_time, self.last_done = now, self.done

    def maybe_emit(self, now: float) -> None:
        """Print a line if it is due (see the class docstring)."""
        waited = now - self.last_time
        stepped = self.done - self.last_done >= max(1.0, PROGRESS_STEP * self.total)
        if (waited >= self.interval and stepped) or waited >= PROGRESS_QUIET_INTERVALS * self.interval:
            self.emit(now)


#: Allocations between two young-generation collections while units run (Python's default is 700).
GC_YOUNG_THRESHOLD = 20_000


@contextlib.contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """While units run: freeze what exists (data, modules) out of the cyclic GC and collect less often.

    Every request allocates a few dozen containers (messages, bodies, results), so with the default
    threshold the collector ran about every 20 requests: 157 collections, 0.27 s of a 2.6 s run of the
    eight games x 5 runs (``benchmarks/games_throughput.py``); with this, 3 collections and 0.02 s.
    Garbage is still collected, in larger batches. Both settings are restored afterwards.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], GC_YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _bar() -> Progress:
    """The progress bar of a run shown on a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}"),
        TextColumn("[red]{task.fields[failures]}"),
        transient=False,
    )


class _NoBar:
    """No progress bar (no progress shown, or plain lines instead): what a disabled ``rich`` bar does,
    without importing it (its bar, table and live display: about 0.012 s of CPU per run)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, **fields: Any) -> TaskID:
        return cast("TaskID", 0)

    def update(self, task_id: TaskID, **fields: Any) -> None:
        return None

    def stop(self) -> None:
        return None


async def _start_staggered(worker: Callable[[], Awaitable[None]], count: int) -> None:
    """Run ``count`` workers, starting one per event-loop turn.

    Started all in the same turn, every worker would prepare its first request before the loop gets
    to send any of them; one per turn, the first requests are on the wire while later units are still
    being prepared, and their answers are processed while others wait.
    """
    tasks = []
    try:
        for _ in range(count):
            tasks.append(asyncio.ensure_future(worker()))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
    finally:
        for started in tasks:
            started.cancel()


#: Units read from the task, and looked up in the store, at a time while a run goes through them.
UNIT_BATCH = 1000


def _batches(units: Iterable[WorkUnit]) -> Iterator[list[WorkUnit]]:
    batch: list[WorkUnit] = []
    for unit in units:
        batch.append(unit)
        if len(batch) >= UNIT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _pending(
    units: Iterable[WorkUnit], store: RunStore, any_done: bool, any_recorded: bool
) -> Iterator[tuple[WorkUnit, bool]]:
    """The units not done when the execution started, in order, each with whether it had calls stored then
    (those replay), read a batch at a time: the store's snapshots (:meth:`RunStore.snapshot_ids`) say which,
    so no set of every unit id is held."""
    for batch in _batches(units):
        ids = [unit.unit_id for unit in batch]
        done = store.among("done_at_start", ids) if any_done else set()
        recorded = store.among("calls_at_start", ids) if any_recorded else set()
        for unit in batch:
            if unit.unit_id not in done:
                yield unit, unit.unit_id in recorded


async def execute(
    task: Task[Any],
    units: Iterable[WorkUnit],
    store: RunStore,
    clients: dict[str, ModelClient],
    seed: int,
    params: GenerationParams,
    workers: int,
    show_progress: bool = True,
    debug: bool = False,
    executor: Executor | None = None,
) -> RunSummary:
    """Run every unit not yet done; failures are recorded and reported, never lost.

    ``executor`` decides where a unit runs (default: here, :class:`~llmpsych.runs.executors.LocalExecutor`);
    whatever it is, everything is recorded here, by this process.

    ``units`` is read more than once (a list, or :class:`~llmpsych.runs.task.TaskUnits`), a batch at a time:
    once to count and size them, once as they run. Neither they nor their ids are held all at once (a
    50,000-unit run held ~14 MiB of them: the peak of its memory).
    """
    runner = executor or LocalExecutor()
    # what was done, and which units had calls (interrupted mid-way: their calls replay), as this started
    any_done = store.snapshot_ids("done_at_start", "SELECT unit_id FROM units WHERE status = 'done'") > 0
    any_recorded = store.snapshot_ids("calls_at_start", "SELECT DISTINCT unit_id FROM calls") > 0
    total = waiting = 0
    sized = False
    for batch in _batches(units):
        total += len(batch)
        for unit, _ in _pending(batch, store, any_done, False):
            waiting += 1
            sized = sized or task.unit_calls(unit) is not None
    summary = RunSummary(total=total, skipped=total - waiting)
    started = time.perf_counter()
    pending = _pending(units, store, any_done, any_recorded)

    lines = None
    if show_progress and not get_console().is_terminal:  # no bar to redraw: plain lines on stderr
        lines = _Lines(task.name, total, summary.skipped, started, sys.stderr)
    progress = _bar() if show_progress and lines is None else _NoBar()
    bar = progress.add_task(
        task.name, total=total, completed=summary.skipped, rate="", failures="", eta="-:--:--"
    )
    # a table of unit ids only when the task sized some (50,000 ids: ~5 MiB held through the run)
    planned = (
        {u.unit_id: task.unit_calls(u) for u, _ in _pending(units, store, any_done, False)} if sized else None
    )
    eta = _Eta(waiting, task.calls_per_unit(), started, planned)
    commits = GroupCommit(store)

    async def show_eta() -> None:
        while True:
            now = time.perf_counter()
            progress.update(bar, eta=eta.text(now))
            if lines is not None:
                lines.eta = eta.text(now)
                lines.maybe_emit(now)
            await asyncio.sleep(0.5 if lines is None else min(0.5, lines.interval / 4))

    def tick() -> None:
        now = time.perf_counter()
        elapsed = max(now - started, 1e-9)
        finished = summary.done + summary.failed
        rate = rate_text(finished, elapsed)
        progress.update(
            bar, advance=1, rate=rate, failures=f"{summary.failed} failed" if summary.failed else ""
        )
        if lines is not None:
            lines.done, lines.failed, lines.rate = lines.done + 1, summary.failed, rate

    async def worker() -> None:
        while True:
            try:
                unit, recorded = next(pending)
            except StopIteration:
                return
            ctx = UnitContext(unit.unit_id, store, clients, seed, params, commits, recorded)
            eta.live[unit.unit_id] = ctx
            commits.defer(start_unit_statements(unit.unit_id))  # with the next commit
            try:
                result = await runner.run_unit(task, unit, ctx)
            except Exception as exc:  # one unit's failure is recorded; the others go on
                message = f"{type(exc).__name__}: {exc}"
                if debug and not isinstance(exc, LlmpsychError):
                    message += "\n" + traceback.format_exc()
                await commits.write(fail_unit_statements(unit.unit_id, message))
                summary.failed += 1
                summary.errors.append(f"{unit.unit_id}: {message}")
            else:
                await commits.write(finish_unit_statements(unit.unit_id, result))
                summary.done += 1
            finally:
                summary.calls_sent += ctx.sent
                summary.calls_cached += ctx.cached
                summary.calls_replayed += ctx.replayed
                eta.unit_done(ctx)
            tick()

    with progress, fewer_gc_pauses():
        ticker = asyncio.create_task(show_eta()) if show_progress else None
        try:
            await _start_staggered(worker, max(1, min(workers, waiting or 1)))
        except asyncio.CancelledError:  # Ctrl-C: said at once, before the answers received are saved
            progress.stop()
            print(
                "stopping: saving the answers received so far; calls in flight are abandoned "
                "(--resume asks them again)",
                file=sys.stderr,
                flush=True,
            )
            raise
        finally:
            commits.flush()  # writes queued by workers cancelled mid-way (Ctrl-C) are kept
            if ticker is not None:
                ticker.cancel()
            store.drop_snapshot("done_at_start")
            store.drop_snapshot("calls_at_start")
        progress.update(bar, eta="0:00:00")
    if lines is not None and waiting:
        lines.eta = "0:00:00"
        lines.emit(time.perf_counter())
    summary.seconds = time.perf_counter() - started
    return summary
