"""``--executor ray``: units on the actors of a real local Ray instance (127.0.0.1), the driver writing the
store. Results equal the local executor's, a killed actor loses no completed call, no key reaches Ray's logs.

One Ray instance for the module (``num_cpus=2``); select these tests with ``-m ray``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmpsych.runs import parse_run_config, resume_run, start_run
from llmpsych.runs.executors import ExecutorSettings, use
from llmpsych.testing.fault_server import FaultRates, FaultServer, body_key
from llmpsych.testing.runs import call_keys, run_cli, unit_results

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")

from llmpsych.runs.ray_executor import connect  # noqa: E402 - needs ray

CANARY = "sk-canary-7f3c9a51d2e84b06"  # the API key of every run here: it must never reach Ray's logs
RAY = ExecutorSettings(kind="ray", actors=2)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    """A local Ray instance on loopback, started as ``--executor ray`` starts one; its session folder."""
    os.environ["LLMPSYCH_API_KEY"] = CANARY  # the workers inherit it: the key reaches actors only so
    try:
        assert connect(ExecutorSettings(kind="ray", actors=2, cpus_per_actor=1))
        yield Path("/tmp/ray/session_latest").resolve()
    finally:
        ray.shutdown()
        os.environ.pop("LLMPSYCH_API_KEY", None)


def _rows(run_dir: Path) -> tuple[list[Any], list[Any]]:
    """The store's units and calls as stored, but for clock readings (when, how long; the response times a
    game's result records)."""
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        units = db.execute(
            "SELECT unit_id, position, payload, status, result, error, attempts FROM units ORDER BY unit_id"
        ).fetchall()
        calls = db.execute(
            "SELECT unit_id, call_key, seq, role, model, request, response, prompt_tokens, "
            "completion_tokens, attempts, cached FROM calls ORDER BY unit_id, call_key"
        ).fetchall()
    timeless = []
    for row in calls:
        response = json.loads(row[6])
        response.pop("latency_s")
        timeless.append((*row[:6], response, *row[7:]))
    return [(*u[:4], _untimed(json.loads(u[4]) if u[4] else None), *u[5:]) for u in units], timeless


def _untimed(value: Any) -> Any:
    """A unit result without the response times (``response_s``) a game records with each answer."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "response_s"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _echo(server: FaultServer, units: int = 12, turns: int = 2, **extra: Any) -> Any:
    return parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "seed": 3,
            "concurrency": 8,
            "options": {"units": units, "turns": turns, "parallel": 2},
            **extra,
        }
    )


def test_a_run_on_actors_stores_what_the_local_executor_stores(cluster: Path, tmp_path: Path) -> None:
    with FaultServer(api_key=CANARY) as server:
        local = start_run(_echo(server), tmp_path / "local", False)
        with use(RAY):
            remote = start_run(_echo(server), tmp_path / "ray", False)
    assert remote.summary.done == local.summary.done == 12 and remote.summary.calls_sent == 48
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    assert (tmp_path / "ray" / "manifest.json").read_text() != ""  # analysed as a local run is


def test_psychobench_on_actors_equals_local(cluster: Path, tmp_path: Path, seed_data: Path) -> None:
    from test_psychobench_task import config, positional_responder

    with FaultServer(responder=positional_responder) as server:
        local = start_run(
            config(server, seed_data, scales=["bfi", "DTDD"], runs=2), tmp_path / "local", False
        )
        with use(RAY):
            remote = start_run(
                config(server, seed_data, scales=["bfi", "DTDD"], runs=2), tmp_path / "ray", False
            )
    assert remote.summary.done == local.summary.done == 4
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
    names = sorted(p.name for p in remote.outputs)
    assert names == sorted(p.name for p in local.outputs) and names
    for name in ("results.csv",):
        if (tmp_path / "local" / name).exists():
            assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_a_gamabench_preset_on_ray_equals_local_and_resumes(cluster: Path, tmp_path: Path) -> None:
    from llmpsych.games.presets import PresetSettings, execute, expand, get_preset
    from test_games_engine_runs import scripted

    with FaultServer(responder=scripted) as server:
        settings = PresetSettings(
            base_url=server.base_url, cache=False, concurrency=8, players=3, rounds=2,
            models=["openai-compatible/scripted"], games=["guessing"],
        )  # fmt: skip
        planned = expand(get_preset("temperatures"), settings)[:2]
        execute(planned, tmp_path / "local", progress=False)
        with use(ExecutorSettings(kind="ray", actors=1)):
            outcomes = execute(planned, tmp_path / "ray", progress=False)
            sent = sum(server.hits.values())
            again = execute(planned, tmp_path / "ray", progress=False)  # the sweep's resume rule holds
        assert sum(o.summary.calls_sent for o in again) == 0 and sum(server.hits.values()) == sent
    assert [o.summary.done for o in outcomes] == [1, 1]
    for run in planned:
        assert _rows(tmp_path / "ray" / run.directory) == _rows(tmp_path / "local" / run.directory)


def _actor_pids() -> list[int]:
    """Processes of the Ray actors running units (Ray names them ``ray::UnitActor...``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::UnitActor"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_a_killed_actor_loses_no_completed_call_and_nothing_is_duplicated(
    cluster: Path, tmp_path: Path
) -> None:
    units, turns = 16, 12
    with FaultServer() as clean_server:
        start_run(_echo(clean_server, units, turns), tmp_path / "clean", False)
    killed: dict[str, Any] = {}

    def kill_an_actor_mid_run() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "pid" not in killed:
            time.sleep(0.02)
            try:
                with sqlite3.connect(tmp_path / "ray" / "run.sqlite") as db:
                    requests = [r[0] for r in db.execute("SELECT request FROM calls")]
            except sqlite3.Error:
                continue
            pids = _actor_pids()
            if len(requests) >= 40 and pids:
                killed["stored"] = {body_key(json.loads(r)) for r in requests}
                killed["pid"] = pids[0]
                os.kill(pids[0], signal.SIGKILL)

    with FaultServer(FaultRates(latency_s=0.03)) as server:
        killer = threading.Thread(target=kill_an_actor_mid_run)
        killer.start()
        with use(RAY):
            outcome = start_run(_echo(server, units, turns), tmp_path / "ray", False)
        killer.join()
    assert "pid" in killed, "the run ended before an actor could be killed"
    assert outcome.summary.failed == 0 and outcome.summary.done == units
    assert unit_results(tmp_path / "ray") == unit_results(tmp_path / "clean")
    keys = call_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys)) == units * turns * 2  # nothing recorded twice
    # every call stored before the kill was never asked again (a call the killed actor had in flight may
    # be asked again on the retry; whether one was in flight at the kill depends on timing, so not asserted)
    assert all(server.hits[key] == 1 for key in killed["stored"])


def test_units_of_an_actor_that_never_comes_back_finish_on_the_others(cluster: Path, tmp_path: Path) -> None:
    """An actor lost for good (as one on a node that is gone and cannot be placed elsewhere) is not asked
    again: its units are retried on the remaining actor and the run ends with no failed unit. (Before, the
    dead actor, running nothing, was always the least busy one: every retry went to it, "died 7 times".)"""
    from llmpsych.runs import ray_executor

    units, turns = 12, 8
    with FaultServer() as clean_server:
        start_run(_echo(clean_server, units, turns), tmp_path / "clean", False)
    killed: dict[str, Any] = {}

    def kill_an_actor_for_good() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "actor" not in killed:
            time.sleep(0.02)
            try:
                with sqlite3.connect(tmp_path / "ray" / "run.sqlite") as db:
                    calls = db.execute("SELECT count(*) FROM calls").fetchone()[0]
            except sqlite3.Error:
                continue
            pool = ray_executor._pool
            if calls >= 30 and pool is not None:
                killed["actor"] = pool.actors[0]
                ray.kill(pool.actors[0], no_restart=True)

    with FaultServer(FaultRates(latency_s=0.03)) as server:
        killer = threading.Thread(target=kill_an_actor_for_good)
        killer.start()
        with use(RAY):
            outcome = start_run(_echo(server, units, turns), tmp_path / "ray", False)
        killer.join()
    assert ray_executor._pool is None  # a run after it starts whole actors
    assert "actor" in killed, "the run ended before an actor could be killed"
    assert outcome.summary.failed == 0 and outcome.summary.done == units, outcome.summary.errors
    assert unit_results(tmp_path / "ray") == unit_results(tmp_path / "clean")
    keys = call_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys)) == units * turns * 2  # nothing recorded twice


def test_units_in_flight_scale_with_the_actors(cluster: Path, tmp_path: Path) -> None:
    """``workers`` is per actor: 2 actors x 2 workers hold 4 units (8 requests: 2 seats each) in flight at
    once. The server answers only once 8 requests wait together (a barrier); with 2 units in flight in
    all (as before, whatever the actors) it never does and the barrier breaks."""
    barrier = threading.Barrier(8, timeout=30)
    broken: list[bool] = []

    def all_together(body: dict[str, Any]) -> str:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            broken.append(True)
        return "ok"

    with FaultServer(responder=all_together) as server, use(RAY):
        outcome = start_run(_echo(server, units=4, turns=1, workers=2), tmp_path / "r", False)
    assert not broken, "fewer than 8 requests were ever in flight together"
    assert outcome.summary.done == 4 and outcome.summary.failed == 0


def test_ray_listens_on_loopback_only_and_never_logs_the_key(cluster: Path, tmp_path: Path) -> None:
    assert str(ray.get_runtime_context().gcs_address).startswith("127.0.0.1:")
    ray_pids = _ray_pids(cluster)
    listening = _listening_addresses(ray_pids)
    assert listening and all(host in ("127.0.0.1", "::ffff:127.0.0.1") for host in listening), listening
    # the server refuses any other key: the actors had it
    with FaultServer(api_key=CANARY) as server, use(RAY):
        outcome = start_run(_echo(server, units=4, turns=1), tmp_path / "r", False)
    assert outcome.summary.done == 4 and server.authorization_headers[-1] == f"Bearer {CANARY}"
    logs = [p for p in (cluster / "logs").rglob("*") if p.is_file()]
    assert logs
    assert [p for p in logs if CANARY.encode() in p.read_bytes()] == []
    assert CANARY.encode() not in (tmp_path / "r" / "run.sqlite").read_bytes()


def test_a_resumed_run_replays_its_calls_on_the_actors(cluster: Path, tmp_path: Path) -> None:
    with FaultServer() as server:
        start_run(_echo(server, units=6, turns=2), tmp_path / "r", False)
        with sqlite3.connect(tmp_path / "r" / "run.sqlite") as db:  # as if killed mid-way: half undone
            db.execute("UPDATE units SET status='running', result=NULL WHERE unit_id >= 'u000003'")
            db.execute("DELETE FROM calls WHERE unit_id >= 'u000003' AND seq > 2")  # the second turn
        before = sum(server.hits.values())
        with use(RAY):
            outcome = resume_run(tmp_path / "r", False)
    assert outcome.summary.done == 3 and outcome.summary.skipped == 3
    assert outcome.summary.calls_replayed == 6 and outcome.summary.calls_sent == 6
    assert sum(server.hits.values()) - before == 6
    assert len(call_keys(tmp_path / "r")) == 6 * 2 * 2


def _ray_pids(session: Path) -> set[int]:
    """This Ray instance's processes: those whose command line names its session folder (the GCS server,
    the raylet, their agents), and every process under them (the workers, whose command line Ray rewrites).
    Another Ray on the machine (the multi-node cluster of tests/ray_cluster.py) is not this one."""
    parents: dict[int, int] = {}
    roots = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if session.name.encode() in cmdline:
            roots.add(pid)
    pids = set(roots)
    grown = True
    while grown:
        grown = False
        for pid, parent in parents.items():
            if parent in pids and pid not in pids:
                pids.add(pid)
                grown = True
    return pids


def _listening_addresses(pids: set[int]) -> set[str]:
    """Local addresses of the TCP sockets the processes ``pids`` listen on (from /proc)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    hosts = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                hosts.add(_host(fields[1].split(":")[0], width))
    return hosts


def _host(hex_address: str, width: int) -> str:
    import ipaddress

    raw = bytes.fromhex(hex_address)
    if width == 8:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return f"::ffff:{address.ipv4_mapped}" if address.ipv4_mapped else str(address)


def test_the_cli_runs_on_ray_and_resumes_with_another_executor(tmp_path: Path) -> None:
    """``llmpsych run --executor ray`` in a fresh process starts (and stops) its own loopback Ray; the
    executor is not part of the run, so ``--resume`` takes the flags (here: back to local)."""
    with FaultServer() as server:
        flags = ["--task", "echo", "--model", "openai-compatible/m", "--base-url", server.base_url]
        flags += ["--no-cache", "--no-progress", "-O", "units=4", "-O", "parallel=2"]
        done = run_cli("run", *flags, "--executor", "ray", "--actors", "1", "--out", tmp_path / "r")
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(tmp_path / "r" / "run.sqlite") as db:  # as if interrupted: one unit undone
            db.execute("UPDATE units SET status='running', result=NULL WHERE unit_id='u000003'")
        again = run_cli("run", "--resume", tmp_path / "r", "--executor", "local", "--actors", "1")
        assert again.returncode == 0, again.stderr
        local = run_cli("run", *flags, "--out", tmp_path / "local")
        assert local.returncode == 0, local.stderr
    assert sum(server.hits.values()) == 2 * 4 * 2  # the resumed unit replayed its calls
    assert _rows(tmp_path / "r")[1] == _rows(tmp_path / "local")[1]
    assert unit_results(tmp_path / "r") == unit_results(tmp_path / "local")


@pytest.mark.model
def test_the_embedded_model_on_an_actor_answers_as_in_process(cluster: Path, tmp_path: Path) -> None:
    """The actor loads its own copy of the model (once) and answers exactly as the run's process does."""

    def config() -> Any:
        return parse_run_config(
            {
                "task": "echo",
                "model": "local/qwen2.5-0.5b",
                "cache": False,
                "params": {"temperature": 0},
                "options": {"units": 2, "max_tokens": 6},
            }
        )

    local = start_run(config(), tmp_path / "local", False)
    with use(ExecutorSettings(kind="ray", actors=1)):
        remote = start_run(config(), tmp_path / "ray", False)
    assert remote.summary.done == local.summary.done == 2
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")
