"""GAMA-Bench engine: answer parsing, template mechanics, seats, concurrent asking, bounded re-asks."""

from __future__ import annotations

import asyncio
import io
import random
from typing import Any

import pytest

from llmpsych.errors import ConfigError
from llmpsych.games.engine import Decision, OfflineContext, Table, play_offline
from llmpsych.games.guessing import GuessingGame, GuessingParams
from llmpsych.games.parsing import InvalidAnswer, as_choice, as_int, as_int_list, extract_fields
from llmpsych.games.prompts import (
    PART,
    PromptSet,
    builtin_template,
    echo,
    fill,
    format_instruction,
    split_parts,
)
from llmpsych.games.seats import FixedSeat, HumanSeat, LLMSeat, build_seats, parse_seat
from llmpsych.models.types import ChatResult, GenerationParams


# -- parsing ---------------------------------------------------------------------------------------
def test_extract_takes_the_last_json_with_the_field_from_fences_and_reasoning() -> None:
    text = 'First I thought {"chosen_number": "50"}.\nFinal:\n```json\n{"chosen_number": "33"}\n```'
    assert extract_fields(text, ["chosen_number"]) == {"chosen_number": "33"}
    cot = '{"explanation": "two thirds of 50 is 33", "chosen_number": 22}'
    assert extract_fields(cot, ["chosen_number"])["chosen_number"] == 22
    nested = 'Plan: {"proposal": {"rank_1": "96", "rank_2": "4"}}'
    assert as_int_list(extract_fields(nested, ["proposal"])["proposal"]) == [96, 4]


def test_extract_falls_back_to_the_field_in_broken_json() -> None:
    assert extract_fields('{"bid": 120,, oops', ["bid"]) == {"bid": "120"}
    assert extract_fields('{"action": "shoot", "target": "player_3"', ["target", "action"]) == {
        "target": "player_3",
        "action": "shoot",
    }
    with pytest.raises(InvalidAnswer):
        extract_fields("I would pick fifty", ["chosen_number"])


def test_validators() -> None:
    assert as_int("42") == 42 and as_int(" 7 ") == 7 and as_int(5, 0, 5) == 5
    for bad, low, high in [
        ("33.5", None, None),
        (" 7.0 ", None, None),  # not written as a whole number (the reference's int("7.0") fails too)
        ("abc", None, None),
        (101, 0, 100),
        (True, None, None),
    ]:
        with pytest.raises(InvalidAnswer):
            as_int(bad, low, high)
    assert as_choice(" GO ", ("go", "stay")) == "go"
    with pytest.raises(InvalidAnswer):
        as_choice("maybe", ("go", "stay"))
    assert as_int_list("96, 0, 1") == [96, 0, 1] and as_int_list(["1", 2]) == [1, 2]


# -- template mechanics -----------------------------------------------------------------------------
def test_template_mechanics() -> None:
    assert fill("a !<INPUT 0>! b !<INPUT 1>! !<INPUT 0>! !<INPUT 9>!", ["x", 2]) == "a x b 2 x !<INPUT 9>!"
    assert split_parts(f"Q?\n{PART}\n{{}}\n{PART}\nDone.") == ["Q?", "{}", "Done."]
    text = builtin_template(("Round @0?", echo(bid="@1"), "You got @2."))
    assert text == f'Round !<INPUT 0>!?\n{PART}\n{{"bid": "!<INPUT 1>!"}}\n{PART}\nYou got !<INPUT 2>!.'
    assert '{"chosen_number": "integer_between_0_and_100"}' in format_instruction(
        {"chosen_number": "integer_between_0_and_100"}
    )
    assert '"explanation"' in format_instruction({"bid": "x"}, cot="Think.")


def test_builtin_prompts_render_every_kind_of_every_game() -> None:
    from llmpsych.games.task import GAMES, game_class

    for name in GAMES:
        cls = game_class(name)
        prompts = PromptSet(cls.folder, cls.builtin)
        for kind in cls.builtin:
            rendered = prompts.text(kind, [f"<{i}>" for i in range(12)])
            assert "!<INPUT" not in rendered and "@" not in rendered, (name, kind)


# -- seats ------------------------------------------------------------------------------------------
def test_seat_specs() -> None:
    seats = build_seats({0: "human", "2": "fixed:1/2"}, 3)
    assert [s.kind for s in seats] == ["human", "llm", "fixed"]
    assert isinstance(parse_seat("llm:opponent"), LLMSeat) and parse_seat("llm:opponent").role == "opponent"
    assert parse_seat("python:json:dumps").kind == "python"
    for bad in ["robot", "python:no.such.module:f", "fixed:"]:
        with pytest.raises(ConfigError):
            parse_seat(bad)
    with pytest.raises(ConfigError, match="2 seats given for 3 players"):
        build_seats(["llm", "llm"], 3)


def _guessing(players: int = 3, rounds: int = 2, **params: Any) -> GuessingGame:
    return GuessingGame(
        GuessingParams(**params),
        players,
        rounds,
        PromptSet(GuessingGame.folder, GuessingGame.builtin),
        OfflineContext().rng,
    )


def half_of_last_round(decision: Decision) -> int:
    """A user strategy (seat ``python:test_games_engine:half_of_last_round``)."""
    return 10 * decision.round


def test_fixed_callable_and_human_seats_play_a_game() -> None:
    human = HumanSeat("human", stdin=io.StringIO("40\nnot a number\n30\n"), stdout=io.StringIO())
    seats = [
        FixedSeat("fixed:60/0", ["60", "0"]),
        parse_seat("python:test_games_engine:half_of_last_round"),
        human,
    ]
    table = play_offline(_guessing(), seats)
    records = table.game.records
    assert [r.choices for r in records] == [[60, 10, 40], [0, 20, 30]]
    assert records[1].decisions[2].asks == 2  # the human's unreadable answer was asked again
    assert "Round 1 begins" in human.stdout.getvalue()
    # round 1: mean 110/3, target 24.44 -> 10 wins; round 2: mean 50/3, target 11.11 -> 20 wins
    assert records[0].winners == [1] and records[1].winners == [1]


def test_conversation_protocol_request_is_temporary_and_reports_are_three_turns() -> None:
    table = play_offline(_guessing(players=2, rounds=2), build_seats(["fixed:10", "fixed:20"], 2))
    history = table.histories[0]
    assert [m["role"] for m in history] == ["system"] + ["user", "assistant", "user"] * 2
    assert history[2]["content"] == '{"chosen_number": "10"}'
    assert not any("begins" in m["content"] for m in history)  # requests are never stored


# -- asking: concurrency and bounded re-asks --------------------------------------------------------
class FakeContext(OfflineContext):
    """Answers from a function of the messages; records how many requests were in flight at once."""

    def __init__(self, answer: Any, delay: float = 0.01) -> None:
        super().__init__()
        self.answer = answer
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    async def chat(
        self, messages: list[dict], params: Any = None, role: str = "subject", sample: Any = 0
    ) -> Any:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        return ChatResult(self.answer(messages, sample))


def _table(ctx: FakeContext, players: int, max_reasks: int = 10, reask: str = "repeat") -> Table:
    game = _guessing(players=players)
    return Table(game, build_seats(None, players), ctx, GenerationParams(), "t", max_reasks, reask)  # type: ignore[arg-type]


def test_all_seats_of_a_simultaneous_round_are_asked_at_once() -> None:
    ctx = FakeContext(lambda messages, sample: '{"chosen_number": "5"}', delay=0.05)
    table = _table(ctx, 10)
    game = table.game
    table.start([game.description(p) for p in range(10)])
    answers = asyncio.run(table.ask([game.decision(p, 1) for p in range(10)]))
    assert ctx.peak == 10 and [a.action for a in answers] == [5] * 10


def test_reasks_are_bounded_then_the_fallback_is_logged() -> None:
    ctx = FakeContext(lambda messages, sample: "I refuse to pick a number.")
    table = _table(ctx, 2, max_reasks=3)
    game = table.game
    table.start([game.description(p) for p in range(2)])
    answers = asyncio.run(table.ask([game.decision(p, 1) for p in range(2)]))
    assert ctx.calls == 2 * 4 and table.fallbacks == 2
    assert all(a.fallback and a.action == 50 and a.asks == 4 and len(a.errors) == 4 for a in answers)


def test_feedback_reask_shows_the_model_its_bad_answer() -> None:
    seen: list[int] = []

    def answer(messages: list[dict], sample: Any) -> str:
        seen.append(len(messages))
        return (
            "150"
            if len(seen) == 1
            else '{"chosen_number": "150"}'
            if len(seen) == 2
            else '{"chosen_number": 9}'
        )

    table = _table(FakeContext(answer), 1, reask="feedback")
    table.start([table.game.description(0)])
    (result,) = asyncio.run(table.ask([table.game.decision(0, 1)]))
    assert result.action == 9 and result.asks == 3 and seen == [2, 4, 6]
    assert "outside 0..100" in result.errors[1]


def test_strategy_seats_use_seeded_randomness() -> None:
    from llmpsych.games.bar import BarGame, BarParams

    def play(seed: int) -> list[list[str]]:
        game = BarGame(BarParams(), 5, 6, PromptSet(BarGame.folder, BarGame.builtin), random.Random)
        table = play_offline(game, build_seats(None, 5, default="strategy:ne"), seed=seed)
        return [r.choices for r in table.game.records]

    assert play(1) == play(1) and play(1) != play(2)


def test_task_options_are_checked_when_the_run_is_configured() -> None:
    from llmpsych.games.task import GamaBenchTask
    from llmpsych.runs import parse_run_config

    def task(**options: Any) -> GamaBenchTask:
        return GamaBenchTask(parse_run_config({"task": "gamabench", "options": options}))

    assert [u.unit_id for u in task(game=["bar", "pirate"], runs=2).units()] == [
        "bar-run01",
        "bar-run02",
        "pirate-run01",
        "pirate-run02",
    ]
    assert len(task(game="all", runs=1).units()) == 8
    for options, message in [
        ({"game": "chess"}, "unknown game"),
        ({"guessing": {"ratio": 0.5, "colour": "red"}}, "colour"),
        ({"players": 3, "seats": ["llm", "llm:rival", "human"]}, "no model role 'rival'"),
        ({"game": "auction", "players": 30}, "distinct valuations"),
    ]:
        with pytest.raises(ConfigError, match=message):
            t = task(**options)
            t.new_game(t.options.games()[0], random.Random)


def test_persona_and_chain_of_thought_in_the_builtin_prompts() -> None:
    from llmpsych.games.prompts import COT, PERSONAS

    prompts = PromptSet(GuessingGame.folder, GuessingGame.builtin)
    g = GuessingGame(GuessingParams(), 3, 2, prompts, OfflineContext().rng, persona=3, cot=1)
    assert g.description(0).startswith(PERSONAS[3])
    request = g.decision(0, 1).request
    assert COT in request and '"explanation"' in request
    assert not _guessing().description(0).startswith(PERSONAS[3])


def test_a_seat_is_given_an_observation_not_the_table() -> None:
    from llmpsych.games.pirate import PirateGame, PirateParams
    from llmpsych.games.prompts import COT

    prompts = PromptSet(GuessingGame.folder, GuessingGame.builtin)
    game = GuessingGame(GuessingParams(), 2, 2, prompts, OfflineContext().rng, cot=1)
    table = Table(game, build_seats(["fixed:10", "fixed:20"], 2), OfflineContext(), GenerationParams(), "u")
    table.start([game.description(p) for p in range(2)])
    decision = game.decision(1, 1)
    messages = [*table.histories[1], {"role": "user", "content": decision.request}]
    seen = table.observe(decision, messages)
    assert (seen.player, seen.round, seen.kind, seen.key) == (1, 1, "number", "u:p1:r1:number")
    assert seen.rules == game.description(1) and seen.history == [] and seen.messages == messages
    assert seen.sample == "u:p1" and seen.answer_format == {"chosen_number": "integer_between_0_and_100"}
    assert "Round 1 begins" in seen.question and "JSON" not in seen.question and COT not in seen.question
    assert seen.valid == "integer between 0 and 100"
    assert seen.strategy is not None and seen.strategy("ne", random.Random(0)) == 0

    pirate = PirateGame(PirateParams(), 3, 3, PromptSet(PirateGame.folder, PirateGame.builtin), random.Random)
    pirates = Table(pirate, build_seats(None, 3, "strategy:ne"), OfflineContext(), GenerationParams(), "p")
    plan = pirates.observe(pirate.proposal(1), [])
    assert plan.valid == "one whole number for each of rank_1, rank_2, rank_3, separated by commas"
