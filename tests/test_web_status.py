"""A run's status on the runs page, read from its store and its lock: running while a process holds
it, interrupted once that process is killed, failed when every unit ended and some failed, done."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultRates, FaultServer
from llmpsych.testing.runs import call_keys
from llmpsych.web.catalog import _run_id
from test_web_security import WebServer


def _calls(run_dir: Path) -> int:
    """Calls stored so far (0 while the store is being made)."""
    try:
        return len(call_keys(run_dir)) if (run_dir / "run.sqlite").exists() else 0
    except sqlite3.OperationalError:
        return 0


def _statuses(server: WebServer) -> dict[str, dict]:
    status, _, body = server.request("/api/runs")
    assert status == 200
    return {run["id"]: run for run in json.loads(body)["runs"]}


def test_running_then_interrupted_failed_and_done(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    with FaultServer(FaultRates(rate_500=1.0, max_faults_per_request=5)) as failing:
        config = {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": failing.base_url,
            "cache": False,
        }
        config |= {"max_retries": 1, "options": {"units": 2}}
        start_run(parse_run_config(config), root / "failed", False)
    with FaultServer() as clean:
        config = {"task": "echo", "model": "openai-compatible/m", "base_url": clean.base_url, "cache": False}
        start_run(parse_run_config({**config, "options": {"units": 3}}), root / "done", False)
    server = WebServer(root)
    with FaultServer(FaultRates(latency_s=0.2)) as slow:
        command = [
            sys.executable,
            "-m",
            "llmpsych",
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
        ]
        command += ["--base-url", slow.base_url, "--no-cache", "--concurrency", "1", "--no-progress"]
        command += ["-O", "units=200", "--out", str(root / "killed")]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and _calls(root / "killed") < 2:
                time.sleep(0.05)
            while time.time() < deadline and _run_id(0, "killed") not in _statuses(server):
                time.sleep(0.1)  # the server lists the folders again every 2 s
            runs = _statuses(server)
            killed = runs[_run_id(0, "killed")]
            assert killed["status"] == "running" and killed["total"] == 200 and 0 < killed["done"] < 200
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            runs = _statuses(server)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            server.stop()
    assert runs[_run_id(0, "killed")]["status"] == "interrupted"
    assert runs[_run_id(0, "failed")]["status"] == "failed" and runs[_run_id(0, "failed")]["failed"] == 2
    assert runs[_run_id(0, "done")]["status"] == "done" and runs[_run_id(0, "done")]["progress"] == "3/3"


def test_a_run_without_a_model_seat_names_no_model(tmp_path: Path) -> None:
    """A game of fixed-strategy seats opens no model: the pages do not name the config's default model."""
    config = {
        "task": "gamabench",
        "model": "openai-compatible/never-asked",
        "options": {"game": "guessing", "runs": 1, "players": 3, "rounds": 2, "seats": ["strategy:ne"] * 3},
    }
    start_run(parse_run_config(config), tmp_path / "runs" / "bots", False)
    server = WebServer(tmp_path / "runs")
    try:
        (run,) = _statuses(server).values()
        status, _, page = server.request("/")
        assert status == 200 and b"bots" in page and b"never-asked" not in page
        status, _, body = server.request(f"/run/{run['id']}")
        assert status == 200 and b"<th>Models</th><td>none (no model took part)</td>" in body
    finally:
        server.stop()
