"""``--executor ray`` on a real multi-node cluster: a head and a worker raylet started on loopback by the
recipe of docs/scale-out.md (tests/ray_cluster.py), with token authentication on; every driver is a
fresh ``llmpsych`` process (a cluster's token settings are per process)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.testing.fault_server import FaultServer

pytestmark = pytest.mark.ray
pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")

from ray_cluster import RayCluster  # noqa: E402


def llmpsych(
    cluster: RayCluster, *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``llmpsych ARGS`` as a user on the cluster runs it: from ``cwd``, with the driver's environment."""
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *map(str, args)],
        cwd=cwd,
        env={**cluster.env, "COLUMNS": "250", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _done(run_dir: Path) -> list[str]:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return [row[0] for row in db.execute("SELECT status FROM units ORDER BY unit_id")]


def test_a_run_uses_both_nodes_of_the_recipes_cluster(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """Two actors of two CPUs each on nodes of two CPUs: one actor on the head, one on the worker raylet;
    the token file the recipe made is readable by its user only."""
    assert ray_cluster.token_file.stat().st_mode & 0o077 == 0
    with FaultServer() as server:
        flags = ["--task", "echo", "--model", "openai-compatible/m", "--base-url", server.base_url]
        flags += ["--no-cache", "--no-progress", "-O", "units=6", "-O", "parallel=2"]
        ray_flags = ["--executor", "ray", "--ray-address", ray_cluster.address, "--actors", "2"]
        done = llmpsych(
            ray_cluster, "run", *flags, *ray_flags, "--actor-cpus", "2", "--out", tmp_path / "r", cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert _done(tmp_path / "r") == ["done"] * 6
