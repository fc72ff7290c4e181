"""Trust, no silent wrong numbers (docs/security.md section 5), end to end: a real PsychoBench run against a
loopback server whose model answers with hostile number forms, then an edited run store re-analysed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.testing.fault_server import FaultServer

#: GSE item -> what the hostile model answers for it, on every ask (the others get 3).
HOSTILE = {2: "2e5", 5: "٣", 9: "3.0"}


def hostile_responder(body: dict) -> str:
    content = body["messages"][-1]["content"]
    asked = [int(n) for n in re.findall(r"^(\d+)\. ", content, flags=re.MULTILINE)]
    if not asked:  # a re-ask: "These statements still need a valid score: 2, 5, 9. ..."
        asked = [int(x) for x in content.split(":", 1)[1].split(".", 1)[0].split(",")]
    return "\n".join(f"{i}: {HOSTILE.get(i, '3')}" for i in asked)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> Path:
    out = tmp_path_factory.mktemp("pb")
    cli._mount_subcommands()
    with FaultServer(responder=hostile_responder) as server:
        result = CliRunner().invoke(
            cli.app,
            [
                "psychobench", "run", "--model", "openai-compatible/hostile",
                "--scale", "GSE", "--runs", "2",
                "--data-dir", str(seed_data), "--out", str(out), "--base-url", server.base_url,
                "--no-cache", "--no-progress",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out / "openai-compatible_hostile"


def test_hostile_answers_are_unanswered_and_the_runs_not_scored(run_dir: Path) -> None:
    valid = pd.read_csv(run_dir / "valid.csv")
    assert valid["valid"].tolist() == [7, 7] and valid["items"].tolist() == [10, 10]
    assert valid["asks"].tolist() == [3, 3]  # asked once, re-asked twice, never read as a number
    answers = pd.read_csv(run_dir / "answers.csv")
    unread = answers[answers["item"].isin(HOSTILE)]
    assert unread["answer"].isna().all() and len(unread) == 6
    summary = pd.read_csv(run_dir / "summary.csv")
    assert summary[["runs", "n"]].values.tolist() == [[2, 0]] and summary["mean"].isna().all()
    report = (run_dir / "report.md").read_text()
    assert "14 of 20 items answered validly" in report


def test_an_edited_store_is_refused_naming_the_scale_and_run(run_dir: Path) -> None:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        unit_id, text = db.execute(
            "SELECT unit_id, result FROM units WHERE status = 'done' LIMIT 1"
        ).fetchone()
        result = json.loads(text)
        result["answers"]["1"] = 99
        db.execute("UPDATE units SET result = ? WHERE unit_id = ?", (json.dumps(result), unit_id))
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "analyze", str(run_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250"},
        timeout=300,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"run store, GSE run {result['run']}: scale 'GSE': answer 99 to item 1 is outside 1-4" in lines[0]
