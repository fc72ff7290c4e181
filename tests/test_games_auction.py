"""Sealed-Bid Auction: reference valuation draw, first and second price, seeded tie-breaks."""

from __future__ import annotations

import random

import pytest

from llmpsych.errors import ConfigError
from llmpsych.games.auction import AuctionGame, AuctionParams, draw_valuations, resolve_auction
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 10, rounds: int = 2, **params: object) -> AuctionGame:
    prompts = PromptSet(AuctionGame.folder, AuctionGame.builtin)
    return AuctionGame(AuctionParams(**params), players, rounds, prompts, OfflineContext().rng)


def test_valuations_match_the_reference_draw() -> None:
    # the valuations of the authors' released logs (seed 42 in round 1, +1 per round)
    assert draw_valuations(1, 10, AuctionParams()) == [200, 30, 0, 80, 70, 160, 20, 110, 10, 100]
    assert draw_valuations(2, 10, AuctionParams()) == [10, 90, 40, 140, 110, 30, 70, 190, 170, 130]
    with pytest.raises(ConfigError):
        game(players=12, valuation_max=100)


def test_first_and_second_price() -> None:
    rng = random.Random(0)
    first = resolve_auction([50, 80, 70], [100, 90, 80], "first", rng)
    assert first["winner"] == 1 and first["price"] == 80 and first["utility"] == [0, 10, 0]
    second = resolve_auction([50, 80, 70], [100, 90, 80], "second", rng)
    assert second["price"] == 70 and second["utility"] == [0, 20, 0]


def test_ties_are_broken_at_random_but_reproducibly() -> None:
    winners = {
        resolve_auction([60, 60, 10], [90, 90, 90], "second", random.Random(s))["winner"] for s in range(20)
    }
    assert winners == {0, 1}
    tie = resolve_auction([60, 60, 10], [90, 90, 90], "second", random.Random(1))
    assert tie["price"] == 60 and tie["tied"] == [0, 1]


def test_bids_are_capped_at_the_valuation_and_reports_are_private() -> None:
    g = game()
    decision = g.decision(0, 1)  # valuation 200
    assert decision.info["valuation"] == 200 and decision.validate({"bid": "200"}) == 200
    with pytest.raises(ValueError):
        game().decision(2, 1).validate({"bid": "1"})  # player 2 values the item at 0
    table = play_offline(game(players=3, rounds=1), build_seats(["fixed:150", "fixed:20", "fixed:0"], 3))
    record = table.game.records[0]
    assert record.valuations == [200, 30, 0] and record.winner == 0 and record.utility == [50, 0, 0]
    assert "150" in table.histories[1][-1]["content"]  # everyone learns the winning bid ...
    assert "200" not in "".join(m["content"] for m in table.histories[1])  # ... not others' valuations


def test_equilibrium_strategy_shades_first_price_and_bids_value_in_second_price() -> None:
    first = play_offline(game(players=4, rounds=1), build_seats(None, 4, "strategy:ne")).game.records[0]
    assert first.bids == [v * 3 // 4 for v in first.valuations]
    second = play_offline(game(players=4, rounds=1, mode="second"), build_seats(None, 4, "strategy:ne")).game
    assert second.records[0].bids == second.records[0].valuations
