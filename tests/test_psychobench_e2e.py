"""PsychoBench end to end on the embedded model: LOT-R, two runs, in-process and over its loopback HTTP
server, each followed by the analysis and report (and a rebuild of the report from the store alone)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from llmpsych.runs import analyze_run, parse_run_config, start_run

# LOT-R: 10 statements, 0-4, the whole scale in one prompt; at most one re-ask per run, and 96 tokens are
# plenty for ten "index: score" lines. Each test makes 2-4 requests.
BASE = {
    "task": "psychobench",
    "cache": False,
    "params": {"max_tokens": 96},
    "options": {"scale": ["LOT-R"], "runs": 2, "max_reasks": 1},
}


def check_run(run_dir: Path, model: str) -> pd.DataFrame:
    """The tables and the report of a finished two-run LOT-R run; returns its answers."""
    valid = pd.read_csv(run_dir / "valid.csv")
    assert valid["run"].tolist() == [1, 2] and (valid["items"] == 10).all()
    # the 0.5B model answers at least some statements in each run, or numbers them by position (counted
    # invalid, never scored as the items they name: docs/scales.md)
    assert ((valid["valid"] + valid["positional"]) > 0).all()
    answers = pd.read_csv(run_dir / "answers.csv")
    assert len(answers) == 20 and answers["answer"].dropna().between(0, 4).all()
    scores = pd.read_csv(run_dir / "scores.csv")
    assert scores["subscale"].tolist() == ["Overall", "Overall"]
    assert scores["score"].dropna().between(0, 24).all()  # six scored items, 0-4 each
    summary = pd.read_csv(run_dir / "summary.csv")
    assert summary.loc[0, "scale"] == "LOT-R" and summary.loc[0, "runs"] == 2
    report = (run_dir / "report.md").read_text()
    assert model in report and "LOT-R" in report
    if summary.loc[0, "n"] == 2:  # both runs scored: tested against the norm, with n stated
        comparisons = pd.read_csv(run_dir / "comparisons.csv")
        assert comparisons["model_n"].tolist() == [2] and comparisons["human_n"].tolist() == [1288]
    return answers


@pytest.fixture(scope="module")
def in_process_run(tmp_path_factory: pytest.TempPathFactory, seed_data: Path) -> Path:
    run_dir = tmp_path_factory.mktemp("psychobench-e2e") / "in"
    config = {**BASE, "data_dir": str(seed_data), "model": "local/qwen2.5-0.5b"}
    outcome = start_run(parse_run_config(config), run_dir, False)
    assert outcome.summary.done == 2 and outcome.summary.failed == 0
    return run_dir


@pytest.mark.model
def test_lot_r_two_runs_in_process_with_report(in_process_run: Path) -> None:
    check_run(in_process_run, "local/qwen2.5-0.5b")


@pytest.mark.model
def test_lot_r_two_runs_over_http_with_report_rebuilt_from_the_store(
    tmp_path: Path, seed_data: Path, in_process_run: Path
) -> None:
    from llmpsych.models.catalog import model_file
    from llmpsych.models.embedded import EmbeddedSettings, load_embedded

    served = load_embedded(model_file("qwen2.5-0.5b"), EmbeddedSettings())
    config = {**BASE, "data_dir": str(seed_data), "model": "openai-compatible/qwen2.5-0.5b"}
    outcome = start_run(parse_run_config({**config, "base_url": served.base_url}), tmp_path / "http", False)
    assert outcome.summary.done == 2 and outcome.summary.failed == 0 and outcome.summary.calls_sent >= 2
    via_http = check_run(tmp_path / "http", "openai-compatible/qwen2.5-0.5b")

    # The same seed gives the same item orders either way. (The answers are not compared: llama.cpp may
    # reuse a cached prompt prefix, which can change a near-tie greedy token.)
    in_process = pd.read_csv(in_process_run / "answers.csv")
    assert in_process[["run", "item", "position"]].equals(via_http[["run", "item", "position"]])

    # The report is rebuilt from the store alone (no model call), with the same tables.
    before = pd.read_csv(tmp_path / "http" / "scores.csv")
    assert analyze_run(tmp_path / "http")
    assert pd.read_csv(tmp_path / "http" / "scores.csv").equals(before)
    assert "LOT-R" in (tmp_path / "http" / "report.md").read_text()
