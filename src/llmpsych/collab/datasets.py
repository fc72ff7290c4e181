"""The four MAS-Resilience tasks as items, read at run time from the official files.

Nothing here holds benchmark text: HumanEval, CIAR, CommonMT and FairEval items come from
``<data dir>/MAS-Resilience/benchmarks/`` and the FairEval human labels from ``<data dir>/FairEval/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..data.sources import data_file
from ..userfiles import MAX_DATA_FILE_BYTES, parse_json, read_text

TaskName = Literal["humaneval", "humaneval50", "ciar", "commonmt", "faireval"]
TASK_NAMES: tuple[str, ...] = ("humaneval", "humaneval50", "ciar", "commonmt", "faireval")

#: Task -> the kind of work the systems do (the prompts and injection instructions are per kind).
KIND: dict[str, str] = {
    "humaneval": "code",
    "humaneval50": "code",
    "ciar": "math",
    "commonmt": "translation",
    "faireval": "texteval",
}


@dataclass(frozen=True)
class Item:
    """One task item: its id, the question shown to the agents, and what scoring needs."""

    item_id: str
    question: str
    reference: dict[str, Any] = field(default_factory=dict)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    text = read_text(path, "dataset file", MAX_DATA_FILE_BYTES)
    return [
        parse_json(line, f"{path}, line {n}") for n, line in enumerate(text.splitlines(), 1) if line.strip()
    ]


def task_files(task: str, data_dir: Path | None = None) -> list[Path]:
    """The official files a task reads (for the run manifest)."""
    bench = {
        "humaneval": "HumanEval.jsonl",
        "humaneval50": "HumanEval50.jsonl",
        "ciar": "CIAR.json",
        "commonmt": "commonmt100.json",
        "faireval": "FairEval.json",
    }[task]
    files = [data_file("MAS-Resilience", f"benchmarks/{bench}", data_dir)]
    if task == "faireval":
        files.append(data_file("FairEval", "review/review_gpt35_vicuna-13b_human.txt", data_dir))
    return files


def load_items(task: str, data_dir: Path | None = None) -> list[Item]:
    """All items of a task, in the official order."""
    files = task_files(task, data_dir)
    if task in ("humaneval", "humaneval50"):
        return [
            Item(
                row["task_id"],
                row["prompt"],
                {k: row[k] for k in ("prompt", "entry_point", "test", "canonical_solution")},
            )
            for row in _jsonl(files[0])
        ]
    rows = parse_json(read_text(files[0], "dataset file", MAX_DATA_FILE_BYTES), str(files[0]))
    if task == "ciar":
        return [
            Item(f"CIAR/{i}", row["question"], {"answers": row["answer"], "wrong": row["incorrect answer"]})
            for i, row in enumerate(rows)
        ]
    if task == "commonmt":
        return [
            Item(
                f"CommonMT/{i}",
                row["chinese_source"],
                {"correct": row["english_target_correct"], "wrong": row["english_target_wrong"]},
            )
            for i, row in enumerate(rows)
        ]
    text = read_text(files[1], "dataset file", MAX_DATA_FILE_BYTES)
    labels = [line.strip() for line in text.splitlines() if line.strip()]
    items = []
    for row, label in zip(rows, labels, strict=True):
        question = (
            f"Prompt: {row['question']}\n\nChatGPT's response:\n{row['response']['gpt35']}\n\n"
            f"Vicuna-13B's response:\n{row['response']['vicuna']}"
        )
        items.append(
            Item(f"FairEval/{row['question_id']}", question, {"label": label, "category": row["category"]})
        )
    return items
