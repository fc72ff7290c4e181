"""Settings are never mixed in one row (issue 27, item 3): runs of one model made with different settings
(temperature, persona, top_p, ...) are separate rows of the leaderboard, the overlay and the MAS
comparison, each named by the settings that differ; ``--pool-settings`` pools them and the report then
says under the table which settings were pooled; a model whose runs share one setting keeps its plain
name (the rule of :mod:`llmpsych.runs.settings`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.collab.analysis import METRIC_LABEL
from llmpsych.collab.experiments import compare_runs, load_summaries
from llmpsych.games.cli import app
from llmpsych.games.leaderboard import leaderboard
from llmpsych.games.overlay import overlay_frame, read_gamabench_runs
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.runs.settings import config_settings, labels_by_settings
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer

MODEL = "openai-compatible/p"


def play(server: FaultServer, run_dir: Path, params: dict[str, Any] | None = None, **options: Any) -> Path:
    config = {
        "task": "gamabench",
        "model": MODEL,
        "base_url": server.base_url,
        "cache": False,
        "params": params or {},
        "options": {"game": "guessing", "players": 3, "rounds": 2, "runs": 2, **options},
    }
    start_run(parse_run_config(config), run_dir, False)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("settings")
    with FaultServer(responder=game_answer) as server:
        return {
            "plain": play(server, base / "plain"),
            "plain2": play(server, base / "plain2"),
            "hot": play(server, base / "hot", {"temperature": 0.7}),
            "pirate": play(server, base / "pirate", persona=1),
            "top_p": play(server, base / "top_p", {"top_p": 0.5}),
        }


def test_a_leaderboard_row_never_mixes_two_settings(runs: dict[str, Path], tmp_path: Path) -> None:
    dirs = [runs["plain"], runs["plain2"], runs["hot"], runs["pirate"]]
    scores, _ = leaderboard(dirs)
    # before: one row "openai-compatible/p" over 8 games of three settings, unmarked
    assert sorted(scores) == [
        f"{MODEL} · temperature 0 · persona 1",
        f"{MODEL} · temperature 0 · persona none",
        f"{MODEL} · temperature 0.7 · persona none",
    ]
    assert (
        scores[f"{MODEL} · temperature 0 · persona none"].games["guessing_game"].n == 4
    )  # one setting pools
    result = CliRunner().invoke(app, ["leaderboard", *map(str, dirs), "--out", str(tmp_path / "lb")])
    assert result.exit_code == 0, result.output
    assert sorted(pd.read_csv(tmp_path / "lb" / "leaderboard.csv")["model"]) == sorted(scores)
    assert "pooled" not in (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")


def test_pool_settings_pools_and_says_so_under_the_table(runs: dict[str, Path], tmp_path: Path) -> None:
    dirs = [runs["plain"], runs["hot"], runs["pirate"]]
    out = tmp_path / "pooled"
    result = CliRunner().invoke(app, ["leaderboard", *map(str, dirs), "--pool-settings", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out / "leaderboard.csv")["model"].tolist() == [MODEL]
    note = (
        f"{MODEL}: 3 run folders pooled across settings (--pool-settings): "
        "temperature 0, 0.7; persona none, 1"
    )
    stdout = result.stdout
    assert stdout.index(note) > stdout.index(f"| {MODEL} ")  # under the table
    scores_section = (
        (out / "leaderboard.md").read_text(encoding="utf-8").split("## Scores")[1].split("\n## ")[0]
    )
    assert f"- {note}" in scores_section


def test_one_setting_keeps_the_plain_model_name(runs: dict[str, Path], tmp_path: Path) -> None:
    scores, _ = leaderboard([runs["plain"], runs["plain2"]])
    assert list(scores) == [MODEL]
    result = CliRunner().invoke(
        app, ["leaderboard", str(runs["plain"]), str(runs["plain2"]), "-o", str(tmp_path)]
    )
    assert result.exit_code == 0 and "·" not in result.output and "pooled" not in result.output


def test_the_overlay_names_a_setting_its_label_did_not_show(runs: dict[str, Path]) -> None:
    labels = list(dict.fromkeys(overlay_frame(read_gamabench_runs([runs["plain"], runs["top_p"]]))["label"]))
    # before: both lines "openai-compatible/p | T=0" plus folder names, top_p never named
    assert labels == [f"{MODEL} · top_p not set | T=0", f"{MODEL} · top_p 0.5 | T=0"]


def test_what_counts_as_a_setting() -> None:
    base = {"task": "gamabench", "model": "m", "options": {"game": "guessing"}}
    same = [
        base,
        {**base, "seed": 7, "concurrency": 3, "base_url": "http://h/v1", "workers": 2, "cache": False},
        {**base, "options": {"game": "all", "runs": 9}},  # which games, how many repetitions
        {**base, "options": {"game": "guessing", "cot": None, "players": 10}},  # defaults spelled out
    ]
    assert all(config_settings(c) == config_settings(base) for c in same)
    labels, notes = labels_by_settings(["m"] * len(same), same)
    assert labels == ["m"] * len(same) and notes == []
    differ = {**base, "params": {"temperature": 0.7}, "models": {"opponent": {"model": "x", "base_url": "u"}}}
    settings = config_settings(differ)
    assert settings["temperature"] == "0.7" and settings["role opponent"] == '{"model":"x"}'


def test_a_stored_file_is_named_by_name_and_checksum_never_by_its_texts() -> None:
    stored = {"path": "/a/b/scales.yaml", "sha256": "0123456789abcdef", "content": "SECRET ITEM TEXT"}
    config = {"task": "psychobench", "model": "m", "options": {"scale_file": [stored]}}
    settings = config_settings(config)
    assert settings["scale_file"] == "scales.yaml (01234567)"
    assert "SECRET" not in json.dumps(settings)


def _mas_run(
    root: Path,
    name: str,
    fault: str,
    score: float,
    params: dict[str, Any],
    system: str = "camel",
    **extra: Any,
) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    options = {"system": system, "dataset": "humaneval", "fault": fault, **extra}
    summary = {
        "system": system,
        "structure": {"camel": "flat", "mad": "hierarchical"}[system],
        "dataset": "humaneval",
        "metric": METRIC_LABEL["code"],
        "model": "gpt-x",
        "options": {
            "metric": "chrf",
            "p_m": 1.0,
            "p_e": 0.2,
            "error_type": "semantic",
            "defence": [],
            **options,
        },
        "n_items": 164,
        "score": score,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", {"task": "mas", "model": "gpt-x", "params": params, "options": options})
    return run_dir


def test_mas_compare_keeps_a_model_per_setting(tmp_path: Path) -> None:
    dirs = [
        _mas_run(tmp_path, "clean-cold", "none", 60.0, {}),
        _mas_run(tmp_path, "faulty-cold", "autotransform", 40.0, {}),  # the fault is a column, not a setting
        _mas_run(tmp_path, "clean-hot", "none", 30.0, {"temperature": 1.0}),
    ]
    frame = load_summaries(dirs)
    # before: one model "gpt-x"; its clean score the mean of 60 and 30 (two temperatures)
    assert frame["model"].tolist() == [
        "gpt-x · temperature not set",
        "gpt-x · temperature not set",
        "gpt-x · temperature 1",
    ]
    compare_runs(dirs, tmp_path / "cmp")
    assert "pooled" not in (tmp_path / "cmp" / "comparison.md").read_text(encoding="utf-8")
    compare_runs(dirs, tmp_path / "pooled", pool_settings=True)
    report = (tmp_path / "pooled" / "comparison.md").read_text(encoding="utf-8")
    assert "- gpt-x: 3 run folders pooled across settings (--pool-settings): temperature not set, 1" in report
    assert load_summaries(dirs[:2])["model"].tolist() == ["gpt-x", "gpt-x"]  # one setting: as before


def test_a_setting_that_goes_with_the_system_does_not_split_a_model(tmp_path: Path) -> None:
    dirs = [  # Camel limited in messages, MAD in rounds (as the embedded-model test runs them)
        _mas_run(tmp_path, "camel-clean", "none", 60.0, {}, max_messages=2),
        _mas_run(tmp_path, "camel-faulty", "autoinject", 40.0, {}, max_messages=2),
        _mas_run(tmp_path, "mad-clean", "none", 50.0, {}, system="mad", max_rounds=1),
        _mas_run(tmp_path, "mad-faulty", "autoinject", 30.0, {}, system="mad", max_rounds=1),
    ]
    assert load_summaries(dirs)["model"].tolist() == ["gpt-x"] * 4
    dirs.append(_mas_run(tmp_path, "mad-rounds", "none", 20.0, {}, system="mad", max_rounds=3))
    models = load_summaries(dirs)["model"].tolist()  # now MAD's runs differ among themselves
    assert models[:2] == ["gpt-x · max_rounds none"] * 2 and models[2:] == [
        "gpt-x · max_rounds 1",
        "gpt-x · max_rounds 1",
        "gpt-x · max_rounds 3",
    ]


def _stored(run_dir: Path, config: dict[str, Any]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", config)
    return run_dir


def test_psychobench_compare_columns_name_a_setting_they_differ_in(tmp_path: Path) -> None:
    from llmpsych.psychobench.compare import comparison_frames, settings_frame
    from llmpsych.psychobench.compare import run_labels as psychobench_labels

    dirs = []
    for name, params in (("a", {}), ("b", {"top_p": 0.5})):
        run_dir = _stored(tmp_path / name, {"task": "psychobench", "model": "m", "params": params})
        frame = pd.DataFrame([{"scale": "S", "subscale": "x", "runs": 3, "n": 3, "mean": 2.0, "sd": 0.5}])
        frame.to_csv(run_dir / "summary.csv", index=False)
        dirs.append(run_dir)
    # before: "m" and "m (b)", top_p never named
    assert psychobench_labels(dirs) == ["m · top_p not set", "m · top_p 0.5"]
    display, _ = comparison_frames(dirs)
    assert "m · top_p 0.5" in display.columns
    assert settings_frame(dirs, psychobench_labels(dirs))["top_p"].tolist() == ["not set", "0.5"]


def test_emotionbench_compare_columns_name_a_setting_they_differ_in(seed_data: Path, tmp_path: Path) -> None:
    from llmpsych.emotion.cli import app as emotion_app
    from llmpsych.emotion.rescore import score_released
    from llmpsych.emotion.scales import load_scales

    scale = load_scales(seed_data)["FSS"]
    summary = score_released(seed_data / FSS, scale) | {"model": "m", "language": "en"}
    dirs = []
    for name, params in (("a", {}), ("b", {"temperature": 0.9})):
        config = {"task": "emotionbench", "model": "m", "params": params, "options": {"scale": "FSS"}}
        run_dir = _stored(tmp_path / name / "run", config)
        (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
        dirs.append(run_dir)
    args = ["compare", *map(str, dirs), "--no-humans", "--data-dir", str(seed_data)]
    result = CliRunner().invoke(emotion_app, args)
    assert result.exit_code == 0, result.output
    # before: "m (run)" and "m (<folder>)", the temperature never named
    assert "m · temperature not set (run)" in result.output and "m · temperature 0.9 (run)" in result.output


FSS = "EmotionBench/results/Challenging_Bench/gpt-3.5-turbo-FSS-testing.csv"
