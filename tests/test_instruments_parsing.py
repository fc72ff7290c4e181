"""Parsing model replies: many answer shapes, refusals, duplicates, out-of-range values, re-asks."""

from __future__ import annotations

import random

import pytest

from llmpsych.instruments.parsing import (
    DEFAULT_REASK_WORDING,
    REFUSAL_SCAN_CHARS,
    ParseError,
    _read_plain_reply,
    build_reask_prompt,
    detect_refusal,
    parse_item_answers,
    parse_likert_number,
)


@pytest.mark.parametrize(
    "line",
    [
        "3: 4",
        "3:4",
        "3 : 4",
        "3. 4",
        "3 - 4",
        "3 – 4",
        "3) 4",
        "(3) 4",
        "3 = 4",
        "3 -> 4",
        "3 → 4",
        "- 3: 4",
        "* 3: 4",
        "• 3: 4",
        "**3**: 4",
        "**3:** 4",
        "3: **4**",
        "*3*: *4*",
        "`3: 4`",
        "Statement 3: 4",
        "statement #3: 4",
        "Item 3: 4",
        "Question 3 - 4",
        "Q3: 4",
        "3: 4 (agree)",
        "3: 4 - a little agree",
        "3: 4.",
        "3: 4/5",
        "3: 4 / 5",
        "3：４",
        "| 3 | 4 |",
        "|3|4|",
        "   3: 4   ",
    ],
)
def test_accepted_line_shapes(line: str) -> None:
    result = parse_item_answers(line, [3], 1, 5)
    assert result.answers == {3: 4}, line
    assert result.complete


def test_full_reply_with_preamble_and_closing() -> None:
    reply = "Sure, here are my ratings:\n\n1: 5\n2: 3\n3: 1\n\nI hope this helps!"
    result = parse_item_answers(reply, [1, 2, 3], 1, 5)
    assert result.answers == {1: 5, 2: 3, 3: 1}
    assert result.unparsed_lines == ("Sure, here are my ratings:", "I hope this helps!")
    assert not result.refusal_language


def test_several_pairs_on_one_line() -> None:
    for reply in ("1: 2, 2: 3, 3: 4", "1:2; 2:3; 3:4.", "1: 2 2: 3 3: 4", "1=2, 2=3 and 3=4"):
        assert parse_item_answers(reply, [1, 2, 3], 1, 5).answers == {1: 2, 2: 3, 3: 4}, reply


def test_markdown_table() -> None:
    reply = "| Statement | Score |\n|---|---|\n| 1 | 4 |\n| 2 | 2 |"
    assert parse_item_answers(reply, [1, 2], 1, 5).answers == {1: 4, 2: 2}


@pytest.mark.parametrize("line", ["3: 3-4", "3: 3 or 4", "3: 4.5", "3: 3, 4", "3: 3 to 4"])
def test_ambiguous_scores_are_not_guessed(line: str) -> None:
    result = parse_item_answers(line, [3], 1, 5)
    assert result.answers == {}
    assert result.ambiguous == (3,)
    assert result.missing == ()
    assert result.unanswered == (3,)


@pytest.mark.parametrize("line", ["3 4", "three: 4", "3: four", "Score 4", "4"])
def test_lines_without_index_and_score_are_unparsed(line: str) -> None:
    result = parse_item_answers(line, [3], 1, 5)
    assert result.answers == {}
    assert result.missing == (3,)
    assert result.unparsed_lines == (line,)


def test_missing_items_in_expected_order() -> None:
    result = parse_item_answers("5: 1\n2: 2", [5, 9, 2, 7], 1, 5)
    assert result.answers == {5: 1, 2: 2}
    assert result.missing == (9, 7)
    assert result.unanswered == (9, 7)
    assert result.valid_rate == 0.5
    assert result.n_valid == 2


def test_conflicting_duplicates_are_reported_not_resolved() -> None:
    result = parse_item_answers("1: 2\n2: 3\n1: 4", [1, 2], 1, 5)
    assert result.answers == {2: 3}
    assert result.duplicates == {1: (2, 4)}
    assert result.unanswered == (1,)


def test_identical_repeats_are_harmless() -> None:
    result = parse_item_answers("1: 2\n1: 2", [1], 1, 5)
    assert result.answers == {1: 2}
    assert result.duplicates == {}


def test_out_of_range_values_are_reported() -> None:
    result = parse_item_answers("1: 6\n2: 0\n3: -1\n4: 5", [1, 2, 3, 4], 1, 5)
    assert result.answers == {4: 5}
    assert result.out_of_range == {1: 6, 2: 0, 3: -1}
    assert result.unanswered == (1, 2, 3)


def test_zero_based_range() -> None:
    result = parse_item_answers("1: 0\n2: 1\n3: 2", [1, 2, 3], 0, 1)
    assert result.answers == {1: 0, 2: 1}
    assert result.out_of_range == {3: 2}


def test_unexpected_indices_are_kept_apart() -> None:
    result = parse_item_answers("1: 2\n44: 3", [1], 1, 5)
    assert result.answers == {1: 2}
    assert result.unexpected == {44: 3}


def test_echoed_item_text_only_when_allowed() -> None:
    reply = "1. Sunshine lifts my mood: 4\n2. Self-reliant and calm - 2"
    assert parse_item_answers(reply, [1, 2], 1, 5).answers == {}
    relaxed = parse_item_answers(reply, [1, 2], 1, 5, allow_echoed_text=True)
    assert relaxed.answers == {1: 4, 2: 2}


@pytest.mark.parametrize(
    "reply",
    [
        "Speaking as an AI language model: no personal ratings from me.",
        "As an AI, I don't have personal feelings or opinions.",
        "I'm sorry, but I can't answer questions about my own personality.",
        "I am an AI assistant and do not have emotions.",
        "I do not have personal experiences, so I cannot rate these statements.",
        "I’m just a language model, I’m not able to share feelings.",
        "I am not capable of having preferences.",
        "I must decline to rate myself.",
    ],
)
def test_refusals_are_recognised(reply: str) -> None:
    result = parse_item_answers(reply, [1, 2], 1, 5)
    assert result.refusal_language
    assert result.refused
    assert detect_refusal(reply)


@pytest.mark.parametrize(
    "reply",
    [
        "1: 4\n2: 5",
        "I can't wait to answer! 1: 4",
        "Here are my answers as requested.",
        "I do not have a dog.",
    ],
)
def test_non_refusals(reply: str) -> None:
    assert not detect_refusal(reply)


def test_refusal_language_with_answers_is_not_a_refusal() -> None:
    reply = "As an AI I do not have feelings, but here is my best guess:\n1: 3\n2: 3"
    result = parse_item_answers(reply, [1, 2], 1, 5)
    assert result.refusal_language
    assert not result.refused
    assert result.complete


def test_extra_refusal_patterns() -> None:
    assert not detect_refusal("Nope.")
    assert detect_refusal("Nope.", extra_patterns=[r"^nope\b"])


def test_a_huge_reply_is_searched_for_refusals_at_its_two_ends_only() -> None:
    """The documented rule (docs/scales.md): refusal language counts in the first and the last
    REFUSAL_SCAN_CHARS characters of a reply. Searched whole, a 10 MB reply cost 0.9 s CPU per call."""
    phrase = "I'm sorry, but I can't rate myself."
    filler = "blah " * (2 * 2**20)  # 10 MB, no digits and no refusal wording
    assert detect_refusal(phrase + filler) and detect_refusal(filler + phrase)  # opens, or closes, the reply
    inside = REFUSAL_SCAN_CHARS - len(phrase) - 1
    assert detect_refusal(filler[:inside] + phrase + filler)  # wholly inside the first window
    assert detect_refusal(filler + phrase + filler[:inside])  # wholly inside the last window
    beyond = filler[: REFUSAL_SCAN_CHARS + 1] + phrase + filler
    assert not detect_refusal(beyond)  # beyond the bound: not seen, as documented
    assert not detect_refusal(beyond, extra_patterns=[r"can't rate"])  # own patterns alike
    assert not detect_refusal(filler[: REFUSAL_SCAN_CHARS - 5] + phrase + filler)  # across the cut
    long = filler[: 5 * REFUSAL_SCAN_CHARS]  # the parsers apply the rule (a shorter reply: a faster test)
    assert parse_likert_number(phrase + long, 1, 5).status == "refusal"
    assert parse_likert_number(long[: REFUSAL_SCAN_CHARS + 1] + phrase + long, 1, 5).status == "missing"
    assert parse_item_answers(long + phrase, [1, 2], 1, 5).refused


def test_a_reply_up_to_twice_the_bound_is_searched_whole() -> None:
    phrase = "As an AI, I don't have personal feelings."
    half = "blah " * ((REFUSAL_SCAN_CHARS - len(phrase)) // 5)
    reply = half + phrase + half  # the phrase in the middle, the reply just under twice the bound
    assert len(reply) <= 2 * REFUSAL_SCAN_CHARS and detect_refusal(reply)
    assert parse_item_answers(reply, [1, 2], 1, 5).refused
    assert detect_refusal("I must decline to rate myself.")  # a normal refusal


def test_empty_reply() -> None:
    result = parse_item_answers("", [1, 2], 1, 5)
    assert result.missing == (1, 2)
    assert not result.refused


def test_bad_range_is_an_error() -> None:
    with pytest.raises(ParseError, match="response range 5-5 is empty"):
        parse_item_answers("1: 1", [1], 5, 5)


# -- re-ask prompts ------------------------------------------------------------------------------
def test_reask_default_wording() -> None:
    prompt = build_reask_prompt([3, 7], response_min=1, response_max=5)
    assert prompt == DEFAULT_REASK_WORDING.format(indices="3, 7", min=1, max=5)
    assert "3, 7" in prompt and "from 1 to 5" in prompt


def test_reask_custom_wording_with_items() -> None:
    wording = "Please also rate these {count}:\n{items}"
    prompt = build_reask_prompt([2, 1], wording, items={1: "Alpha line.", 2: "Beta line."})
    assert prompt == "Please also rate these 2:\n2. Beta line.\n1. Alpha line."


def test_reask_errors() -> None:
    with pytest.raises(ParseError, match="unknown placeholder {colour}"):
        build_reask_prompt([1], "Rate {colour}")
    with pytest.raises(ParseError, match="uses {min} but no value"):
        build_reask_prompt([1], "Use {min}")
    with pytest.raises(ParseError, match="no text for item 3"):
        build_reask_prompt([3], "{items}", items={1: "x"})
    with pytest.raises(ParseError, match="nothing to re-ask"):
        build_reask_prompt([], "x")


# -- single Likert numbers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("4", 4),
        (" 4\n", 4),
        ("4.", 4),
        ("**4**", 4),
        ("4 (agree)", 4),
        ("I would say 4.", 4),
        ("Answer: 4", 4),
        ("4/5", 4),
        ("4 out of 5", 4),
        ("On a scale from 1 to 5, my answer is 3.", 3),
        ("On a 1-5 scale: 2", 2),
        ("５", 5),
        ("1", 1),
    ],
)
def test_likert_ok(reply: str, value: int) -> None:
    answer = parse_likert_number(reply, 1, 5)
    assert (answer.status, answer.value) == ("ok", value)


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        ("3 or 4", "ambiguous"),
        ("3-4", "ambiguous"),
        ("3.5", "ambiguous"),
        ("7", "out_of_range"),
        ("0", "out_of_range"),
        ("", "missing"),
        ("I am not sure.", "missing"),
        ("Since I am an AI, I am unable to rate this.", "refusal"),
    ],
)
def test_likert_not_ok(reply: str, status: str) -> None:
    answer = parse_likert_number(reply, 1, 5)
    assert answer.status == status
    assert answer.value is None


def test_likert_zero_based() -> None:
    assert parse_likert_number("0", 0, 3).value == 0
    assert parse_likert_number("from 0 to 3 I pick 2", 0, 3).value == 2


def test_plain_replies_read_the_same_on_the_fast_and_the_general_path() -> None:
    """A reply of plain ``index: score`` lines (fast path) reads exactly as the same reply with CRLF
    line ends (general path, line by line): duplicates, conflicts, out-of-range and unexpected items."""
    rng = random.Random(7)
    for _ in range(300):
        expected = rng.sample(range(1, 60), rng.randint(1, 40))
        lines = [
            f"{rng.choice([*expected, 99])}{rng.choice([':', ' : '])} {rng.randint(-1, 8)}" for _ in range(45)
        ]
        lines += [f"{i}: {rng.randint(1, 5)}" for i in expected if rng.random() < 0.7]
        rng.shuffle(lines)
        assert _read_plain_reply("\n".join(lines)) is not None
        assert _read_plain_reply("\r\n".join(lines)) is None
        fast = parse_item_answers("\n".join(lines), expected, 1, 5)
        general = parse_item_answers("\r\n".join(lines), expected, 1, 5)
        assert fast == general
        assert not fast.unparsed_lines and not fast.refusal_language
