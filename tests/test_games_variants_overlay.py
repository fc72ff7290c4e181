"""``gamabench overlay``: per-round series of several runs in one figure per game (thesis Figs 6.5-6.11),
read from the run folders only."""

from __future__ import annotations

import hashlib
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.errors import LlmpsychError
from llmpsych.games.cli import app
from llmpsych.games.overlay import overlay_frame, read_gamabench_runs, write_overlay
from llmpsych.runs import parse_run_config
from llmpsych.runs.runner import start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.testing.runs import unit_results


def _run(server: FaultServer, run_dir: Path, model: str = "openai-compatible/a", **options: Any) -> Path:
    config = {
        "task": "gamabench",
        "model": model,
        "base_url": server.base_url,
        "cache": False,
        "params": {"temperature": 1.0},
        "options": {"players": 3, "rounds": 3, "runs": 2, **options},
    }
    start_run(parse_run_config(config), run_dir, False)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("overlay")
    with FaultServer(responder=game_answer) as server:
        return [
            _run(server, base / "plain", game=["guessing", "public_goods"]),
            _run(server, base / "told", game="guessing", guessing={"opponents": "smart"}),
            _run(server, base / "other", "openai-compatible/b", game="guessing", persona=2),
        ]


def _digest(run_dir: Path) -> str:
    return hashlib.sha256((run_dir / "run.sqlite").read_bytes()).hexdigest()


def test_overlay_draws_one_line_per_run_and_labels_model_and_setting(
    runs: list[Path], tmp_path: Path
) -> None:
    before = [_digest(r) for r in runs]
    result = CliRunner().invoke(app, ["overlay", *map(str, runs), "--out", str(tmp_path / "ov")])
    assert result.exit_code == 0, result.output
    assert [_digest(r) for r in runs] == before  # read only
    out = tmp_path / "ov"
    for name in ("overlay.csv", "guessing.png", "public_goods.png", "report.md", "report.html"):
        assert (out / name).is_file(), name
    frame = pd.read_csv(out / "overlay.csv")
    labels = list(dict.fromkeys(frame["label"]))
    assert labels == [
        "openai-compatible/a | T=1",
        "openai-compatible/a | T=1, guessing.opponents=smart",
        "openai-compatible/b | T=1, persona=2",
    ]
    guessing = frame[(frame["game"] == "guessing") & (frame["series"] == "mean")]
    assert sorted(guessing.groupby("label")["x"].apply(list).iloc[0]) == [1, 2, 3]  # per round
    # each point is the mean over that run's games of the round's group mean (the games' own results)
    results = [r for r in unit_results(runs[1]).values() if r["game"] == "guessing"]
    for round_no in (1, 2, 3):
        expected = statistics.fmean(r["rounds"][round_no - 1]["mean"] for r in results)
        got = guessing[(guessing["label"] == labels[1]) & (guessing["x"] == round_no)]
        assert got["y"].item() == pytest.approx(expected) and got["games"].item() == 2
    assert set(frame[frame["game"] == "public_goods"]["label"]) == {labels[0]}  # only the run that played it
    assert "choice" not in set(frame["series"])  # single players' points are not overlaid
    report = (out / "report.md").read_text()
    assert "![Guess 2/3 of the Average](guessing.png)" in report and str(runs[2]) in report


def test_same_labels_are_told_apart_by_folder(runs: list[Path]) -> None:
    frame = overlay_frame(read_gamabench_runs([runs[0], runs[0]]))
    assert set(frame["label"]) == {"openai-compatible/a | T=1 (plain)"}  # one folder twice: one label


def test_folders_that_hold_no_gamabench_run_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LlmpsychError):
        write_overlay([tmp_path / "nothing"], tmp_path / "out")
    assert not (tmp_path / "nothing").exists()
    with FaultServer() as server:
        config = {"task": "echo", "model": "openai-compatible/e", "base_url": server.base_url, "cache": False}
        start_run(parse_run_config({**config, "options": {"units": 1}}), tmp_path / "echo", False)
    with pytest.raises(LlmpsychError, match="holds a run of task 'echo', not a gamabench run"):
        write_overlay([tmp_path / "echo"], tmp_path / "out")


def test_each_run_draws_every_game_played(runs: list[Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["overlay", str(runs[1]), "--each-run", "--out", str(tmp_path / "each")])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "each" / "overlay.csv")
    label = "openai-compatible/a | T=1, guessing.opponents=smart"
    assert list(dict.fromkeys(frame["label"])) == [f"{label} run 1", f"{label} run 2"]
    results = {r["run"]: r for r in unit_results(runs[1]).values()}
    means = frame[frame["series"] == "mean"]
    for run, result_of_run in results.items():
        got = means[means["label"] == f"{label} run {run}"].sort_values("x")["y"].tolist()
        assert got == pytest.approx([r["mean"] for r in result_of_run["rounds"]])
