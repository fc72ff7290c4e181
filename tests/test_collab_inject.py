"""AutoInject: exact proportion, P_m over many messages, faithful splitting, a scripted corrupting model."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from llmpsych.collab.inject import AutoInject, choose_units, exact_count, join_units, split_units
from llmpsych.collab.runtime import Agent, Message, Route, RouteError, Runtime
from llmpsych.models.types import ChatResult, GenerationParams
from llmpsych.runs.context import derived_seed


class ScriptedCtx:
    """Stands in for the run context: seeded rngs and a scripted corrupting model."""

    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.requests: list[str] = []

    def rng(self, *labels: Any) -> random.Random:
        return random.Random(derived_seed(0, "unit", *labels))

    async def chat(self, messages: list[dict[str, str]], params: Any, role: str) -> ChatResult:
        prompt = messages[-1]["content"]
        self.requests.append(prompt)
        payload = json.loads(prompt.split("Input: ", 1)[1])
        return ChatResult(json.dumps({k: v.replace("+", "-") + "  # x" for k, v in payload.items()}))


def _runtime(kind: str = "code") -> Runtime:
    route = Route.of("flat", "a<->b")
    return Runtime(ScriptedCtx(), route, [Agent("a", ""), Agent("b", "")], GenerationParams(), kind=kind)


CODE = "\n".join(["def f(x):", "    y = x + 1", "", "    for i in range(3):", "        y = y + i"] * 4)


@pytest.mark.parametrize("p_e", [0.1, 0.2, 0.25, 0.4, 0.6, 1.0])
def test_exact_mode_corrupts_round_pe_times_lines(p_e: float) -> None:
    rt = _runtime()
    hook = AutoInject("a", p_m=1.0, p_e=p_e, unit_mode="exact")
    message = asyncio.run(hook.on_message(Message(0, "a", ["b"], CODE), rt))
    n_lines = sum(1 for line in CODE.split("\n") if line.strip())
    assert n_lines == 16
    edits = message.meta["injection"]["edits"]
    assert len(edits) == exact_count(p_e, n_lines) == int(p_e * n_lines + 0.5)
    for edit in edits:  # indentation is kept, other lines are untouched
        assert edit["after"].startswith(edit["before"][: len(edit["before"]) - len(edit["before"].lstrip())])
    changed = [
        i
        for i, (x, y) in enumerate(zip(CODE.split("\n"), message.content.split("\n"), strict=True))
        if x != y
    ]
    assert changed == [e["unit"] for e in edits]
    assert message.meta["injection"]["diff"].startswith("--- sent")


def test_exact_count_rounds_halves_up_and_may_choose_nothing() -> None:
    assert [exact_count(0.5, n) for n in (1, 3, 5)] == [1, 2, 3]
    assert exact_count(0.02, 16) == 0 and exact_count(1.0, 7) == 7
    rt = _runtime()
    m = asyncio.run(AutoInject("a", p_e=0.02).on_message(Message(0, "a", ["b"], CODE), rt))
    assert m.content == CODE and not m.meta["injection"].get("edits")
    assert rt.ctx.requests == []  # nothing chosen: the injector is not even asked


def test_pm_holds_over_many_messages() -> None:
    rt = _runtime()
    hook = AutoInject("a", p_m=0.3, p_e=0.2)

    async def many() -> int:
        selected = 0
        for i in range(2000):
            m = await hook.on_message(Message(i, "a", ["b"], "x = 1\ny = 2"), rt)
            selected += m.meta["injection"]["selected"]
        return selected

    share = asyncio.run(many()) / 2000
    assert abs(share - 0.3) < 3 * (0.3 * 0.7 / 2000) ** 0.5


def test_pm_zero_and_other_senders_are_never_touched() -> None:
    rt = _runtime()
    never = AutoInject("a", p_m=0.0)
    m = asyncio.run(never.on_message(Message(0, "a", ["b"], CODE), rt))
    assert m.content == CODE and not m.meta["injection"]["selected"]
    other = asyncio.run(AutoInject("a").on_message(Message(1, "b", ["a"], CODE), rt))
    assert other.content == CODE and "injection" not in other.meta
    assert rt.ctx.requests == []


def test_bernoulli_rate_converges() -> None:
    rng = random.Random(1)
    units = ["line"] * 10_000
    assert abs(len(choose_units(units, 0.2, "bernoulli", rng)) / 10_000 - 0.2) < 0.015


def test_commas_survive_and_sentences_rejoin_exactly() -> None:
    code = "def f(a, b):\n    return max(a, b)"
    assert join_units(split_units(code, "code"), "code") == code
    text = "First, a point. Second: another one!  Third?\nNew line, with commas."
    units = split_units(text, "math")
    assert join_units(units, "math") == text
    assert sum(1 for u in units if u.strip()) == 4


def test_text_injection_edits_sentences() -> None:
    rt = _runtime("texteval")
    hook = AutoInject("a", p_e=0.5)
    m = asyncio.run(hook.on_message(Message(0, "a", ["b"], "A is good. B is bad. A wins. Tie no."), rt))
    assert len(m.meta["injection"]["edits"]) == 2


def test_routes_are_enforced() -> None:
    rt = Runtime(
        ScriptedCtx(), Route.of("linear", "a->b"), [Agent("a", ""), Agent("b", "")], GenerationParams()
    )
    asyncio.run(rt.send("a", "b", "hello"))
    with pytest.raises(RouteError):
        asyncio.run(rt.send("b", "a", "back"))
