"""A reply numbered by position (``1: 4 / 2: 3 / ...``) against statements shown with other numbers is never
scored as the items it names: it is re-asked once with the numbers as shown, then counted invalid."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.emotion.rescore import score_released
from llmpsych.instruments.administration import administer
from llmpsych.instruments.official import load_emotionbench_scales
from llmpsych.instruments.parsing import order_independent_replies, parse_item_answers, positional_reply
from llmpsych.models.types import ChatResult, GenerationParams
from llmpsych.quickstart.demo_scale import demo_scale
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer


@pytest.mark.parametrize(
    ("reply", "shown", "positional"),
    [
        ("1: 4\n2: 3\n3: 5\n4: 2\n5: 1\n6: 4", [3, 6, 4, 2, 5, 1], True),  # the order
        ("1: 4\n2: 5\n3: 5\n4: 5\n5: 5\n6: 5\n7: 5\n8: 5\n9: 5\n10: 5", [2, 8, 6, 5, 4, 1, 7, 3], True),
        ("1: 4\n2: 3", [14, 3, 27], True),  # a chunk of other items, answered by position
        ("3: 4\n6: 3\n4: 5\n2: 2\n5: 1\n1: 4", [3, 6, 4, 2, 5, 1], False),  # the numbers as shown
        ("1: 4\n2: 3\n3: 5", [1, 2, 3], False),  # shown 1..k: position and number agree
        ("1: 4\n2: 3\n3: 5", [1, 2, 3, 5, 4], False),  # the first three shown are 1..3 too
        ("1: 4\n2: 3\n3: 5\n4: 4", [1, 2, 3, 5, 4], True),  # but the fourth shown is item 5
        ("1: 4", [3, 1], False),  # one answer is no sequence
        ("2: 4\n1: 3", [3, 1, 2], False),
    ],
)
def test_positional_rule(reply: str, shown: list[int], positional: bool) -> None:
    parsed = parse_item_answers(reply, shown, 1, 5)
    assert positional_reply(parsed.written, shown) is positional


class Scripted:
    """A chat context answering from a list of replies, recording the messages it was sent."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.sent = list(replies), []

    async def chat(self, messages: list[Any], params: Any, **_: Any) -> ChatResult:
        self.sent.append([dict(m) for m in messages])
        return ChatResult(text=self.replies.pop(0))


def test_a_positional_reply_is_reasked_with_the_shown_numbers_and_then_scored_as_shown() -> None:
    scale = demo_scale()
    order = [3, 6, 4, 2, 5, 1, 8, 7]
    positional = "\n".join(f"{p}: {v}" for p, v in enumerate([4, 3, 5, 2, 1, 4, 3, 5], start=1))
    as_shown = "\n".join(f"{i}: {v}" for i, v in zip(order, [4, 3, 5, 2, 1, 4, 3, 5], strict=True))
    ctx = Scripted([positional, as_shown])
    result = asyncio.run(
        administer(scale, ctx, order=order, params=GenerationParams(), reask_template="{indices}")  # type: ignore[arg-type]
    )
    assert result.asks == 2 and result.positional_replies == 1 and result.positional == []
    assert result.answers == {3: 4, 6: 3, 4: 5, 2: 2, 5: 1, 1: 4, 8: 3, 7: 5}  # never {1: 4, 2: 3, ...}
    reask = ctx.sent[1][-1]["content"]
    assert "with its number as shown: 3, 6, 4, 2, 5, 1, 8, 7" in reask and "\n3. " in reask


def test_a_reply_positional_twice_leaves_every_item_invalid_and_never_asks_a_third_time() -> None:
    scale = demo_scale()
    positional = "\n".join(f"{p}: 4" for p in range(1, 9))
    ctx = Scripted([positional, positional, positional])
    result = asyncio.run(
        administer(
            scale, ctx, order=[2, 8, 6, 5, 4, 1, 7, 3], params=GenerationParams(), reask_template="{indices}"
        )  # type: ignore[arg-type]
    )
    assert result.asks == 2 and result.positional_replies == 2
    assert result.answers == {} and sorted(result.positional) == sorted(result.unanswered) == list(
        range(1, 9)
    )


def _positional_server_reply(body: dict[str, Any], *, learns: bool) -> str:
    """Numbers the statements of the last message by position; with ``learns``, a re-ask that says
    "as shown" gets the shown numbers (a model the clearer prompt fixes)."""
    last = body["messages"][-1]["content"]
    shown = re.findall(r"^(\d+)\. ", last, flags=re.MULTILINE)
    if learns and "as shown" in last:
        return "\n".join(f"{i}: {1 + p % 5}" for p, i in enumerate(shown))
    return "\n".join(f"{p}: {1 + (p - 1) % 5}" for p in range(1, len(shown) + 1))


def _psychobench(server: FaultServer, data_dir: Path, run_dir: Path) -> None:
    config = parse_run_config(
        {
            "task": "psychobench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "data_dir": str(data_dir),
            "options": {"scale": ["DTDD"], "runs": 5},
        }
    )
    start_run(config, run_dir, False)


def test_psychobench_against_a_server_answering_by_position_counts_the_items_invalid(
    tmp_path: Path, seed_data: Path
) -> None:
    """Before: 60/60 items valid, each scored as the item its position names. After: each run re-asked
    once, still positional, all 60 items invalid and the rate in the report."""
    with FaultServer(responder=lambda body: _positional_server_reply(body, learns=False)) as server:
        _psychobench(server, seed_data, tmp_path / "r")
    valid = pd.read_csv(tmp_path / "r" / "valid.csv")
    assert valid["valid"].sum() == 0 and valid["items"].sum() == 60
    assert valid["asks"].eq(2).all() and valid["positional"].eq(12).all()
    report = (tmp_path / "r" / "report.md").read_text()
    assert "0 of 60 items answered validly" in report
    assert "10 replies numbered the answers by position" in report
    assert "60 of 60 items (100.0%) stayed positional and are counted invalid" in report


def test_psychobench_scores_the_reasked_reply_by_the_numbers_it_names(
    tmp_path: Path, seed_data: Path
) -> None:
    with FaultServer(responder=lambda body: _positional_server_reply(body, learns=True)) as server:
        _psychobench(server, seed_data, tmp_path / "r")
    valid = pd.read_csv(tmp_path / "r" / "valid.csv")
    answers = pd.read_csv(tmp_path / "r" / "answers.csv")
    assert valid["valid"].sum() == 60 and valid["positional"].sum() == 0 and valid["asks"].eq(2).all()
    # the answer follows the statement's shown position, whatever its number
    assert (answers["answer"] == 1 + (answers["position"] - 1) % 5).all()
    assert "5 replies numbered the answers by position" in (tmp_path / "r" / "report.md").read_text()


def test_released_emotionbench_runs_are_counted_for_positional_risk(seed_data: Path) -> None:
    """The authors' files keep answers by position without the reply text: the count of runs shown in a
    shuffled order (where a positional reply would be mis-scored) is reported; it is 0 in every file."""
    folder = seed_data / "EmotionBench" / "results"
    scales = load_emotionbench_scales(seed_data)
    files = sorted(folder.glob("*/*-testing.csv"))
    assert len(files) == 9
    total = 0
    for file in files:
        scale = scales[file.name.removeprefix("gpt-3.5-turbo-").removesuffix("-testing.csv")]
        result = score_released(file, scale)["positional"]
        assert result["shuffled_runs"] == 0 and result["detectable"] is False
        total += result["runs"]
    assert total > 1000


def test_grid_units_giving_one_reply_to_different_item_orders_are_left_out_and_named(tmp_path: Path) -> None:
    """Statements numbered by position (the grids): a content-blind reply, the same to every item order,
    is not scored as the items it lands on (before: all 32 units scored)."""
    from test_reliability_grid_custom import RANGE, STATEMENT, config, write_files

    blind = "1: 5\n2: 1\n3: 4\n4: 2\n5: 3\n6: 5"

    def responder(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if "keen" not in system:
            return blind
        # an item-consistent respondent: each statement's score follows its text, not its position
        low, high = map(int, RANGE.search(body["messages"][-1]["content"]).groups())  # type: ignore[union-attr]
        return "\n".join(
            f"{number}: {low + len(text) % (high - low + 1)}"
            for number, text in STATEMENT.findall(body["messages"][-1]["content"])
        )

    en, _, grid = write_files(tmp_path)
    with FaultServer(responder=responder) as server:
        start_run(
            config(server, {"scale_file": [str(en)], "grid": str(grid), "runs": 4}), tmp_path / "r", False
        )
    points = pd.read_csv(tmp_path / "r" / "data_points.csv")
    assert len(points) == 16 and set(points["persona"]) == {"keen"}
    report = (tmp_path / "r" / "report.md").read_text()
    assert "16 unit(s) gave the same reply as a unit shown another item order" in report


@pytest.mark.parametrize(
    ("replies", "flagged"),
    [
        ([([1, 2], "1: 4\n2: 3"), ([2, 1], "1: 4\n2: 3")], [0, 1]),
        ([([1, 2], "1: 4\n2: 3"), ([1, 2], "1: 4\n2: 3")], []),  # one order: a deterministic repeat
        ([([1, 2], "1: 3\n2: 3"), ([2, 1], "1: 3\n2: 3")], []),  # one score for all: order cannot matter
        ([([1, 2, 3], "1: 4\n2: 4\n3: 5"), ([2, 1, 3], "1: 4\n2: 4\n3: 5")], []),  # item by item the same
        ([([1, 2, 3], "1: 4\n2: 4\n3: 5"), ([3, 1, 2], "1: 4\n2: 4\n3: 5")], [0, 1]),  # 2 of 3 moved
        (  # a near-constant reply coinciding by chance: 2 of 6 statements moved
            [
                ([1, 2, 3, 4, 5, 6], "1: 4\n2: 4\n3: 4\n4: 4\n5: 4\n6: 5"),
                ([1, 2, 3, 4, 6, 5], "1: 4\n2: 4\n3: 4\n4: 4\n5: 4\n6: 5"),
            ],
            [],
        ),
        ([([1, 2], "1: 4\n2: 3"), ([2, 1], "1: 3\n2: 4")], []),
    ],
)
def test_order_independent_rule(replies: list[tuple[list[int], str]], flagged: list[int]) -> None:
    assert order_independent_replies(replies) == flagged
