"""A real multi-node Ray cluster on this machine, started by the recipe of docs/scale-out.md.

The page's two blocks (marked ``<!-- ray-cluster: head -->`` and ``<!-- ray-cluster: worker -->``) run
with bash as written, each node in its own process group and working directory, with three changes a
shared test machine needs: a free port instead of 6379, a ``HOME`` of the cluster's own (so the token
``ray get-auth-token --generate`` writes is this cluster's, not the user's), and flags that give the
cluster its own folder (``--temp-dir``) and free ports for the servers that have fixed default ports (two
clusters on one machine would collide there). Every Ray process of a node stays in the process group of
its ``ray start``, so :meth:`RayCluster.kill_worker` takes the whole node down at once (raylet, its
agents and its workers: nothing of it outlives the node, still listening) and :meth:`RayCluster.stop`
leaves nothing behind. Never ``ray stop``: it would stop every Ray of this user on the machine.

Use the session fixture ``ray_cluster`` (made available to every test module by conftest.py): one
cluster for all the tests that need one, since a cluster takes seconds to start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "scale-out.md"
#: The port the recipe names; replaced by a free one.
RECIPE_PORT = "6379"
#: Bounded waits (seconds): one node's ``ray start``, and its processes' exit after SIGKILL.
START_TIMEOUT_S = 180.0
EXIT_TIMEOUT_S = 30.0


def recipe(role: str) -> str:
    """The text of the page's bash block marked ``<!-- ray-cluster: ROLE -->``."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- ray-cluster: {role} -->\s*\n```bash\n(.*?)\n```", text, re.S)
    assert match, f"{DOC} has no block marked <!-- ray-cluster: {role} -->"
    return match.group(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _isolating_flags(head: bool) -> str:
    """Free ports for the servers with fixed defaults (dashboard 8265, agent 52365, ...)."""
    names = ["--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port"]
    names += ["--metrics-export-port", *(["--dashboard-port"] if head else [])]
    return " ".join(f"{name} {_free_port()}" for name in names)


def _processes() -> dict[int, tuple[int, int]]:
    """Every live (not zombie) process: pid -> (parent pid, process group)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def _node_pids(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` and all their descendants (Ray puts each worker process
    in a process group of its own, under the raylet)."""
    table = _processes()
    found = {pid for pid, (_, group) in table.items() if group == pgid}
    grew = True
    while grew:
        more = {pid for pid, (parent, _) in table.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


@dataclass
class Node:
    """One node: the process group of its ``ray start``, its working directory and its log."""

    pgid: int
    cwd: Path
    log: Path

    def pids(self) -> list[int]:
        """Every live process of the node: raylet, agents, Ray's workers (and a head's servers)."""
        return _node_pids(self.pgid)

    def kill(self) -> None:
        """SIGKILL every process of the node and wait (bounded) until none is left."""
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while left := self.pids():
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise AssertionError(f"processes of a killed Ray node still run: {left}")
            time.sleep(0.05)  # polling the processes' state, not waiting for an event by time


@dataclass
class RayCluster:
    """A head and worker raylets on loopback (see the module docstring)."""

    root: Path
    address: str
    #: The environment of the nodes (the cluster's HOME, token auth on, this checkout importable).
    node_env: dict[str, str]
    #: The environment a driver needs: token auth on, the cluster's token file, this checkout.
    env: dict[str, str]
    token_file: Path
    head: Node | None = None
    workers: list[Node] = field(default_factory=list)

    def _run(self, role: str, script: str, cwd: Path) -> Node:
        cwd.mkdir(parents=True, exist_ok=True)
        log = self.root / f"{role}-{len(self.workers)}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                ["bash", "-c", f"set -e\n{script}\n"], cwd=cwd, env=self.node_env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        node = Node(process.pid, cwd, log)
        try:
            code = process.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            node.kill()
            raise AssertionError(
                f"ray start ({role}) took over {START_TIMEOUT_S:g} s:\n{log.read_text()}"
            ) from None
        if code != 0:
            node.kill()
            raise AssertionError(f"ray start ({role}) failed ({code}):\n{log.read_text()}")
        return node

    def start_head(self) -> None:
        script = recipe("head").replace(RECIPE_PORT, self.address.rsplit(":", 1)[1])
        script = _with_flags(script, f"--temp-dir {self.root / 't'} {_isolating_flags(head=True)}")
        self.head = self._run("head", script, self.root / "head-cwd")

    def start_worker(self, cwd: Path | None = None) -> Node:
        """Another worker raylet, started by the recipe's worker block in ``cwd`` (default: a folder of
        its own, not the head's nor the test's)."""
        script = recipe("worker").replace(RECIPE_PORT, self.address.rsplit(":", 1)[1])
        script = _with_flags(script, _isolating_flags(head=False))
        node = self._run("worker", script, cwd or self.root / f"worker-{len(self.workers)}-cwd")
        self.workers.append(node)
        return node

    def kill_worker(self, index: int = 0) -> Node:
        """Take worker ``index`` down as a lost machine goes: every process of the node at once."""
        node = self.workers.pop(index)
        node.kill()
        return node

    def stop(self) -> None:
        for node in [*self.workers, *([self.head] if self.head else [])]:
            with contextlib.suppress(AssertionError):
                node.kill()
        self.workers, self.head = [], None
        shutil.rmtree(self.root, ignore_errors=True)


def _with_flags(script: str, flags: str) -> str:
    """``script`` with ``flags`` added to its ``ray start`` command (continuation lines joined)."""
    joined = script.replace("\\\n", " ")
    lines = [f"{line} {flags}" if re.match(r"\s*ray start\b", line) else line for line in joined.splitlines()]
    assert sum(bool(re.match(r"\s*ray start\b", line)) for line in lines) == 1, script
    return "\n".join(lines)


def start_cluster(workers: int = 1) -> RayCluster:
    """A head and ``workers`` worker raylets; stop it with :meth:`RayCluster.stop`."""
    root = Path(tempfile.mkdtemp(prefix="rc-", dir="/tmp"))  # short: Ray's socket paths are limited
    root.chmod(0o700)
    home = root / "home"
    home.mkdir()
    bin_dir = Path(sys.executable).parent  # this interpreter's `ray`
    src = str(ROOT / "src")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "LLMPSYCH_RAY"))}
    base["PATH"] = f"{bin_dir}{os.pathsep}{base.get('PATH', '')}"
    base["PYTHONPATH"] = os.pathsep.join([src, *[p for p in [base.get("PYTHONPATH")] if p]])
    base["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in base["PYTHONPATH"].split(os.pathsep))
    node_env = {**base, "HOME": str(home)}
    token = home / ".ray" / "auth_token"
    env = {**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    head_ip = re.search(r"--node-ip-address (\S+)", recipe("head"))
    assert head_ip, "the recipe's head block states its --node-ip-address"
    cluster = RayCluster(root, f"{head_ip.group(1)}:{_free_port()}", node_env, env, token)
    try:
        cluster.start_head()
        for _ in range(workers):
            cluster.start_worker()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """One real multi-node cluster (a head and one worker raylet) for the whole test session."""
    cluster = start_cluster(workers=1)
    try:
        yield cluster
    finally:
        cluster.stop()
