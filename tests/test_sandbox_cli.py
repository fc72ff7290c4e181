"""Without bubblewrap, HumanEval refuses in one line; ``--unsafe-local-exec`` runs, warns, and is recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llmpsych.collab.datasets import load_items
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer


def _mas(args: list[str], tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}  # an empty PATH: no bwrap to be found
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", "mas", "run", *args, "--no-progress", "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_humaneval_refuses_without_bubblewrap_and_runs_with_the_unsafe_flag(
    seed_data: Path, tmp_path: Path
) -> None:
    item = load_items("humaneval50", seed_data)[0].reference
    scripted = ScriptedCollaborator({item["prompt"]: item["prompt"] + item["canonical_solution"]})
    asked: list[int] = []

    def responder(body: dict) -> str:
        asked.append(1)
        return scripted(body)

    with FaultServer(responder=responder) as server:
        base = ["--system", "camel", "--dataset", "humaneval50", "--items", "1", "--data-dir", str(seed_data)]
        base += ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
        refused = _mas([*base, "--out", str(tmp_path / "refused")], tmp_path, "")
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "bubblewrap" in lines[0] and "apt-get install bubblewrap" in lines[0]
        assert asked == []  # refused before any model call
        unsafe = _mas([*base, "--unsafe-local-exec", "--out", str(tmp_path / "unsafe")], tmp_path, "")
    assert unsafe.returncode == 0, unsafe.stderr
    assert "WARNING: --unsafe-local-exec" in unsafe.stderr
    store = RunStore.in_dir(tmp_path / "unsafe")
    manifest = store.get_meta("manifest")
    store.close()
    assert manifest["config"]["options"]["unsafe_local_exec"] is True
    summary = json.loads((tmp_path / "unsafe" / "summary.json").read_text())
    assert summary["score"] == summary["score_openai_harness"] == 100.0
