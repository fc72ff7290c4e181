"""Issue 14, class 4 for the two tasks the first pass left out: EmotionBench and MAS-Resilience.

Each reply shape of ``llmpsych.testing.fault_server`` (content as a list, a number, null, an object, lone
surrogates, 100,000-deep JSON text, 10 MB) is served to a real ``llmpsych run`` of an EmotionBench PANAS
run (one situation) and of a MAS run (one CIAR item, MAD; one HumanEval item, Camel, in the bubblewrap
sandbox): the run completes, the unusable answers are counted in its outputs, and ``--resume`` sends
nothing and does not crash. Two reply texts made to defeat the MAS answer parsers (a megabyte of ``['``
and of backtick triples, which the old regexes took hours over) are answered like any other.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.collab.scoring import _FENCE, _fences, extract_code, faireval_label, final_answer
from llmpsych.testing.fault_server import FaultServer, body_reply, completion_json, hostile_reply

SHAPES = [
    "content-list", "content-number", "content-null", "content-object", "lone-surrogate",
    "content-nested-json-text", "content-huge",
]  # fmt: skip

#: replies made for the MAS parsers: 1 MB with no closing bracket / no newline after a fence
PARSER_BOMBS = {
    "open-brackets": "['" * 500_000,
    "fence-run": "```" * 350_000,
}


def _llmpsych(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmpsych", *args], capture_output=True, text=True)


def _run(server: FaultServer, run_dir: Path, seed_data: Path, task: str, options: dict):  # noqa: ANN202
    config = {
        "task": task,
        "model": "openai-compatible/m",
        "base_url": server.base_url,
        "cache": False,
        "max_retries": 1,
        "data_dir": str(seed_data),
        "options": options,
    }
    path = run_dir.with_suffix(".yaml")  # JSON is YAML
    path.write_text(json.dumps(config))
    return _llmpsych("run", str(path), "--no-progress", "--out", str(run_dir))


def _hostile(name: str):  # noqa: ANN202
    if name in PARSER_BOMBS:
        return body_reply(json.dumps(completion_json(PARSER_BOMBS[name])).encode())
    return hostile_reply(name)


def _run_and_resume(
    name: str, run_dir: Path, seed_data: Path, task: str, options: dict
) -> subprocess.CompletedProcess[str]:
    with FaultServer(hostile=_hostile(name)) as server:
        first = _run(server, run_dir, seed_data, task, options)
        sent = sum(server.hits.values())
        again = _llmpsych("run", "--resume", str(run_dir), "--no-progress")
        assert sum(server.hits.values()) == sent  # the resume sends nothing
    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in first.stderr + again.stderr and sent >= 1
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        assert {row[0] for row in db.execute("SELECT status FROM units")} == {"done"}
    return first


@pytest.mark.parametrize("name", SHAPES)
def test_emotionbench_counts_unusable_replies_as_invalid_runs(
    name: str, tmp_path: Path, seed_data: Path
) -> None:
    run_dir = tmp_path / "run"
    options = {
        "scale": "PANAS",
        "factors": ["Fear-5"],
        "situations_per_factor": 1,
        "runs": 1,
        "default_runs": 2,
    }
    _run_and_resume(name, run_dir, seed_data, "emotionbench", options)
    runs = (run_dir / "runs.csv").read_text().splitlines()
    assert len(runs) == 4 and all(",False," in line for line in runs[1:])  # two default runs, one evoked
    summary = json.loads((run_dir / "summary.json").read_text())
    # before, a run with every answer unusable reported "Invalid runs per group: none"
    assert summary["valid_runs"] == 0 and summary["invalid_runs"] == {"default": 2, "Fear-5": 1}
    report = (run_dir / "report.md").read_text()
    assert "0 of 3 runs valid; 0 units failed. Invalid runs per group: default 2, Fear-5 1." in report


@pytest.mark.parametrize("name", [*SHAPES, *PARSER_BOMBS])
def test_mas_ciar_scores_unusable_replies_as_wrong_answers(
    name: str, tmp_path: Path, seed_data: Path
) -> None:
    run_dir = tmp_path / "run"
    _run_and_resume(name, run_dir, seed_data, "mas", {"dataset": "ciar", "items": 1, "system": "mad"})
    rows = (run_dir / "results.csv").read_text().splitlines()
    assert rows[0].startswith("item,score,passed,") and len(rows) == 2
    assert rows[1].startswith("CIAR/0,0.0,False,")  # counted in n, scored as the wrong answer it is
    assert "n = 1 items" in (run_dir / "report.md").read_text()


@pytest.mark.parametrize(
    "name", ["content-number", "content-nested-json-text", "lone-surrogate", "fence-run"]
)
def test_mas_humaneval_runs_unusable_code_and_fails_it(
    name: str, tmp_path: Path, seed_data: Path, bubblewrap: None
) -> None:
    run_dir = tmp_path / "run"
    _run_and_resume(
        name, run_dir, seed_data, "mas", {"dataset": "humaneval50", "items": 1, "system": "camel"}
    )
    rows = (run_dir / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].split(",")[1:3] == ["0.0", "False"]


# -- the parsers themselves -------------------------------------------------------------------------
def test_fences_finds_what_the_regex_finds() -> None:
    rng = random.Random(14)
    pieces = ["```", "```python", "``` py x", "\n", "a", " ", "`", "print(1)\n", "```\n"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _fences(text) == _FENCE.findall(text), text


def test_final_answer_brackets_are_the_regex_answer() -> None:
    old = re.compile(r"\[\s*[\"'](.+?)[\"']\s*\]", re.S)
    rng = random.Random(14)
    pieces = ["[", "]", "'", '"', " ", "\n", "x", "42", "['", "']", '["a"]']
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
        found = old.findall(text)
        expected = found[-1].strip() if found else None
        if expected is not None:
            assert final_answer(text) == expected, text


@pytest.mark.parametrize("text", list(PARSER_BOMBS.values()), ids=list(PARSER_BOMBS))
def test_parser_bombs_are_read_in_one_pass(text: str) -> None:
    """A megabyte each: the old regexes needed hours (17 s already for 80 kB of ``['``)."""
    assert final_answer(text) == text.strip().splitlines()[-1]
    assert faireval_label(text) is None
    assert extract_code(text) == text
