"""A user's scale file as EmotionBench's emotion measure: scored per subscale before and after situations."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.runner import analyze_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli

# Our own made-up measure (not from any data set); item 2 is reverse-keyed.
SCALE = """
name: CALM-OWN
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: My shoulders feel loose.}
  - {index: 2, text: My thoughts race ahead., reverse: true}
  - {index: 3, text: I breathe slowly.}
  - {index: 4, text: I notice small sounds.}
  - {index: 5, text: I see colours sharply.}
subscales:
  - {name: Ease, items: [1, 2, 3]}
  - {name: Alertness, items: [4, 5]}
"""
TEXT_ITEM = {
    "My shoulders feel loose.": 1,
    "My thoughts race ahead.": 2,
    "I breathe slowly.": 3,
    "I notice small sounds.": 4,
    "I see colours sharply.": 5,
}


def respondent(body: dict[str, Any]) -> str:
    """Less ease after a situation (lower on items 1 and 3, higher on reversed 2); alertness unchanged;
    a little noise from each statement's text and place in the prompt (so from the run's item order)."""
    messages = body["messages"]
    asked = "\n".join(m["content"] for m in messages if m["role"] == "user")
    evoked = "shoes of the person" in asked
    lines = []
    found = re.findall(r"^(\d+)\. (.+)$", messages[-1]["content"], re.MULTILINE)
    for position, (number, text) in enumerate(found):  # statements keep their item numbers
        item = TEXT_ITEM[text.strip()]
        value = 3 + int(hashlib.sha256(f"{position}{text}".encode()).hexdigest(), 16) % 2
        if evoked and item in (1, 3):
            value -= 2
        if evoked and item == 2:
            value = 5
        lines.append(f"{number}: {value}")
    return "\n".join(lines)


def config(server: FaultServer, seed_data: Path, scale_file: Path, **options: Any):  # noqa: ANN201
    return parse_run_config(
        {
            "task": "emotionbench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(seed_data),
            "options": {
                "scale_file": str(scale_file),
                "emotions": ["Anger"],
                "situations_per_factor": 2,
                "runs": 5,
                "default_runs": 10,
                **options,
            },
        }
    )


def test_own_scale_is_scored_per_subscale_before_and_after_situations(
    tmp_path: Path, seed_data: Path
) -> None:
    scale_file = tmp_path / "calm.yaml"
    scale_file.write_text(SCALE, encoding="utf-8")
    prompts: list[str] = []

    def answer(body: dict[str, Any]) -> str:
        prompts.append("\n".join(m["content"] for m in body["messages"]))
        return respondent(body)

    with FaultServer(responder=answer) as server:
        outcome = start_run(config(server, seed_data, scale_file), tmp_path / "run", False)
    assert outcome.summary.done == 10 + 5 * 2 * 5 and outcome.summary.failed == 0
    # no instructions or system prompt in the file: ours, with the range
    assert all("from 1 to 5" in p and "between 1 and 5" in p for p in prompts)
    runs = pd.read_csv(tmp_path / "run" / "runs.csv")
    assert {"Ease", "Alertness"} <= set(runs.columns) and "total" not in runs.columns
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["scale"] == "CALM-OWN"
    overall = summary["overall"]
    ease, alert = overall["Ease"], overall["Alertness"]
    # ease: items 1, 3 down by 2 and reversed item 2 keyed to 1 -> clearly lower, significant
    assert ease["change"] < -1.5 and ease["mark"] == "↓"
    assert abs(alert["change"]) < 0.3 and alert["mark"] == "—"
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| Ease" in report and "Alertness" in report
    # the run keeps the file's text: analysis works after the file is gone
    scale_file.unlink()
    assert analyze_run(tmp_path / "run")


def test_own_scale_with_an_official_name_or_a_missing_file_is_refused(
    tmp_path: Path, seed_data: Path
) -> None:
    panas = tmp_path / "panas.yaml"
    panas.write_text(SCALE.replace("name: CALM-OWN", "name: PANAS"), encoding="utf-8")
    with FaultServer() as server, pytest.raises(ConfigError, match="official EmotionBench scale"):
        start_run(config(server, seed_data, panas), tmp_path / "run", False)
    assert not (tmp_path / "run").exists()
    result = run_cli(
        "emotionbench", "run", "--scale-file", tmp_path / "nope.yaml", "-m", "openai-compatible/x"
    )
    assert result.returncode == 2 and "scale file not found" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2
