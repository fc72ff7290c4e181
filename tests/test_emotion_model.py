"""EmotionBench on the embedded model: two situations, in-process and over its loopback HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.runs import parse_run_config, start_run

# v2 asks for "number: score" lines explicitly; no re-asks keep the test to 4 + 3 short queries.
OPTIONS = {"factors": ["Anger-1"], "runs": 1, "default_runs": 2, "max_reasks": 0, "prompt": "v2"}


@pytest.mark.model
def test_two_situations_on_the_embedded_model_in_process_and_over_http(
    tmp_path: Path, seed_data: Path
) -> None:
    from llmpsych.models.catalog import model_file
    from llmpsych.models.embedded import EmbeddedSettings, load_embedded

    base = {"task": "emotionbench", "data_dir": str(seed_data), "cache": False, "params": {"max_tokens": 160}}
    in_process = {**base, "model": "local/qwen2.5-0.5b", "options": {**OPTIONS, "situations_per_factor": 2}}
    outcome = start_run(parse_run_config(in_process), tmp_path / "in", False)
    assert outcome.summary.done == 4 and outcome.summary.failed == 0
    runs = pd.read_csv(tmp_path / "in" / "runs.csv")
    assert list(runs["kind"]).count("evoked") == 2 and runs["situation"].dropna().nunique() == 2
    scored = runs[runs["valid"]]
    assert scored[["positive", "negative"]].stack().between(10, 50).all()  # valid runs score in range
    report = (tmp_path / "in" / "report.md").read_text()
    assert "Valid runs" in report and (tmp_path / "in" / "transcripts.jsonl").read_text().count("\n") == 4

    served = load_embedded(model_file("qwen2.5-0.5b"), EmbeddedSettings())
    over_http = {
        **base,
        "model": "openai-compatible/qwen2.5-0.5b",
        "base_url": served.base_url,
        "options": {**OPTIONS, "situations_per_factor": 1},
    }
    outcome = start_run(parse_run_config(over_http), tmp_path / "http", False)
    assert outcome.summary.done == 3 and outcome.summary.failed == 0
    summary = json.loads((tmp_path / "http" / "summary.json").read_text())
    assert summary["failed_units"] == 0
