"""What a player may look at when deciding, typed: each game's ``DecisionInfo``, read by attribute by its
strategies and the people's texts, still a read-only mapping for ``python:`` seats; and the leaderboard's
and the fixed-player preset's reads of stored games through the typed ``Round``.

The stored games are those of ``games_store_before_typed_rounds.json`` (written before the rounds were
typed), so the values read now are the values an older llmpsych read.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.errors import DataError
from llmpsych.games import people_text, registry
from llmpsych.games.auction import BidInfo
from llmpsych.games.bar import BarInfo
from llmpsych.games.battle_royale import ShotInfo
from llmpsych.games.divide_dollar import DollarInfo
from llmpsych.games.engine import Decision, DecisionInfo, Game, OfflineContext, play_offline
from llmpsych.games.guessing import GuessInfo
from llmpsych.games.leaderboard import read_run_dir
from llmpsych.games.observation import Observation
from llmpsych.games.pirate import PirateGame, ProposalInfo, VoteInfo
from llmpsych.games.presets import PresetSettings, expand, get_preset, llm_actions_per_round, summarize
from llmpsych.games.prompts import PromptSet
from llmpsych.games.public_goods import ContributionInfo
from llmpsych.games.result import GamaBenchResult
from llmpsych.games.seats import build_seats
from test_games_typed_rounds import _store  # a finished gamabench run store holding given results

FIXTURE = json.loads((Path(__file__).parent / "games_store_before_typed_rounds.json").read_text("utf-8"))
RESULTS: list[dict[str, Any]] = FIXTURE["results"]


def _game(name: str, players: int = 4) -> Game[Any]:
    cls = registry.get(name)
    return cls(cls.Params(), players, 3, PromptSet(cls.folder, cls.builtin), OfflineContext().rng)


def _decisions(name: str) -> list[Decision]:
    game: Any = _game(name)
    if name == "battle_royale":
        return [game.decision(1, 1, [0, 1, 3])]
    if name == "pirate":
        return [game.proposal(2), game.vote(3, 2, [98, 0, 2])]
    if name == "public_goods":
        game.initial = game.balance = [20] * 4
    return [game.decision(1, 1)]


def test_each_games_decisions_carry_its_own_typed_info_and_the_same_mapping_as_before() -> None:
    auction_value = _game("auction").valuations(1)[1]  # type: ignore[attr-defined]
    expected: dict[str, list[tuple[type[DecisionInfo], dict[str, Any]]]] = {
        "guessing": [(GuessInfo, {"min": 0, "max": 100, "ratio": 2 / 3})],
        "public_goods": [(ContributionInfo, {"tokens": 20, "ratio": 2.0})],
        "divide_dollar": [(DollarInfo, {"golds": 100})],
        "bar": [(BarInfo, {"ratio": 0.6})],
        "diner": [(DecisionInfo, {})],
        "auction": [(BidInfo, {"valuation": auction_value, "mode": "first"})],
        "battle_royale": [(ShotInfo, {"survivors": [0, 1, 3], "hit_rates": [35, 40, 45, 50]})],
        "pirate": [
            (ProposalInfo, {"proposer": 2, "rank": 2, "gold": 100, "players": 4}),
            (VoteInfo, {"proposer": 2, "rank": 3, "share": 0, "plan": [98, 0, 2]}),
        ],
    }
    assert set(expected) == set(registry.names())
    for name, infos in expected.items():
        for decision, (cls, mapping) in zip(_decisions(name), infos, strict=True):
            info = decision.info
            assert type(info) is cls, name
            # the mapping a python: seat reads, key for key (and equal both ways, as the dict was)
            assert dict(info) == mapping and info == mapping and mapping == info, name
            assert all(getattr(info, key) == info[key] for key in mapping)
            assert cls.of(mapping) == info and cls.of(info) is info
    vote = _decisions("pirate")[1].info
    assert isinstance(vote, VoteInfo) and (vote.proposer, vote.rank, vote.share) == (2, 3, 0)
    with pytest.raises(KeyError):
        vote["valuation"]
    with pytest.raises(TypeError):
        vote["share"] = 100  # type: ignore[index]  # read-only: no seat edits what the game told it
    with pytest.raises(dataclasses.FrozenInstanceError):
        vote.share = 100  # type: ignore[misc]


def meddling_voter(observation: Observation) -> Any:
    """Seat ``python:test_games_typed_info:meddling_voter``: zeroes the plan it was shown, then accepts."""
    plan = observation.info["plan"]
    plan[:] = [0] * len(plan)
    return "accept"


def test_a_python_seat_that_edits_the_plan_it_was_shown_cannot_change_the_game() -> None:
    game = PirateGame(
        PirateGame.Params(), 3, 3, PromptSet(PirateGame.folder, PirateGame.builtin), OfflineContext().rng
    )
    seats = ["strategy:ne", *["python:test_games_typed_info:meddling_voter"] * 2]
    play_offline(game, build_seats(seats, 3))
    (record,) = game.records
    # each voter got its own copy of the plan: the proposal stands as proposed (before: [0, 0, 0])
    assert record.plan == [99, 0, 1] and record.accepted and record.accepted_count == 3


def test_strategies_and_peoples_texts_read_a_plain_mapping_as_the_games_info() -> None:
    """A game plugin or a caller that still passes a plain mapping is read as the game's info."""
    game: Any = _game("pirate")
    fields: dict[str, Any] = dict(request="?", fields=["decision"], validate=lambda d: d, fallback="reject")
    plain = {"proposer": 2, "rank": 4, "share": 1, "plan": [98, 1, 1]}
    decision = Decision(player=3, round=2, kind="vote", info=plain, **fields)  # type: ignore[arg-type]
    assert game.strategy("ne", decision, None) == "accept"  # rank 4 has the proposer's parity
    question = people_text.question("pirate", "vote", plain, round_no=2, player=3, players=4)
    typed = people_text.question("pirate", "vote", VoteInfo(**plain), round_no=2, player=3, players=4)
    assert question == typed and "98" in question
    shots = people_text.answer_input("battle_royale", "shoot", {"survivors": [0, 2]}, player=0, players=4)
    assert [value for value, _ in shots.choices] == ["player_2", "null"]
    with pytest.raises(TypeError):
        VoteInfo.of({"proposer": 2})  # a mapping without the fields the game needs is refused


def _with_model_seats(game: str) -> dict[str, Any]:
    """The stored ``game`` of run 1, its players 1 and 2 made model seats (player 2's record without a
    seat, as a record that does not name its seat counts as the model's)."""
    result = copy.deepcopy(next(r for r in RESULTS if r["game"] == game and r["run"] == 1))
    for record in result["rounds"]:
        record["decisions"][1]["seat"] = "llm"
        del record["decisions"][2]["seat"]
    return result


def test_the_leaderboard_holds_each_stored_game_typed_and_the_preset_reads_its_rounds(tmp_path: Path) -> None:
    info = read_run_dir(_store(tmp_path / "run", RESULTS))
    assert len(info.games) == len(RESULTS)
    for game, stored in zip(info.games, RESULTS, strict=True):
        assert (
            isinstance(game.result, GamaBenchResult)
            and game.result.record() == GamaBenchResult.model_validate(stored).record()
        )
    dollar = GamaBenchResult.model_validate(_with_model_seats("divide_dollar"))
    assert llm_actions_per_round(dollar) == [(40 + 0) / 2, (40 + 0) / 2]  # the fixed:40 and abc seats
    pirate = GamaBenchResult.model_validate(next(r for r in RESULTS if r["game"] == "pirate"))
    assert all(math.isnan(v) for v in llm_actions_per_round(pirate))  # a sequential game has no decisions


def test_a_fixed_preset_summary_of_a_store_with_an_unreadable_round_says_what_it_could_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edited store (a round's decisions replaced by text) is not read as numbers and does not stop
    the summary of the other runs: that game is left out of the mean action and not scored."""
    monkeypatch.setattr("llmpsych.games.presets.pyplot", lambda: None)  # the summary's numbers, no chart
    planned = expand(get_preset("fixed"), PresetSettings(models=["openai-compatible/m"], players=3, rounds=2))
    good = {
        "divide_dollar": _with_model_seats("divide_dollar"),
        "public_goods": _with_model_seats("public_goods"),
    }
    edited = copy.deepcopy(good["public_goods"])
    edited["rounds"][1]["decisions"] = "lost"
    for k, run in enumerate(planned):
        game = run.options["game"]
        _store(tmp_path / run.directory, [edited if k == 3 else good[game]])
    with pytest.raises(DataError, match="public_goods run 1: stored round 2 does not fit GoodsRound"):
        llm_actions_per_round(GamaBenchResult.model_validate(edited))
    summarize(get_preset("fixed"), planned, tmp_path)
    frame = pd.read_csv(tmp_path / "summary.csv")
    assert [g for g in (r.options["game"] for r in planned)] == ["divide_dollar"] * 2 + ["public_goods"] * 2
    means = frame["mean action of the model seats"].tolist()
    assert means[:3] == [20.0, 20.0, pytest.approx((5 + 0 + 7 + 0) / 4)]
    assert math.isnan(means[3]) and frame["runs"].tolist() == [1, 1, 1, 1]
    (left,) = read_run_dir(tmp_path / planned[3].directory).left_out
    assert left.reason.startswith("cannot be scored: DataError: public_goods run 1: stored round 2 does not")
