"""Quickstart: administration with strict parsing and bounded re-asks, end to end on the embedded model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.fault_server import FaultServer


def scripted_responder(body: dict) -> str:
    """First answer rates only odd items (one out of range); re-asks are answered fully."""
    last = body["messages"][-1]["content"]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE)]
    if numbers:  # the first prompt lists the statements
        return "\n".join(f"{i}: {9 if i == 1 else 4}" for i in numbers if i % 2)
    asked = [int(n) for n in re.findall(r"\d+", last.split("Reply")[0])]
    return "\n".join(f"{i}: 2" for i in asked)


def test_reasks_missing_and_out_of_range_items_then_scores(tmp_path: Path) -> None:
    with FaultServer(responder=scripted_responder) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 2},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 4  # one ask + one re-ask per run
    scores = pd.read_csv(tmp_path / "r" / "scores.csv")
    # odd items 3, 5, 7 answered 4 (item 3 reverse-keyed: 2), item 1 re-asked -> 2; even items re-asked -> 2,
    # item 6 reverse-keyed -> 4.
    assert scores["Curiosity"].tolist() == [pytest.approx((2 + 2 + 4 + 4) / 4)] * 2
    assert scores["Caution"].tolist() == [pytest.approx((2 + 2 + 4 + 2) / 4)] * 2
    assert scores["valid_rate"].tolist() == [1.0, 1.0] and scores["asks"].tolist() == [2, 2]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "16 of 16 items answered" in report


def test_unanswerable_model_is_bounded_and_reported(tmp_path: Path) -> None:
    with FaultServer(
        responder=lambda body: "Sorry, but as an AI I cannot rate myself on statements like these."
    ) as server:
        config = parse_run_config(
            {
                "task": "quickstart",
                "model": "openai-compatible/refuser",
                "base_url": server.base_url,
                "cache": False,
                "options": {"runs": 1, "max_reasks": 2},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
        assert sum(server.hits.values()) == 3  # one ask and exactly two re-asks, then it stops
    assert outcome.summary.done == 1
    store = RunStore.in_dir(tmp_path / "r")
    result = store.units()[0].result
    store.close()
    assert result["refused"] is True and result["answers"] == {} and len(result["unanswered"]) == 8
    assert "0 of 8 items answered" in (tmp_path / "r" / "report.md").read_text()
    assert resume_run(tmp_path / "r", False).summary.calls_sent == 0  # nothing left to do


@pytest.mark.model
def test_quickstart_command_end_to_end_on_the_embedded_model(tmp_path: Path) -> None:
    run_dir = tmp_path / "qs"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmpsych",
            "quickstart",
            "--runs",
            "2",
            "--out",
            str(run_dir),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["models"]["subject"]["identity"].startswith("embedded:sha256=1d9614638d18")
    scores = pd.read_csv(run_dir / "scores.csv")
    assert len(scores) == 2 and scores["valid_rate"].min() > 0.5  # the model answers most items
    assert scores[["Curiosity", "Caution"]].stack().between(1, 5).all()
    report = (run_dir / "report.md").read_text()
    assert "Scores (mean ± sd over runs" in report and "local/qwen2.5-0.5b" in report
    exported = subprocess.run(
        [sys.executable, "-m", "llmpsych", "export", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        exported.returncode == 0 and (run_dir / "export" / "transcripts.jsonl").read_text().count("\n") >= 2
    )
