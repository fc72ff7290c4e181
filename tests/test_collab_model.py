"""Camel (every push) and MAD (nightly set) on two HumanEval problems with the embedded model, clean and
with AutoInject."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmpsych.collab.experiments import compare_runs
from llmpsych.runs import parse_run_config, start_run


@pytest.mark.model
@pytest.mark.parametrize(
    "systems",
    [
        pytest.param(("camel",), id="camel"),
        pytest.param(("camel", "mad"), id="camel-mad", marks=pytest.mark.nightly),
    ],
)
def test_systems_on_the_embedded_model(systems: tuple[str, ...], seed_data: Path, tmp_path: Path) -> None:
    limits = {"camel": {"max_messages": 2}, "mad": {"max_rounds": 1}}
    run_dirs = []
    for system in systems:
        for fault in ("none", "autoinject"):
            config = parse_run_config(
                {
                    "task": "mas",
                    "model": "local/qwen2.5-0.5b",
                    "n_parallel": 2,
                    "data_dir": str(seed_data),
                    "params": {"temperature": 0, "max_tokens": 160},
                    "options": {
                        "system": system,
                        "dataset": "humaneval50",
                        "items": 2,
                        "fault": fault,
                        **limits[system],
                    },
                }
            )
            outcome = start_run(config, tmp_path / f"{system}-{fault}", False)
            assert outcome.summary.failed == 0, outcome.summary.errors
            summary = json.loads((outcome.run_dir / "summary.json").read_text())
            assert summary["n_items"] == 2 and 0 <= summary["score"] <= 100
            assert "Per item" in (outcome.run_dir / "report.md").read_text()
            run_dirs.append(outcome.run_dir)
    transcripts = (tmp_path / "camel-autoinject" / "transcripts.md").read_text()
    # Whether the 0.5B injector actually changes a line depends on its output; that the faulty agent's
    # messages went through AutoInject (and the transcript says what happened) does not.
    assert "**AutoInject" in transcripts
    assert "AutoInject" not in (tmp_path / "camel-none" / "transcripts.md").read_text()
    outputs = compare_runs(run_dirs, tmp_path / "comparison")
    report = (tmp_path / "comparison" / "comparison.md").read_text()
    assert "Table 7.2 layout" in report
    if "mad" in systems:
        assert "flat" in report and "hierarchical" in report
    clean_scores = [json.loads((d / "summary.json").read_text())["score"] for d in run_dirs[::2]]
    if any(clean_scores):  # a drop (and its chart) needs a non-zero clean score
        assert any(p.suffix == ".png" for p in outputs)
