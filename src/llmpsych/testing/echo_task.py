"""A content-free task for tests and benchmarks: each unit holds a short multi-turn conversation.

``llmpsych run --task echo -O units=100 -O turns=2 -O parallel=2 --model ...`` sends
units × turns × parallel requests; seats of one turn are asked concurrently, as in a game round.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..models.chat_context import ChatContext, ChatRequest
from ..models.types import GenerationParams
from ..report.files import atomic_open
from ..runs.record import RunRecord
from ..runs.task import Task, WorkUnit


class EchoOptions(BaseModel):
    """Shape of the synthetic workload."""

    model_config = ConfigDict(extra="forbid")

    units: int = Field(default=10, ge=1, le=1_000_000)
    turns: int = Field(default=1, ge=1, le=100)
    parallel: int = Field(default=1, ge=1, le=64)
    max_tokens: int = Field(default=8, ge=1)


class EchoTask(Task[EchoOptions]):
    """Synthetic conversations whose answers feed the next turn."""

    name = "echo"
    Options = EchoOptions
    Result = list[list[str]]
    score_tables = ()  # a test workload: it measures nothing

    def units(self) -> Iterator[WorkUnit]:
        """One at a time: a 50,000-unit run held them all as a list (~330 B each) while it ran."""
        return (WorkUnit(f"u{i:06d}", {"index": i}) for i in range(self.options.units))

    async def run_unit(self, unit: WorkUnit, ctx: ChatContext) -> Any:
        params = GenerationParams(max_tokens=self.options.max_tokens)  # a default: the user's wins
        histories = [
            [{"role": "user", "content": f"unit {unit.payload['index']} seat {s}: say something"}]
            for s in range(self.options.parallel)
        ]
        for turn in range(self.options.turns):
            requests: list[ChatRequest] = [(history, params, "subject", turn) for history in histories]
            results = await ctx.chat_all(requests)
            for seat, (history, result) in enumerate(zip(histories, results, strict=True)):
                history.append({"role": "assistant", "content": result.text})
                history.append({"role": "user", "content": f"turn {turn + 1} seat {seat}: go on"})
        return [[m["content"] for m in history if m["role"] == "assistant"] for history in histories]

    def analyze(self, record: RunRecord) -> list[Path]:
        """``echo-summary.json``: the units by status and every finished unit's answers, one line (as
        ``json.dumps`` writes it), written unit by unit from the store: a 50,000-unit run held every
        answer and the whole text at once (~30 MiB)."""
        out = record.run_dir / "echo-summary.json"
        with atomic_open(out) as f:
            f.write('{"units": ' + json.dumps(record.unit_counts()) + ', "answers": {')
            for n, (unit, result) in enumerate(record.iter_results(self.Result)):
                f.write((", " if n else "") + json.dumps(unit.unit_id) + ": " + json.dumps(result))
            f.write("}}")
        return [out]
