"""One run, one writer (issue 14, class 6), tried as an attacker and a careless user would.

Two real ``llmpsych run --resume`` processes on one run folder, a SIGKILLed lock holder, symbolic links
planted in a run folder received from someone else, and analyses of folders that hold no run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from llmpsych.report.files import atomic_open, atomic_write_text, output_dir
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer, echo_responder
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import call_keys as _call_keys
from llmpsych.testing.runs import run_cli as _cli
from llmpsych.testing.runs import unit_results as _results

UNITS, TURNS = 30, 2


def _echo_config(server: FaultServer) -> Any:
    return parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "concurrency": 4,
            "options": {"units": UNITS, "turns": TURNS},
        }
    )


def _wait(condition: Any, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.time() + 60
    while not condition():
        assert process.poll() is None, f"process ended before {what}: {process.stderr.read().decode()}"
        assert time.time() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def _stored_calls(run_dir: Path) -> int:
    try:
        return len(_call_keys(run_dir))
    except sqlite3.OperationalError:
        return 0


def test_second_resume_is_refused_naming_the_holder_and_a_sigkill_frees_the_run(tmp_path: Path) -> None:
    """Two real resumes of one run: the second gets one line with the first's pid, exit 2; after the
    first is SIGKILLed a third resume finishes the run, equal to a clean run, nothing sent twice."""
    with FaultServer() as clean:
        start_run(_echo_config(clean), tmp_path / "reference", False)

    gate = threading.Event()  # while closed, the server holds every request: the resume stays busy
    gate.set()

    def gated(body: dict[str, Any]) -> str:
        gate.wait(120)
        return echo_responder(body)

    run_dir = tmp_path / "run"
    with FaultServer(responder=gated) as server:
        base = [
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--no-progress",
        ]
        command = [sys.executable, "-m", "llmpsych", "run", "--task", "echo", *base, "--concurrency", "4"]
        command += ["-O", f"units={UNITS}", "-O", f"turns={TURNS}", "--out", str(run_dir)]
        started = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _wait(lambda: _stored_calls(run_dir) >= 10, started, "10 stored calls")
        os.kill(started.pid, signal.SIGKILL)  # an interrupted run, to be resumed
        started.wait()
        partial = _stored_calls(run_dir)
        assert 10 <= partial < UNITS * TURNS

        gate.clear()
        hits = sum(server.hits.values())  # counted on arrival, before the gate
        resume = [sys.executable, "-m", "llmpsych", "run", "--resume", str(run_dir), "--no-progress"]
        first = subprocess.Popen(resume, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        lock = run_dir / "run.lock"
        _wait(lambda: lock.read_text().strip() == str(first.pid), first, "the first resume to hold the lock")
        _wait(lambda: sum(server.hits.values()) > hits, first, "the first resume to send a request")

        second = _cli("run", "--resume", str(run_dir), "--no-progress")
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"in use by process {first.pid}" in lines[0], second.stderr
        assert "Traceback" not in second.stderr
        for command_args in (["analyze", str(run_dir)], ["report", str(run_dir)], ["export", str(run_dir)]):
            refused = _cli(*command_args)
            assert refused.returncode == 2 and f"process {first.pid}" in refused.stderr, refused.stderr
        assert not (run_dir / "export").exists()
        assert first.poll() is None  # the holder was not disturbed

        os.kill(first.pid, signal.SIGKILL)  # the OS drops its lock with it
        first.wait()
        gate.set()
        third = _cli("run", "--resume", str(run_dir), "--no-progress")
        assert third.returncode == 0, third.stderr
    keys = _call_keys(run_dir)
    assert len(keys) == len(set(keys)) == UNITS * TURNS
    assert _results(run_dir) == _results(tmp_path / "reference")
    # calls made after a resume number on from the replayed ones: one place per call in each unit
    with sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True) as db:
        places = db.execute("SELECT unit_id, seq FROM calls").fetchall()
    assert len(places) == len(set(places)) == UNITS * TURNS


def test_a_second_process_cannot_start_a_run_in_a_folder_being_run(tmp_path: Path) -> None:
    """`run --out DIR` while another process holds DIR's lock: refused, the holder's run untouched."""
    from llmpsych.runs.store import run_lock

    run_dir = tmp_path / "r"
    run_dir.mkdir()
    with run_lock(run_dir):  # this test process is the holder
        result = _cli(
            "run",
            "--task",
            "echo",
            "--model",
            "openai-compatible/m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(run_dir),
            "--no-progress",
        )
    assert result.returncode == 2 and f"in use by process {os.getpid()}" in result.stderr, result.stderr
    assert not (run_dir / "run.sqlite").exists()


@pytest.fixture
def game_run(tmp_path: Path) -> Path:
    """A finished 3-seat, 2-round Guess 2/3 game: report.md, CSVs, plots/ and transcripts/."""
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        config = parse_run_config(
            {
                "task": "gamabench",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {"game": "guessing", "runs": 1, "players": 3, "rounds": 2},
            }
        )
        outcome = start_run(config, tmp_path / "run", False)
    assert outcome.summary.done == 1
    return outcome.run_dir


def _plant(link: Path, target: Path) -> None:
    if link.is_dir() and not link.is_symlink():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_links_planted_in_a_run_folder_are_replaced_and_their_targets_untouched(
    game_run: Path, tmp_path: Path, command: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep\n")
    _plant(game_run / "report.md", victim)
    _plant(game_run / "decisions.csv", victim)
    _plant(game_run / "report.html", victim)
    _plant(game_run / "plots", elsewhere)
    _plant(game_run / "transcripts", elsewhere)

    result = _cli(command, str(game_run))
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    for name in ["report.md", "decisions.csv", "plots", "transcripts"] + (
        ["report.html"] * (command == "report")
    ):
        assert not (game_run / name).is_symlink(), name
    assert (game_run / "report.md").read_text().startswith("# ")
    assert (game_run / "plots" / "guessing.csv").is_file()
    assert (game_run / "transcripts" / "guessing-run01.md").is_file()
    assert not list(game_run.glob(".*.tmp")) and not list(game_run.glob("*/.*.tmp"))


def test_export_replaces_a_planted_export_folder_link(game_run: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (game_run / "export").symlink_to(elsewhere)
    result = _cli("export", str(game_run))
    assert result.returncode == 0, result.stderr
    assert list(elsewhere.iterdir()) == []
    export = game_run / "export"
    assert export.is_dir() and not export.is_symlink()
    assert {p.name for p in export.iterdir()} == {"transcripts.jsonl", "calls.csv", "units.csv"}
    lines = (export / "transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["role"] == "subject"


def test_a_planted_lock_file_link_is_refused_and_its_target_untouched(game_run: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (game_run / "run.lock").unlink()
    (game_run / "run.lock").symlink_to(victim)
    result = _cli("analyze", str(game_run))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "run.lock is a symbolic link" in result.stderr
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize(
    "args",
    [["analyze"], ["export"], ["run", "--resume"], ["psychobench", "analyze"]],
    ids=lambda a: " ".join(a),
)
def test_a_missing_or_empty_run_folder_is_an_error_and_nothing_is_created(
    tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "missing"
    result = _cli(*args, str(missing))
    assert result.returncode == 2 and "no run found" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not missing.exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    result = _cli(*args, str(empty))
    assert result.returncode == 2 and "no run found" in result.stderr, result.stderr
    assert list(empty.iterdir()) == []


def test_export_of_a_missing_run_creates_no_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _cli("export", str(tmp_path / "missing"), "--out", str(out))
    assert result.returncode == 2 and not out.exists() and not (tmp_path / "missing").exists()


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old report\n")
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("half a new rep")
        raise RuntimeError("the writer failed half-way")
    assert target.read_text() == "old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
    atomic_write_text(target, "new report\n")
    assert target.read_text() == "new report\n" and oct(target.stat().st_mode & 0o777) != "0o600"


def test_output_dir_keeps_the_users_folder_link_but_replaces_its_own(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    users = tmp_path / "users-link"
    users.symlink_to(real)  # a folder the user named (--out) may be a link: taken as given
    planted = tmp_path / "elsewhere"
    planted.mkdir()
    (real / "plots").symlink_to(planted)
    folder = output_dir(users, "plots")
    assert users.is_symlink() and folder.is_dir() and not folder.is_symlink()
    assert (real / "plots").is_dir() and not (real / "plots").is_symlink() and list(planted.iterdir()) == []


def test_a_benchmarks_own_resume_is_refused_while_the_run_is_held(tmp_path: Path) -> None:
    """`reliability run --resume` (and every preset, which resumes through the same ``resume_run``) meets
    the lock of a run held by another process: here this test process holds it."""
    from llmpsych.runs.store import run_lock

    with FaultServer() as server:
        start_run(_echo_config(server), tmp_path / "r", False)
    with run_lock(tmp_path / "r"):
        result = _cli("reliability", "run", "--resume", str(tmp_path / "r"), "--no-progress")
    assert result.returncode == 2 and f"in use by process {os.getpid()}" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
