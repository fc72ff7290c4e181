"""Battle Royale: shooting order over survivors, targets, seeded hits, the turn cap."""

from __future__ import annotations

import pytest

from llmpsych.errors import ConfigError
from llmpsych.games.battle_royale import (
    BattleRoyaleGame,
    BattleRoyaleParams,
    next_shooter,
    read_target,
    strongest_other,
)
from llmpsych.games.engine import OfflineContext, play_offline
from llmpsych.games.parsing import InvalidAnswer
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats


def game(players: int = 4, rounds: int = 20, **params: object) -> BattleRoyaleGame:
    prompts = PromptSet(BattleRoyaleGame.folder, BattleRoyaleGame.builtin)
    return BattleRoyaleGame(BattleRoyaleParams(**params), players, rounds, prompts, OfflineContext().rng)


def test_order_cycles_over_survivors_by_increasing_hit_rate() -> None:
    assert (
        next_shooter(0, [0, 1, 3]) == 1
        and next_shooter(1, [0, 1, 3]) == 3
        and next_shooter(3, [0, 1, 3]) == 0
    )
    assert (
        next_shooter(2, [0, 3]) == 3
    )  # the shooter itself may just have been ... the next one is still found
    assert strongest_other(3, [0, 1, 3], [35, 40, 45, 50]) == 1
    assert game().hit_rates == [35, 40, 45, 50]
    with pytest.raises(ConfigError):
        game(players=10, base_hit_rate=60, interval=5)


def test_targets() -> None:
    survivors = [0, 2, 3]
    assert read_target("player_2", 0, survivors) == 2 and read_target("3", 0, survivors) == 3
    assert read_target("null", 0, survivors) is None and read_target(None, 0, survivors) is None
    assert read_target("-1", 0, survivors) is None
    for bad in ["player_1", "player_0", "playerID_or_null"]:
        with pytest.raises(InvalidAnswer):
            read_target(bad, 0, survivors)


def test_sure_shots_eliminate_in_order_and_the_last_survivor_wins() -> None:
    # everyone hits (100%, so all equally strong: the first other survivor is "the strongest")
    g = game(players=4, base_hit_rate=100, interval=0)
    table = play_offline(g, build_seats(None, 4, "strategy:ne"))
    shots = [(r.shooter, r.target, r.hit) for r in g.records]
    assert shots == [(0, 1, True), (2, 0, True), (3, 2, True)]  # player 1 is out, so 2 shoots next
    assert g.summary() == {"turns": 3, "strongest_target_rate": 1.0, "winner": 3}
    # the shooter gets a three-turn report of its own shot; others a one-line report
    assert [m["role"] for m in table.histories[0][1:4]] == ["user", "assistant", "user"]
    assert table.histories[3][1]["role"] == "user" and "player_0" in table.histories[3][1]["content"]
    assert len(table.histories[1]) == 1  # the eliminated target hears nothing more


def test_intentional_misses_run_to_the_turn_cap_and_hits_are_seeded() -> None:
    g = game(players=3, rounds=5)
    play_offline(g, build_seats(None, 3, "fixed:null"))
    assert len(g.records) == 5 and [r.shooter for r in g.records] == [0, 1, 2, 0, 1]
    assert all(r.hit is None for r in g.records) and g.summary()["strongest_target_rate"] == 0

    def hits(seed: int) -> list[bool | None]:
        played = game(players=5, rounds=8)
        play_offline(played, build_seats(None, 5, "fixed:player_4/player_3"), seed=seed)
        return [r.hit for r in played.records]

    assert hits(1) == hits(1)
