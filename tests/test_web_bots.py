"""``llmpsych gamabench host --bots``: a whole session dry-run through the real pages over HTTP (bots in
the browser seats, one invalid answer each, a person who never comes, models from a scripted loopback
server), then the exported data checked; a check that does not hold fails the command."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.errors import DataError
from llmpsych.web.bots import BOTS_FILE, check, report

#: Upper bound of the dry run (a loaded 2-core machine); it ends as soon as the session does.
PATIENCE_S = 300.0


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    run_dir = tmp_path_factory.mktemp("bots") / "session"
    command = [sys.executable, "-m", "llmpsych", "gamabench", "host", "--bots", "--out", str(run_dir)]
    command += ["--game", "guessing,bar,pirate", "--players", "3", "--rounds", "2", "--seed", "3"]
    command += ["-O", "seats=[web:Ann, llm, web:Bob]"]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE_S, env=env)
    return run_dir, done


def test_one_command_dry_runs_a_session_and_checks_its_data(
    dry_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    run_dir, done = dry_run
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.split("checks of the exported data:\n", 1)[1].splitlines()
    checks = [line for line in lines if line.startswith("  ok") or line.startswith("  FAIL")]
    assert len(checks) == 10 and all(line.startswith("  ok") for line in checks), checks
    with (run_dir / "decisions.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    hows = {(int(r["player"]), r["how"]) for r in rows}
    # Ann (player 0) typed, Bob (player 2, the last web seat) never came, the model seat is a model
    assert hows == {(0, "typed"), (2, "never joined"), (1, "model")}
    refused = [r for r in rows if r["refused_texts"]]
    assert len(refused) == 1 and refused[0]["player"] == "0"  # Ann's one invalid answer, kept with it
    bots = json.loads((run_dir / BOTS_FILE).read_text())
    assert [b["missing"] for b in bots["bots"]] == [False, True] and bots["started"]
    assert "/play/" not in (run_dir / BOTS_FILE).read_text()  # no seat token in the bots' log


def test_a_data_check_that_does_not_hold_fails(
    dry_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The checks read the run folder: a decision row that lost its ``typed``, or a row that is gone,
    is found, and the command's report of it is an error (non-zero exit)."""
    run_dir, _ = dry_run
    path = run_dir / "decisions.csv"
    original = path.read_text()
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    typed = next(i for i, r in enumerate(rows) if r["how"] == "typed")
    try:
        for change in ("how", "drop"):
            changed = [dict(r) for r in rows]
            if change == "how":
                changed[typed]["how"] = "deadline"
            else:
                del changed[typed]
            with path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(changed)
            failed = [c.what for c in check(run_dir) if not c.ok]
            if change == "how":
                assert failed == ["each typed answer's row says how=typed and holds the value typed"]
            else:
                assert "every answer a bot typed has its decision row" in failed
                assert any(f.startswith("every browser-seat decision") for f in failed)
            with pytest.raises(DataError, match="the dry run's data check failed"):
                report(check(run_dir), lambda line: None)
    finally:
        path.write_text(original)
    assert all(c.ok for c in check(run_dir))
