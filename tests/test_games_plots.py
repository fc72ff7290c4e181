"""GAMA-Bench run reports: one plot per game (checked through the data it draws) and per-game transcripts."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.plots import PANELS, plot_data
from llmpsych.games.prompts import PromptSet
from llmpsych.games.result import GamaBenchResult
from llmpsych.games.seats import HumanSeat, build_seats
from llmpsych.games.task import GAMES, game_class
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from test_games_engine_runs import scripted


def offline_result(
    name: str, seats: list[str], rounds: int = 3, run: int = 1, **params: Any
) -> dict[str, Any]:
    """A finished game with fixed-strategy seats, shaped like the gamabench task's unit result."""
    cls = game_class(name)
    game = cls(
        cls.Params(**params), len(seats), rounds, PromptSet(cls.folder, cls.builtin), OfflineContext().rng
    )
    play_offline(game, build_seats(seats, len(seats)))
    return {
        "game": name,
        "run": run,
        "players": len(seats),
        "params": game.info(),
        "prompts": "builtin-v1",
        "seats": seats,
        "rounds": game.stored_rounds(),
    }


def points(data: pd.DataFrame, panel: str, series: str, run: int = 1) -> list[tuple[Any, Any]]:
    part = data[(data["panel"] == panel) & (data["series"] == series) & (data["run"] == run)]
    return list(zip(part["x"], part["y"], strict=True))


def test_guessing_choices_mean_target_and_winning_number() -> None:
    data = plot_data("guessing", [offline_result("guessing", ["fixed:10", "fixed:20", "fixed:60"], rounds=2)])
    assert sorted(points(data, "choices", "choice")) == [(1, 10), (1, 20), (1, 60), (2, 10), (2, 20), (2, 60)]
    assert points(data, "choices", "mean") == [(1, 30), (2, 30)]
    assert points(data, "choices", "target") == [(1, 20), (2, 20)]
    assert points(data, "choices", "winning") == [(1, 20), (2, 20)]


def test_bar_attendance_against_capacity_and_divide_dollar_bids_against_the_pot() -> None:
    bar = plot_data("bar", [offline_result("bar", ["fixed:go", "fixed:go/stay", "fixed:stay"], ratio=0.4)])
    assert points(bar, "attendance", "went") == [(1, 2), (2, 1), (3, 2)]
    assert [y for _, y in points(bar, "attendance", "capacity")] == pytest.approx([1.2] * 3)
    dollar = plot_data(
        "divide_dollar", [offline_result("divide_dollar", ["fixed:30", "fixed:50/90"], golds=100)]
    )
    assert points(dollar, "total", "sum of bids") == [(1, 80), (2, 120), (3, 80)]
    assert points(dollar, "total", "pot") == [(1, 100), (2, 100), (3, 100)]
    assert set(points(dollar, "bids", "equal split")) == {(1, 50), (2, 50), (3, 50)}
    assert points(dollar, "bids", "mean") == [(1, 40), (2, 60), (3, 40)]
    assert sorted(points(dollar, "bids", "bid"))[:2] == [(1, 30), (1, 50)]


def test_public_goods_contributions_and_gains_and_diner_order_rates() -> None:
    goods = plot_data("public_goods", [offline_result("public_goods", ["fixed:20", "fixed:0"], rounds=1)])
    assert sorted(points(goods, "contributions", "contribution")) == [(1, 0), (1, 20)]
    assert points(goods, "contributions", "mean") == [(1, 10)]
    # pot 20 x 2 shared by 2: +20 each; gains 0 and +20, tokens after 20 and 40
    assert points(goods, "gains", "mean gain") == [(1, 10)]
    assert points(goods, "gains", "mean tokens after") == [(1, 30)]
    diner = plot_data(
        "diner",
        [offline_result("diner", ["fixed:cheap", "fixed:costly/cheap", "fixed:costly", "fixed:costly"])],
    )
    assert points(diner, "orders", "cheap") == [(1, 0.25), (2, 0.5), (3, 0.25)]
    assert points(diner, "orders", "costly") == [(1, 0.75), (2, 0.5), (3, 0.75)]


def test_auction_bids_are_plotted_against_valuations() -> None:
    result = offline_result("auction", ["strategy:ne", "fixed:0", "strategy:ne"], rounds=2, mode="second")
    data = plot_data("auction", [result])
    expected = [(v, b) for r in result["rounds"] for v, b in zip(r["valuations"], r["bids"], strict=True)]
    assert points(data, "bids", "bid") == expected
    assert all(b == v for v, b in expected[0::3])  # truthful bids in the second-price auction
    values = [v for r in result["rounds"] for v in r["valuations"]]
    assert points(data, "bids", "bid = valuation") == [(min(values), min(values)), (max(values), max(values))]
    first = result["rounds"][0]
    ratios = [b / v for v, b in zip(first["valuations"], first["bids"], strict=True) if v]
    assert points(data, "shading", "mean")[0] == (1, pytest.approx(sum(ratios) / len(ratios)))


def test_battle_royale_players_left_and_every_shot() -> None:
    result = offline_result("battle_royale", ["strategy:ne"] * 4, rounds=20, base_hit_rate=70, interval=10)
    data = plot_data("battle_royale", [result])
    left = points(data, "survivors", "players left")
    assert left[0] == (0, 4) and left[-1] == (len(result["rounds"]), 1)
    for r in result["rounds"]:  # every shot aims at the strongest other survivor, hit or missed
        series = "hit" if r["hit"] else "missed"
        assert (r["round"], r["target"]) in points(data, "shots", series)
        assert (r["round"], r["strongest_other"]) in points(data, "shots", "strongest other")
    misses = plot_data("battle_royale", [offline_result("battle_royale", ["fixed:null"] * 3, rounds=4)])
    assert points(misses, "shots", "intentional miss") == [(1, 0), (2, 1), (3, 2), (4, 0)]
    assert [y for _, y in points(misses, "survivors", "players left")] == [3] * 5


def test_pirate_proposals_and_votes() -> None:
    crew = ["fixed:100,0,0,0/34,33,33", "fixed:accept", "fixed:reject", "fixed:accept"]
    data = plot_data("pirate", [offline_result("pirate", crew)])
    # rank 1 keeps 100 (optimal 99 for 4 pirates); 3 of 4 votes (proposer, ranks 2 and 4) pass it
    assert points(data, "proposals", "proposer keeps") == [(1, 100)]
    assert points(data, "proposals", "optimal keeps") == [(1, 99)]
    assert points(data, "proposals", "L1 distance to optimal") == [(1, 2)]
    assert points(data, "votes", "for the plan") == [(1, 3)] and points(data, "votes", "needed") == [(1, 2)]
    assert points(data, "ballots", "accept") == [(1, 2), (1, 4)] and points(data, "ballots", "reject") == [
        (1, 3)
    ]


def test_two_runs_are_separate_series() -> None:
    runs = [
        offline_result("diner", ["fixed:cheap"] * 2, run=1),
        offline_result("diner", ["fixed:costly"] * 2, run=2),
    ]
    data = plot_data("diner", runs)
    assert points(data, "orders", "cheap", run=1) == [(1, 1.0), (2, 1.0), (3, 1.0)]
    assert points(data, "orders", "cheap", run=2) == [(1, 0.0), (2, 0.0), (3, 0.0)]


def test_the_table_logs_rules_requests_every_answer_and_reports() -> None:
    human = HumanSeat("human", stdin=io.StringIO("fifty\n40\n30\n"), stdout=io.StringIO())
    cls = game_class("guessing")
    game = cls(cls.Params(), 2, 2, PromptSet(cls.folder, cls.builtin), OfflineContext().rng)
    table = play_offline(game, [human, *build_seats(["fixed:50"], 1)])
    turns = table.transcripts[0]
    assert [t["kind"] for t in turns] == [
        "rules",
        "request", "answer", "re-ask", "answer", "report", "report", "report",
        "request", "answer", "report", "report", "report",
    ]  # fmt: skip
    assert turns[2]["content"] == "fifty" and "error" in turns[2] and turns[4]["action"] == 40


def test_run_report_links_one_plot_and_the_transcripts_per_game(tmp_path: Path) -> None:
    with FaultServer(responder=scripted) as server:
        config = parse_run_config(
            {
                "task": "gamabench",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "concurrency": 16,
                "options": {"game": "all", "runs": 2, "players": 4, "rounds": 3},
            }
        )
        outcome = start_run(config, tmp_path / "r", False)
    assert outcome.summary.done == 16, outcome.summary.errors
    run_dir = tmp_path / "r"
    report = (run_dir / "report.md").read_text()
    store = RunStore.in_dir(run_dir)
    try:
        results = [u.result for u in store.units()]
    finally:
        store.close()
    for name in GAMES:
        png, csv = run_dir / "plots" / f"{name}.png", run_dir / "plots" / f"{name}.csv"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"](plots/{name}.png)" in report
        data = pd.read_csv(csv)
        assert set(data["panel"]) == set(PANELS[name]), name
        assert set(data["run"]) == {1, 2}
        expected = plot_data(name, [r for r in results if r["game"] == name]).to_csv(index=False)
        expected = pd.read_csv(io.StringIO(expected))
        pd.testing.assert_frame_equal(data, expected, check_dtype=False)
        for run in (1, 2):
            transcript = run_dir / "transcripts" / f"{name}-run{run:02d}.md"
            assert f"](transcripts/{transcript.name})" in report
            result = next(r for r in results if r["game"] == name and r["run"] == run)
            asked = {d["player"] for d in GamaBenchResult.model_validate(result).decisions()}
            assert transcript.read_text().count("\n### Player ") == len(asked)  # each seat that was asked
    guessing = pd.read_csv(run_dir / "plots" / "guessing.csv")
    means = guessing[(guessing["series"] == "mean") & (guessing["run"] == 1)]["y"].tolist()
    first = next(r for r in results if r["game"] == "guessing" and r["run"] == 1)
    assert means == pytest.approx([r["mean"] for r in first["rounds"]])
    assert not math.isnan(means[0])


def test_value_axes_start_at_zero_and_all_zero_data_keeps_a_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attendance of 2, 1, 2 against a capacity of 1.2 is drawn from 0, not from 1; contributions that are
    all 0 get an axis of 0-1 rather than a squashed one."""
    import llmpsych.games.plots as plots

    limits: dict[str, list[tuple[float, float]]] = {}

    def keep(fig: Any, path: Path, **_: Any) -> Path:
        limits[path.stem] = [ax.get_ylim() for ax in fig.axes]
        return path

    monkeypatch.setattr(plots, "save_figure", keep)
    bar = offline_result("bar", ["fixed:go", "fixed:go/stay", "fixed:stay"], ratio=0.4)
    goods = offline_result("public_goods", ["fixed:0", "fixed:0"])
    plots.write_plots([bar, goods], tmp_path / "plots", {})
    assert limits["bar"][0][0] == 0 and limits["bar"][0][1] >= 2
    assert limits["public_goods"][0] == (0, 1)
