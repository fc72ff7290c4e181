"""Public Goods Game: pot, shares, balances with and without the per-round reset."""

from __future__ import annotations

import pytest

from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.public_goods import PublicGoodsGame, PublicGoodsParams, resolve_goods
from llmpsych.games.seats import build_seats


def game(players: int = 4, rounds: int = 2, **params: object) -> PublicGoodsGame:
    prompts = PromptSet(PublicGoodsGame.folder, PublicGoodsGame.builtin)
    return PublicGoodsGame(PublicGoodsParams(**params), players, rounds, prompts, OfflineContext().rng)


def test_pot_is_multiplied_and_shared_equally() -> None:
    out = resolve_goods([20, 0, 10, 10], [20, 20, 20, 20], 2)
    assert out["pot"] == 40 and out["share"] == 20
    assert out["tokens_after"] == [20, 40, 30, 30] and out["gain"] == [0, 20, 10, 10]


def test_reset_gives_fresh_tokens_each_round_and_carry_keeps_balances() -> None:
    seats = build_seats(["fixed:20", "fixed:0", "fixed:0", "fixed:0"], 4)
    reset = play_offline(game(), seats).game
    assert reset.records[1].tokens_after == reset.records[0].tokens_after == [10, 30, 30, 30]
    carry = play_offline(
        game(reset=False), build_seats(["fixed:10", "fixed:0", "fixed:0", "fixed:0"], 4)
    ).game
    assert carry.records[0].tokens_after == [15, 25, 25, 25]
    assert carry.records[1].tokens_after == [10, 30, 30, 30]
    with pytest.raises(ValueError):
        carry.decision(0, 3).validate({"tokens_contributed": "11"})  # only 10 tokens left


def test_random_endowment_is_seeded_and_equilibrium_contributes_nothing() -> None:
    a = play_offline(game(endowment="random"), build_seats(None, 4, "strategy:ne"), seed=3).game
    b = play_offline(game(endowment="random"), build_seats(None, 4, "strategy:ne"), seed=3).game
    assert a.initial == b.initial and all(11 <= t <= 20 for t in a.initial)
    assert all(c == 0 for r in a.records for c in r.contributions)
