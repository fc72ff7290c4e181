"""EmotionBench runs in a language: the run's ``language`` comes from its situations or scale file (``en``
for the official data), is stored with the run, shown in its report, and labels the columns of
``emotionbench compare`` when the runs differ in it; a contradictory ``language`` is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych.emotion.cli import app
from llmpsych.emotion.options import EmotionBenchOptions
from llmpsych.errors import ConfigError
from llmpsych.runs import RunStore, start_run
from llmpsych.runs.sweep import same_run
from llmpsych.testing.fault_server import FaultServer
from test_emotion_task import config, make_responder

#: Situations written for these tests (our own words), in German and in English.
GERMAN = {
    "Anger-1": ["Jemand drängelt sich an der Kasse vor dich.", "Dein Rad wird ohne Grund umgeworfen."],
    "Anger-2": ["Ein Kollege gibt deine Idee als seine aus.", "Der Bus fährt vor deiner Nase ab."],
}
ENGLISH = {
    "Anger-1": ["Someone pushes in front of you at the till.", "Your bike is knocked over for no reason."],
    "Anger-2": ["A colleague presents your idea as his own.", "The bus leaves just as you reach it."],
}


def situations_file(path: Path, scenarios: dict[str, list[str]], language: str | None) -> Path:
    factors = [{"name": name, "scenarios": texts} for name, texts in scenarios.items()]
    data: dict[str, Any] = {"emotions": [{"name": "Anger", "factors": factors}]}
    if language is not None:
        data = {"language": language, **data}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def small(server: FaultServer, seed_data: Path, **options: Any) -> Any:
    return config(server, seed_data, situations_per_factor=None, runs=2, default_runs=3, **options)


def stored_options(run_dir: Path) -> dict[str, Any]:
    with RunStore.in_dir(run_dir, readonly=True) as store:
        return dict((store.get_meta("config") or {})["options"])


def test_a_german_and_an_english_run_are_two_columns_labelled_by_language(
    tmp_path: Path, seed_data: Path
) -> None:
    de = situations_file(tmp_path / "situations.de.json", GERMAN, "de")
    en = situations_file(tmp_path / "situations.en.json", ENGLISH, None)
    bodies: list[dict] = []
    with FaultServer(responder=make_responder(seed_data, bodies)) as server:
        start_run(small(server, seed_data, situations_file=str(de)), tmp_path / "de" / "run", False)
        start_run(small(server, seed_data, situations_file=str(en)), tmp_path / "en" / "run", False)
    assert any("Jemand drängelt" in b["messages"][1]["content"] for b in bodies)
    assert stored_options(tmp_path / "de" / "run")["language"] == "de"
    assert stored_options(tmp_path / "en" / "run")["language"] == "en"  # names none: the default
    summary = json.loads((tmp_path / "de" / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["language"] == "de"
    report = (tmp_path / "de" / "run" / "report.md").read_text(encoding="utf-8")
    assert "## Language\n\nGerman (`de`)" in report
    assert "The scale comes from the official data, in English." in report

    # one model, two languages, run folders of one name: two columns, labelled by language
    args = ["compare", str(tmp_path / "de" / "run"), str(tmp_path / "en" / "run"), "--no-humans"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(seed_data)])
    assert result.exit_code == 0, result.output
    header = result.output
    assert "openai-compatible/scripted · de (run)" in header
    assert "openai-compatible/scripted · en (run)" in header

    # the same language twice, in folders of one name: two columns still (before, one overwrote the other)
    start = tmp_path / "again" / "run"
    with FaultServer(responder=make_responder(seed_data, [])) as server:
        start_run(small(server, seed_data, situations_file=str(de)), start, False)
    result = CliRunner().invoke(
        app,
        ["compare", str(tmp_path / "de" / "run"), str(start), "--no-humans", "--data-dir", str(seed_data)],
    )
    assert result.exit_code == 0, result.output
    header = result.output
    assert "openai-compatible/scripted (run)" in header and f"openai-compatible/scripted ({start})" in header
    assert "· de" not in header  # one language: labels as before

    frames = llmpsych.load_runs([tmp_path / "de" / "run", tmp_path / "en" / "run"])
    assert frames.runs["language"].tolist() == ["de", "en"]


def test_the_official_data_is_english_and_a_scale_file_names_the_language(tmp_path: Path) -> None:
    assert EmotionBenchOptions().language == "en"
    with pytest.raises(ConfigError, match=r"language 'German' contradicts the official data \(en\)"):
        EmotionBenchOptions(language="German")
    plain = situations_file(tmp_path / "plain.json", GERMAN, None)  # an own file naming no language
    assert EmotionBenchOptions(situations_file=str(plain), language="de").language == "de"
    de = situations_file(tmp_path / "s.json", GERMAN, "de")
    assert (
        EmotionBenchOptions(situations_file=str(de), language="German").language == "German"
    )  # one language
    scale = tmp_path / "mood.yaml"
    scale.write_text(MOOD_YAML.replace("language: de", "language: fr"), encoding="utf-8")
    assert EmotionBenchOptions.model_validate({"scale_file": str(scale)}).language == "fr"


def test_a_contradictory_language_is_refused_before_any_request(tmp_path: Path, seed_data: Path) -> None:
    de = situations_file(tmp_path / "situations.de.json", GERMAN, "de")
    seen: list[dict] = []
    with FaultServer(responder=make_responder(seed_data, seen)) as server:
        with pytest.raises(ConfigError, match=r"language 'fr' contradicts the situations file \(de\)"):
            start_run(small(server, seed_data, situations_file=str(de), language="fr"), tmp_path / "r", False)
        args = ["run", "--model", "openai-compatible/scripted", "--base-url", server.base_url]
        args += ["--situations-file", str(de), "-O", "language=fr", "--data-dir", str(seed_data)]
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "cli"), "--no-progress"])
        # files that name two languages are one run in no language
        scale = tmp_path / "mood.yaml"
        scale.write_text(MOOD_YAML.replace("language: de", "language: en"), encoding="utf-8")
        with pytest.raises(ConfigError, match=r"situations file is in de, scale file is in en"):
            start_run(
                small(server, seed_data, situations_file=str(de), scale_file=str(scale)),
                tmp_path / "m",
                False,
            )
    assert seen == []
    assert isinstance(result.exception, ConfigError) and "contradicts" in str(result.exception)
    assert not (tmp_path / "r" / "run.sqlite").exists()


def test_the_stored_language_is_what_a_sweep_and_a_resume_read(tmp_path: Path, seed_data: Path) -> None:
    de = situations_file(tmp_path / "situations.de.json", GERMAN, "de")
    with FaultServer(responder=make_responder(seed_data, [])) as server:
        planned = small(server, seed_data, situations_file=str(de))
        start_run(planned, tmp_path / "r", False)
    with RunStore.in_dir(tmp_path / "r", readonly=True) as store:
        stored = store.get_meta("config")
    assert stored["options"]["language"] == "de"
    assert same_run(stored, planned.stored())  # the plan names no language; it reads as the stored one
    older = {**stored, "options": {k: v for k, v in stored["options"].items() if k != "language"}}
    assert same_run(older, stored)  # a run stored before the option existed reads the same
    other = small(server, seed_data, situations_file=str(de), language="de").stored()
    assert same_run(stored, other)


#: A one-subscale mood scale written for these tests (not a published instrument).
MOOD_YAML = """\
llmpsych_scale: 1
name: MOOD-own
title: Stimmung (für die Tests von llmpsych geschrieben)
language: de
response:
  min: 1
  max: 5
scoring: AVG
items:
  - {index: 1, text: Ich bin gerade gereizt.}
  - {index: 2, text: Ich fühle mich gelassen., reverse: true}
subscales:
  - name: Irritation
    items: [1, 2]
"""
