"""A human seat's answers are stored as typed, so a resumed game does not ask the person again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from llmpsych.runs import RunStore


def _llmpsych(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "llmpsych", *args, "--no-progress"]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)


def test_input_ends_mid_game_then_resume_asks_only_the_unanswered_rounds(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    args = ["run", "--task", "gamabench", "--no-cache", "--out", str(run_dir)]
    args += ["--model", "openai-compatible/unused", "--base-url", "http://127.0.0.1:9/v1"]
    args += ["-O", "game=guessing", "-O", "players=2", "-O", "rounds=3", "-O", "runs=1"]
    args += ["-O", "seats=[human, 'fixed:50']"]
    # the person answers round 1 (after one unreadable try), then the input ends in round 2
    first = _llmpsych(args, "fifty\n10\n")
    assert "HumanInputClosed" in first.stderr and "round 2" in first.stderr, first.stderr
    store = RunStore.in_dir(run_dir)
    try:
        assert [u.status for u in store.units()] == ["failed"]
        stored = {c.call_key: (c.role, c.response["text"]) for c in store.calls()}
    finally:
        store.close()
    assert stored == {
        "human:guessing-run01:p0:r1:number#0": ("human", "fifty"),
        "human:guessing-run01:p0:r1:number#1": ("human", "10"),
    }

    second = _llmpsych(["run", "--resume", str(run_dir)], "40\n30\n")
    assert second.returncode == 0, second.stderr
    asked = [line for line in second.stderr.splitlines() if line.startswith("=====")]
    assert asked == [
        "===== player 0 (number), round 2 =====",
        "===== player 0 (number), round 3 =====",
    ]
    store = RunStore.in_dir(run_dir)
    try:
        (unit,) = store.units()
    finally:
        store.close()
    assert unit.status == "done"
    rounds = unit.result["rounds"]
    assert [r["choices"] for r in rounds] == [[10, 50], [40, 50], [30, 50]]
    assert rounds[0]["decisions"][0]["asks"] == 2  # the replayed unreadable answer still counts as an ask
