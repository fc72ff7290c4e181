"""Pirate Game: optimal plans and votes, ties pass, proposals validated, rounds until acceptance."""

from __future__ import annotations

import pytest

from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.parsing import InvalidAnswer
from llmpsych.games.pirate import (
    PirateGame,
    PirateParams,
    optimal_plan,
    optimal_vote,
    read_plan,
    read_vote,
    tally,
)
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 10, **params: object) -> PirateGame:
    prompts = PromptSet(PirateGame.folder, PirateGame.builtin)
    return PirateGame(PirateParams(**params), players, 20, prompts, OfflineContext().rng)


def test_optimal_plan_and_votes() -> None:
    assert optimal_plan(1, 10, 100) == [96, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert optimal_plan(2, 10, 100) == [96, 0, 1, 0, 1, 0, 1, 0, 1]
    assert optimal_plan(10, 10, 100) == [100]
    assert optimal_vote(3, 1, 1) == "accept" and optimal_vote(4, 1, 1) == "reject"
    assert optimal_vote(4, 1, 2) == "accept" and optimal_vote(3, 1, 0) == "reject"


def test_half_the_votes_pass_a_plan() -> None:
    assert tally(["accept", "reject", "reject"], 4) == (2, True)  # proposer + 1 of 4: ties pass
    assert tally(["reject", "reject", "reject"], 4) == (1, False)


def test_proposals_and_votes_are_validated() -> None:
    assert read_plan({"rank_1": "98", "rank_2": "2"}, 2, 100) == [98, 2]
    for bad in [[100], [101, -1], [60, 30]]:
        with pytest.raises(InvalidAnswer):
            read_plan(bad, 2, 100)
    assert read_vote("I ACCEPT") == "accept" and read_vote("reject") == "reject"
    with pytest.raises(InvalidAnswer):
        read_vote("accept or reject")


def test_optimal_players_accept_the_first_plan() -> None:
    g = game()
    play_offline(g, build_seats(None, 10, "strategy:ne"))
    (record,) = g.records
    assert record.plan == [96, 0, 1, 0, 1, 0, 1, 0, 1, 0] and record.accepted
    assert record.accepted_count == 5 and g.summary()["vote_accuracy"] == 1.0


def test_rejecting_crew_throws_proposers_overboard_until_two_remain() -> None:
    g = game(players=5)
    seats = build_seats(None, 5, "fixed:reject")
    seats[0:3] = build_seats(["fixed:100,0,0,0,0", "fixed:100,0,0,0", "fixed:100,0,0"], 3)
    table = play_offline(g, seats)
    assert [r.accepted for r in g.records] == [False, False, False, True]  # 2 pirates left: 1 of 2 passes
    assert g.records[-1].plan == [50, 50]  # a fixed seat with no valid plan falls back to an equal split
    assert g.records[-1].proposal.fallback
    last = table.histories[4][-1]["content"]
    assert "50 golds" in last  # each pirate is told their own share


def test_reference_report_tells_everyone_the_proposers_share() -> None:
    g = game(players=3, report_own_share=False)
    seats = build_seats(["fixed:98,1,1", "fixed:accept", "fixed:accept"], 3)
    table = play_offline(g, seats)
    assert "98 golds" in table.histories[2][-1]["content"]
