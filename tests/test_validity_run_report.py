"""The run report of a PsychoBench run has an item response section (issue 30, item 1): a graded response
model per subscale fitted on the run's own administrations when there are enough of them, and, when
there are not, the reason with the n and the command that pools runs. Real run stores made against a
scripted OpenAI-compatible server whose answers follow a graded response process."""

from __future__ import annotations

import itertools
import math
import random
import re
from pathlib import Path

import pandas as pd

from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer

SCALE = """\
llmpsych_scale: 1
name: KNOT
title: Rope and knot habits (written for llmpsych's tests)
source: written for llmpsych's tests
license: CC0-1.0
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: I coil a rope before I put it away.}
  - {index: 2, text: I leave knots for someone else to undo., reverse: true}
  - {index: 3, text: I check a knot twice before I trust it.}
  - {index: 4, text: I know more than three knots by name.}
subscales:
  - name: Care
    items: [1, 2, 3, 4]
"""

_LISTED = re.compile(r"^(\d+)\. ", re.MULTILINE)


def graded_responder() -> object:
    """Each request is one respondent: a latent trait drawn afresh, each item answered by a graded
    response process (discrimination 2, thresholds -1.5..1.5), item 2 reverse-keyed."""
    counter = itertools.count()

    def reply(body: dict) -> str:
        rng = random.Random(next(counter))
        theta = rng.gauss(0, 1)
        order = [int(x) for x in _LISTED.findall(body["messages"][-1]["content"])]
        lines = []
        for item in order:
            trait = -theta if item == 2 else theta
            value = 1 + sum(
                rng.random() < 1 / (1 + math.exp(-2.0 * (trait - b))) for b in (-1.5, -0.5, 0.5, 1.5)
            )
            lines.append(f"{item}: {value}")
        return "\n".join(lines)

    return reply


def _run(root: Path, runs: int) -> Path:
    (root / "knot.yaml").write_text(SCALE, encoding="utf-8")
    out = root / f"run{runs}"
    with FaultServer(responder=graded_responder()) as server:
        config = {
            "task": "psychobench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "options": {"scale_files": [str(root / "knot.yaml")], "runs": runs, "max_reasks": 0},
        }
        outcome = start_run(parse_run_config(config), out, False)
    assert outcome.summary.failed == 0
    return out


def _section(run_dir: Path) -> str:
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "## Item response models" in report
    return report.split("## Item response models", 1)[1].split("\n## ", 1)[0]


def test_a_run_with_enough_administrations_reports_its_graded_response_model(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, 150)
    section = _section(run_dir)
    assert "fitted" in section and "Discriminations (a)" in section
    items = pd.read_csv(run_dir / "irt_items.csv")
    a = items[items["parameter"] == "a"]
    assert sorted(a["item"]) == [1, 2, 3, 4]
    assert (a["estimate"] > 0.8).all() and (a["se"] > 0).all()  # reverse item 2 flipped before fitting
    summary = pd.read_csv(run_dir / "irt_summary.csv")
    assert summary["respondents"].tolist() == [150]


def test_a_run_with_few_administrations_says_why_nothing_was_fitted(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, 6)
    section = _section(run_dir)
    assert "refused" in section and "Discriminations" not in section
    assert "50" in section and "llmpsych validity irt" in section
    assert not (run_dir / "irt_items.csv").exists()
    summary = pd.read_csv(run_dir / "irt_summary.csv")
    assert summary["status"].tolist() != ["fitted"] and summary["respondents"].tolist() == [6]
