"""Issue 14, a gap of class 6: a preset's run folders are llmpsych's own.

``llmpsych gamabench preset`` and ``llmpsych mas preset`` name a run folder per run below ``--out`` and resume
whatever run they find there. A symbolic link planted at such a folder (or at the model folder between)
made the run write into, or resume, the link's target; now it is one line naming the link, exit 2, before
anything is sent, and the target is left untouched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.testing.fault_server import FaultServer


def _llmpsych(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmpsych", *args], capture_output=True, text=True)


def _games(server: FaultServer, out: Path) -> subprocess.CompletedProcess[str]:
    return _llmpsych(
        "gamabench", "preset", "multiple-runs", "--model", "openai-compatible/m",
        "--base-url", server.base_url, "--game", "guessing", "--runs", "1", "--players", "2",
        "--rounds", "1", "--no-cache",
        "--no-progress", "--out", str(out),
    )  # fmt: skip


def _mas(server: FaultServer, out: Path, seed_data: Path) -> subprocess.CompletedProcess[str]:
    return _llmpsych(
        "mas", "preset", "main", "--systems", "mad", "--datasets", "ciar", "--items", "1",
        "--model", "openai-compatible/m", "--base-url", server.base_url, "--data-dir", str(seed_data),
        "--out", str(out),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "planted"),
    [("games", "openai-compatible_m/default"), ("games", "openai-compatible_m"), ("mas", "mad_ciar_none")],
)
def test_a_planted_link_at_a_preset_run_folder_is_refused(
    kind: str, planted: str, tmp_path: Path, seed_data: Path
) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    link = out / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(victim, target_is_directory=True)
    with FaultServer() as server:
        proc = _games(server, out) if kind == "games" else _mas(server, out, seed_data)
        assert sum(server.hits.values()) == 0
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in proc.stderr
    assert f"{link} is a symbolic link" in lines[0]
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]  # nothing written through the link


def test_a_real_preset_folder_still_runs(tmp_path: Path) -> None:
    with FaultServer() as server:
        proc = _games(server, tmp_path / "out")
        assert sum(server.hits.values()) >= 1
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "openai-compatible_m" / "default" / "run.sqlite").is_file()
