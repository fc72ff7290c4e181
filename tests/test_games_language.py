"""GAMA-Bench runs in a language: ``language`` comes from the template set (``en`` for the built-in and
official prompts), is stored with the run and shown in its report; the leaderboard has a row per model and
language, and the overlay labels lines by language, when the runs differ in it; a contradiction is
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych.errors import ConfigError
from llmpsych.games.cli import app
from llmpsych.games.leaderboard import leaderboard
from llmpsych.games.overlay import overlay_frame, read_gamabench_runs
from llmpsych.games.prompts import PART, TEMPLATE_SET_FILE, TEMPLATE_SET_FORMAT
from llmpsych.games.task import GamaBenchOptions
from llmpsych.games.template_sets import builtin_templates
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer

MARK = "[de] "


def german_set(folder: Path, language: str | None = "de") -> Path:
    """A template set for guessing whose user turns carry a German mark (our stand-in translation)."""
    templates = {}
    for kind, text in builtin_templates("guessing").items():
        turns = text.split(PART)
        templates[kind] = PART.join(MARK + t.strip() if i % 2 == 0 else t for i, t in enumerate(turns))
    data: dict[str, Any] = {
        "format": TEMPLATE_SET_FORMAT,
        "model": "by hand",
        "versions": {"1": {"guessing": templates}},
    }
    if language is not None:
        data["language"] = language
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TEMPLATE_SET_FILE).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return folder


def play(server: FaultServer, run_dir: Path, **options: Any) -> Path:
    config = {
        "task": "gamabench",
        "model": "openai-compatible/p",
        "base_url": server.base_url,
        "cache": False,
        "options": {"game": "guessing", "players": 3, "rounds": 2, "runs": 2, **options},
    }
    start_run(parse_run_config(config), run_dir, False)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("lang")
    sent: list[dict[str, Any]] = []

    def player(body: dict[str, Any]) -> str:
        sent.append(body)
        return game_answer(body)

    de_set = german_set(base / "set-de")
    with FaultServer(responder=player) as server:
        made = {
            "en": play(server, base / "en"),
            "en2": play(server, base / "en2"),
            "de": play(server, base / "de", template_set=f"{de_set}#1"),
        }
    assert any(b["messages"][0]["content"].startswith(MARK) for b in sent)
    return made


def _stored_language(run_dir: Path) -> Any:
    with RunStore.in_dir(run_dir, readonly=True) as store:
        return (store.get_meta("config") or {})["options"]["language"]


def test_the_language_is_stored_and_reported(runs: dict[str, Path]) -> None:
    assert _stored_language(runs["de"]) == "de" and _stored_language(runs["en"]) == "en"
    report = (runs["de"] / "report.md").read_text(encoding="utf-8")
    assert "## Language\n\nGerman (`de`), the language of the template set set:set-de-v1" in report
    assert "English (`en`), the language of the built-in prompts" in (runs["en"] / "report.md").read_text()
    frames = llmpsych.load_runs([runs["de"], runs["en"]])
    assert frames.runs["language"].tolist() == ["de", "en"]


def test_the_leaderboard_has_a_row_per_model_and_language(runs: dict[str, Path], tmp_path: Path) -> None:
    # the rows also name the other setting the runs differ in: the template set (llmpsych.runs.settings)
    de_row = "openai-compatible/p · template_set set-de#1 ("
    en_row = "openai-compatible/p · template_set none · en"
    scores, _ = leaderboard([runs["en"], runs["en2"], runs["de"]])
    assert sorted(scores)[0] == en_row
    assert sorted(scores)[1].startswith(de_row) and sorted(scores)[1].endswith(") · de")
    assert scores[en_row].games["guessing_game"].n == 4  # the two English runs pool
    result = CliRunner().invoke(
        app, ["leaderboard", str(runs["en"]), str(runs["de"]), "--out", str(tmp_path / "lb")]
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "lb" / "leaderboard.csv")
    assert sorted(frame["model"]) == sorted(scores)
    assert "language de, template set" in (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")

    # one language: rows per model, as without languages
    scores, _ = leaderboard([runs["en"], runs["en2"]])
    assert list(scores) == ["openai-compatible/p"]
    result = CliRunner().invoke(app, ["leaderboard", str(runs["en"]), "--out", str(tmp_path / "one")])
    assert result.exit_code == 0 and "·" not in result.output
    assert pd.read_csv(tmp_path / "one" / "leaderboard.csv")["model"].tolist() == ["openai-compatible/p"]


def test_the_overlay_labels_lines_by_language_when_runs_differ(runs: dict[str, Path]) -> None:
    labels = set(overlay_frame(read_gamabench_runs([runs["en"], runs["de"]]))["label"])
    assert labels == {
        "openai-compatible/p · en | T=0",
        "openai-compatible/p · de | T=0, template set set-de v1",
    }
    same = set(overlay_frame(read_gamabench_runs([runs["en"], runs["en2"]]))["label"])
    assert same == {"openai-compatible/p | T=0 (en)", "openai-compatible/p | T=0 (en2)"}


def test_a_contradictory_language_is_refused_and_a_set_without_one_is_english(tmp_path: Path) -> None:
    de_set = german_set(tmp_path / "set-de")
    with pytest.raises(ConfigError, match=r"language 'fr' contradicts the template set \(de\)"):
        GamaBenchOptions.model_validate({"template_set": f"{de_set}#1", "language": "fr"})
    assert (
        GamaBenchOptions.model_validate({"template_set": str(de_set), "language": "German"}).language
        == "German"
    )
    rephrased = german_set(tmp_path / "rephrased", language=None)  # a rephrasing of the English built-ins
    assert GamaBenchOptions.model_validate({"template_set": str(rephrased)}).language == "en"
    assert GamaBenchOptions().language == "en"
    assert GamaBenchOptions(language="de", template_set=str(rephrased)).language == "de"  # names none
    with pytest.raises(ConfigError, match=r"language 'de' contradicts the built-in prompts \(en\)"):
        GamaBenchOptions(language="de")
    seen: list[dict[str, Any]] = []
    with (
        FaultServer(responder=lambda body: seen.append(body) or game_answer(body)) as server,
        pytest.raises(ConfigError, match="contradicts"),
    ):
        play(server, tmp_path / "r", template_set=f"{de_set}#1", language="fr")
    assert seen == [] and not (tmp_path / "r" / "run.sqlite").exists()
