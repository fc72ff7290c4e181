"""Trust, no silent wrong numbers (docs/security.md section 5): hostile model replies never become a number.

Every non-integer form is fed to each answer parser (scale lines, table rows, pairs on one line, single
Likert numbers, game JSON, reliability label chunks) and then through the real scoring paths: an
administration of an official PsychoBench scale to a hostile respondent scored by the analysis tables,
and a Guess 2/3 table whose seats answer with hostile JSON.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from llmpsych.games.engine import OfflineContext, Table
from llmpsych.games.guessing import GuessingGame, GuessingParams
from llmpsych.games.parsing import InvalidAnswer, as_int, as_int_list, extract_fields
from llmpsych.games.prompts import PromptSet
from llmpsych.games.seats import build_seats
from llmpsych.instruments.administration import administer
from llmpsych.instruments.numbers import finite_number, loads_strict, whole_number
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.instruments.parsing import DEFAULT_REASK_WORDING, parse_item_answers, parse_likert_number
from llmpsych.models.types import ChatResult, GenerationParams
from llmpsych.psychobench.analysis import run_tables, summary_table
from llmpsych.reliability.answers import parse_chunk

#: Forms that are not a whole number written as one; 2 and 3 would be in range on a 1-5 scale.
HOSTILE = [
    "2e5", "5%", "3-4", "3.5", "3.0", "1/2", "4/7", "0x10", "٣", "+3", "1,000", "1_000",
    "inf", "nan", "Infinity", "1e999", "3e0", "3rd", "2a", "3٣",
]  # fmt: skip


# -- the shared rule ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", HOSTILE)
def test_no_hostile_form_is_a_whole_number(text: str) -> None:
    assert whole_number(text) is None
    assert whole_number(f"  {text} ") is None


def test_whole_and_finite_numbers_accept_only_plain_forms() -> None:
    assert [whole_number(v) for v in ("42", " -3 ", 42, "０")] == [42, -3, 42, None]
    assert whole_number(True) is None and whole_number(3.0) is None and whole_number("1" * 16) is None
    assert finite_number("3.25") == 3.25 and finite_number(float("nan")) is None
    assert finite_number(float("inf")) is None and finite_number("2e5") is None
    assert loads_strict('{"a": NaN, "b": 1e999, "c": 5}') == {"a": "NaN", "b": "1e999", "c": 5}


# -- scale answers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize(
    "template",
    [
        "1: {}",
        "1. {}",
        "- **1**: {}",
        "(1) {}",
        "Statement 1 = {}",
        "1: {}\n2: 4",
        "1: {}, 2: 4",
        "| 1 | {} |",
    ],
)
def test_a_hostile_score_is_never_read_as_a_number(template: str, text: str) -> None:
    parsed = parse_item_answers(template.format(text), [1, 2], 1, 5)
    assert 1 not in parsed.answers, (template, text, parsed)
    assert not parsed.complete


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_score_on_its_own_line_is_ambiguous_not_missing(text: str) -> None:
    parsed = parse_item_answers(f"1: {text}\n2: 4", [1, 2], 1, 5)
    assert parsed.ambiguous == (1,) and parsed.answers == {2: 4}


def test_plain_forms_still_read() -> None:
    reply = "1: 4\n2. 3 (agree)\n- **3**: 2\n4: 5/5\n5: ３\n| 6 | 1 |"
    assert parse_item_answers(reply, range(1, 7), 1, 5).answers == {1: 4, 2: 3, 3: 2, 4: 5, 5: 3, 6: 1}


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_single_likert_answer_is_not_ok(text: str) -> None:
    for reply in (text, f"I'd say {text}.", f"**{text}** (agree)"):
        answer = parse_likert_number(reply, 1, 5)
        assert answer.status != "ok" and answer.value is None, (reply, answer)
    assert parse_likert_number("I'd say 4 out of 5.", 1, 5).value == 4


# -- game answers -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        '{"chosen_number": 2e5}',
        '{"chosen_number": 1e999}',
        '{"chosen_number": NaN}',
        '{"chosen_number": Infinity}',
        '{"chosen_number": 50.0}',
        '{"chosen_number": "50.0"}',
        '{"chosen_number": "+3"}',
        '{"chosen_number": "٣"}',
        '{"chosen_number": "1,000"}',
        '{"chosen_number": "1_000"}',
        '{"chosen_number": "5%"}',
        '{"chosen_number": true}',
        '{"chosen_number": -5}',
        '{"chosen_number": 1e300}',
        '{"chosen_number": 1000000000000000000000000000000}',
        '{"chosen_number": 2e5,, broken',
    ],
)
def test_a_hostile_guess_is_an_invalid_answer(reply: str) -> None:
    with pytest.raises(InvalidAnswer):
        as_int(extract_fields(reply, ["chosen_number"])["chosen_number"], 0, 100)


def test_a_plan_string_with_an_exponent_is_not_split_into_numbers() -> None:
    assert as_int_list("96, 0, 4") == [96, 0, 4]
    for bad in ("96 0 1e5", "96, 0, 4.5", "96, ٣, 1"):
        with pytest.raises(InvalidAnswer):
            as_int_list(bad)


# -- reliability labels --------------------------------------------------------------------------------
def test_hostile_reliability_labels_are_invalid() -> None:
    reply = '{"1": 3, "2": 3.0, "3": NaN, "4": "٣", "5": 1e0, "6": Infinity, "٧": 2}'
    parsed = parse_chunk(reply, 7, "n")
    assert parsed.positions == {1: 3}
    assert set(parsed.invalid) == {2, 3, 4, 5, 6} and 7 in parsed.missing


# -- through the real scoring paths ---------------------------------------------------------------------
class HostileRespondent:
    """Answers every asked statement; the ones in ``hostile`` always with a hostile form, re-asks too."""

    def __init__(self, hostile: dict[int, str]) -> None:
        self.hostile = hostile

    async def chat(self, messages: list[dict], params: Any, **_: object) -> ChatResult:
        content = messages[-1]["content"]
        asked = [int(line.split(".", 1)[0]) for line in content.splitlines() if line[:1].isdigit()]
        if not asked:  # a re-ask: "These statements still need a valid score: 3, 5. ..."
            asked = [int(x) for x in content.split(":", 1)[1].split(".", 1)[0].split(",")]
        return ChatResult("\n".join(f"{i}: {self.hostile.get(i, '3')}" for i in asked))


@pytest.fixture(scope="module")
def scales(seed_data: Path) -> dict:
    return load_psychobench_scales(seed_data)


def test_hostile_replies_through_administration_and_the_analysis_tables(scales: dict) -> None:
    """GSE (10 items, 1-4): items answered 2e5 / ٣ / 5% on every ask are unanswered, the run is not
    scored (NaN, never a number), and the summary's n says one of two runs was scored."""
    scale = scales["GSE"]
    order = list(scale.item_indices)
    hostile = {order[0]: "2e5", order[3]: "٣", order[7]: "5%"}
    units = []
    for run, respondent in ((1, HostileRespondent(hostile)), (2, HostileRespondent({}))):
        result = asyncio.run(
            administer(
                scale,
                respondent,
                order=order,
                params=GenerationParams(),
                reask_template=DEFAULT_REASK_WORDING,
                max_reasks=2,
            )
        )
        units.append(
            {"scale": scale.name, "run": run, "mode": "generate", "order": order, **result.to_json()}
        )
    assert sorted(units[0]["unanswered"]) == sorted(hostile) and units[0]["asks"] == 3
    tables = run_tables(scales, units)
    valid = tables["valid"].set_index("run")
    assert valid.loc[1, "valid"] == scale.n_items - 3 and valid.loc[2, "valid"] == scale.n_items
    scores = tables["scores"].set_index("run")["score"]
    assert math.isnan(scores.loc[1]) and scores.loc[2] == pytest.approx(3 * scale.n_items)
    summary = summary_table({scale.name: scale}, tables["scores"], {scale.name: 2})
    assert summary["n"].tolist() == [1] and summary["runs"].tolist() == [2]
    assert summary["mean"].tolist() == [pytest.approx(30.0)]


class ScriptedContext(OfflineContext):
    """Replies from a function of the call number (no network, no delay)."""

    def __init__(self, reply: Any) -> None:
        super().__init__()
        self.reply = reply
        self.calls = 0

    async def chat(
        self, messages: list[dict], params: Any = None, role: str = "subject", sample: Any = 0
    ) -> Any:
        self.calls += 1
        return ChatResult(self.reply(self.calls))


@pytest.mark.parametrize(
    "hostile",
    [
        '{"chosen_number": 1e300}',
        '{"chosen_number": -5}',
        '{"chosen_number": NaN}',
        '{"chosen_number": "2e5"}',
    ],
)
def test_hostile_guesses_through_the_game_table_are_reasked_then_fall_back(hostile: str) -> None:
    game = GuessingGame(
        GuessingParams(), 2, 1, PromptSet(GuessingGame.folder, GuessingGame.builtin), OfflineContext().rng
    )
    ctx = ScriptedContext(lambda call: hostile)
    table = Table(game, build_seats(None, 2), ctx, GenerationParams(), "t", 2, "repeat")  # type: ignore[arg-type]
    table.start([game.description(p) for p in range(2)])
    answers = asyncio.run(table.ask([game.decision(p, 1) for p in range(2)]))
    assert ctx.calls == 2 * 3 and table.fallbacks == 2
    assert all(a.fallback and a.action == 50 and len(a.errors) == 3 for a in answers)
    assert all("whole number" in e or "outside" in e for a in answers for e in a.errors)
    # one hostile reply, then a plain one: the plain one is the action
    ctx = ScriptedContext(lambda call: hostile if call == 1 else '{"chosen_number": "33"}')
    table = Table(game, build_seats(None, 1), ctx, GenerationParams(), "t", 2, "repeat")  # type: ignore[arg-type]
    table.start([game.description(0)])
    (answer,) = asyncio.run(table.ask([game.decision(0, 1)]))
    assert answer.action == 33 and answer.asks == 2 and not answer.fallback


@pytest.mark.parametrize("value", [99.0, float("nan"), float("inf"), "3"])
def test_a_stored_logprob_value_outside_the_range_is_refused(scales: dict, value: object) -> None:
    from llmpsych.errors import DataError
    from llmpsych.psychobench.logprob import ItemDistribution

    scale = scales["GSE"]
    items = [ItemDistribution(i, "logprobs", value=2.5).to_json() for i in scale.item_indices]
    unit = {"scale": "GSE", "run": 4, "mode": "logprob", "items": items}
    assert run_tables(scales, [unit])["scores"]["score"].tolist() == [25.0]
    items[3]["value"] = value
    with pytest.raises(DataError, match=r"run store, GSE run 4: item 4 value .* is not a number in 1-4"):
        run_tables(scales, [unit])


def test_fixed_seats_with_hostile_values_never_reach_resolve() -> None:
    """Every seat's answer (model, human, fixed) passes the same validator before a game resolves it."""
    from llmpsych.games.engine import play_offline
    from llmpsych.games.seats import FixedSeat

    game = GuessingGame(
        GuessingParams(), 3, 1, PromptSet(GuessingGame.folder, GuessingGame.builtin), OfflineContext().rng
    )
    seats = [
        FixedSeat("fixed:1e300", ["1e300"]),
        FixedSeat("fixed:-5", ["-5"]),
        FixedSeat("fixed:20", ["20"]),
    ]
    table = play_offline(game, seats)
    (record,) = table.game.records
    assert record.choices == [50, 50, 20]  # the two hostile seats fell back to the documented 50
    assert table.fallbacks == 2


def test_a_non_ascii_digit_token_carries_no_option_probability() -> None:
    from llmpsych.psychobench.logprob import option_value

    assert [option_value(t, 1, 5) for t in (" 4", "３", "٣", "4.0", "+3", "9")] == [
        4,
        3,
        None,
        None,
        None,
        None,
    ]
