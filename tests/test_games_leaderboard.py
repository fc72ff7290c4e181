"""`llmpsych gamabench leaderboard RUN_DIR...`: runs pooled per model, the overall, notes, files, errors."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.errors import LlmpsychError
from llmpsych.games.cli import app
from llmpsych.games.leaderboard import leaderboard, leaderboard_frame, read_run_dir
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from test_games_engine_runs import scripted  # the deterministic player of every game


def _run(server: FaultServer, run_dir: Path, model: str, seed: int = 0, **options: Any) -> Path:
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": model,
            "base_url": server.base_url,
            "cache": False,
            "seed": seed,
            "params": {"temperature": 1.0},
            "options": {"players": 3, "rounds": 2, **options},
        }
    )
    start_run(config, run_dir, False)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("lb")
    with FaultServer(responder=scripted) as server:
        return {
            "a1": _run(server, base / "a1", "openai-compatible/a", game="all", runs=2),
            "a2": _run(server, base / "a2", "openai-compatible/a", seed=1, game="all", runs=1),
            "b": _run(server, base / "b", "openai-compatible/b", game=["guessing", "pirate"], runs=2),
            "mixed": _run(
                server,
                base / "mixed",
                "openai-compatible/a",
                game="divide_dollar",
                runs=1,
                seats={0: "fixed:91"},
            ),
        }


def _live(run_dir: Path) -> pd.DataFrame:
    return pd.read_csv(run_dir / "games.csv")


def test_directories_of_one_model_pool_their_runs(runs: dict[str, Path]) -> None:
    scores, infos = leaderboard([runs["a1"], runs["a2"]])
    assert list(scores) == ["openai-compatible/a"] and [i.model for i in infos] == ["openai-compatible/a"] * 2
    s = scores["openai-compatible/a"]
    live = pd.concat([_live(runs["a1"]), _live(runs["a2"])])
    guess = live[live["game"] == "guessing"]["score"].tolist()
    assert s.games["guessing_game"].values == pytest.approx(tuple(guess)) and s.games["guessing_game"].n == 3
    # overall: run i of each directory paired across games, 3 runs in all
    per_run = [
        statistics.fmean(g[g["run"] == r]["score"])
        for g in (_live(runs["a1"]), _live(runs["a2"]))
        for r in sorted(set(g["run"]))
    ]
    assert s.overall_mean == pytest.approx(statistics.fmean(per_run))
    assert s.overall_sd == pytest.approx(statistics.stdev(per_run))


def test_a_model_without_all_games_has_no_overall_and_mixed_tables_are_labelled(
    runs: dict[str, Path],
) -> None:
    scores, _ = leaderboard([runs["b"], runs["mixed"]])
    assert set(scores) == {"openai-compatible/b", "openai-compatible/a (mixed seats)"}
    b = scores["openai-compatible/b"]
    assert (
        set(b.games) == {"guessing_game", "pirate_game"} and b.overall_mean is None and "no overall" in b.note
    )
    frame = leaderboard_frame(scores)
    assert frame.loc[frame["model"] == "openai-compatible/b", "Overall"].item() == "-"
    assert frame.loc[frame["model"] == "openai-compatible/b", "El Farol Bar"].item() == "-"
    assert read_run_dir(runs["mixed"]).settings().endswith("seats {'0': 'fixed:91'}")


def test_command_prints_json_writes_files_and_notes(runs: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["leaderboard", str(runs["a1"]), str(runs["b"]), "--json", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["openai-compatible/b"]["overall"] is None
    a = data["openai-compatible/a"]
    assert a["guess_2_3"]["runs"] == 2 and a["overall"]["std"] is not None
    live = _live(runs["a1"]).groupby("game")["score"]
    assert a["sealed_bid_auction"]["mean"] == pytest.approx(live.mean()["auction"])
    assert a["battle_royale"]["std"] == pytest.approx(live.std()["battle_royale"])
    assert "note: openai-compatible/b: no overall score" in result.stderr
    files = {p.name for p in (tmp_path / "o").iterdir()}
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard.json"} <= files
    report = (tmp_path / "o" / "leaderboard.md").read_text()
    assert "| openai-compatible/a " in report and "Run directories" in report
    if "leaderboard.png" in files:
        assert (tmp_path / "o" / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    table = CliRunner().invoke(app, ["leaderboard", str(runs["a1"]), "--out", str(tmp_path / "t")])
    assert table.exit_code == 0 and "| openai-compatible/a" in table.stdout and "Overall" in table.stdout


def test_scoring_switches_use_the_shared_scorer(runs: dict[str, Path]) -> None:
    corrected, _ = leaderboard([runs["a1"]])
    published, _ = leaderboard([runs["a1"]], compat=True)
    arxiv, _ = leaderboard([runs["a1"]], version="arxiv_v4")
    m = "openai-compatible/a"
    assert corrected[m].games["guessing_game"].values == published[m].games["guessing_game"].values
    assert not math.isclose(
        corrected[m].games["sealed_bid_auction"].mean, arxiv[m].games["sealed_bid_auction"].mean
    )


def test_not_a_gamabench_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LlmpsychError, match="no run found"):
        read_run_dir(tmp_path)
    result = CliRunner().invoke(app, ["leaderboard", str(tmp_path)])
    assert result.exit_code != 0
