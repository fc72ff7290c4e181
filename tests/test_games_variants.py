"""Every parameter variant of spec §2 (thesis §6 generalisability study) played through the engine with
fixed-strategy seats, then scored with the thesis formulas (Eq. 6.1) — fast, no model."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from llmpsych.games.analysis import game_score
from llmpsych.games.engine import Decision, OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats
from llmpsych.games.task import game_class

N = 10


def play(name: str, seats: list[str], rounds: int = 3, **params: Any) -> tuple[dict[str, Any], Any]:
    """Play ``name`` offline; the task-shaped result and the table."""
    cls = game_class(name)
    game = cls(
        cls.Params(**params), len(seats), rounds, PromptSet(cls.folder, cls.builtin), OfflineContext().rng
    )
    table = play_offline(game, build_seats(seats, len(seats)))
    result = {
        "game": name,
        "run": 1,
        "players": len(seats),
        "params": game.info(),
        "seats": seats,
        "rounds": game.stored_rounds(),
    }
    assert table.fallbacks == 0
    return result, table


def half_valuation(decision: Decision) -> int:
    """Seat ``python:test_games_variants:half_valuation``: bid half the valuation (rounded down)."""
    return decision.info["valuation"] // 2


# -- (1) Guess 2/3 of the Average: R in {0, 1/6, ..., 2}, MIN 0, MAX 100 --------------------------------
RATIOS = ["0", "1/6", "1/3", "1/2", "2/3", "5/6", "1", "7/6", "4/3", "3/2", "5/3", "11/6", "2"]
RATIO_TEXT = {"0": "0.0%", "1": "100.0%", "2": "200.0%"}


@pytest.mark.parametrize("ratio", RATIOS)
def test_guessing_ratios(ratio: str) -> None:
    r = float(Fraction(ratio))
    result, table = play("guessing", ["fixed:10", "fixed:20", "fixed:60"], ratio=ratio)
    first = result["rounds"][0]
    assert first["mean"] == 30 and first["target"] == pytest.approx(30 * r)
    best = min(abs(c - 30 * r) for c in [10, 20, 60])  # equally close values all win (tie_rule "all")
    assert first["winning"] == [c for c in [10, 20, 60] if math.isclose(abs(c - 30 * r), best)]
    assert result["params"]["ratio_str"] == RATIO_TEXT.get(ratio, ratio)
    assert RATIO_TEXT.get(ratio, ratio) in table.histories[0][0]["content"]  # the rules state the ratio
    # S1 = 30: R<1 -> (100 - 30); R=1 -> 1 - |60 - 100|/100; R>1 -> 30
    expected = 70.0 if r < 1 else 60.0 if r == 1 else 30.0
    assert game_score(result) == pytest.approx(expected)
    if r != 1:  # the equilibrium (MIN for R<1, MAX for R>1) scores 100
        assert game_score(play("guessing", ["strategy:ne"] * 3, ratio=ratio)[0]) == pytest.approx(100)


# -- (2) El Farol Bar: R in {0%, ..., 100%}, explicit and implicit feedback ------------------------------
@pytest.mark.parametrize("mode", ["implicit", "explicit"])
@pytest.mark.parametrize("ratio", [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
def test_bar_capacities_and_feedback(ratio: float, mode: str) -> None:
    seats = ["fixed:go"] * 5 + ["fixed:stay"] * 5
    result, table = play("bar", seats, ratio=ratio, mode=mode)
    first = result["rounds"][0]
    fun = ratio >= 0.5
    assert first["go"] == 5 and first["good"] is fun
    assert first["utility"] == [10 if fun else 0] * 5 + [5] * 5
    worst = max(ratio, 1 - ratio)
    assert game_score(result) == pytest.approx((worst - abs(0.5 - ratio)) / worst * 100)
    goer, stayer = table.histories[0], table.histories[9]
    assert "5 players went out" in goer[1]["content"]
    assert ("5 players went out" in stayer[1]["content"]) is (mode == "explicit")
    assert stayer[-1]["content"] == "Your utility this round: 5."


# -- (3) Divide the Dollar: G in {50, 100, 200, 400, 800} -----------------------------------------------
@pytest.mark.parametrize("golds", [50, 100, 200, 400, 800])
def test_divide_dollar_golds(golds: int) -> None:
    equal, result_ne = golds // N, play("divide_dollar", ["strategy:ne"] * N, golds=golds)[0]
    assert all(r["bids"] == [equal] * N and r["received"] == [equal] * N for r in result_ne["rounds"])
    assert game_score(result_ne) == pytest.approx(100)
    half = play("divide_dollar", [f"fixed:{golds // 10}"] * 5 + ["fixed:0"] * 5, golds=golds)[0]  # sum G/2
    assert half["rounds"][0]["within"] and game_score(half) == pytest.approx(50)
    greedy = play("divide_dollar", [f"fixed:{golds // 5}"] * N, golds=golds)[0]  # 2G: nobody gets anything
    assert greedy["rounds"][0]["received"] == [0] * N and game_score(greedy) == 0


# -- (4) Public Goods Game: R in {0, 0.5, 1, 2, 4} -------------------------------------------------------
@pytest.mark.parametrize("ratio", [0.0, 0.5, 1.0, 2.0, 4.0])
def test_public_goods_multipliers(ratio: float) -> None:
    result, _ = play("public_goods", ["fixed:20"] * 5 + ["fixed:0"] * 5, ratio=ratio)
    first = result["rounds"][0]
    share = 100 * ratio / N
    assert first["pot"] == 100 and first["share"] == pytest.approx(share)
    assert first["gain"][:6] == [pytest.approx(share - 20)] * 5 + [pytest.approx(share)]
    assert first["tokens_after"][0] == pytest.approx(share) and first["tokens_after"][9] == pytest.approx(
        20 + share
    )
    assert game_score(result) == pytest.approx(50)  # S4 = 10 of T = 20
    assert game_score(play("public_goods", ["strategy:ne"] * N, ratio=ratio)[0]) == pytest.approx(100)


# -- (5) Diner's Dilemma: (P_l, U_l, P_h, U_h) ----------------------------------------------------------
@pytest.mark.parametrize(
    "cheap_cost, cheap_utility, exp_cost, exp_utility",
    [(10, 15, 20, 20), (11, 5, 20, 7), (4, 19, 9, 20), (1, 8, 19, 12), (4, 5, 17, 7), (2, 11, 8, 13)],
)
def test_diner_costs_and_utilities(
    cheap_cost: int, cheap_utility: int, exp_cost: int, exp_utility: int
) -> None:
    # the dilemma holds: cheap is better alone, costly is better when the bill is split
    assert exp_utility - exp_cost < cheap_utility - cheap_cost
    assert exp_utility - exp_cost / N > cheap_utility - cheap_cost / N
    costs = dict(
        cheap_cost=cheap_cost, cheap_utility=cheap_utility, exp_cost=exp_cost, exp_utility=exp_utility
    )
    result, _ = play("diner", ["fixed:cheap"] * 3 + ["fixed:costly"] * 7, **costs)
    first = result["rounds"][0]
    total = 3 * cheap_cost + 7 * exp_cost
    assert first["total"] == total and first["share"] == pytest.approx(total / N)
    assert first["utility"][0] == pytest.approx(cheap_utility - total / N)
    assert first["utility"][9] == pytest.approx(exp_utility - total / N)
    assert game_score(result) == pytest.approx(70)
    assert game_score(play("diner", ["strategy:ne"] * N, **costs)[0]) == pytest.approx(100)


# -- (6) Sealed-Bid Auction: valuations up to 100, 200, 400, 800 (step 10), first and second price ------
@pytest.mark.parametrize("valuation_max", [100, 200, 400, 800])
def test_auction_valuation_ranges(valuation_max: int) -> None:
    seats = ["python:test_games_variants:half_valuation"] * N
    result, _ = play("auction", seats, valuation_max=valuation_max)
    terms = []
    for r in result["rounds"]:
        values = r["valuations"]
        assert len(set(values)) == N and all(v % 10 == 0 and 0 <= v <= valuation_max for v in values)
        assert r["bids"] == [v // 2 for v in values]
        assert r["winner"] == values.index(max(values)) and r["price"] == max(values) // 2
        terms += [(v - v // 2) / max(v, 1) for v in values]
    assert game_score(result) == pytest.approx(100 * sum(terms) / len(terms))
    second, _ = play("auction", ["strategy:ne"] * N, valuation_max=valuation_max, mode="second")
    for r in second["rounds"]:  # truthful bids; the winner pays the second-highest valuation
        assert r["bids"] == r["valuations"]
        assert (
            r["price"] == sorted(r["valuations"])[-2]
            and r["utility"][r["winner"]] == max(r["bids"]) - r["price"]
        )


# -- (7) Battle Royale: hit rates 51..60 (step 1), 35..80 (step 5), 10..100 (step 10) --------------------
@pytest.mark.parametrize("base_hit_rate, interval", [(51, 1), (35, 5), (10, 10)])
def test_battle_royale_hit_rates(base_hit_rate: int, interval: int) -> None:
    result, table = play(
        "battle_royale", ["strategy:ne"] * N, rounds=20, base_hit_rate=base_hit_rate, interval=interval
    )
    rates = [base_hit_rate + i * interval for i in range(N)]
    assert table.game.hit_rates == rates and f"{rates[-1]}%" in table.histories[0][0]["content"]
    assert all(r["target"] == r["strongest_other"] for r in result["rounds"])
    assert game_score(result) == pytest.approx(100)
    misses, _ = play(
        "battle_royale", ["fixed:null"] * N, rounds=20, base_hit_rate=base_hit_rate, interval=interval
    )
    assert len(misses["rounds"]) == 20 and misses["rounds"][-1]["survivors"] == list(range(N))
    assert game_score(misses) == 0


# -- (8) Pirate Game: G in {4, 5, 100, 400} --------------------------------------------------------------
@pytest.mark.parametrize("gold", [4, 5, 100, 400])
def test_pirate_gold(gold: int) -> None:
    result, _ = play("pirate", ["strategy:ne"] * N, gold=gold)
    (only,) = result["rounds"]  # the optimal plan passes at once
    assert only["plan"] == [gold - 4, 0, 1, 0, 1, 0, 1, 0, 1, 0] and only["accepted"]
    assert only["accepted_count"] == 5 and game_score(result) == pytest.approx(100)
    # the published rule rescales plans to 100 gold: equilibrium play scores 100 only at 100 gold
    assert (game_score(result, published=True) == pytest.approx(100)) == (gold == 100)
    greedy, _ = play("pirate", ["python:test_games_variants:greedy_pirate"] * N, gold=gold)
    # each proposer keeps everything and everyone else rejects: overboard until two are left (1 of 2 passes)
    assert [r["proposer"] for r in greedy["rounds"]] == list(range(1, N))
    assert [r["accepted"] for r in greedy["rounds"]] == [False] * (N - 2) + [True]
    # L1 distance to the optimum = 2 x the 1-gold shares the proposer should have given; every vote correct
    distances = [2 * (math.ceil((N - p + 1) / 2) - 1) for p in range(1, N)]
    expected = (2 * gold - sum(distances) / len(distances)) / (2 * gold) * 50 + 50
    assert game_score(greedy) == pytest.approx(expected)


def greedy_pirate(decision: Decision) -> Any:
    """Seat ``python:test_games_variants:greedy_pirate``: propose all the gold to oneself, reject any plan."""
    if decision.kind == "propose":
        info = decision.info
        return [info["gold"]] + [0] * (info["players"] - info["proposer"])
    return "reject"
