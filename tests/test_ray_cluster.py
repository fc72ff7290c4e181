"""``--executor ray`` on a real multi-node cluster: a head and a worker raylet started on loopback by the
recipe of docs/scale-out.md (tests/ray_cluster.py), with token authentication on; every driver is a
fresh ``llmpsych`` process (a cluster's token settings are per process)."""

from __future__ import annotations

import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _scripted(body: dict[str, Any]) -> str:
    from test_psychobench_task import positional_responder

    return positional_responder(body)


def test_relative_paths_reach_the_nodes_resolved(
    ray_cluster: RayCluster, tmp_path: Path, seed_data: Path
) -> None:
    """The documentation's forms from a repository folder: ``--data-dir ../shared/seed-data`` and a
    relative ``--out`` for a run whose actors sit on both nodes (two actors of two CPUs on nodes of two
    CPUs; each node started in a folder of its own, neither the driver's), and a
    sweep of two runs with no ``--out`` at all (the default ``llmpsych-runs/``): every path is resolved by
    the driver, so both work on storage every node sees."""
    ray_cluster.ensure_workers(1)
    assert ray_cluster.token_file.stat().st_mode & 0o077 == 0  # the recipe's token: its user's only
    work = tmp_path / "repo"
    work.mkdir()
    (tmp_path / "shared").symlink_to(seed_data.parent)
    with FaultServer(responder=_scripted) as server:
        common = [
            "--base-url",
            server.base_url,
            "--no-cache",
            "--no-progress",
            "--data-dir",
            "../shared/seed-data",
        ]
        common += ["--scale", "DTDD", "--executor", "ray", "--ray-address", ray_cluster.address]
        run = llmpsych(
            ray_cluster, "psychobench", "run", "-m", "openai-compatible/a", *common, "--actors", "2",
            "--actor-cpus", "2", "--out", "runs/one", cwd=work,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert len(run.stderr.strip().splitlines()) <= 2, run.stderr
        stores = list((work / "runs" / "one").rglob("run.sqlite"))
        assert len(stores) == 1 and set(_done(stores[0].parent)) == {"done"}, stores
        sweep = llmpsych(
            ray_cluster, "psychobench", "run", "-m", "openai-compatible/a", "-m", "openai-compatible/b",
            *common, "--actors", "2", cwd=work,
        )  # fmt: skip
        assert sweep.returncode == 0, sweep.stderr
    folders = sorted(p for p in (work / "llmpsych-runs").rglob("run.sqlite"))
    assert len(folders) == 2 and all(set(_done(p.parent)) == {"done"} for p in folders), folders


def test_a_driver_without_the_clusters_token_is_refused_in_one_line(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """No token (authentication off in the driver) or another cluster's token: one line that says so, at
    once, and no run folder; a token file readable by others is made private before it is used."""
    wrong = tmp_path / "other-cluster-token"
    wrong.write_text("0" * 64)
    wrong.chmod(0o600)
    flags = ["--task", "echo", "--model", "openai-compatible/m", "--base-url", "http://127.0.0.1:9/v1"]
    flags += ["--no-progress", "-O", "units=1", "--executor", "ray", "--ray-address", ray_cluster.address]
    cases = {
        "off": ({"RAY_AUTH_MODE": "disabled"}, "token authentication off"),
        "wrong": ({"RAY_AUTH_TOKEN_PATH": str(wrong)}, f"the token this process gives ({wrong}) is not"),
    }
    for name, (env, why) in cases.items():
        done = llmpsych(ray_cluster, "run", *flags, "--out", tmp_path / name, cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and f"the Ray cluster at {ray_cluster.address} refused" in lines[0], lines
        assert why in lines[0] and "RAY_AUTH_MODE=token" in lines[0], lines
        assert not (tmp_path / name).exists()
    shared = tmp_path / "readable-token"
    shared.write_bytes(ray_cluster.token_file.read_bytes())
    shared.chmod(0o644)
    done = llmpsych(
        ray_cluster, "run", *flags, "--actors", "1", "--out", tmp_path / "ok", cwd=tmp_path,
        env={"RAY_AUTH_TOKEN_PATH": str(shared)},
    )  # fmt: skip
    assert f"the Ray token file {shared} was readable by other users" in done.stderr, done.stderr
    assert shared.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "ok" / "run.sqlite").is_file()


def test_the_private_instance_writes_its_token_file_for_its_owner_only(tmp_path: Path) -> None:
    """``--executor ray`` without an address turns on Ray's token authentication, and Ray writes a token
    to ~/.ray/auth_token with the process's umask (022: readable by every user); llmpsych's is 600."""
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "run", "--task", "echo", "--model", "openai-compatible/m",
         "--base-url", "http://127.0.0.1:9/v1", "--no-progress", "-O", "units=1", "--executor", "ray",
         "--actors", "1", "--out", str(tmp_path / "r")],
        env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)},
        capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(0o022),  # noqa: PLW1509
    )  # fmt: skip
    token = home / ".ray" / "auth_token"
    assert token.is_file(), done.stderr
    assert token.stat().st_mode & 0o777 == 0o600


def test_a_data_folder_the_nodes_do_not_see_is_named_in_one_line(
    ray_cluster: RayCluster, tmp_path: Path, seed_data: Path
) -> None:
    """The driver sees the data folder in a mount of its own (a private mount namespace: storage the
    nodes do not share); the actors say which path their node lacks, in one line, before any request."""
    private = tmp_path / "private"
    private.mkdir()
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m (a private mount namespace) is not permitted here")
    with FaultServer(responder=_scripted) as server:
        command = [sys.executable, "-m", "llmpsych", "psychobench", "run", "-m", "openai-compatible/a"]
        command += ["--base-url", server.base_url, "--no-cache", "--no-progress", "--scale", "DTDD"]
        command += ["--data-dir", "private/data", "--out", "out", "--executor", "ray"]
        command += ["--ray-address", ray_cluster.address, "--actors", "1"]
        script = (
            f"mount -t tmpfs none {private} && mkdir {private}/data && "
            f"mount --bind {seed_data} {private}/data && exec {shlex.join(command)}"
        )
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script], cwd=tmp_path,
            env={**ray_cluster.env, "COLUMNS": "250"}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert sum(server.hits.values()) == 0
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"--data-dir {private}/data is not on the node of a Ray actor" in lines[0]
    assert "put it on storage every node sees at the same path" in lines[0]


def test_a_killed_worker_node_leaves_no_ray_process_behind(ray_cluster: RayCluster) -> None:
    """A node taken down as a lost machine goes: its raylet, its agents (Ray's dashboard and runtime-env
    agents, each a listening server) and its workers all end; the cluster's other nodes stay."""
    ray_cluster.ensure_workers(1)
    node = ray_cluster.start_worker()
    names = {pid: _name(pid) for pid in node.pids()}
    assert any(name.startswith("raylet") for name in names.values()), names
    assert any("Agent" in name for name in names.values()), names
    ray_cluster.kill_worker(len(ray_cluster.workers) - 1)
    assert not [pid for pid in names if Path(f"/proc/{pid}").exists() and _name(pid) == names[pid]]
    assert ray_cluster.head is not None and ray_cluster.head.pids() and ray_cluster.workers[0].pids()


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().rsplit("/", 1)[-1]
    except OSError:
        return ""
