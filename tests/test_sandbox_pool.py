"""The warm workers: executions side by side, fresh random state, cancellation, a lost worker replaced."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.sandbox import Limits, Program, open_sandbox
from llmpsych.sandbox._pool import WorkerSandbox

pytestmark = pytest.mark.usefixtures("bubblewrap")


@pytest.fixture
def sandbox() -> Iterator[WorkerSandbox]:
    box = open_sandbox(2, Limits(timeout_s=2.0, cpu_s=3))
    yield box
    box.close()


def test_many_side_by_side_and_the_pool_survives(sandbox: WorkerSandbox) -> None:
    async def many() -> list[str]:
        sources = [
            "while True: pass",
            "assert True",
            "import os\nos.kill(1, 9)",
            "x = 1",
            "raise SystemExit(3)",
        ]
        results = await asyncio.gather(*(sandbox.run(Program(s)) for s in sources))
        return [r.status for r in results]

    assert asyncio.run(many()) == ["timeout", "passed", "failed", "passed", "failed"]


def test_programs_do_not_share_random_state(sandbox: WorkerSandbox) -> None:
    # Forks of one warm worker would repeat its generator's sequence unless each program reseeds.
    outputs = {sandbox.run_sync(Program("import random\nprint(random.random())")).stdout for _ in range(3)}
    assert len(outputs) == 3


def _named(name: str) -> bool:
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().strip() == name:
                return True
        except OSError:
            continue
    return False


def test_a_cancelled_execution_leaves_nothing_behind(sandbox: WorkerSandbox) -> None:
    name = "llmps" + secrets.token_hex(4)
    source = f"import ctypes, time\nctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)\ntime.sleep(3600)"

    async def cancel() -> bool:
        task = asyncio.ensure_future(sandbox.run(Program(source), Limits(timeout_s=30, cpu_s=30)))
        for _ in range(200):
            await asyncio.sleep(0.05)
            if _named(name):
                break
        seen = _named(name)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    assert asyncio.run(cancel())
    deadline = time.monotonic() + 5
    while _named(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _named(name)
    assert sandbox.run_sync(Program("print('next')")).passed


def test_a_dead_worker_is_replaced(sandbox: WorkerSandbox) -> None:
    assert sandbox.run_sync(Program("x = 1")).passed
    first = sandbox._idle[0]
    first.proc.kill()  # the worker this test started
    first.proc.wait()
    assert sandbox.run_sync(Program("print('again')")).stdout == "again\n"
    assert first not in sandbox._idle
