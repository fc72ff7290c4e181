"""Hostile generated code is contained, scored as failed, and the framework keeps running."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from llmpsych.collab.sandbox import Limits, SandboxPool, run_code

LIMITS = Limits(timeout_s=3.0, cpu_s=3, memory_bytes=256 << 20)


def run(code: str, limits: Limits = LIMITS):  # noqa: ANN201 - test helper
    return asyncio.run(run_code(code, limits))


def test_plain_code_passes_and_failures_fail() -> None:
    assert run("assert sum([1, 2]) == 3\nprint('ok')").passed
    result = run("assert 1 == 2")
    assert result.status == "failed" and "AssertionError" in result.stderr


def test_early_exit_is_not_a_pass() -> None:
    assert not run("import sys\nsys.exit(0)\nassert False").passed
    assert not run("import os\nos._exit(0)").passed


@pytest.mark.parametrize(
    "code",
    [
        "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)",
        "import _socket\n_socket.socket().connect(('127.0.0.1', 9))",
    ],
)
def test_network_is_refused(code: str) -> None:
    result = run(code)
    assert result.status == "failed"
    assert "netns" in ",".join(result.isolation) or "audit" in result.isolation


def test_writes_outside_the_working_directory_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    result = run(f"open({str(target)!r}, 'w').write('x')")
    assert result.status == "failed"
    assert not target.exists()
    assert run("open('inside.txt', 'w').write('x')\nassert open('inside.txt').read() == 'x'").passed


def test_fork_bomb_is_contained() -> None:
    result = run("import os\nwhile True:\n    os.fork()")
    assert not result.passed
    assert run("print('still here')").passed


def test_infinite_loop_is_killed_on_timeout() -> None:
    result = run("while True:\n    pass", Limits(timeout_s=1.0, cpu_s=5))
    assert result.status == "timeout" and result.seconds < 3


def test_unbounded_allocation_fails() -> None:
    result = run("chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))")
    assert not result.passed


def test_subprocesses_and_huge_files_are_refused() -> None:
    assert not run("import subprocess\nsubprocess.run(['true'])").passed
    assert not run("open('big', 'w').write('x' * (1 << 22))", Limits(file_bytes=1 << 20)).passed


def test_pool_runs_many_side_by_side_and_survives() -> None:
    async def many() -> list[bool]:
        pool = SandboxPool(2, LIMITS)
        codes = ["while True: pass", "assert True", "import os\nos.kill(1, 9)", "x = 1"]
        return [r.passed for r in await asyncio.gather(*(pool.run(c, Limits(timeout_s=1)) for c in codes))]

    assert asyncio.run(many()) == [False, True, False, True]
    assert os.getpid() > 0
