"""Missing data is never silent (issue 27, item 2): a released results file with part of the authors'
design removed (a factor's columns, a factor level, a run, a game's logs) is re-scored with every missing
part named where the n are shown, with the n actually used. Each test copies a seed-data file to
``tmp_path``, removes a part and re-scores it; the complete released files name nothing."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from llmpsych.emotion.cli import app as emotion_app
from llmpsych.emotion.released import infer_scale, read_released_runs
from llmpsych.emotion.rescore import design_gaps, score_released
from llmpsych.emotion.scales import load_scales
from llmpsych.games.cli import app as games_app
from llmpsych.games.released_logs import released_gaps
from llmpsych.games.released_logs import score_released as score_released_logs
from llmpsych.reliability.cli import app as reliability_app
from llmpsych.reliability.saves import ReleasedSave, load_save

FSS = "EmotionBench/results/Challenging_Bench/gpt-3.5-turbo-FSS-testing.csv"


def _without_columns(source: Path, target: Path, drop: tuple[str, ...]) -> Path:
    with source.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    keep = [i for i, name in enumerate(rows[0]) if not name.startswith(drop)]
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([[row[i] for i in keep if i < len(row)] for row in rows])
    return target


def test_an_emotionbench_file_without_a_factor_names_it_with_the_n_used(
    seed_data: Path, tmp_path: Path
) -> None:
    cut = _without_columns(
        seed_data / FSS,
        tmp_path / "gpt-3.5-turbo-FSS-testing.csv",
        ("Fear-2_", "Fear-1_scenario-4_test-9_"),  # a whole factor (Fear-3) and one run of Fear-2
    )
    result = CliRunner().invoke(emotion_app, ["rescore", str(cut), "--data-dir", str(seed_data)])
    # before: exit 0, Fear-3 absent from the table and the overall n 199 instead of 250, never said
    assert result.exit_code == 0, result.output
    assert "missing from the released design (2 part(s); the n shown are what the file has)" in result.output
    assert "factor Fear-2: 49 of 50 runs (situation 5 short)" in result.output
    assert "factor Fear-3: 0 of 50 runs" in result.output
    scale = load_scales(seed_data)["FSS"]
    assert score_released(cut, scale)["missing"] == [
        "factor Fear-2: 49 of 50 runs (situation 5 short)",
        "factor Fear-3: 0 of 50 runs",
    ]
    compared = CliRunner().invoke(emotion_app, ["compare", str(cut), "--data-dir", str(seed_data)])
    assert compared.exit_code == 0 and "- gpt-3.5-turbo: factor Fear-3: 0 of 50 runs" in compared.output
    scales = load_scales(seed_data)
    for path in sorted((seed_data / "EmotionBench" / "results").rglob("*-testing.csv")):  # all are whole
        assert design_gaps(scales[str(infer_scale(path))], read_released_runs(path)) == [], path.name


def test_a_reliability_save_without_a_level_names_it_with_the_n_used(seed_data: Path, tmp_path: Path) -> None:
    raw = json.loads(
        (seed_data / "LLMPersonality/Analysis/save/personality_qa.json").read_text(encoding="utf-8")
    )
    first = raw["meta"]["append_label"][0]
    raw["data"] = [r for r in raw["data"] if r["info"]["append_label"] != first]
    for record in raw["data"][:2]:
        del record["data"]["Openness"]  # a dimension's column gone from two points
    cut = tmp_path / "personality_qa.json"
    cut.write_text(json.dumps(raw), encoding="utf-8")
    result = CliRunner().invoke(reliability_app, ["rescore", str(cut), "--out", str(tmp_path / "out")])
    # before: exit 0, 358 points summarised, the profile and the two points never named
    assert result.exit_code == 0, result.output
    assert (
        "2 data point(s) without a score for every dimension are left out: the n above are 358"
        in result.output
    )
    assert (
        f"personality_qa: append_label {first}: no data points (the grid asks for 40 each)" in result.output
    )
    assert "personality_qa: 360 of 400 data points of the grid its meta lists" in result.output
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "360 of 400 data points" in report
    whole = load_save(seed_data / "LLMPersonality/Analysis/save/save.json")
    assert whole.missing() == []
    grid = whole.frame
    short = ReleasedSave(whole.path, whole.meta, grid[grid["language"] != "Ko"].iloc[1:])
    assert short.missing()[0] == "save: language Ko: no data points (the grid asks for 250 each)"
    assert "save: language En: 249 of 250 data points" in short.missing()


def test_released_gamabench_logs_without_a_run_or_a_game_are_named(seed_data: Path, tmp_path: Path) -> None:
    root = tmp_path / "GAMABench" / "raw_results"
    root.mkdir(parents=True)
    for game in (seed_data / "GAMABench" / "raw_results").iterdir():  # the two games cut are copies
        if game.name in ("guessing_game", "pirate_game"):
            shutil.copytree(game, root / game.name)
        else:
            (root / game.name).symlink_to(game, target_is_directory=True)
    (root / "guessing_game" / "gpt-3.5-turbo-1106_guessing_game_v1_3.json").unlink()
    for path in (root / "pirate_game").glob("gemini-1.5-pro_*_v1_*.json"):
        path.unlink()
    result = CliRunner().invoke(games_app, ["rescore", "--data-dir", str(tmp_path)], env={"COLUMNS": "200"})
    # before: "internal error: ValueError: the overall score pairs runs ..." for the missing run, and a
    # game without logs only a "-" in the table
    assert result.exit_code == 0, result.output
    assert "gemini-1.5-pro: Pirate Game: no logs (no score, no overall)" in result.output
    assert "gpt-3.5-turbo-1106: Guess 2/3 of the Average: 4 of 5 runs (run 3 missing)" in result.output
    assert "gpt-3.5-turbo-1106: Overall over run 1, 2, 4, 5 (those every game has)" in result.output
    row = score_released_logs("gpt-3.5-turbo-1106", tmp_path)
    assert row["guessing_game"].n == 4 and row["overall"].n == 4 and row["bar_game"].n == 5
    assert released_gaps("gpt-3.5-turbo-1106", seed_data) == []
