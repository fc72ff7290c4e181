"""The run record: ``read_run`` reads a run store once, read-only; analysis receives the record."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from llmpsych.errors import DataError
from llmpsych.runs import (
    RunRecord,
    RunStore,
    Task,
    WorkUnit,
    analyze_run,
    parse_run_config,
    read_run,
    start_run,
)
from llmpsych.runs.calls import CALL_COLUMNS, StoredCall
from llmpsych.runs.task import TASKS, register_task, task_class
from llmpsych.testing.fault_server import FaultServer


class CountedResult(BaseModel):
    """The result of a :class:`CountingTask` unit."""

    index: int
    answer: str


class CountingTask(Task[BaseModel]):
    """A one-call task that counts its instances and keeps the records its analysis received."""

    name = "counting"
    Result = CountedResult
    built: ClassVar[int] = 0
    received: ClassVar[list[Any]] = []

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        CountingTask.built += 1

    def units(self) -> list[WorkUnit]:
        return [WorkUnit(f"c{i}", {"index": i}) for i in range(3)]

    async def run_unit(self, unit: WorkUnit, ctx: Any) -> Any:
        reply = await ctx.chat([{"role": "user", "content": f"say {unit.payload['index']}"}], role="subject")
        return {"index": unit.payload["index"], "answer": reply.text}

    def analyze(self, record: RunRecord) -> list[Path]:
        CountingTask.received.append(record)
        record.results(self.Result)
        return []


def _config(server: FaultServer, task: str = "echo", **options: Any) -> Any:
    return parse_run_config(
        {
            "task": task,
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "options": options,
        }
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_run_gives_config_manifest_units_and_calls(tmp_path: Path, fault_server: FaultServer) -> None:
    start_run(_config(fault_server, units=4, turns=2, parallel=2), tmp_path / "run", False)
    record = read_run(tmp_path / "run")
    assert record.config.task == "echo" and record.config.options == {"units": 4, "turns": 2, "parallel": 2}
    assert record.manifest["units"] == 4 and record.manifest["task"] == "echo"
    assert [u.unit_id for u in record.units] == [f"u{i:06d}" for i in range(4)]
    assert record.unit_counts() == {"done": 4} and len(record.done()) == 4 and record.failed() == []
    with RunStore.in_dir(tmp_path / "run") as store:
        stored = list(store.calls())
    assert list(record.calls) == stored and len(record.calls) == 16
    assert record.calls.of_unit("u000001") == [c for c in stored if c.unit_id == "u000001"]
    last = record.calls.last_by_unit()["u000002"]
    assert last.seq == max(c.seq for c in stored if c.unit_id == "u000002")
    frame = record.calls.frame()
    assert len(frame) == 16 and set(frame["unit_id"]) == {u.unit_id for u in record.units}
    typed = record.results(list[list[str]])
    assert [unit.unit_id for unit, _ in typed] == [u.unit_id for u in record.units]
    assert all(len(result) == 2 and len(result[0]) == 2 for _, result in typed)
    assert record.results(list[list[str]]) is typed  # parsed once


def test_the_record_the_store_the_web_and_the_transcripts_share_one_stored_call(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    """One typed shape of a stored call: the record, the store, the web pages and the transcripts hand out
    (or read) the same :class:`StoredCall` values, attributes and all, never a dict or a copy type."""
    from llmpsych.report.transcripts import threads
    from llmpsych.web.store import read_unit

    start_run(_config(fault_server, units=2, turns=2, parallel=1), tmp_path / "run", False)
    record = read_run(tmp_path / "run")
    with RunStore.in_dir(tmp_path / "run", readonly=True) as store:
        stored = list(store.calls())
    assert all(isinstance(c, StoredCall) for c in [*record.calls, *stored]) and list(record.calls) == stored
    unit, web, _ = read_unit(tmp_path / "run", "u000001") or ({}, [], [])
    assert unit["unit_id"] == "u000001" and web == record.calls.of_unit("u000001") and len(web) == 2
    first = web[0]
    assert first.request["messages"] and first.text == first.response["text"] and first.seq == 1
    assert list(first.as_dict()) == list(CALL_COLUMNS)
    (thread,) = threads(web)
    assert [turn.call for turn in thread.turns] == web


def test_read_run_writes_nothing(tmp_path: Path, fault_server: FaultServer) -> None:
    run_dir = tmp_path / "run"
    start_run(_config(fault_server, units=2), run_dir, False)
    before = {p.name: _digest(p) for p in run_dir.iterdir() if p.is_file()}
    read_run(run_dir)
    assert {p.name: _digest(p) for p in run_dir.iterdir() if p.is_file() and p.name in before} == before


def test_a_folder_without_a_run_is_one_error_and_nothing_is_made(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no run found in"):
        read_run(tmp_path)
    with pytest.raises(DataError, match="no run found in"):
        analyze_run(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_stored_result_that_does_not_fit_names_the_unit(tmp_path: Path, fault_server: FaultServer) -> None:
    run_dir = tmp_path / "run"
    start_run(_config(fault_server, units=3), run_dir, False)
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        db.execute("UPDATE units SET result = ? WHERE unit_id = 'u000001'", ('{"not": "a list"}',))
    record = read_run(run_dir)
    with pytest.raises(DataError, match=r"unit u000001: the stored result does not fit"):
        record.results(list[list[str]])
    with pytest.raises(DataError, match=r"unit u000001"):
        analyze_run(run_dir)


def test_the_store_is_a_context_manager(tmp_path: Path, fault_server: FaultServer) -> None:
    start_run(_config(fault_server, units=2), tmp_path / "run", False)
    with RunStore.in_dir(tmp_path / "run") as store:
        assert len(store.units()) == 2
    with pytest.raises(DataError):  # closed at the end of the block
        store.units()


def test_a_run_builds_its_task_once_and_analysis_receives_the_record(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    register_task("counting", f"{__name__}:CountingTask")
    CountingTask.built, CountingTask.received[:] = 0, []
    try:
        assert task_class("counting") is CountingTask
        outcome = start_run(_config(fault_server, task="counting"), tmp_path / "run", False)
        assert outcome.summary.done == 3 and CountingTask.built == 1
        (record,) = CountingTask.received
        assert isinstance(record, RunRecord) and record.run_dir == tmp_path / "run"
        results = [result for _, result in record.results(CountedResult)]
        assert [r.index for r in results] == [0, 1, 2] and all(r.answer for r in results)
        analyze_run(tmp_path / "run")  # re-analysis: one task, one record
        assert CountingTask.built == 2 and len(CountingTask.received) == 2
    finally:
        TASKS.remove("counting")


@pytest.mark.parametrize("name", sorted(set(TASKS) - {"counting"}))
def test_every_task_declares_a_result_type(name: str) -> None:
    from pydantic import TypeAdapter

    result = task_class(name).Result
    assert result is not Any
    TypeAdapter(result)  # a type pydantic can check stored results against
