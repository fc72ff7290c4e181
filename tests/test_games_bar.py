"""El Farol Bar: crowding threshold, explicit and implicit feedback."""

from __future__ import annotations

from llmpsych.games.bar import BarGame, BarParams, BarRound, resolve_bar
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 10, rounds: int = 1, **params: object) -> BarGame:
    prompts = PromptSet(BarGame.folder, BarGame.builtin)
    return BarGame(BarParams(**params), players, rounds, prompts, OfflineContext().rng)


def test_exactly_the_threshold_is_still_fun() -> None:
    six = ["go"] * 6 + ["stay"] * 4
    out = resolve_bar(six, 0.6, 0, 10, 5)
    assert out["go"] == 6 and out["good"] and out["utility"] == [10] * 6 + [5] * 4
    seven = ["go"] * 7 + ["stay"] * 3
    out = resolve_bar(seven, 0.6, 0, 10, 5)
    assert not out["good"] and out["utility"] == [0] * 7 + [5] * 3


def test_implicit_feedback_hides_the_bar_from_stayers() -> None:
    g = game()
    actions = ["go"] * 7 + ["stay"] * 3
    outcome = BarRound(round=1, **resolve_bar(actions, 0.6, 0, 10, 5))
    goer = g.report(0, 1, actions, outcome)
    stayer = g.report(9, 1, actions, outcome)
    assert "7" in goer[0] and "60%" in goer[0] and goer[2].endswith("0.")
    assert "7" not in stayer[0] and stayer[1] == '{"decision": "stay"}' and stayer[2].endswith("5.")
    explicit = game(mode="explicit").report(9, 1, actions, outcome)
    assert "7" in explicit[0] and "3" in explicit[0]


def test_answers_must_be_go_or_stay() -> None:
    decision = game().decision(0, 1)
    assert decision.validate({"decision": "Go"}) == "go"
    table = play_offline(
        game(players=3, rounds=2), build_seats(["fixed:go", "fixed:stay", "fixed:maybe"], 3), max_reasks=1
    )
    record = table.game.records[0]
    assert record.choices == ["go", "stay", "stay"]  # the unreadable seat fell back to staying home
    assert record.decisions[2].fallback and record.decisions[2].asks == 2
