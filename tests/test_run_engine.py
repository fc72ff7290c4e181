"""The run engine against a real loopback server: faults lose nothing, SIGKILL + resume repeats nothing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer
from llmpsych.testing.runs import call_keys as _call_keys
from llmpsych.testing.runs import unit_results as _results


def _config(server: FaultServer, **options) -> object:
    return parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "concurrency": 8,
            "options": options,
            "max_retries": 8,
        }
    )


def _run_in_background(
    server: FaultServer, run_dir: Path, units: int, turns: int, calls: int
) -> subprocess.Popen[bytes]:
    """``llmpsych run`` (echo task, concurrency 4) in a child process, returned once ``calls`` are stored."""
    command = [sys.executable, "-m", "llmpsych", "run", "--task", "echo"]
    command += ["--model", "openai-compatible/m", "--base-url", server.base_url, "--no-cache"]
    command += ["--concurrency", "4", "--no-progress"]
    command += ["-O", f"units={units}", "-O", f"turns={turns}", "--out", str(run_dir)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        time.sleep(0.05)
        if (run_dir / "run.sqlite").exists():
            try:
                if len(_call_keys(run_dir)) >= calls:
                    break
            except sqlite3.OperationalError:
                pass
        assert process.poll() is None, process.stderr.read().decode()
    return process


def test_faulty_server_gives_the_clean_results(tmp_path: Path) -> None:
    with FaultServer() as clean_server:
        clean = start_run(_config(clean_server, units=30, turns=2, parallel=2), tmp_path / "clean", False)
    rates = FaultRates(
        rate_429=0.1,
        rate_500=0.1,
        rate_drop=0.05,
        rate_malformed=0.05,
        rate_slow=0.05,
        rate_timeout=0.03,
        timeout_s=1.0,
        slow_s=0.05,
    )
    with FaultServer(rates, seed=7) as faulty_server:
        config = _config(faulty_server, units=30, turns=2, parallel=2)
        config = config.model_copy(update={"timeout": 0.5})
        faulty = start_run(config, tmp_path / "faulty", False)
    assert sum(faulty_server.fault_log.values()) > 10
    assert faulty.summary.failed == 0 and faulty.summary.done == 30
    assert _results(tmp_path / "faulty") == _results(tmp_path / "clean")
    keys = _call_keys(tmp_path / "faulty")
    assert len(keys) == len(set(keys)) == 30 * 2 * 2 == clean.summary.calls_sent
    manifest = json.loads((tmp_path / "faulty" / "manifest.json").read_text())
    assert manifest["task"] == "echo" and manifest["units"] == 30 and "llmpsych_version" in manifest


def test_failed_units_are_recorded_and_resume_finishes_them(tmp_path: Path) -> None:
    rates = FaultRates(rate_500=1.0, max_faults_per_request=3)
    with FaultServer(rates) as server:
        config = _config(server, units=4).model_copy(update={"max_retries": 1})
        first = start_run(config, tmp_path / "r", False)
        assert first.summary.failed == 4 and "HTTP 500" in first.summary.errors[0]
        store = RunStore.in_dir(tmp_path / "r")
        assert store.unit_counts() == {"failed": 4}
        store.close()
        second = resume_run(tmp_path / "r", False)  # each body has one fault left, then succeeds
        assert second.summary.done == 4 and second.summary.failed == 0


def test_existing_run_directory_is_not_overwritten(tmp_path: Path, fault_server: FaultServer) -> None:
    start_run(_config(fault_server, units=1), tmp_path / "r", False)
    with pytest.raises(ConfigError, match="already holds a run"):
        start_run(_config(fault_server, units=1), tmp_path / "r", False)


def test_sigkill_halfway_then_resume_repeats_nothing(tmp_path: Path) -> None:
    units, turns = 40, 3
    rates = FaultRates(latency_s=0.05)
    with FaultServer() as reference_server:
        start_run(_config(reference_server, units=units, turns=turns), tmp_path / "reference", False)
    with FaultServer(rates) as server:
        run_dir = tmp_path / "killed"
        total = units * turns
        process = _run_in_background(server, run_dir, units, turns, total // 2)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        before = set(_call_keys(run_dir))
        assert total // 2 <= len(before) < total
        hits_before = sum(server.hits.values())
        outcome = resume_run(run_dir, False)
        assert outcome.summary.failed == 0
        after = _call_keys(run_dir)
        assert len(after) == len(set(after)) == total
        # Completed requests were answered from the store, not re-sent: the resumed process sent only the
        # requests that were missing (plus at most the few that were in flight when the process died).
        resent = sum(server.hits.values()) - hits_before
        assert outcome.summary.calls_sent == total - len(before) == resent
        assert outcome.summary.calls_replayed == len(before)
        assert all(count <= 2 for count in server.hits.values())
        assert sum(server.hits.values()) - total <= 4  # in flight at the kill (concurrency 4)
    assert _results(run_dir) == _results(tmp_path / "reference")


def test_roles_on_one_endpoint_share_its_concurrency_limit(fault_server: FaultServer) -> None:
    from llmpsych.runs.runner import open_clients

    config = parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/a",
            "base_url": fault_server.base_url,
            "concurrency": 3,
            "models": {"judge": "openai-compatible/b", "twin": "openai-compatible/a"},
        }
    )
    clients = open_clients(config, None)
    assert clients["subject"] is clients["twin"]  # same spec, one client
    assert clients["judge"] is not clients["subject"]
    assert clients["judge"]._limit is clients["subject"]._limit  # same server, one limit


def test_stored_request_is_the_body_sent_once_encoded(tmp_path: Path) -> None:
    """The run store keeps each request as the canonical JSON the HTTP backend sent (encoded once)."""
    with FaultServer() as server:
        start_run(_config(server, units=3, turns=2), tmp_path / "run", False)
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        stored = [row[0] for row in db.execute("SELECT request FROM calls ORDER BY unit_id, seq")]
    assert len(stored) == 6
    for text in stored:
        body = json.loads(text)
        assert body["model"] == "m" and body["messages"][-1]["role"] == "user"
        assert text == json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_ctrl_c_halfway_keeps_what_was_answered_then_resume_finishes(tmp_path: Path) -> None:
    """SIGINT (Ctrl-C): the process stops promptly, answers already received are committed, resume ends it."""
    units, turns = 40, 3
    total = units * turns
    with FaultServer(FaultRates(latency_s=0.05)) as server:
        run_dir = tmp_path / "interrupted"
        process = _run_in_background(server, run_dir, units, turns, total // 3)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 130  # stopped, not finished
        message = process.stderr.read().decode()
        assert "interrupted:" in message and f"llmpsych run --resume {run_dir}" in message, message
        assert "Traceback" not in message
        before = set(_call_keys(run_dir))
        assert total // 3 <= len(before) < total
        answered = sum(server.hits.values())
        # Every request the server answered before the interrupt is in the store, except those whose
        # answer was still on the wire (at most the concurrency).
        assert answered - len(before) <= 4
        outcome = resume_run(run_dir, False)
        assert outcome.summary.failed == 0
        assert outcome.summary.calls_replayed == len(before)
        assert len(set(_call_keys(run_dir))) == total


def _unit_rows(run_dir: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return db.execute("SELECT unit_id, position, payload, status, result, attempts FROM units").fetchall()


def test_a_task_that_yields_its_units_stores_and_resumes_as_one_that_lists_them(tmp_path: Path) -> None:
    """A task may hand its units over one at a time (echo does, so that a run never holds them all): the
    run asks it again for each pass and stores the same rows as from a list, a resume runs what failed,
    and a task whose units changed since is refused before anything is added to the stored run."""
    from llmpsych.runs.task import WorkUnit, register_task
    from llmpsych.testing.echo_task import EchoTask

    class Listed(EchoTask):
        name = "echo-listed"

        def units(self) -> list[WorkUnit]:
            return list(super().units())

    class Changing(EchoTask):
        name = "echo-changing"
        extra = 0

        def units(self) -> Iterator[WorkUnit]:
            yield from super().units()
            yield from (WorkUnit(f"extra{i}", {"index": i}) for i in range(Changing.extra))

    register_task("echo-listed", Listed)
    register_task("echo-changing", Changing)
    rates = FaultRates(rate_500=1.0, max_faults_per_request=2)
    rows = {}
    for task in ("echo", "echo-listed"):
        with FaultServer(rates) as server:
            config = _config(server, units=5).model_copy(update={"max_retries": 1, "task": task})
            first = start_run(config, tmp_path / task, False)
            assert (first.summary.total, first.summary.failed) == (5, 5)
            second = resume_run(tmp_path / task, False)  # one fault left per body, then an answer
            assert (second.summary.done, second.summary.skipped) == (5, 0)
            assert resume_run(tmp_path / task, False).summary.skipped == 5
        rows[task] = _unit_rows(tmp_path / task)
    assert rows["echo"] == rows["echo-listed"] and [r[3] for r in rows["echo"]] == ["done"] * 5
    assert _results(tmp_path / "echo") == _results(tmp_path / "echo-listed")

    with FaultServer() as server:
        config = _config(server, units=3).model_copy(update={"task": "echo-changing", "max_retries": 0})
        start_run(config, tmp_path / "changing", False)
        stored = _unit_rows(tmp_path / "changing")
        Changing.extra = 1
        with pytest.raises(ConfigError, match="different work units"):
            resume_run(tmp_path / "changing", False)
    assert _unit_rows(tmp_path / "changing") == stored
