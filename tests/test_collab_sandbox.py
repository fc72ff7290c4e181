"""Hostile generated code is contained, scored as failed, and the framework keeps running."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from llmpsych.collab import sandbox
from llmpsych.collab.sandbox import Limits, SandboxPool, run_code

LIMITS = Limits(timeout_s=3.0, cpu_s=3, memory_bytes=256 << 20)


WARM = {"warm": True}


@pytest.fixture(autouse=True, params=["warm", "cold"])
def start(request: pytest.FixtureRequest) -> str:
    """Every containment test runs on a fork of the warm worker and on a fresh interpreter."""
    WARM["warm"] = request.param == "warm"
    return request.param


def run(code: str, limits: Limits = LIMITS):  # noqa: ANN201 - test helper
    async def once():  # noqa: ANN202
        pool = SandboxPool(1, limits, warm=WARM["warm"])
        try:
            return await pool.run(code)
        finally:
            pool.close()

    return asyncio.run(once()) if WARM["warm"] else asyncio.run(run_code(code, limits))


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


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (read from /proc, so no signal is needed)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _pid(stdout: str) -> int:
    # The host's PID: /proc is the host's, so /proc/self resolves there even inside a PID namespace.
    return int(stdout.split("PID ", 1)[1].split()[0])


ESCAPE = """import os, time
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        print('PID', os.readlink('/proc/self'), flush=True)
        time.sleep(3600)
    os._exit(0)
time.sleep(0.3)
"""

DAEMON = """import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print('PID', os.readlink('/proc/self'), flush=True)
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(3600)
    os._exit(0)
time.sleep(0.3)
"""


@pytest.fixture(params=[True, False], ids=["pidns", "subreaper"])
def containment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of keeping descendants: a PID namespace, and the subreaper fallback without it."""
    monkeypatch.setattr(sandbox, "USE_PID_NAMESPACE", request.param)
    return "pidns" if request.param else "subreaper"


def test_setsid_grandchild_holding_the_pipes_cannot_outlive_the_timeout(containment: str) -> None:
    # The grandchild leaves the process group and keeps stdout/stderr open; the program then blocks.
    limits = Limits(timeout_s=2.0, cpu_s=5)
    started = time.monotonic()
    result = run(ESCAPE + "time.sleep(3600)\n", limits)
    wall = time.monotonic() - started
    assert result.status == "timeout"
    assert wall < limits.timeout_s + 5  # containment bound, not a performance figure
    assert containment in result.isolation
    assert not _alive(_pid(result.stdout))


def test_setsid_grandchild_does_not_keep_a_finished_program_waiting(containment: str) -> None:
    # The program ends (and passes); what it left behind is killed and its pipes are not waited for.
    limits = Limits(timeout_s=2.0, cpu_s=5)
    started = time.monotonic()
    result = run(ESCAPE, limits)
    assert time.monotonic() - started < limits.timeout_s
    assert result.status == "passed" and result.seconds < limits.timeout_s
    assert not _alive(_pid(result.stdout))


def test_double_fork_daemon_with_closed_stdio_is_killed(containment: str) -> None:
    limits = Limits(timeout_s=2.0, cpu_s=5)
    started = time.monotonic()
    result = run(DAEMON, limits)
    assert time.monotonic() - started < limits.timeout_s
    assert result.status == "passed"
    assert not _alive(_pid(result.stdout))


def test_programs_do_not_share_random_state() -> None:
    # A warm worker's forks would repeat its generator's sequence unless each program reseeds.
    outputs = {run("import random\nprint(random.random())").stdout for _ in range(3)}
    assert len(outputs) == 3


def test_cancelled_execution_leaves_nothing_behind(start: str) -> None:
    async def cancel() -> int:
        pool = SandboxPool(1, LIMITS, warm=start == "warm")
        task = asyncio.ensure_future(pool.run(ESCAPE + "time.sleep(3600)\n"))
        pids: list[int] = []
        for _ in range(200):  # until the grandchild shows up in /proc
            await asyncio.sleep(0.05)
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _sleeper(int(p))]
            if pids:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pool.close()
        return pids[0]

    pid = asyncio.run(cancel())
    assert not _alive(pid)


def _sleeper(pid: int) -> bool:
    """A process of the ESCAPE program's grandchild kind (``nobody``, in a session of its own, sleeping)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except (OSError, IndexError):
        return False
    return (
        int(fields[3]) == pid
        and b"-I" in cmdline
        and fields[0] == b"S"
        and os.stat(f"/proc/{pid}").st_uid == 65534
    )


def test_a_dead_warm_worker_is_replaced_and_the_execution_retried() -> None:
    async def scenario() -> tuple[bool, int, int, bool]:
        pool = SandboxPool(1, LIMITS)
        assert (await pool.run("x = 1")).passed
        first = next(iter(pool._workers.values()))
        running = asyncio.ensure_future(pool.run("import time\ntime.sleep(0.5)\nprint('done')"))
        await asyncio.sleep(0.2)
        first.proc.kill()  # the worker this test started
        result = await running
        again = await pool.run("x = 2")
        second = next(iter(pool._workers.values()))
        pool.close()
        return result.passed and again.passed, first.proc.pid, second.proc.pid, second.proc.poll() is not None

    passed, first, second, stopped = asyncio.run(scenario())
    assert passed and first != second and stopped
