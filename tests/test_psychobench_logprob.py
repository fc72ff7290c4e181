"""Log-probability scoring: the option distribution at the score token, fallbacks, real-valued scoring."""

from __future__ import annotations

import math

import pytest

from llmpsych.instruments.scale import Item, NormGroup, Scale, Subscale
from llmpsych.psychobench.logprob import (
    ItemDistribution,
    option_distribution,
    read_item,
    score_position,
    weighted_scores,
)


def entry(token: str, top: dict[str, float]) -> dict:
    return {
        "token": token,
        "logprob": math.log(top.get(token, 1e-9)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
    }


def test_score_position_skips_an_item_number() -> None:
    assert score_position("4") == 0
    assert score_position("17: 4") == 4
    assert score_position("Statement 3 - 2 (disagree)") == 14
    assert score_position("I'd say 5.") == 8
    assert score_position("no number") is None


def test_distribution_at_the_score_token_pools_spaced_variants_and_drops_other_tokens() -> None:
    logprobs = [
        entry("1", {"1": 0.9, "2": 0.1}),
        entry("7", {"7": 1.0}),
        entry(":", {":": 1.0}),
        entry(" 4", {" 4": 0.5, "4": 0.1, " 5": 0.2, " 9": 0.1, " ok": 0.1}),
    ]
    probabilities, mass = option_distribution(logprobs, 1, 5)
    assert mass == pytest.approx(0.8)
    assert probabilities == pytest.approx({4: 0.75, 5: 0.25})
    item = read_item(17, "17: 4", logprobs, 1, 5)
    assert item.status == "logprobs" and item.argmax == 4 and item.value == pytest.approx(4.25)
    assert ItemDistribution.from_json(item.to_json()) == item


def test_falls_back_to_the_written_number_without_logprobs() -> None:
    assert read_item(3, "3: 2", None, 1, 5) == ItemDistribution(3, "text_fallback", 2.0, 2)
    assert read_item(3, "I would pick 4.", [], 1, 5).value == 4.0
    assert read_item(3, "As an AI I cannot rate this.", None, 1, 5).status == "no_answer"
    assert read_item(3, "3: 7", None, 1, 5).status == "no_answer"
    # logprobs present but the score token is not an option: use the text, which is also out of range
    assert read_item(3, "x", [entry("x", {"x": 1.0})], 1, 5).status == "no_answer"


def test_weighted_scores_reverse_key_and_aggregate() -> None:
    scale = Scale(
        name="T",
        items=(Item(1, "a"), Item(2, "b", reverse=True), Item(3, "c")),
        response_min=1,
        response_max=5,
        scoring="AVG",
        subscales=(Subscale("S", (1, 2), (NormGroup("Crowd", 3, 1, 10),)), Subscale("R", (3,))),
    )
    scores = weighted_scores(scale, {1: 4.5, 2: 1.5})
    assert scores["S"] == pytest.approx((4.5 + 4.5) / 2) and math.isnan(scores["R"])
