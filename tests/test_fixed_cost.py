"""The fixed cost of ``llmpsych run``: what it loads before its first request and after its last answer.

A run of the ``echo`` task (it writes no table) against a real loopback server, in a fresh process, with
:mod:`llmpsych.testing.request_clock` noting the modules loaded when the first request leaves and when the
command ends. Times are measured by ``benchmarks/fixed_cost.py``, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llmpsych.testing.fault_server import FaultServer

#: The analysis stack: ~1 s of CPU and ~140 MiB to import, which a run needs only for its tables.
ANALYSIS_STACK = ("pandas", "scipy", "numpy", "matplotlib")


def clocked_run(tmp_path: Path, *args: str) -> dict[str, object]:
    """``llmpsych run ARGS`` through the request clock against a fault server; the clock's record."""
    out = tmp_path / "clock.json"
    with FaultServer() as server:
        cmd = [sys.executable, "-m", "llmpsych.testing.request_clock", str(out), "run", "--task", "echo"]
        cmd += ["-m", "openai-compatible/bench", "--base-url", server.base_url, "--no-cache"]
        cmd += ["--out", str(tmp_path / "run"), *args]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ})
    assert result.returncode == 0, result.stderr
    clock: dict[str, object] = json.loads(out.read_text())
    return clock


def loaded(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return [name for name in ANALYSIS_STACK if name in modules]


def test_a_run_without_tables_never_imports_the_analysis_stack(tmp_path: Path) -> None:
    """Neither before the first request nor at the end: the end-of-run summary imported pandas and scipy
    (for a headline table from ``summary.csv``) even when the run wrote no ``summary.csv``: ~1 s of CPU
    and ~140 MiB after the last answer of a 5-request run."""
    clock = clocked_run(tmp_path, "-O", "units=3")
    assert clock["requests"] == 3
    assert loaded(clock["modules_at_first_request"]) == []
    assert loaded(clock["modules_at_exit"]) == []
    assert (tmp_path / "run" / "echo-summary.json").is_file()
