"""llmpsych.load_runs: many run folders (paths, globs, a sweep folder) of several benchmarks as tidy
frames, checked against each run's own tables and store; bad folders give one error naming the folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.errors import DataError, LlmpsychError
from llmpsych.psychobench.imports import import_answers
from llmpsych.runs import RunStore, parse_run_config, read_run, start_run
from llmpsych.runs.frames import CALL_COLUMNS, RUN_COLUMNS, SCORE_COLUMNS, UNIT_COLUMNS
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from test_own_instruments import TIDY_YAML, scripted


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PsychoBench sweep of two models (one folder), a GAMA-Bench run and an imported run."""
    root = tmp_path_factory.mktemp("runs")
    scale = root / "tidy.yaml"
    scale.write_text(TIDY_YAML, encoding="utf-8")
    cli._mount_subcommands()
    with FaultServer(responder=scripted) as server:
        result = CliRunner().invoke(
            cli.app,
            ["psychobench", "run", "-m", "openai-compatible/a", "-m", "openai-compatible/b", "--scale-file",
             str(scale), "--runs", "3", "--base-url", server.base_url, "--out", str(root / "sweep"),
             "--no-cache", "--no-progress"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        config = {
            "task": "gamabench",
            "model": "openai-compatible/player",
            "base_url": server.base_url,
            "cache": False,
            "options": {"game": "guessing", "players": 3, "rounds": 2, "runs": 2},
        }
        start_run(parse_run_config(config), root / "games" / "guess", False)
    (root / "people.csv").write_text("run,1,2,3,4,5,6\n1,5,1,4,4,5,2\n2,2,4,1,3,3,4\n", encoding="utf-8")
    import_answers(root / "people.csv", root / "people", scale_files=[scale], label="people")
    return root


def test_frames_across_benchmarks_match_each_runs_tables_and_store(runs: Path) -> None:
    frames = llmpsych.load_runs([runs / "sweep", str(runs / "games" / "*"), runs / "people"])
    sweep = [str(runs / "sweep" / "openai-compatible_a"), str(runs / "sweep" / "openai-compatible_b")]
    assert frames.runs["run_dir"].tolist() == [*sweep, str(runs / "games" / "guess"), str(runs / "people")]
    assert frames.runs["task"].tolist() == ["psychobench", "psychobench", "gamabench", "psychobench"]
    assert frames.runs["label"].tolist()[:2] == ["model=openai-compatible/a", "model=openai-compatible/b"]
    assert list(frames.runs.columns) == RUN_COLUMNS and list(frames.units.columns) == UNIT_COLUMNS
    assert list(frames.calls.columns) == CALL_COLUMNS and list(frames.scores.columns) == [
        *SCORE_COLUMNS,
        "persona",
    ]

    for run_dir in frames.runs["run_dir"]:
        record = read_run(run_dir)
        row = frames.runs.set_index("run_dir").loc[run_dir]
        assert row["units"] == len(record.units) == (frames.units["run_dir"] == run_dir).sum()
        assert row["calls"] == len(record.calls) == (frames.calls["run_dir"] == run_dir).sum()
        assert row["model"] == record.config.model
    assert frames.runs.set_index("run_dir").loc[str(runs / "people"), "calls"] == 0

    # PsychoBench scores are the run's scores.csv, long: (scale, run, subscale) -> (group, repeat, measure)
    own = pd.read_csv(runs / "sweep" / "openai-compatible_a" / "scores.csv")
    got = frames.scores[frames.scores["run_dir"] == sweep[0]]
    assert (
        got[["group", "repeat", "measure"]].values.tolist()
        == own[["scale", "run", "subscale"]].values.tolist()
    )
    assert got["score"].tolist() == pytest.approx(own["score"].tolist())
    # GAMA-Bench: one 0-100 score per game run, from games.csv
    games = frames.scores[frames.scores["task"] == "gamabench"]
    own_games = pd.read_csv(runs / "games" / "guess" / "games.csv")
    assert games["group"].tolist() == ["guessing", "guessing"] and set(games["measure"]) == {"score"}
    assert set(games["range"]) == {"0-100"}  # from the game's scoring
    # PsychoBench's: from each scale's response range, items and scoring (TIDY: means of 1-5 answers)
    assert set(frames.scores.loc[frames.scores["task"] == "psychobench", "range"]) == {"1-5"}
    assert games["score"].tolist() == pytest.approx(own_games["score"].tolist())
    # one DataFrame across runs: the mean Order score per model is a groupby away
    means = frames.scores[frames.scores["measure"] == "Order"].groupby("model")["score"].mean()
    assert set(means.index) == {"openai-compatible/a", "openai-compatible/b", "people"}


def test_globs_deduplicate_and_a_run_without_analysis_has_no_scores(runs: Path, tmp_path: Path) -> None:
    frames = llmpsych.load_runs([f"{runs}/sweep/*", runs / "sweep" / "openai-compatible_a"])
    assert len(frames.runs) == 2  # the second entry names a folder the glob already found
    bare = tmp_path / "bare"
    config = parse_run_config({"task": "gamabench", "options": {"game": "guessing", "runs": 1}})
    with RunStore.in_dir(bare, create=True) as store:
        store.set_meta("config", config.stored())
    frames = llmpsych.load_runs(bare)
    assert frames.runs["scores_from"].isna().all() and frames.scores.empty and frames.calls.empty


def test_bad_folders_are_one_error_naming_the_folder(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=rf"{tmp_path / 'empty'}: not a run folder \(no run.sqlite\)"):
        llmpsych.load_runs([runs / "people", tmp_path / "empty"])
    with pytest.raises(DataError, match=rf"{tmp_path / 'missing'}: no such folder"):
        llmpsych.load_runs(tmp_path / "missing")
    with pytest.raises(DataError, match=r"nothing\*: no run folder matches"):
        llmpsych.load_runs(str(tmp_path / "nothing*"))
    with pytest.raises(LlmpsychError, match="at least one"):
        llmpsych.load_runs([])
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(DataError, match=str(damaged)):
        llmpsych.load_runs(damaged)
    broken = tmp_path / "broken"
    import shutil

    shutil.copytree(runs / "people", broken)
    (broken / "scores.csv").write_text("scale,run,subscale,score\nTIDY,1,Order,high\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{broken / 'scores.csv'}: a score is not a number: 'high'"):
        llmpsych.load_runs(broken)


def test_reading_changes_nothing(runs: Path) -> None:
    """Every table and the store keep their bytes (SQLite's shared-memory index may be touched)."""
    import hashlib

    folder = runs / "people"

    def state() -> dict[str, str]:
        files = [p for p in folder.iterdir() if p.is_file() and not p.name.endswith("-shm")]
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}

    before = state()
    llmpsych.load_runs(folder)
    assert state() == before


def test_importing_llmpsych_stays_cheap() -> None:
    code = "import sys, llmpsych; assert callable(llmpsych.load_runs); print('pandas' in sys.modules)"
    check = "import sys, llmpsych; print('pandas' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(llmpsych.__file__).parents[1])}
    assert (
        subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env).stdout
        == "False\n"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
        == "True\n"
    )
