"""``llmpsych run --task gamabench`` ends with each game's score, its n and the fallback decisions behind
it, as the quickstart does for its short game (first-hour issue, item 7: before, it printed no score)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llmpsych.testing.fault_server import FaultServer

GAME = "run --task gamabench --model openai-compatible/m -O runs=2 -O players=3 -O rounds=2 -O max_reasks=0"


def test_a_gamabench_run_prints_its_score_and_says_when_fallbacks_made_it(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", *GAME.split(), "--base-url", fault_server.base_url]
        + ["--out", str(tmp_path / "g"), "--no-progress"],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("guessing: score")]
    # The scripted server's replies hold no number: every decision is the fallback, and the line says so.
    assert lines == [
        "guessing: score 50.0 ± 0.0 / 100 (n = 2 of 2 runs scored); 12 of 12 decisions were the fallback "
        "action (no usable answer), not played"
    ], done.stdout
