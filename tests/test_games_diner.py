"""Diner's Dilemma: bill splitting and the costly-dish equilibrium."""

from __future__ import annotations

import pytest

from llmpsych.games.diner import DinerGame, DinerParams, DinerRound, resolve_diner
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 10, rounds: int = 1) -> DinerGame:
    prompts = PromptSet(DinerGame.folder, DinerGame.builtin)
    return DinerGame(DinerParams(), players, rounds, prompts, OfflineContext().rng)


def test_bill_is_split_equally() -> None:
    out = resolve_diner(["costly"] + ["cheap"] * 9, DinerParams())
    assert out["total"] == 110 and out["share"] == 11
    assert out["utility"][0] == 9 and out["utility"][1] == 4
    user, assistant, result = game().report(0, 1, out["dishes"], DinerRound(round=1, **out))
    assert "1 * 20 + 9 * 10 = 110" in user and "11" in user and result.endswith("20 - 110/10 = 9.00.")


def test_dish_must_be_costly_or_cheap_and_equilibrium_is_costly() -> None:
    with pytest.raises(ValueError):
        game().decision(0, 1).validate({"chosen_dish": "steak"})
    table = play_offline(game(players=3, rounds=2), build_seats(None, 3, "strategy:ne"))
    assert all(r.dishes == ["costly"] * 3 for r in table.game.records)
