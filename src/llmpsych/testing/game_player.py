"""A deterministic GAMA-Bench player for tests and benchmarks: a valid answer to any game request.

It reads only the last (request) turn, in the builtin or the official prompt wording, and varies its
answers with the length of the conversation. Used as a :class:`~llmpsych.testing.fault_server.FaultServer`
responder and by ``benchmarks/games_throughput.py``'s server.
"""

from __future__ import annotations

import json
import re
from typing import Any


def _number(pattern: str, text: str, default: int | None = None) -> int:
    match = re.search(pattern, text)
    if match is None:
        if default is None:
            raise ValueError(f"no match for {pattern!r} in the request")
        return default
    return int(match.group(1))


def game_answer(body: dict[str, Any], fenced: bool = False) -> str:
    """The answer to a chat request body; ``fenced`` wraps Guess-2/3 answers in a ```json block."""
    last = body["messages"][-1]["content"]
    n = len(body["messages"])
    if '"chosen_number"' in last:
        answer = json.dumps({"chosen_number": str((7 * n) % 60)})
        return f"```json\n{answer}\n```" if fenced else answer
    if '"go_or_stay"' in last:
        return json.dumps({"decision": "go" if n % 3 else "stay"})
    if '"bid_amount"' in last:
        return json.dumps({"bid_amount": str(5 + n % 10)})
    if '"tokens_contributed"' in last:
        return json.dumps({"tokens_contributed": str(n % 7)})
    if '"chosen_dish"' in last:
        return json.dumps({"chosen_dish": "cheap" if n % 4 == 0 else "costly"})
    if '"bid"' in last:
        return json.dumps({"bid": str(_number(r"integer_between_0_and_(\d+)", last) * 4 // 5)})
    if '"target"' in last:
        me = re.search(r"You are player_(\d+)", last).group(1)  # type: ignore[union-attr]
        others = [p for p in re.findall(r"player_(\d+)", last) if p != me]
        return json.dumps({"action": "shoot", "target": f"player_{others[n % len(others)]}"})
    if '"proposal"' in last:
        ranks = re.findall(r'"(rank_\d+)"', last)
        gold = _number(r"Split (\d+) golds", last, default=100)
        shares = [gold - (len(ranks) - 1)] + [1] * (len(ranks) - 1)
        return json.dumps({"proposal": dict(zip(ranks, map(str, shares), strict=True))})
    if "accept_or_reject" in last:
        share = _number(r"(?:get|gives you) (\d+) golds", last)
        return json.dumps({"decision": "accept" if share >= 1 and n % 2 else "reject"})
    return "I am not sure what to do."
