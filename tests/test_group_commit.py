"""Group commit of run-store writes, and the engine starting its workers one per event-loop turn."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from llmpsych.models.types import GenerationParams
from llmpsych.runs import RunStore
from llmpsych.runs.engine import execute
from llmpsych.runs.group_commit import GroupCommit
from llmpsych.runs.store import finish_unit_statements, put_call_statements, start_unit_statements
from llmpsych.runs.task import Task, WorkUnit


def _store(tmp_path: Path, units: int = 3) -> RunStore:
    store = RunStore(tmp_path / "run.sqlite", create=True)
    store.add_units((f"u{i}", {}) for i in range(units))
    return store


def _call(unit: str, key: str) -> list:
    return put_call_statements(unit, key, 1, "subject", "m", {"q": key}, {"text": key})


def _committed_calls(path: Path) -> set[tuple[str, str]]:
    """What another connection (another process, after a crash) would find."""
    with sqlite3.connect(path) as db:
        return set(db.execute("SELECT unit_id, call_key FROM calls").fetchall())


def test_writes_of_one_turn_share_one_transaction_and_are_durable_when_awaited(tmp_path: Path) -> None:
    store = _store(tmp_path)
    commits = GroupCommit(store)
    seen_after_await: list[set[tuple[str, str]]] = []

    async def writer(i: int) -> None:
        await commits.write(_call(f"u{i % 3}", f"k{i}"))
        seen_after_await.append(_committed_calls(store.path))

    async def main() -> None:
        await asyncio.gather(*(writer(i) for i in range(20)))
        await commits.write(_call("u0", "later"))

    asyncio.run(main())
    assert commits.transactions == 2  # 20 writes queued in one turn, then one more
    assert all(len(seen) >= 20 for seen in seen_after_await)  # each writer went on only once committed
    assert len(_committed_calls(store.path)) == 21
    store.close()


def test_deferred_statements_ride_with_the_next_commit(tmp_path: Path) -> None:
    store = _store(tmp_path)
    commits = GroupCommit(store)

    async def main() -> None:
        commits.defer(start_unit_statements("u1"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert store.unit_counts() == {"pending": 3}  # no commit of its own
        await commits.write(finish_unit_statements("u2", {"ok": True}))

    asyncio.run(main())
    assert store.unit_counts() == {"pending": 1, "running": 1, "done": 1}
    assert commits.transactions == 1
    store.close()


def test_a_writer_cancelled_while_waiting_still_has_its_write_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    commits = GroupCommit(store)

    async def main() -> None:
        task = asyncio.ensure_future(commits.write(_call("u0", "paid-for")))
        await asyncio.sleep(0)  # queued, flush scheduled
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _committed_calls(store.path) == {("u0", "paid-for")}
    store.close()


def test_a_failed_transaction_reaches_every_writer_and_leaves_the_store_usable(tmp_path: Path) -> None:
    store = _store(tmp_path)
    commits = GroupCommit(store)

    async def main() -> list[object]:
        good = commits.write(_call("u0", "a"))
        bad = commits.write([("INSERT INTO no_such_table VALUES (?)", (1,))])
        return await asyncio.gather(good, bad, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert all(isinstance(o, sqlite3.OperationalError) for o in outcomes)
    assert _committed_calls(store.path) == set()  # rolled back together, reported to both
    store.put_call("u0", "b", 1, "subject", "m", {}, {"text": "b"})
    assert _committed_calls(store.path) == {("u0", "b")}
    store.close()


class _TurnTask(Task):
    """Records, when each unit resumes after one await, how many units had started by then."""

    name = "turns"

    def __init__(self) -> None:  # no config needed
        self.started = 0
        self.started_when_first_resumed: int | None = None

    def units(self) -> list[WorkUnit]:
        return [WorkUnit(f"u{i}") for i in range(40)]

    async def run_unit(self, unit: WorkUnit, ctx: object) -> dict[str, int]:
        self.started += 1
        await asyncio.sleep(0)  # as a unit does when it opens a connection
        if self.started_when_first_resumed is None:
            self.started_when_first_resumed = self.started
        return {"n": self.started}


def test_workers_start_one_per_turn_so_the_first_requests_leave_early(tmp_path: Path) -> None:
    task = _TurnTask()
    store = _store(tmp_path, 0)
    store.add_units((u.unit_id, u.payload) for u in task.units())
    summary = asyncio.run(
        execute(task, task.units(), store, {}, 0, GenerationParams(), workers=40, show_progress=False)
    )
    assert summary.done == 40
    # All 40 started in one turn, the first unit would resume only after the other 39 had started.
    assert task.started_when_first_resumed is not None and task.started_when_first_resumed <= 3
    assert store.unit_counts() == {"done": 40}
    store.close()
