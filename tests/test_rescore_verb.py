"""One verb for re-scoring released data: ``rescore`` in every benchmark; the old names are hidden aliases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.errors import LlmpsychError
from llmpsych.games.cli import app as games_app
from llmpsych.reliability.cli import app as reliability_app
from llmpsych.testing.runs import run_cli as cli

runner = CliRunner()


def _listed(app: object) -> str:
    return runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output  # type: ignore[arg-type]


@pytest.mark.parametrize(("app", "old"), [(games_app, "score-released"), (reliability_app, "analyze")])
def test_rescore_is_listed_and_old_names_are_hidden(app: object, old: str) -> None:
    listing = _listed(app)
    assert " rescore " in listing and f" {old} " not in listing and " score-logs " not in listing


def test_gamabench_rescore_without_paths_is_the_released_leaderboard(seed_data: Path) -> None:
    args = ["--data-dir", str(seed_data), "--model", "llama-3.1-70b", "--corrected"]
    new = runner.invoke(games_app, ["rescore", *args], env={"COLUMNS": "250"})
    old = runner.invoke(games_app, ["score-released", *args], env={"COLUMNS": "250"})
    assert new.exit_code == old.exit_code == 0, new.output
    assert new.stdout == old.stdout and "70.4±12.8" in new.stdout
    assert "is now `llmpsych gamabench rescore`" in old.stderr  # the old name says what replaced it


def test_gamabench_rescore_with_paths_is_score_logs(seed_data: Path) -> None:
    folder = seed_data / "GAMABench" / "raw_results"
    new = cli("gamabench", "rescore", folder, "--json")
    old = cli("gamabench", "score-logs", folder, "--json")
    assert new.returncode == old.returncode == 0, new.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)


def test_gamabench_rescore_options_that_need_the_other_input_are_errors(seed_data: Path) -> None:
    no_paths = runner.invoke(games_app, ["rescore", "--data-dir", str(seed_data), "--json"])
    assert isinstance(no_paths.exception, LlmpsychError) and "--json needs log paths" in str(
        no_paths.exception
    )
    folder = str(seed_data / "GAMABench" / "raw_results")
    with_model = runner.invoke(games_app, ["rescore", folder, "--model", "llama-3.1-70b"])
    assert isinstance(with_model.exception, LlmpsychError) and "leave out the paths" in str(
        with_model.exception
    )


def test_reliability_rescore_equals_the_old_analyze(seed_data: Path) -> None:
    save = str(seed_data / "LLMPersonality" / "Analysis" / "save" / "save.json")
    new = runner.invoke(reliability_app, ["rescore", save, "--json"])
    old = runner.invoke(reliability_app, ["analyze", save, "--json"])
    assert new.exit_code == old.exit_code == 0, new.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert json.loads(new.stdout)["settings"]["published"] is True
    assert "is now `llmpsych reliability rescore`" in old.stderr
