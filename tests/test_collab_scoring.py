"""Scoring: HumanEval canonical solutions pass and broken ones fail; CIAR and FairEval on made-up answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.scoring import (
    check_humaneval,
    ciar_correct,
    critic_scores_label,
    extract_code,
    faireval_correct,
    faireval_label,
    final_answer,
    official_digests,
)
from llmpsych.sandbox import Limits, open_sandbox


def _pass_rate(items: list, completions: list[str], seed_data: Path) -> float:
    official = official_digests(seed_data)

    async def score() -> list[bool]:
        pool = open_sandbox(limits=Limits(timeout_s=10, cpu_s=10))
        results = await asyncio.gather(
            *(
                check_humaneval(i.reference, c, pool, official=official)
                for i, c in zip(items, completions, strict=True)
            )
        )
        pool.close()
        return [r.passed for r in results]

    passed = asyncio.run(score())
    return 100 * sum(passed) / len(passed)


def test_humaneval_canonical_solutions_score_100(seed_data: Path) -> None:
    items = load_items("humaneval", seed_data)
    assert len(items) == 164
    assert _pass_rate(items, [i.reference["canonical_solution"] for i in items], seed_data) == 100.0


def test_humaneval_canonical_as_full_function_in_a_fence(seed_data: Path) -> None:
    items = load_items("humaneval50", seed_data)[:8]
    replies = [
        "Here it is:\n```python\n" + i.reference["prompt"] + i.reference["canonical_solution"] + "```\nDone."
        for i in items
    ]
    assert _pass_rate(items, replies, seed_data) == 100.0


def test_humaneval_broken_solutions_score_0(seed_data: Path) -> None:
    items = load_items("humaneval", seed_data)
    broken = ["    raise NotImplementedError\n" if n % 2 else "    return (\n" for n in range(len(items))]
    assert _pass_rate(items, broken, seed_data) == 0.0


HOSTILE = {
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n",
    "write outside": "open('/tmp/llmpsych-escaped-by-scoring-test', 'w').write('x')\n",
    "fork bomb": "import os\nwhile True:\n    os.fork()\n",
    "endless loop": "while True:\n    pass\n",
    "unbounded allocation": "chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))\n",
}


def test_hostile_completions_are_contained_and_scoring_goes_on(seed_data: Path) -> None:
    # A right solution that first does something hostile: the hostile part is contained (a write lands in
    # the sandbox's own scratch, never on the host), and the next item is scored as usual.
    item = load_items("humaneval50", seed_data)[0]
    right = item.reference["prompt"] + item.reference["canonical_solution"]
    replies = ["```python\n" + prologue + right + "```" for prologue in HOSTILE.values()]

    async def score() -> list[bool]:
        pool = open_sandbox(2, Limits(timeout_s=2.0, cpu_s=3, memory_bytes=256 << 20))
        official = official_digests(seed_data)
        results = await asyncio.gather(
            *(check_humaneval(item.reference, r, pool, official=official) for r in replies)
        )
        after = await check_humaneval(item.reference, "```python\n" + right + "```", pool, official=official)
        pool.close()
        return [r.passed for r in results] + [after.passed]

    # only the write "outside" (into the sandbox's /tmp) leaves the program able to finish
    assert asyncio.run(score()) == [False, True, False, False, False, True]
    assert not Path("/tmp/llmpsych-escaped-by-scoring-test").exists()


def test_extract_code_prefers_the_last_python_fence() -> None:
    text = "```text\nnope\n```\n```python\nx = 1\n```\nthen\n```python\nx = 2\n```"
    assert extract_code(text) == "x = 2\n"
    assert extract_code("def f():\n    return 1") == "def f():\n    return 1"
    assert extract_code("Here:\n```python\ndef f():\n    return 1") == "def f():\n    return 1"


@pytest.mark.parametrize(
    ("reply", "accepted", "ok"),
    [
        ("Her average speed is 1.5 m/s.\nAnswer: 1.5", ["1.5", "3/2"], True),
        ("Answer: 3/2 m/s", ["1.5", "3/2"], True),
        ('Solution: so it is ["2"]', ["1.5", "3/2"], False),
        ("The probability is 2/3.", ["0.67", "66.67%", "2/3"], True),
        ("Answer: 66.7%", ["0.67", "66.67%", "2/3"], True),
        ("Answer: 0.0909", ["9.09%", "0.0909", "1/11"], True),
        ("Answer: 10%", ["9.09%", "0.0909", "1/11"], False),
        ("Answer: 1,024", ["512"], False),
        ("Answer: 512 ways", ["512"], True),
        ("Answer: 6 or 12", ["6 or 12"], True),
        ("Answer: 1:1", ["1:1", "50:50"], True),
        ("I cannot tell.", ["15"], False),
    ],
)
def test_ciar_matching(reply: str, accepted: list[str], ok: bool) -> None:
    assert ciar_correct(reply, accepted) is ok


def test_ciar_reads_the_official_items(seed_data: Path) -> None:
    items = load_items("ciar", seed_data)
    assert len(items) == 50
    for item in items:
        assert ciar_correct(f"Answer: {item.reference['answers'][0]}", item.reference["answers"])


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("Answer: CHATGPT", "CHATGPT"),
        ('Solution: both are fine ["VICUNA13B"]', "VICUNA13B"),
        ("Answer: BOTH", "TIE"),
        ("Answer: TIE", "TIE"),
        ("Overall, Vicuna-13B's response is better.", "VICUNA13B"),
        ("ChatGPT is clearly better than Vicuna.\nAnswer: ChatGPT", "CHATGPT"),
    ],
)
def test_faireval_labels(reply: str, label: str) -> None:
    assert faireval_label(reply) == label
    assert faireval_correct(reply, label)


def test_faireval_has_80_items_with_human_labels(seed_data: Path) -> None:
    items = load_items("faireval", seed_data)
    assert len(items) == 80
    assert {i.reference["label"] for i in items} == {"CHATGPT", "VICUNA13B", "TIE"}
    answers = ["Answer: CHATGPT"] * 80
    accuracy = (
        sum(faireval_correct(a, i.reference["label"]) for a, i in zip(answers, items, strict=True)) / 80
    )
    assert 0 < accuracy < 1


def test_critic_scores_and_final_answer() -> None:
    assert critic_scores_label([4, 5, 3]) == "CHATGPT"
    assert critic_scores_label([1, 2, 3]) == "VICUNA13B"
    assert critic_scores_label([3, 3, 3]) == "TIE"
    assert final_answer("a\nAnswer: 7\nthanks") == "7"
