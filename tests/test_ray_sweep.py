"""A sweep on Ray: each run is one Ray task writing its own folder; stores, summaries and the sweep's
resume rule equal the local sweep's, a killed task's worker loses nothing, no key reaches Ray's files.

One Ray instance for the module (``num_cpus=2``, 127.0.0.1); the CLI tests start their own, as a user's
``--executor ray`` does. Select these tests with ``-m ray``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs import parse_run_config
from llmpsych.runs.executors import ExecutorSettings, use
from llmpsych.runs.sweep import PlannedRun, run_sweep
from llmpsych.testing.fault_server import FaultRates, FaultServer, body_key
from llmpsych.testing.runs import call_keys, run_cli, unit_results

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")

from llmpsych.runs.ray_executor import connect  # noqa: E402 - needs ray
from llmpsych.runs.ray_sweep import MARKER_FILE, run_task  # noqa: E402 - needs ray

CANARY = "sk-canary-4b81e0d7c3a95f26"  # the API key of the runs here: it must never reach Ray's files
RAY = ExecutorSettings(kind="ray", actors=2)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    """A local Ray instance on loopback, started as ``--executor ray`` starts one; its session folder."""
    os.environ["LLMPSYCH_API_KEY"] = CANARY  # the workers inherit it: the key reaches tasks only so
    try:
        assert connect(ExecutorSettings(kind="ray", actors=2, cpus_per_actor=1))
        yield Path("/tmp/ray/session_latest").resolve()
    finally:
        ray.shutdown()
        os.environ.pop("LLMPSYCH_API_KEY", None)


def _store(run_dir: Path) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A run store's units, calls and config as stored, but for clock readings (when, how long)."""
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        units = db.execute(
            "SELECT unit_id, position, payload, status, result, error, attempts FROM units ORDER BY unit_id"
        ).fetchall()
        calls = db.execute(
            "SELECT unit_id, call_key, seq, role, model, request, response, prompt_tokens, "
            "completion_tokens, attempts, cached FROM calls ORDER BY unit_id, call_key"
        ).fetchall()
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('config', 'display')"))
    timeless = []
    for row in calls:
        response = json.loads(row[6])
        response.pop("latency_s")
        timeless.append((*row[:6], response, *row[7:]))
    untimed = [(*u[:4], _untimed(json.loads(u[4]) if u[4] else None), *u[5:]) for u in units]
    return untimed, timeless, meta


def _untimed(value: Any) -> Any:
    """A unit result without the response times (``response_s``) a game records with each answer."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "response_s"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _files(out: Path) -> dict[str, bytes]:
    """Every file a sweep wrote but the stores, run locks and manifests, with the sweep's folder written
    ``OUT`` and the seconds of calls (clock readings, in transcripts) written ``_``."""
    skip = {"run.sqlite", "run.sqlite-wal", "run.sqlite-shm", "run.lock", "manifest.json"}
    files = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name not in skip:
            data = path.read_bytes()
            if path.suffix in {".md", ".html", ".csv", ".json"}:
                data = _normal(data.decode(), out).encode()
            files[str(path.relative_to(out))] = data
    return files


def _normal(text: str, out: Path) -> str:
    """``text`` with the sweep's folder written ``OUT`` and seconds (clock readings) written ``_``: in
    prose (``0.04 s``), a JSON ``response_s`` and a CSV ``response_s`` column."""
    text = re.sub(r"\b\d+\.\d+ s\b", "_ s", text.replace(str(out), "OUT"))
    text = re.sub(r'"response_s": ?[0-9.e-]+', '"response_s": _', text)
    lines = text.split("\n")
    header = lines[0].split(",") if lines else []
    if "response_s" in header:  # a CSV table with a response-time column
        at = header.index("response_s")
        for i, line in enumerate(lines[1:], start=1):
            cells = next(csv.reader([line])) if line else []
            if len(cells) > at:
                cells[at] = "_"
                buffer = io.StringIO()
                csv.writer(buffer, lineterminator="").writerow(cells)
                lines[i] = buffer.getvalue()
    return "\n".join(lines)


def _preset(server: FaultServer, out: Path, *extra: str) -> Any:
    return run_cli(
        "gamabench", "preset", "temperatures", "--model", "openai-compatible/scripted",
        "--game", "guessing", "--players", "3", "--rounds", "2", "--base-url", server.base_url,
        "--no-cache", "--no-progress", "--out", out, *extra,
    )  # fmt: skip


def test_a_gamabench_preset_on_ray_tasks_equals_the_local_sweep_and_resumes(tmp_path: Path) -> None:
    """Through the CLI in a fresh process (which starts its own loopback Ray): the same stores and the same
    summary files as the local sweep; run again, nothing is sent; a folder holding another run is refused
    before anything is sent."""
    from test_games_engine_runs import scripted

    local, remote = tmp_path / "loc", tmp_path / "ray"  # names of one length: tables align alike
    with FaultServer(responder=scripted) as server:
        baseline = _preset(server, local)
        assert baseline.returncode == 0, baseline.stderr
        sent_local = sum(server.hits.values())
        done = _preset(server, remote, "--executor", "ray", "--actors", "2")
        assert done.returncode == 0, done.stderr
        assert sum(server.hits.values()) == 2 * sent_local
        runs = json.loads((remote / "sweep.json").read_text())
        assert len(runs) == 6 and _normal(done.stdout, remote) == _normal(baseline.stdout, local)
        for run in runs:
            assert _store(remote / run["directory"]) == _store(local / run["directory"]), run
        assert _files(remote) == _files(local) and not (remote / MARKER_FILE).exists()

        again = _preset(server, remote, "--executor", "ray", "--actors", "2")
        assert again.returncode == 0, again.stderr
        assert sum(server.hits.values()) == 2 * sent_local  # every run finished: nothing is sent

        # the third run's folder is deleted (work to do), the last holds another run: refused at once
        first, third, last = (remote / runs[i]["directory"] for i in (0, 2, -1))
        shutil.rmtree(third)
        shutil.rmtree(last)
        shutil.copytree(first, last)
        refused = _preset(server, remote, "--executor", "ray", "--actors", "2")
        assert refused.returncode == 2, refused.stderr
        assert f"{last} holds a different run than this sweep plans" in refused.stderr
        assert sum(server.hits.values()) == 2 * sent_local and not third.exists()


def _echo_runs(server: FaultServer, count: int, units: int, turns: int) -> list[PlannedRun]:
    """``count`` echo runs whose requests all differ (max_tokens differs), so the server tells them apart."""
    return [
        PlannedRun(
            f"r{i}",
            parse_run_config(
                {
                    "task": "echo",
                    "model": "openai-compatible/m",
                    "base_url": server.base_url,
                    "cache": False,
                    "concurrency": 2,
                    "options": {"units": units, "turns": turns, "parallel": 2, "max_tokens": 8 + i},
                }
            ),
        )
        for i in range(count)
    ]


def _task_pids() -> list[int]:
    """Processes of Ray workers running a sweep's run (Ray titles them ``ray::run_task`` meanwhile)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::run_task"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _stored_requests(run_dir: Path) -> list[str]:
    """The requests a run's store holds, read without creating the store (a poll while it starts)."""
    uri = f"{(run_dir / 'run.sqlite').as_uri()}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        return [row[0] for row in db.execute("SELECT request FROM calls")]


def test_a_killed_task_worker_is_retried_and_resumes_its_folder(cluster: Path, tmp_path: Path) -> None:
    count, units, turns = 3, 6, 8
    killed: dict[str, Any] = {}

    def kill_a_task_mid_run() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and "pid" not in killed:
            time.sleep(0.02)
            for i in range(count):
                try:
                    requests = _stored_requests(tmp_path / "ray" / f"r{i}")
                except sqlite3.Error:
                    continue
                pids = _task_pids()
                if len(requests) >= 12 and pids:
                    killed["stored"] = {body_key(json.loads(r)) for r in requests}
                    killed["run"], killed["pid"] = i, pids[0]
                    os.kill(pids[0], signal.SIGKILL)
                    return

    seen: list[str] = []
    with FaultServer(FaultRates(latency_s=0.03)) as server:
        planned = _echo_runs(server, count, units, turns)
        killer = threading.Thread(target=kill_a_task_mid_run)
        killer.start()
        with use(RAY):
            outcomes = run_sweep(
                planned, tmp_path / "ray", progress=False, on_outcome=lambda r, o: seen.append(r.directory)
            )
        killer.join()
    assert "pid" in killed, "the sweep ended before a task's worker could be killed"
    assert seen == ["r0", "r1", "r2"] and [o.run_dir.name for o in outcomes] == seen  # plan order
    for run in planned:
        run_dir = tmp_path / "ray" / run.directory
        assert len(unit_results(run_dir)) == units
        keys = call_keys(run_dir)
        assert len(keys) == len(set(keys)) == units * turns * 2  # nothing recorded twice
        with sqlite3.connect(run_dir / "run.sqlite") as db:
            assert db.execute("SELECT DISTINCT status FROM units").fetchall() == [("done",)]
            seqs = db.execute("SELECT unit_id, seq FROM calls").fetchall()
        assert len(seqs) == len(set(seqs))
    # every call stored before the kill was never asked again
    assert all(server.hits[key] == 1 for key in killed["stored"])


def test_no_key_reaches_rays_files(cluster: Path, tmp_path: Path) -> None:
    with FaultServer(api_key=CANARY) as server, use(RAY):  # the server refuses any other key
        outcomes = run_sweep(_echo_runs(server, 2, 3, 1), tmp_path / "s", progress=False)
    assert [o.summary.done for o in outcomes] == [3, 3]
    assert server.authorization_headers[-1] == f"Bearer {CANARY}"
    files = [p for p in cluster.rglob("*") if p.is_file()]
    assert files
    assert [p for p in files if CANARY.encode() in p.read_bytes()] == []
    for outcome in outcomes:
        assert CANARY.encode() not in (outcome.run_dir / "run.sqlite").read_bytes()


def test_a_failed_run_is_named_and_the_others_finish(
    cluster: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A run whose task fails (its model spec is refused on the worker) is named in one line; the other
    runs finish and are reported; the sweep then raises that run's error, as the local sweep does."""
    with FaultServer() as server:
        planned = _echo_runs(server, 3, 2, 1)
        bad = parse_run_config({**planned[1].config.stored(), "model": "nosuchvendor/m"})
        planned[1] = PlannedRun("r1", bad)
        with use(RAY), pytest.raises(Exception) as raised:
            run_sweep(planned, tmp_path / "s", progress=True)
        with pytest.raises(Exception) as local:
            run_sweep(planned[1:2], tmp_path / "local", progress=False)
    assert type(raised.value) is type(local.value) and str(local.value) in str(raised.value)
    err = capfd.readouterr().err
    assert f"run {tmp_path / 's' / 'r1'} failed: " in err
    for name in ("r0", "r2"):
        assert f"run {tmp_path / 's' / name}: 2 of 2 units done, 0 failed" in err
        assert len(unit_results(tmp_path / "s" / name)) == 2


def test_a_task_on_a_node_without_the_sweep_folder_refuses_in_one_line(tmp_path: Path) -> None:
    """The marker check, called as a worker calls it: another token (or none) is another folder."""
    (tmp_path / MARKER_FILE).write_text("another-sweep")
    with pytest.raises(ConfigError, match=r"is not on storage this node .* sees \(put --out on shared"):
        run_task(str(tmp_path), "this-sweep", "r0", {"task": "echo"}, False, False)
    with pytest.raises(ConfigError, match="put --out on shared storage"):
        run_task(str(tmp_path / "missing"), "this-sweep", "r0", {"task": "echo"}, False, False)


def test_a_base_url_with_credentials_is_not_sent_to_tasks(cluster: Path, tmp_path: Path) -> None:
    with FaultServer() as server:
        planned = _echo_runs(server, 2, 1, 1)
        url = server.base_url.replace("http://", "http://user:secret@")
        planned[0] = PlannedRun("r0", planned[0].config.model_copy(update={"base_url": url}))
        with use(RAY), pytest.raises(ConfigError, match="carries credentials"):
            run_sweep(planned, tmp_path / "s", progress=False)
        assert sum(server.hits.values()) == 0


def test_runs_no_node_can_hold_are_refused_before_anything_is_sent(cluster: Path, tmp_path: Path) -> None:
    with FaultServer() as server:
        huge = ExecutorSettings(kind="ray", actors=2, cpus_per_actor=64)
        with use(huge), pytest.raises(ConfigError, match="no node of the Ray cluster has 64 CPUs"):
            run_sweep(_echo_runs(server, 2, 1, 1), tmp_path / "s", progress=False)
        assert sum(server.hits.values()) == 0 and not (tmp_path / "s" / "r0").exists()


def test_a_sweep_of_one_run_keeps_its_units_on_actors(cluster: Path, tmp_path: Path) -> None:
    from llmpsych.runs import ray_executor

    with FaultServer() as server, use(RAY):
        [one] = run_sweep(_echo_runs(server, 1, 4, 1), tmp_path / "one", progress=False)
        assert ray_executor._pool is not None and len(ray_executor._pool.actors) == 2  # actors ran it
        two = run_sweep(_echo_runs(server, 2, 4, 1), tmp_path / "two", progress=False)
        assert ray_executor._pool is None  # the tasks needed the CPUs: the actors were stopped
    assert one.summary.done == 4 and [o.summary.done for o in two] == [4, 4]


@pytest.mark.model
def test_a_sweep_on_the_embedded_model_in_tasks_equals_the_local_sweep(cluster: Path, tmp_path: Path) -> None:
    """Each task loads its own copy of the model and answers exactly as the local sweep's runs do."""
    planned = [
        PlannedRun(
            f"r{i}",
            parse_run_config(
                {
                    "task": "echo",
                    "model": "local/qwen2.5-0.5b",
                    "cache": False,
                    "params": {"temperature": 0},
                    "options": {"units": 2, "max_tokens": 4 + i},
                }
            ),
        )
        for i in range(2)
    ]
    run_sweep(planned, tmp_path / "loc", progress=False)
    with use(ExecutorSettings(kind="ray", actors=2)):
        outcomes = run_sweep(planned, tmp_path / "ray", progress=False)
    assert [o.summary.done for o in outcomes] == [2, 2]
    for run in planned:
        assert _store(tmp_path / "ray" / run.directory) == _store(tmp_path / "loc" / run.directory)


def test_a_sweep_task_gives_its_embedded_model_the_actor_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--actor-threads`` reaches the model clients a sweep's task opens (0, every core, by default)."""
    from llmpsych.runs import runner

    opened: list[int] = []
    real = runner.open_clients

    def recording(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[3].n_threads)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "open_clients", recording)
    (tmp_path / MARKER_FILE).write_text("this-sweep")
    with FaultServer() as server:
        [first, second] = _echo_runs(server, 2, 1, 1)
        run_task(str(tmp_path), "this-sweep", "r0", first.config.stored(), False, False, 3)
        run_task(str(tmp_path), "this-sweep", "r1", second.config.stored(), False, False)
    assert opened == [3, 0]


def test_a_person_s_seat_in_a_sweep_task_stops_with_one_line(tmp_path: Path) -> None:
    """A sweep task runs where nobody is at a terminal: a ``human`` seat names that, not a read of
    nothing; the process's later runs may seat a person again."""
    from llmpsych.runs.context import _NO_PERSON

    (tmp_path / MARKER_FILE).write_text("this-sweep")
    options = {"game": "guessing", "players": 2, "rounds": 1, "runs": 1, "seats": ["human", "fixed:50"]}
    config = parse_run_config(
        {"task": "gamabench", "model": "openai-compatible/unused", "base_url": "http://127.0.0.1:9/v1"}
        | {"cache": False, "options": options}
    )
    outcome = run_task(str(tmp_path), "this-sweep", "r0", config.stored(), False, False)
    assert outcome.summary.failed == 1 and outcome.summary.errors == [
        "guessing-run01: ConfigError: a person's seat cannot be played on a Ray task of a sweep "
        "(run it with --executor local)"
    ]
    assert _NO_PERSON.get() is None


def test_ctrl_c_stops_a_sweep_on_ray_and_the_same_command_finishes_it(tmp_path: Path) -> None:
    """SIGINT to the driver (Ctrl-C) mid-sweep: exit 130 with the resume hint and the marker removed; the
    same command again finishes every run, asks nothing that was stored, and records nothing twice."""
    import subprocess
    import sys

    from test_games_engine_runs import scripted

    out = tmp_path / "ray"
    with FaultServer(FaultRates(latency_s=0.3), responder=scripted) as server:
        args = [sys.executable, "-m", "llmpsych", "gamabench", "preset", "temperatures"]
        args += ["--model", "openai-compatible/scripted", "--game", "guessing", "--players", "3"]
        args += ["--rounds", "6", "--base-url", server.base_url, "--no-cache", "--no-progress"]
        args += ["--out", str(out), "--executor", "ray", "--actors", "2"]
        driver = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 240  # a failure bound: Ray's start-up on a busy machine
            while not _some_calls_stored(out):
                assert driver.poll() is None, driver.communicate()
                assert time.monotonic() < deadline, "no run stored a call"
                time.sleep(0.05)
            driver.send_signal(signal.SIGINT)
            _, stderr = driver.communicate(timeout=120)
        finally:
            if driver.poll() is None:
                driver.kill()
        assert driver.returncode == 130, stderr
        assert "interrupted:" in stderr and "run the same command again" in stderr, stderr
        assert not (out / MARKER_FILE).exists()
        stored = {key for run in out.rglob("run.sqlite") for key in _call_keys_of(run.parent)}
        assert stored
        hits_before = dict(server.hits)

        again = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
    for run in json.loads((out / "sweep.json").read_text()):
        run_dir = out / run["directory"]
        keys = call_keys(run_dir)
        assert len(keys) == len(set(keys)), run
        assert {row[0] for row in _units_status(run_dir)} == {"done"}, run
    # a call stored before the interrupt was replayed, not asked again
    assert all(server.hits[key] == hits_before[key] for key in stored if key in hits_before)


def _some_calls_stored(out: Path) -> bool:
    for store in out.rglob("run.sqlite"):
        with contextlib.suppress(sqlite3.Error):
            if _stored_requests(store.parent):
                return True
    return False


def _call_keys_of(run_dir: Path) -> set[str]:
    return {body_key(json.loads(request)) for request in _stored_requests(run_dir)}


def _units_status(run_dir: Path) -> list[tuple[str]]:
    uri = f"{(run_dir / 'run.sqlite').as_uri()}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        return db.execute("SELECT status FROM units").fetchall()
