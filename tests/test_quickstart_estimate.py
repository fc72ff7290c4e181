"""The quickstart's start-of-run estimate: its calls in tokens, at the pace one short call measured (pure
functions, a scripted model; the figures measured on the default model are in docs/quickstart.md)."""

from __future__ import annotations

from typing import Any

import pytest

from llmpsych.quickstart.estimate import (
    Pace,
    estimate_lines,
    measure_pace,
    planned_calls,
    seconds,
    startup_estimate,
)
from llmpsych.quickstart.task import QuickstartOptions
from llmpsych.runs import parse_run_config


def test_the_default_quickstart_is_30_calls_sized_in_tokens() -> None:
    admin, game = planned_calls(QuickstartOptions())
    assert (admin.calls, admin.prompt_tokens, admin.short, admin.limit) == (5, 188, 39, 96)
    # 5 seats x 5 rounds; prompts grow each round (156, 228, 300, 372, 444 tokens): mean 300
    assert (game.calls, game.prompt_tokens, game.short, game.limit) == (25, 300, 8, 48)
    assert [g.what for g in planned_calls(QuickstartOptions(game_players=0))] == ["administration"]


def test_seconds_is_the_formula_one_call_after_another() -> None:
    groups = planned_calls(QuickstartOptions(runs=2, game_players=2, game_rounds=1))
    pace = Pace(prompt_per_s=100.0, generated_per_s=10.0, probe_s=0.5)
    # 2 x (188/100 + 39/10) + 2 x (156/100 + 8/10) = 11.56 + 4.72
    assert seconds(groups, pace) == pytest.approx(2 * (1.88 + 3.9) + 2 * (1.56 + 0.8))
    assert seconds(groups, pace, longest=True) == pytest.approx(2 * (1.88 + 9.6) + 2 * (1.56 + 4.8))


def test_the_lines_give_the_formula_and_scale_with_the_machine() -> None:
    groups = planned_calls(QuickstartOptions())
    idle = estimate_lines(groups, Pace(200.0, 25.0, 0.4))
    busy = estimate_lines(groups, Pace(7.1, 0.91, 12.0))
    assert "30 model calls" in idle[0] and "~8,440 prompt tokens" in idle[0] and "395-1,680" in idle[0]
    assert (
        "200.0 prompt and 25.00 answer tokens/s" in idle[1] and "about 58 s to 2 min at this pace" in idle[1]
    )
    assert "7.1 prompt and 0.91 answer tokens/s" in busy[1] and "about 27 min to 51 min" in busy[1]


class Model:
    """What measure_pace reads of an embedded model: one completion with llama.cpp's timings."""

    def __init__(self, timings: Any) -> None:
        self.timings = timings
        self.bodies: list[dict[str, Any]] = []

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        return {"choices": [], **({"timings": self.timings} if self.timings is not None else {})}


def test_the_pace_comes_from_llama_cpp_s_timings_of_one_short_call() -> None:
    model = Model({"prompt_per_second": 7.15, "predicted_per_second": 0.912})
    pace = measure_pace(model)
    assert pace is not None and (pace.prompt_per_s, pace.generated_per_s) == (7.15, 0.912)
    warm, body = model.bodies  # the first pages the weights in, untimed
    assert warm["max_tokens"] == 1 and body["max_tokens"] <= 8 and body["cache_prompt"] is False
    for timings in (None, {"prompt_per_second": 7.0}, {"prompt_per_second": 0, "predicted_per_second": 1}):
        assert measure_pace(Model(timings)) is None  # no estimate rather than a made-up one


def test_a_model_behind_an_endpoint_gets_no_estimate_and_loads_nothing() -> None:
    config = parse_run_config(
        {"task": "quickstart", "model": "openai-compatible/m", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert startup_estimate(config) == []
