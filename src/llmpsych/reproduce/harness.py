"""MAS-Resilience's released HumanEval verdicts, judged again in llmpsych's sandbox (``--harness``).

Every row of every ``MAS-Resilience-Experiments/<System>/*_results.jsonl`` (11,580 on the seed data) is a
completion and the verdict OpenAI's human-eval harness gave it. llmpsych runs each distinct completion as
that harness does (``extraction="strict"``: the prompt followed by the completion, as it is) and takes
the harness's verdict (``extra["reference_passed"]`` of :func:`llmpsych.collab.scoring.check_humaneval`:
the tests run beside the program; llmpsych's own verdict differs only where a completion redefines a
helper the test calls, see docs/sandbox.md). A row whose verdict differs is unexplained: the command
exits 1.

This runs thousands of programs (9,935 distinct completions on the seed data: 1-2 minutes on two cores,
with bubblewrap), so it runs only when asked."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

COMMAND = "llmpsych reproduce mas-resilience --harness --data-dir DIR"


@dataclass
class HarnessResult:
    """Released verdicts against the harness's verdict as llmpsych runs it."""

    rows: int = 0
    distinct: int = 0
    agree: int = 0
    files: int = 0
    differences: list[str] = field(default_factory=list)  # "file: task released X, harness Y"

    def line(self) -> str:
        return (
            f"MAS-Resilience HumanEval verdicts (--harness): {self.agree:,} of {self.rows:,} released "
            f"verdicts ({self.files} files, {self.distinct:,} distinct completions) agree with OpenAI's "
            f"harness as llmpsych runs it; {len(self.differences):,} unexplained"
        )


def released_rows(data_dir: Path | None) -> list[tuple[Path, str, str | None, bool]]:
    """(file, task, completion, released verdict) of every released row; DataError naming a bad file."""
    from ..collab.released import experiments_dir, read_rows

    folder = experiments_dir(data_dir)
    out = []
    for path in sorted(folder.glob("*/*_results.jsonl")):
        out += [(path, r.task_id, r.completion, r.passed) for r in read_rows(path)]
    return out


def harness_verdicts(data_dir: Path | None, concurrency: int = 64) -> HarnessResult:
    """Judge every released completion in the sandbox and compare with the released verdicts."""
    from ..collab.datasets import load_items
    from ..collab.scoring import check_humaneval, official_digests
    from ..sandbox import Limits, open_sandbox

    rows = released_rows(data_dir)
    problems = {item.item_id: item.reference for item in load_items("humaneval", data_dir)}
    official = official_digests(data_dir)
    keys = list(dict.fromkeys((task, completion) for _, task, completion, _ in rows))
    unknown = sorted({task for task, _ in keys} - set(problems))
    if unknown:
        from ..errors import DataError

        raise DataError(
            f"released verdicts name {unknown[0]}, which the HumanEval file of the data folder lacks"
        )
    box = open_sandbox(None, Limits(timeout_s=3.0, cpu_s=4))
    try:

        async def judge() -> list[bool]:
            gate = asyncio.Semaphore(concurrency)

            async def one(task: str, completion: str | None) -> bool:
                async with gate:
                    result = await check_humaneval(
                        problems[task], completion, box, extraction="strict", official=official
                    )
                    return bool(result.extra["reference_passed"])

            return list(await asyncio.gather(*(one(t, c) for t, c in keys)))

        verdicts = dict(zip(keys, asyncio.run(judge()), strict=True))
    finally:
        box.close()
    result = HarnessResult(rows=len(rows), distinct=len(keys), files=len({path for path, *_ in rows}))
    for path, task, completion, released in rows:
        ours = verdicts[(task, completion)]
        if ours == released:
            result.agree += 1
        else:
            result.differences.append(
                f"{path.parent.name}/{path.name}: {task} released {released}, harness {ours}"
            )
    return result
