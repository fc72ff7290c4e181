"""EmotionBench's one switch, ``published``: old configs, old summaries, mixed tables, the verb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from llmpsych.emotion.cli import app
from llmpsych.emotion.options import EmotionBenchOptions
from llmpsych.emotion.rescore import summary_published
from llmpsych.errors import LlmpsychError
from llmpsych.runs import RunStore, start_run
from llmpsych.runs.runner import analyze_run
from llmpsych.testing.fault_server import FaultServer
from test_emotion_task import config, make_responder  # the scripted EmotionBench respondent

RELEASED = "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"


@pytest.mark.parametrize(
    ("old", "published"),
    [
        ({"scoring": "paper", "published_test": True}, True),
        ({"scoring": "paper", "published_test": False}, True),
        ({"scoring": "corrected", "published_test": True}, False),
        ({"scoring": "corrected"}, False),
        ({"published_test": False}, False),
        ({"published_test": True}, True),
        ({}, False),
    ],
)
def test_old_switches_map_to_published(old: dict, published: bool) -> None:
    assert EmotionBenchOptions.model_validate(old).published is published


def test_unknown_old_scoring_is_an_error_and_new_configs_stay_strict() -> None:
    with pytest.raises(ValidationError, match="unknown scoring 'Paper'"):
        EmotionBenchOptions.model_validate({"scoring": "Paper"})
    with pytest.raises(ValidationError, match="scorin"):
        EmotionBenchOptions.model_validate({"scorin": "paper"})
    assert "scoring" not in EmotionBenchOptions(published=True).model_dump()


def _run(tmp_path: Path, seed_data: Path, name: str, **options: object) -> Path:
    with FaultServer(responder=make_responder(seed_data, [])) as server:
        opts = {"factors": ["Fear-5"], "situations_per_factor": 1, "runs": 2, "default_runs": 3, **options}
        start_run(config(server, seed_data, **opts), tmp_path / name, False)
    return tmp_path / name


def _factor_cells(run_dir: Path) -> tuple[bool, dict]:
    summary = json.loads((run_dir / "summary.json").read_text())
    return summary_published(summary), summary["factors"]


@pytest.mark.parametrize(("scoring", "published"), [("paper", True), ("corrected", False)])
def test_a_run_stored_with_the_old_switches_still_analyses(
    tmp_path: Path, seed_data: Path, scoring: str, published: bool
) -> None:
    run_dir = _run(tmp_path, seed_data, "r", published=published)
    expected = _factor_cells(run_dir)
    assert expected[0] is published
    store = RunStore(run_dir / "run.sqlite")
    stored = store.get_meta("config")
    options = dict(stored["options"])
    del options["published"]
    stored["options"] = {**options, "scoring": scoring, "published_test": True}
    store.set_meta("config", stored)
    store.close()
    (run_dir / "summary.json").unlink()
    analyze_run(run_dir)
    assert _factor_cells(run_dir) == expected


def test_compare_refuses_a_table_mixing_published_and_corrected(tmp_path: Path, seed_data: Path) -> None:
    run_dir = _run(tmp_path, seed_data, "r")  # own run: corrected by default
    released = str(seed_data / RELEASED)
    base = ["compare", str(run_dir), released, "--data-dir", str(seed_data), "--no-humans"]
    mixed = CliRunner().invoke(app, [*base, "--published"])
    assert isinstance(mixed.exception, LlmpsychError)
    assert "mix published and corrected" in str(mixed.exception) and "gpt-3.5-turbo: published" in str(
        mixed.exception
    )
    alike = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "c.md")])  # released follows the run
    assert alike.exit_code == 0, alike.output
    old = tmp_path / "old"
    old.mkdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    del summary["published"]
    (old / "summary.json").write_text(json.dumps({**summary, "scoring": "paper"}))
    both = CliRunner().invoke(app, ["compare", str(run_dir), str(old), "--no-humans"])
    assert isinstance(both.exception, LlmpsychError) and "old): published" in str(both.exception)


def test_rescore_defaults_to_published_and_the_old_verb_is_a_hidden_alias(seed_data: Path) -> None:
    args = [str(seed_data / RELEASED), "--json", "--data-dir", str(seed_data)]
    new = CliRunner().invoke(app, ["rescore", *args])
    old = CliRunner().invoke(app, ["score-results", *args])
    corrected = CliRunner().invoke(app, ["rescore", *args, "--corrected"])
    assert new.exit_code == old.exit_code == corrected.exit_code == 0, new.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "is now `llmpsych emotionbench rescore`" in old.stderr
    assert json.loads(new.output)["published"] is True and json.loads(corrected.output)["published"] is False
    listing = CliRunner().invoke(app, ["--help"]).output
    assert "rescore" in listing and "score-results" not in listing
