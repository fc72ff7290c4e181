"""The worked examples of docs/extending.md, run as written against a scripted OpenAI-compatible server.

Each block marked ``<!-- extending: NAME -->`` is extracted from the page; the only change made to it is
the model: ``local/qwen2.5-0.5b`` becomes the scripted server (``openai-compatible/scripted`` with
``LLMPSYCH_BASE_URL``), so the examples run in seconds and their answers are known."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.testing.fault_server import FaultServer

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
MARKED = re.compile(r"<!-- extending: ([\w-]+) -->\n```(\w+)\n(.*?)\n```", re.S)


def _blocks() -> dict[str, tuple[str, str]]:
    return {name: (lang, body) for name, lang, body in MARKED.findall(PAGE.read_text(encoding="utf-8"))}


def _scripted(model_text: str) -> str:
    return model_text.replace("local/qwen2.5-0.5b", "openai-compatible/scripted")


def _answer(body: dict) -> str:
    """Three-item scale answers for the questionnaire, a final answer line for everything else."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if "I finish what I begin" in prompt:
        return "1: 4\n2: 2\n3: 5"
    if "Heads or tails?" in prompt:
        return "Heads."
    return "I have thought about it.\nAnswer: 42"


def _env(server: FaultServer, folder: Path, seed_data: Path) -> dict[str, str]:
    path = os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])
    return {
        **os.environ,
        "LLMPSYCH_BASE_URL": server.base_url,
        "LLMPSYCH_DATA_DIR": str(seed_data),
        "LLMPSYCH_CACHE_DIR": str(folder / "cache"),
        "PYTHONPATH": path,
        "COLUMNS": "200",
    }


def _run_python(
    code: str, folder: Path, seed_data: Path
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """``python -c CODE`` in ``folder`` against a scripted server; the process and the request bodies it
    sent."""
    with FaultServer(responder=_answer) as server:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=folder,
            env=_env(server, folder, seed_data),
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done, server.bodies


def test_the_page_marks_every_worked_example() -> None:
    assert set(_blocks()) >= {
        "questionnaire",
        "mas-system-module",
        "mas-system-run",
        "report",
        "task-module",
        "task-run",
    }


def test_a_questionnaire_is_one_data_file(tmp_path: Path, seed_data: Path) -> None:
    lang, script = _blocks()["questionnaire"]
    assert lang == "bash"
    with FaultServer(responder=_answer) as server:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", _scripted(script)],
            cwd=tmp_path,
            env={
                **_env(server, tmp_path, seed_data),
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    scores = (tmp_path / "runs" / "grit" / "openai-compatible_scripted" / "scores.csv").read_text()
    assert "Perseverance" in scores


def test_a_multi_agent_system_is_one_module_and_one_line(tmp_path: Path, seed_data: Path) -> None:
    blocks = _blocks()
    (tmp_path / "pair_system.py").write_text(blocks["mas-system-module"][1], encoding="utf-8")
    done, asked = _run_python(_scripted(blocks["mas-system-run"][1]), tmp_path, seed_data)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line.strip() for line in done.stdout.splitlines()]
    assert "none 2 items done" in printed and "autoinject 2 items done" in printed
    assert (
        len(asked) >= 2 * 3
    )  # two items x (draft, review, final answer); the faulty run may reuse the cache
    transcript = (tmp_path / "runs" / "pair-autoinject").rglob("*.md")
    assert any("reviewer" in p.read_text(encoding="utf-8") for p in transcript)

    # the report example reads that run through the run record and writes Markdown and HTML beside it
    (tmp_path / "latency.py").write_text(blocks["report"][1], encoding="utf-8")
    run = tmp_path / "runs" / "pair-none"
    report = subprocess.run(
        [sys.executable, "latency.py", str(run)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert report.returncode == 0, report.stdout + report.stderr
    page = (run / "latency.md").read_text(encoding="utf-8")
    assert "Latency of mas on openai-compatible/scripted" in page
    assert "| subject |       6 |" in page  # both agents ask the one model role: 2 items x 3 calls
    assert (run / "latency.html").is_file()


def test_a_benchmark_is_one_module_and_one_line(tmp_path: Path, seed_data: Path) -> None:
    blocks = _blocks()
    (tmp_path / "coin_task.py").write_text(blocks["task-module"][1], encoding="utf-8")
    done, asked = _run_python(_scripted(blocks["task-run"][1]), tmp_path, seed_data)
    assert done.returncode == 0, done.stdout + done.stderr
    # the run's temperature reaches every call (the task's max_tokens=5 is its default, kept as no
    # run parameter sets one); the stored config and load_runs say what was sent
    assert len(asked) == 6 and {(b["temperature"], b["max_tokens"]) for b in asked} == {(0.7, 5)}
    import llmpsych

    run = llmpsych.load_runs(tmp_path / "runs" / "coin").runs.iloc[0]
    assert run["temperature"] == 0.7 and run["params_sent"] == "temperature=0.7; max_tokens=5"
    assert run["params_fixed_by_task"] == ""
    printed = [line.split() for line in done.stdout.splitlines()]
    assert ["heads", "100.0"] in printed and ["tails", "0.0"] in printed
    exported = subprocess.run(
        [sys.executable, "-m", "llmpsych", "export", "runs/coin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "Heads or tails?" in (tmp_path / "runs" / "coin" / "export" / "transcripts.jsonl").read_text(
        encoding="utf-8"
    )


def test_a_half_written_system_is_refused_when_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmpsych.collab.systems import SYSTEMS, register_system
    from llmpsych.errors import ConfigError

    (tmp_path / "half_system.py").write_text(
        "from llmpsych.collab.systems.base import System\n"
        "class Half(System):\n    name = 'half'\n    structure = 'flat'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="does not define"):
        register_system("half", "half_system:Half")
    with pytest.raises(ConfigError, match="cannot import"):
        register_system("gone", "no_such_module_here:Gone")
    with pytest.raises(ConfigError, match="not a subclass"):
        register_system("odd", "pathlib:Path")
    assert not {"half", "gone", "odd"} & set(SYSTEMS)
