"""The scale model: reverse keying, scoring modes, missing items, range checks, validation."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from llmpsych.errors import DataError, LlmpsychError
from llmpsych.instruments.scale import Item, NormGroup, Scale, ScaleError, ScoringError, Subscale


def make_scale(**changes) -> Scale:
    """A made-up four-item scale on 1-5 with one reverse-keyed item and two subscales."""
    fields = {
        "name": "TEST4",
        "items": (
            Item(1, "I like quiet mornings."),
            Item(2, "I avoid quiet mornings.", reverse=True),
            Item(3, "I plan my week ahead."),
            Item(4, "I keep a tidy desk."),
        ),
        "response_min": 1,
        "response_max": 5,
        "scoring": "AVG",
        "subscales": (
            Subscale("Calm", (1, 2), (NormGroup("Pilot", 3.0, 0.5, 20, "made up"),)),
            Subscale("Order", (3, 4)),
        ),
    }
    fields.update(changes)
    return Scale(**fields)


def test_reverse_value_is_min_plus_max_minus_x() -> None:
    scale = make_scale()
    assert [scale.reverse_value(x) for x in range(1, 6)] == [5, 4, 3, 2, 1]
    zero_based = make_scale(response_min=0, response_max=4)
    assert [zero_based.reverse_value(x) for x in range(5)] == [4, 3, 2, 1, 0]


def test_average_scoring_with_reverse_item() -> None:
    scale = make_scale()
    # Calm: 4 and reverse(2) = 4 -> 4.0; Order: (3 + 5) / 2 = 4.0
    assert scale.score({1: 4, 2: 2, 3: 3, 4: 5}) == {"Calm": 4.0, "Order": 4.0}
    assert scale.score({1: 4, 2: 2, 3: 3, 4: 5}, reverse_keying=False) == {"Calm": 3.0, "Order": 4.0}


def test_sum_and_sum_times_two() -> None:
    answers = {1: 5, 2: 1, 3: 2, 4: 4}
    assert make_scale(scoring="SUM").score(answers) == {"Calm": 10.0, "Order": 6.0}
    assert make_scale(scoring="SUM*2").score(answers) == {"Calm": 20.0, "Order": 12.0}
    assert make_scale().score(answers, scoring="SUM") == {"Calm": 10.0, "Order": 6.0}


def test_score_range_follows_the_scoring_mode_and_the_subscale_s_items() -> None:
    assert make_scale().score_range("Calm") == (1.0, 5.0)
    assert make_scale(scoring="SUM").score_range("Order") == (2.0, 10.0)
    assert make_scale(scoring="SUM*2", response_min=0).score_range("Calm") == (0.0, 20.0)
    with pytest.raises(ScoringError, match="no subscale 'Calmness'"):
        make_scale().score_range("Calmness")


def test_missing_item_gives_nan_for_that_subscale_only() -> None:
    scores = make_scale().score({1: 4, 2: 2, 3: 3})
    assert scores["Calm"] == 4.0
    assert math.isnan(scores["Order"])
    assert make_scale().missing_items({1: 4, 2: 2, 3: 3}) == (4,)


def test_total_over_all_items() -> None:
    scale = make_scale(scoring="SUM")
    assert scale.total({1: 1, 2: 1, 3: 1, 4: 1}) == 8.0  # item 2 reversed to 5
    assert scale.total({1: 1, 2: 1, 3: 1, 4: 1}, reverse_keying=False) == 4.0
    assert math.isnan(scale.total({1: 1}))


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({1: 6}, "answer 6 to item 1 is outside 1-5"),
        ({1: 0}, "answer 0 to item 1 is outside 1-5"),
        ({9: 3}, "has no item 9"),
        ({1: 2.5}, "not a whole number"),
        ({1: "3"}, "not a whole number"),
        ({1: True}, "not a whole number"),
    ],
)
def test_invalid_answers_are_refused(answers, message: str) -> None:
    with pytest.raises(ScoringError, match=message):
        make_scale().score(answers)


def test_scoring_error_is_user_facing_and_value_error() -> None:
    assert issubclass(ScoringError, LlmpsychError) and issubclass(ScoringError, ValueError)
    assert issubclass(ScaleError, DataError)


def test_float_answer_that_is_whole_is_accepted() -> None:
    assert make_scale().score({1: 4.0, 2: 2, 3: 3, 4: 5})["Calm"] == 4.0


def test_lookups() -> None:
    scale = make_scale(items=(*make_scale().items, Item(5, "A filler line.")))
    assert scale.n_items == 5
    assert scale.reverse_indices == (2,)
    assert scale.filler_indices == (5,)
    assert scale.subscale_names == ("Calm", "Order")
    assert scale.norm_labels == ("Pilot",)
    assert scale.item(3).text == "I plan my week ahead."
    assert scale.subscale("Calm").norm("Pilot").population == "Pilot"
    with pytest.raises(KeyError):
        scale.item(9)
    with pytest.raises(KeyError):
        scale.subscale("Nope")
    with pytest.raises(KeyError):
        scale.subscale("Calm").norm("Nope")
    assert scale.subscale_range("Calm") == (1.0, 5.0)
    assert make_scale(scoring="SUM").subscale_range("Calm") == (2.0, 10.0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": " "}, "the name is empty"),
        ({"response_min": 5, "response_max": 5}, r"response_min \(5\) must be below response_max \(5\)"),
        ({"response_min": 1.5}, "response_min must be a whole number"),
        ({"scoring": "MEAN"}, "unknown scoring mode 'MEAN'"),
        ({"items": ()}, "it has no items"),
        ({"items": (Item(1, "a"), Item(1, "b"))}, "item 1 appears more than once"),
        ({"items": (Item(0, "a"),)}, "item index 0 is not a positive whole number"),
        ({"items": (Item(1, " "), Item(2, "b"), Item(3, "c"), Item(4, "d"))}, "item 1 has no text"),
        ({"subscales": ()}, "it has no subscales"),
        ({"subscales": (Subscale("Calm", (1, 7)),)}, "refers to item 7, which the scale does not have"),
        ({"subscales": (Subscale("Calm", (1, 1)),)}, "lists item 1 twice"),
        ({"subscales": (Subscale("Calm", ()),)}, "subscale 'Calm' has no items"),
        ({"subscales": (Subscale("A", (1,)), Subscale("A", (2,)))}, "subscale 'A' is defined twice"),
        ({"subscales": (Subscale("A", (1,), (NormGroup("P", 1.0, -0.1, 5),)),)}, "sd must not be negative"),
        ({"subscales": (Subscale("A", (1,), (NormGroup("P", 1.0, 0.1, 0),)),)}, "n must be a positive"),
        ({"subscales": (Subscale("A", (1,), (NormGroup("P", math.nan, 0.1, 5),)),)}, "mean must be a number"),
        ({"level_labels": {9: "too high"}}, "level label 9 is outside 1-5"),
        ({"unscored": True, "subscales": ()}, "an unscored scale needs a reason"),
    ],
)
def test_validation_errors(changes, message: str) -> None:
    with pytest.raises(ScaleError, match=message):
        make_scale(**changes)


def test_validation_error_names_origin_and_scale() -> None:
    with pytest.raises(ScaleError, match=r"^my.yaml: scale 'TEST4': it has no items$"):
        make_scale(items=(), origin="my.yaml")


def test_unscored_scale_refuses_scoring() -> None:
    scale = make_scale(subscales=(), unscored=True, unscored_reason="scored elsewhere")
    with pytest.raises(ScoringError, match="not scored by llmpsych: scored elsewhere"):
        scale.score({1: 1})
    with pytest.raises(ScoringError):
        scale.total({1: 1})


def test_scales_are_immutable_values() -> None:
    scale = make_scale()
    assert scale == make_scale()
    assert replace(scale, title="Other") != scale
    with pytest.raises(AttributeError):
        scale.name = "X"  # type: ignore[misc]
