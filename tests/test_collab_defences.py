"""Challenger and Inspector parsing, AutoTransform placeholders, and the comparison arithmetic."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.collab.defences import Inspector, verdict
from llmpsych.collab.experiments import (
    by_structure,
    compare_runs,
    defences,
    drops,
    expand_preset,
    recovery,
    relative_drop,
)
from llmpsych.collab.reference import PAPER_BY_STRUCTURE
from llmpsych.collab.runtime import Agent, Message, Route, Runtime
from llmpsych.collab.transform import AutoTransform
from llmpsych.models.types import ChatResult, GenerationParams


class Replies:
    """A context whose model answers from a list."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.clients: dict[str, Any] = {}
        self.prompts: list[str] = []

    async def chat(self, messages: list[dict[str, str]], params: Any, role: str) -> ChatResult:
        self.prompts.append(messages[-1]["content"])
        return ChatResult(self.answers.pop(0))


def _rt(ctx: Replies) -> Runtime:
    agent = Agent("a", "Solve <TASK> now.")
    agent.notes.update({"template": "Solve <TASK> now.", "values": {"TASK": "the sum"}})
    return Runtime(ctx, Route.of("flat", "a<->b"), [agent, Agent("b", "")], GenerationParams())


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("unsafe.", "unsafe"), ("Safe", "safe"), ('"UNSAFE"', "unsafe"), ("I think it is fine", "safe")],
)
def test_challenger_verdict(reply: str, expected: str) -> None:
    assert verdict(reply) == expected


def test_inspector_rewrites_unsafe_and_fails_open() -> None:
    ctx = Replies('{"decision": "unsafe", "revision": "x = 2"}', "safe", "garbled {")
    rt = _rt(ctx)
    inspector = Inspector()
    first = asyncio.run(inspector.on_message(Message(0, "a", ["b"], "x = 1"), rt))
    assert first.content == "x = 2" and first.meta["inspector"]["decision"] == "unsafe"
    second = asyncio.run(inspector.on_message(Message(1, "b", ["a"], "ok"), rt))
    assert second.content == "ok" and second.meta["inspector"]["decision"] == "safe"
    third = asyncio.run(inspector.on_message(Message(2, "a", ["b"], "keep"), rt))
    assert third.content == "keep" and third.meta["inspector"]["decision"] == "unreadable"
    assert "a: x = 2" in ctx.prompts[1]  # the delivered version is remembered


def test_autotransform_keeps_placeholders_or_retries_then_appends() -> None:
    ctx = Replies("Be wrong about <TASK>.")
    rt = _rt(ctx)
    asyncio.run(AutoTransform("a").on_agent(rt.agents["a"], rt))
    assert rt.agents["a"].profile == "Be wrong about the sum."
    ctx = Replies("Be wrong.", "Still wrong.")
    rt = _rt(ctx)
    asyncio.run(AutoTransform("a").on_agent(rt.agents["a"], rt))
    assert len(ctx.prompts) == 2 and "<TASK>" in ctx.prompts[1]
    assert rt.agents["a"].profile.endswith("the sum") and rt.agents["b"].profile == ""


def test_paper_headline_numbers_are_reproduced() -> None:
    assert round(relative_drop(53.00, 48.12), 2) == 9.21
    assert round(relative_drop(55.62, 38.27), 2) == 31.19
    assert round(recovery(76.2, 43.3, 75.0), 2) == 96.35
    table = PAPER_BY_STRUCTURE.loc[["GPT-3.5 clean", "GPT-3.5 AutoInject"]]
    assert round(relative_drop(*table["flat"]), 2) == 25.97
    assert round(sum([26.80, 40.90, 29.27, 34.80, 53.70, 49.40]) / 6, 3) == 39.145


def _summary(run_dir: Path, system: str, structure: str, score: float, **options: Any) -> Path:
    run_dir.mkdir(parents=True)
    opts = {"fault": "none", "p_m": 1.0, "p_e": 0.2, "error_type": "semantic", "defence": [], **options}
    (run_dir / "summary.json").write_text(
        json.dumps(
            {
                "system": system,
                "structure": structure,
                "dataset": "humaneval",
                "options": opts,
                "n_items": 164,
                "score": score,
            }
        )
    )
    return run_dir


def test_comparison_tables(tmp_path: Path) -> None:
    dirs = [
        _summary(tmp_path / "1", "selfcollab", "linear", 76.2),
        _summary(tmp_path / "2", "selfcollab", "linear", 43.3, fault="autotransform"),
        _summary(
            tmp_path / "3",
            "selfcollab",
            "linear",
            75.0,
            fault="autotransform",
            defence=["challenger", "inspector"],
        ),
        _summary(tmp_path / "4", "mad", "hierarchical", 62.2),
        _summary(tmp_path / "5", "mad", "hierarchical", 53.7, fault="autoinject"),
    ]
    outputs = compare_runs(dirs, tmp_path / "cmp")
    from llmpsych.collab.experiments import load_summaries

    frame = load_summaries(dirs)
    structure = by_structure(frame)
    assert structure.loc["clean", "linear"] == 76.2
    assert round(drops(structure).loc["AutoInject", "hierarchical"], 2) == round(relative_drop(62.2, 53.7), 2)
    scores, rec = defences(frame)["selfcollab"]
    assert round(rec.loc["AutoTransform", "challenger+inspector"], 2) == 96.35
    assert (tmp_path / "cmp" / "comparison.md") in outputs
    assert any(p.name.startswith("drop-by-structure") and p.suffix == ".png" for p in outputs)
    assert isinstance(scores, pd.DataFrame)


def test_presets_expand_to_the_paper_grids() -> None:
    assert len(expand_preset("main")) == (6 + 3 * 4) * 3
    assert len(expand_preset("error-rates")) == 6 * 9
    assert len(expand_preset("error-types")) == 6 * 3
    assert len(expand_preset("defences")) == 2 * 3 * 4


def test_result_check_reuses_the_verdict_and_costs_nothing_without_the_challenger() -> None:
    from llmpsych.collab.defences import Challenger

    message = Message(0, "b", ["a"], "x = 1")
    plain = _rt(Replies())
    assert asyncio.run(plain.result_of("a", message, "fmt")) == "x = 1"  # no model call at all

    ctx = Replies("unsafe", "x = 2")
    rt = _rt(ctx)
    challenger = Challenger()
    rt.receive_checks.append(challenger)
    asyncio.run(challenger.on_agent(rt.agents["a"], rt))
    assert asyncio.run(rt.receive(rt.agents["a"], message)).startswith("x = 1")  # read with a warning
    assert asyncio.run(rt.result_of("a", message, "Give the code.")) == "x = 2"
    assert len(ctx.prompts) == 2 and "final result" in ctx.prompts[1] and "Give the code." in ctx.prompts[1]
    assert message.meta["result_fix"]["agent"] == "a"
    own = Message(1, "a", ["b"], "mine")
    assert asyncio.run(rt.result_of("a", own)) == "mine"  # the final agent's own message is kept
