"""`llmpsych gamabench leaderboard RUN_DIR...`: runs pooled per model, the overall, notes, files, errors."""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.errors import LlmpsychError
from llmpsych.games.cli import app
from llmpsych.games.leaderboard import (
    leaderboard,
    leaderboard_frame,
    left_out_frame,
    left_out_notes,
    read_run_dir,
)
from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.store import STORE_FILE
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
    published, _ = leaderboard([runs["a1"]], published=True)
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


def _tamper(run_dir: Path, unit_id: str, result: Any = None, status: str | None = None) -> None:
    """Rewrite one stored unit as an attacker with write access to the run directory would."""
    with sqlite3.connect(run_dir / STORE_FILE) as db:
        if result is not None:
            db.execute("UPDATE units SET result = ? WHERE unit_id = ?", (json.dumps(result), unit_id))
        if status is not None:
            db.execute("UPDATE units SET status = ?, result = NULL WHERE unit_id = ?", (status, unit_id))


def _stored(run_dir: Path, unit_id: str) -> dict[str, Any]:
    with sqlite3.connect(run_dir / STORE_FILE) as db:
        return json.loads(db.execute("SELECT result FROM units WHERE unit_id = ?", (unit_id,)).fetchone()[0])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    with FaultServer(responder=scripted) as server:
        h = _run(server, base / "h", "openai-compatible/h", game=["guessing", "pirate"], runs=4)
        z = _run(server, base / "z", "openai-compatible/z", game="guessing", runs=1)
    _tamper(h, "guessing-run01", {**_stored(h, "guessing-run01"), "rounds": []})
    _tamper(h, "guessing-run02", "not a game record")
    huge = _stored(h, "guessing-run03")
    for decision in huge["rounds"][0]["decisions"]:
        decision["action"] = 1e300
    _tamper(h, "guessing-run03", huge)
    _tamper(h, "pirate-run01", {**_stored(h, "pirate-run01"), "run": "1; DROP TABLE units"})
    _tamper(h, "pirate-run02", status="failed")
    _tamper(h, "pirate-run03", {**_stored(h, "pirate-run03"), "run": 4})  # would overwrite run 4
    _tamper(z, "guessing-run01", {**_stored(z, "guessing-run01"), "game": "ch|ess\n" * 400})
    return {"h": h, "z": z}


def test_unscorable_runs_are_counted_per_game_with_their_reason(hostile: dict[str, Path]) -> None:
    scores, infos = leaderboard([hostile["h"], hostile["z"]])
    h = scores["openai-compatible/h"]
    assert h.games["guessing_game"].n == 1 and h.games["pirate_game"].n == 1  # 4 runs each before
    left = left_out_frame(infos)
    assert left["runs left out"].sum() == 7 and set(left["runs left out"]) == {1}
    guess, pirate = "Guess 2/3 of the Average", "Pirate Game"
    reasons = left.groupby(["model", "game"])["reason"].apply(sorted)
    assert reasons[("openai-compatible/h", guess)] == [
        "cannot be scored: ValueError: no choices to score: every round needs at least one player",
        "cannot be scored: ValueError: round 1 player 1: guess 1e+300 is outside 0-100",
        "stored result is not a game record with game and run",
    ]
    assert reasons[("openai-compatible/h", pirate)] == [
        "run 4 of this game stored twice",
        "stored result is not a game record with game and run",
        "unfinished (status failed)",
    ]
    (z,) = left[left["model"] == "openai-compatible/z"].to_dict("records")
    assert z["reason"].startswith("not a GAMA-Bench game: 'ch/ess\\nch/ess")
    assert len(z["reason"]) <= 160 + len("not a GAMA-Bench game: ") and "\n" not in z["reason"]
    assert left_out_notes(left, limit=2)[2] == "5 more reason(s), 5 run(s): see left_out.csv"
    frame = leaderboard_frame(scores, left_out=left).set_index("model")
    assert (
        frame.loc["openai-compatible/h", "left out"] == 6
        and frame.loc["openai-compatible/z", "left out"] == 1
    )
    assert (
        frame.loc["openai-compatible/z", guess] == "-" and frame.loc["openai-compatible/z", "Overall"] == "-"
    )


def test_command_shows_what_was_left_out_and_why(hostile: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["leaderboard", str(hostile["h"]), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert (
        "note: openai-compatible/h: Pirate Game: 1 run(s) left out: unfinished (status failed)"
        in result.stderr
    )
    assert "| openai-compatible/h" in result.stdout and "left out" in result.stdout
    report = (tmp_path / "o" / "leaderboard.md").read_text()
    section = report[report.index("## Left out") : report.index("## Run directories")]
    assert section.count("| openai-compatible/h") == 6 and "outside 0-100" in section
    csv = pd.read_csv(tmp_path / "o" / "left_out.csv")
    assert csv["runs left out"].sum() == 6 and set(csv["game"]) == {"Guess 2/3 of the Average", "Pirate Game"}
    nothing = CliRunner().invoke(app, ["leaderboard", str(hostile["z"]), "--out", str(tmp_path / "z")])
    assert isinstance(nothing.exception, LlmpsychError)
    assert "no finished, scorable game" in str(nothing.exception)
    assert "Guess" not in str(nothing.exception) and "not a GAMA-Bench game" in str(nothing.exception)
