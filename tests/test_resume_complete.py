"""``--resume`` of a run that is already complete says so and rewrites nothing (first-hour issue, item 7).

Before, it re-opened the run's models and re-wrote every table, plot and report without a word (73 s for
an embedded-model PsychoBench run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llmpsych.testing.fault_server import FaultServer

SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"


def llmpsych(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *args], capture_output=True, text=True, env=os.environ, timeout=300
    )


def test_resuming_a_complete_run_says_so_and_writes_nothing_unless_an_output_is_missing(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    run = tmp_path / "bfi"
    first = llmpsych(
        "run", "--task", "psychobench", "--model", "openai-compatible/m", "--base-url", fault_server.base_url,
        "-O", "scale=[BFI]", "-O", "runs=2", "--data-dir", str(SEED_DATA), "--out", str(run),
        "--no-progress",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    written = {path.name: path.stat().st_mtime_ns for path in run.iterdir() if path.is_file()}
    assert "summary.csv" in written and "report.md" in written
    asked = sum(fault_server.hits.values())

    again = llmpsych("run", "--resume", str(run), "--no-progress")
    assert again.returncode == 0, again.stderr
    assert "is already complete (2 of 2 units done)" in again.stderr
    assert "nothing rewritten" in again.stderr and f"llmpsych analyze {run}" in again.stderr
    assert sum(fault_server.hits.values()) == asked
    after = {path.name: path.stat().st_mtime_ns for path in run.iterdir() if path.is_file()}
    changed = {name for name in written if after.get(name) != written[name]}
    assert changed <= {"run.sqlite", "run.sqlite-wal", "run.sqlite-shm", "run.lock"}, changed

    (run / "summary.csv").unlink()  # an output gone: the analysis runs again and writes it
    third = llmpsych("run", "--resume", str(run), "--no-progress")
    assert third.returncode == 0, third.stderr
    assert "already complete" not in third.stderr
    assert (run / "summary.csv").is_file()
