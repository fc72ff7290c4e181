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


SESSION = """\
labels = ["A1", "A2", "B1", "B2"]
debrief = "Thank you."
[game]
game = "guessing"
players = 3
rounds = 2
seats = ["web", "web", "llm"]
tables = 2
deadline = 0
[consent]
text = "You will play a short game."
[[quiz]]
question = "How many rounds will you play?"
choices = ["1", "2", "5"]
answer = "2"
[[quiz]]
question = "Type the word game"
answer = "game"
[questionnaire]
scale_file = "tidy.yaml"
[payment]
per_point = 0.5
fee = 2.0
"""


@pytest.fixture(scope="module")
def session_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    from test_own_instruments import TIDY_YAML

    folder = tmp_path_factory.mktemp("bots-session")
    (folder / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    (folder / "session.toml").write_text(SESSION, encoding="utf-8")
    run_dir = folder / "session"
    command = [sys.executable, "-m", "llmpsych", "gamabench", "host", "--bots", "--out", str(run_dir)]
    command += ["--session", str(folder / "session.toml"), "--lang", "de", "--seed", "3"]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "400"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE_S, env=env)
    return run_dir, done


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_bots_dry_run_a_whole_session_file_through_room_steps_and_debrief(
    session_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """Two tables of two people and a model, German pages: three labelled bots arrive through the room,
    agree, fail the quiz once and pass, play (one refused answer each), have one questionnaire form
    refused, answer it and reach the debrief's code; B2 never comes and its seat plays the default."""
    run_dir, done = session_run
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.split("checks of the exported data:\n", 1)[1].splitlines()
    checks = [line for line in lines if line.startswith("  ok") or line.startswith("  FAIL")]
    assert len(checks) == 15 and all(line.startswith("  ok") for line in checks), checks
    people = _csv_rows(run_dir / "participants.csv")
    assert [(r["label"], r["table"], r["player"]) for r in people] == [
        ("A1", "1", "0"),
        ("A2", "1", "1"),
        ("B1", "2", "0"),
    ]
    assert all(r["consent"] and r["quiz attempts"] == "2" and r["debrief"] for r in people)
    decided = _csv_rows(run_dir / "participant_decisions.csv")
    assert {(r["label"], r["how"]) for r in decided} == {
        ("A1", "typed"),
        ("A2", "typed"),
        ("B1", "typed"),
        ("", "never joined"),
    }
    assert [r["label"] for r in _csv_rows(run_dir / "payments.csv")] == ["A1", "A2", "B1"]
    bots = json.loads((run_dir / BOTS_FILE).read_text())
    assert [(b["label"], b["missing"]) for b in bots["bots"]][-1] == ("B2", True)
    assert all(b["paid"].endswith(" EUR") and "," in b["paid"] for b in bots["bots"][:3])  # German 2,00


@pytest.mark.parametrize(
    ("name", "change", "failed"),
    [
        ("participants.csv", ("quiz attempts", "1"), "participants.csv: each bot who came"),
        ("participants.csv", ("consent", ""), "participants.csv: each bot who came"),
        ("participant_decisions.csv", ("how", "deadline"), "participant_decisions.csv: each typed answer"),
        ("payments.csv", ("total", "99.0"), "payments.csv: each bot who came"),
        ("payments.csv", ("money", "0.5"), "payments.csv: each bot who came"),
    ],
)
def test_a_tampered_session_table_fails_its_check(
    session_run: tuple[Path, subprocess.CompletedProcess[str]],
    name: str,
    change: tuple[str, str],
    failed: str,
) -> None:
    run_dir, done = session_run
    assert done.returncode == 0, done.stdout + done.stderr
    path = run_dir / name
    original = path.read_text(encoding="utf-8")
    rows = _csv_rows(path)
    column, value = change
    index = next(i for i, r in enumerate(rows) if r["label"] and r[column] != value)
    rows[index][column] = value
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        assert (
            [c.what for c in check(run_dir) if not c.ok]
            == [c.what for c in check(run_dir) if c.what.startswith(failed)]
            != []
        )
        with pytest.raises(DataError, match="the dry run's data check failed"):
            report(check(run_dir), lambda line: None)
    finally:
        path.write_text(original, encoding="utf-8")
    assert all(c.ok for c in check(run_dir))
