"""Divide the Dollar: everyone is paid only when the bids fit in the pot."""

from __future__ import annotations

import pytest

from llmpsych.games.divide_dollar import DivideDollarGame, DivideDollarParams, DollarRound, resolve_dollar
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 4, rounds: int = 1, golds: int = 100) -> DivideDollarGame:
    prompts = PromptSet(DivideDollarGame.folder, DivideDollarGame.builtin)
    return DivideDollarGame(DivideDollarParams(golds=golds), players, rounds, prompts, OfflineContext().rng)


def test_sum_within_pays_everyone_sum_above_pays_nobody() -> None:
    assert resolve_dollar([25, 25, 25, 25], 100)["received"] == [25, 25, 25, 25]
    over = resolve_dollar([25, 25, 25, 26], 100)
    assert over["total"] == 101 and not over["within"] and over["received"] == [0, 0, 0, 0]


def test_bids_are_validated_to_the_pot_and_report_own_bid() -> None:
    g = game(golds=50)
    with pytest.raises(ValueError):
        g.decision(0, 1).validate({"bid_amount": "51"})
    user, assistant, result = g.report(
        1, 1, [10, 20, 30, 0], DollarRound(round=1, **resolve_dollar([10, 20, 30, 0], 50))
    )
    assert assistant == '{"bid_amount": "20"}' and "60" in result and "0 golds" in result


def test_equilibrium_bids_split_the_pot() -> None:
    table = play_offline(game(players=4, rounds=2), build_seats(None, 4, "strategy:ne"))
    assert [r.bids for r in table.game.records] == [[25] * 4] * 2
