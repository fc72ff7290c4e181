"""Real multi-agent programs of three frameworks from PyPI (LangGraph, AutoGen AgentChat, the OpenAI Agents
SDK), unchanged, pointed at the fault endpoint only by OPENAI_BASE_URL / OPENAI_API_KEY, in front of a
scripted loopback model: the clean and the faulty run differ exactly where the plan says, and the
ground-truth table holds what the framework's next agent received.

The programs are the worked examples of docs/faults-anywhere.md (the page shows each file whole; checked
here). Each runs as its own process, as a user runs it; a framework's import is most of its cost
(measured: LangGraph + langchain-openai 3.7 s, AutoGen 2.1 s, Agents SDK 1.8 s).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.collab.scripted import INJECTED, ScriptedCollaborator
from llmpsych.faults.endpoint import running
from llmpsych.faults.plan import parse_plan
from llmpsych.testing.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "faults"
PAGE = ROOT / "docs" / "faults-anywhere.md"
PROGRAMS = ["langgraph_team.py", "autogen_team.py", "openai_agents_team.py"]

DRAFT = [
    "def mean(values):",
    "    total = sum(values)",
    "    count = len(values)",
    "    if count == 0:",
    "        return 0.0",
    "    return total / count",
]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def team_model(body: dict[str, Any]) -> str:
    """The scripted model: the writer drafts (its task's tag in the first line), the reviewer returns
    ``FINAL`` and the last draft it was shown, as it received it; AutoInject's own requests are answered
    as the MAS-Resilience tests answer them (each chosen code line becomes ``raise RuntimeError``)."""
    messages = body.get("messages", [])
    system = next((_text(m["content"]) for m in messages if m["role"] in ("system", "developer")), "")
    last = _text(messages[-1]["content"]) if messages else ""
    if last.startswith("You receive a JSON object."):
        return ScriptedCollaborator._inject(last)
    if system.startswith("You are the writer"):
        tag = re.search(r"\[(\w+)\]", last)
        return "\n".join([f"# task {tag.group(1) if tag else '?'}", *DRAFT])
    if system.startswith("You are the reviewer"):
        drafts = [_text(m["content"]) for m in messages if m["role"] in ("user", "assistant")]
        return "FINAL\n" + drafts[-1].split("Draft:\n", 1)[-1]
    return "unrecognised request"


CLEAN = {
    "agents": [
        {"name": "writer", "system": "^You are the writer"},
        {"name": "reviewer", "system": "reviewer"},
    ]
}
FAULTY = {
    **CLEAN,
    "faults": [{"agent": "writer", "kind": "autoinject", "rate": 1.0, "share": 0.5, "content": "code"}],
}


@pytest.fixture(scope="module")
def server() -> Any:
    with FaultServer(responder=team_model) as s:
        yield s


def run_program(
    program: str, server: FaultServer, plan: dict[str, Any], out: Path, tag: str
) -> tuple[str, Path]:
    """The program's standard output, and the endpoint's run folder."""
    with running(
        parse_plan(plan, "test"), upstream="openai-compatible/scripted", base_url=server.base_url, out=out
    ) as ep:
        env = {**os.environ, "OPENAI_BASE_URL": ep.base_url, "OPENAI_API_KEY": ep.token}
        env.pop("PYTHONPATH", None)  # the program sees the framework, not llmpsych
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / program)],
            input=json.dumps({"prompt": f"[{tag}] Write mean(values)."}) + "\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, ep.run_dir


def received_by_reviewer(server: FaultServer, tag: str) -> str:
    """The last draft the reviewer was sent for this task, as the scripted model saw it."""
    bodies = [b for b in server.bodies if f"[{tag}]" in json.dumps(b)]
    reviewer = [b for b in bodies if _text(b["messages"][0]["content"]).startswith("You are the reviewer")]
    assert len(reviewer) == 1
    texts = [_text(m["content"]) for m in reviewer[0]["messages"] if m["role"] in ("user", "assistant")]
    return texts[-1].split("Draft:\n", 1)[-1]


@pytest.mark.parametrize("program", PROGRAMS)
def test_clean_and_faulty_runs_differ_exactly_where_the_plan_says(
    program: str, server: FaultServer, tmp_path: Path
) -> None:
    name = program.removesuffix(".py").replace("_", "")
    with ThreadPoolExecutor(2) as pool:  # two endpoints, two processes: the imports overlap
        clean_run = pool.submit(run_program, program, server, CLEAN, tmp_path / "clean", f"{name}clean")
        faulty_run = pool.submit(run_program, program, server, FAULTY, tmp_path / "faulty", f"{name}faulty")
        (clean, clean_dir), (faulty, faulty_dir) = clean_run.result(), faulty_run.result()
    clean_lines = clean.rstrip("\n").splitlines()
    faulty_lines = faulty.rstrip("\n").splitlines()
    assert clean_lines == ["FINAL", f"# task {name}clean", *DRAFT]  # the clean run went through untouched
    assert not pd.read_csv(clean_dir / "ground_truth.csv").shape[0]

    truth = pd.read_csv(faulty_dir / "ground_truth.csv")
    assert len(truth) == 1  # one message changed: the writer's one turn
    row = truth.iloc[0]
    assert (row.agent, row.turn) == ("writer", 1)
    assert row.original == "\n".join([f"# task {name}faulty", *DRAFT])
    # the table's injected text is what the framework handed the reviewer, byte for byte
    assert row.injected == received_by_reviewer(server, f"{name}faulty")
    lines = [int(x) for x in str(row.lines).split(";")]
    assert 0 < len(lines) < 7  # share 0.5 of the units (lines) of the draft
    # the faulty output differs from the clean one on those lines and nowhere else (the FINAL line shifts
    # the reviewer's copy by one)
    expected = [f"# task {name}faulty", *DRAFT]
    changed = [i + 1 for i, (a, b) in enumerate(zip(expected, faulty_lines[1:], strict=True)) if a != b]
    assert changed == lines
    assert all(INJECTED in faulty_lines[i] for i in lines)


def test_the_page_shows_each_program_whole() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for program in PROGRAMS:
        marker = f"<!-- example: examples/faults/{program} -->"
        assert marker in page, f"{program} has no section"
        block = page.split(marker, 1)[1].split("```python\n", 1)[1].split("\n```\n", 1)[0]
        assert block + "\n" == (EXAMPLES / program).read_text(encoding="utf-8")


def test_a_transport_fault_is_retried_by_the_framework_and_recorded(
    server: FaultServer, tmp_path: Path
) -> None:
    """A 504 on the writer's first request: the framework's client retries (its own behaviour, unchanged),
    the retry is the same turn's second attempt and goes through, so the output is the clean one and the
    ground truth holds exactly that one failed attempt."""
    timeout = {**CLEAN, "faults": [{"agent": "writer", "kind": "timeout", "turns": [1]}]}
    out, run_dir = run_program("openai_agents_team.py", server, timeout, tmp_path / "t", "agentstimeout")
    assert out.rstrip("\n").splitlines() == ["FINAL", "# task agentstimeout", *DRAFT]
    truth = pd.read_csv(run_dir / "ground_truth.csv")
    assert [tuple(r) for r in truth[["agent", "turn", "attempt", "kind"]].itertuples(index=False)] == [
        ("writer", 1, 1, "timeout")
    ]
