"""A ninth game defined in the test suite (tests/games_toy.py), registered with one call, played through the
run engine with a model seat, a strategy and a fixed seat: it gets a score, a plot and a leaderboard row.
A game missing a piece is refused at registration."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from games_toy import LowestGame
from llmpsych.games import registry
from llmpsych.games.engine import SimultaneousGame
from llmpsych.games.leaderboard import leaderboard, leaderboard_frame, write_leaderboard
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import unit_results

DOCS = Path(__file__).resolve().parents[1] / "docs" / "games-engine.md"


@pytest.fixture
def lowest() -> Iterator[type[LowestGame]]:
    registry.register(LowestGame)  # the one registry line
    try:
        yield LowestGame
    finally:
        registry.unregister(LowestGame.name)


def picks_two(body: dict[str, Any]) -> str:
    """The model seat: always 2, as a chat model writes it."""
    return '```json\n{"number": "2"}\n```'


def test_a_game_defined_in_one_module_is_played_scored_plotted_and_ranked(
    lowest: Any, tmp_path: Path
) -> None:
    run_dir = tmp_path / "r"
    with FaultServer(responder=picks_two) as server:
        config = parse_run_config(
            {
                "task": "gamabench",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "options": {
                    "game": "lowest",
                    "runs": 2,
                    "players": 3,
                    "rounds": 4,
                    "seats": ["llm", "strategy:ne", "fixed:7/4"],
                    "lowest": {"max": 8},
                },
            }
        )
        outcome = start_run(config, run_dir, False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 2 * 4, outcome.summary.errors
    for result in unit_results(run_dir).values():
        assert [r["picks"] for r in result["rounds"]] == [[2, 0, 7], [2, 0, 4]] * 2
        assert result["params"] == {"max": 8}
    # the score: (8 - mean pick 2.5) / 8 * 100
    games = pd.read_csv(run_dir / "games.csv")
    assert games["score"].tolist() == pytest.approx([68.75, 68.75])
    assert (run_dir / "plots" / "lowest.png").stat().st_size > 0
    plotted = pd.read_csv(run_dir / "plots" / "lowest.csv")
    assert set(plotted["series"]) == {"pick", "lowest"} and len(plotted) == 2 * 4 * 4
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "Game: lowest" in report and "plots/lowest.png" in report

    scores, infos = leaderboard([run_dir])
    frame = leaderboard_frame(scores)
    (row,) = frame.to_dict("records")
    assert row["Lowest Number"] == "68.8 ± 0.0" and row["Overall"] == "-"
    assert row["model"] == "openai-compatible/scripted (mixed seats)"
    paths = write_leaderboard(scores, infos, tmp_path / "board")
    assert "Lowest Number" in (tmp_path / "board" / "leaderboard.md").read_text(encoding="utf-8")
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["openai-compatible/scripted (mixed seats)"]["lowest_number"]["runs"] == 2
    assert all(path.exists() for path in paths)


def half_done(*missing: str) -> type:
    """The toy game's class without ``missing`` (say, its scorer): a game someone has not finished."""
    body = {k: v for k, v in vars(LowestGame).items() if k not in {*missing, "__dict__", "__weakref__"}}
    return type("HalfDone", (SimultaneousGame,), {**body, "name": "half", "scoring_name": "half"})


def test_a_game_missing_a_piece_is_refused_at_registration() -> None:
    for missing, named in [
        (("score_log",), "score_log"),
        (("scoring_log",), "scoring_log"),
        (("plot_points",), "plot_points"),
        (("panels",), "panels"),
        (("title",), "title"),
        (("Params",), "Params"),
        (("Round",), "Round"),
        (("resolve",), "rules"),
    ]:
        with pytest.raises(
            registry.GameDefinitionError, match=rf"'half' cannot be registered: it lacks .*{named}"
        ):
            registry.register(half_done(*missing))
    with pytest.raises(registry.GameDefinitionError, match="already uses the name 'guessing'"):
        registry.register(type("Twin", (LowestGame,), {"name": "guessing", "scoring_name": "twin"}))
    assert "half" not in registry.names() and "twin" not in registry.names()
    registry.register(half_done())  # nothing missing: accepted
    registry.unregister("half")


def test_the_docs_example_is_the_toy_game_this_suite_plays() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Adding a game", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    module = (Path(__file__).parent / "games_toy.py").read_text(encoding="utf-8")
    assert module in blocks, "docs/games-engine.md must show tests/games_toy.py verbatim"
