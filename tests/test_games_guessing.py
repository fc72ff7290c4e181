"""Guess 2/3 of the Average: resolution, ties, ratio strings, reports, equilibrium strategy."""

from __future__ import annotations

import pytest

from llmpsych.errors import ConfigError
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.guessing import GuessingGame, GuessingParams, GuessingRound, ratio_text, resolve_guesses
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 3, rounds: int = 2, **params: object) -> GuessingGame:
    prompts = PromptSet(GuessingGame.folder, GuessingGame.builtin)
    return GuessingGame(GuessingParams(**params), players, rounds, prompts, OfflineContext().rng)


def test_closest_to_two_thirds_of_the_mean_wins() -> None:
    out = resolve_guesses([0, 30, 60, 30], 2 / 3)
    assert out["mean"] == 30 and out["target"] == pytest.approx(20)
    assert out["winning"] == [30] and out["winners"] == [1, 3]


def test_equidistant_different_values_all_win_unless_reference_tie_rule() -> None:
    choices = [10, 30, 80]  # mean 40, target 20: 10 and 30 are both 10 away
    assert resolve_guesses(choices, 0.5)["winners"] == [0, 1]
    assert resolve_guesses(choices, 0.5, "first")["winners"] == [0]


def test_ratio_strings_follow_the_reference() -> None:
    assert [ratio_text(r) for r in (2 / 3, 0.5, 7 / 6, 0.0, 1.0, 2.0)] == [
        "2/3",
        "1/2",
        "7/6",
        "0.0%",
        "100.0%",
        "200.0%",
    ]
    assert GuessingParams(ratio="4/3").ratio == pytest.approx(4 / 3)
    with pytest.raises(ConfigError):
        game(min=10, max=5)


def test_report_shows_mean_target_and_own_result_only() -> None:
    g = game()
    outcome = GuessingRound(round=1, **resolve_guesses([50, 60, 20], 2 / 3))
    user, assistant, result = g.report(2, 1, [50, 60, 20], outcome)
    assert "43.33" in user and "28.89" in user and "20" in user and "60" not in user
    assert assistant == '{"chosen_number": "20"}' and "won" in result


def test_range_is_the_game_range_and_equilibrium_is_the_minimum() -> None:
    g = game(min=10, max=20)
    decision = g.decision(0, 1)
    assert decision.validate({"chosen_number": "20"}) == 20
    with pytest.raises(ValueError):
        decision.validate({"chosen_number": "5"})
    table = play_offline(game(players=4, rounds=3), build_seats(None, 4, default="strategy:ne"))
    assert all(r.choices == [0, 0, 0, 0] and r.winners == [0, 1, 2, 3] for r in table.game.records)
    assert (
        play_offline(game(ratio=1.5), build_seats(None, 3, "strategy:ne")).game.records[0].choices
        == [100] * 3
    )
