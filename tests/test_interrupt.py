"""Ctrl-C stops a run on the embedded model at once (first-hour issue, item 4).

Before, the llama.cpp calls ran on the event loop's default executor, which ``asyncio.run`` joins on the
way out together with every call queued for it: Ctrl-C on a BFI run waited 69 s (load 12) with nothing
printed. Now each call has a daemon thread of its own that a cancelled run abandons (its unit is not done;
``--resume`` asks again), and the engine says at once that it is stopping."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from llmpsych.models import catalog
from llmpsych.models.embedded import EmbeddedBackend, EmbeddedSettings, load_embedded

pytestmark = pytest.mark.model
SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"
LONG = {
    "messages": [{"role": "user", "content": "Write a long story about a lighthouse keeper, in detail."}],
    "max_tokens": 120,
    "temperature": 0,
}


def calls_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "llmpsych-embedded-call" and t.is_alive()]


def test_a_cancelled_embedded_call_is_abandoned_not_awaited() -> None:
    backend = EmbeddedBackend(load_embedded(catalog.model_file("qwen2.5-0.5b"), EmbeddedSettings()))

    async def ask_then_cancel() -> None:
        call = asyncio.ensure_future(backend.send(LONG))
        while not calls_alive():  # the llama.cpp call has started in its own thread
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(ask_then_cancel())
    # asyncio.run has returned while llama.cpp still decodes the 120 tokens nobody waits for: with the
    # default executor it joined that call first, so no call thread was left alive here.
    alive = calls_alive()
    assert alive, "asyncio.run waited for the abandoned llama.cpp call"
    for thread in alive:
        assert thread.daemon  # never holds the interpreter's exit
        thread.join(timeout=600)  # let it end before the next test uses the model


def test_ctrl_c_in_a_real_terminal_says_it_is_stopping_and_exits_130(tmp_path: Path) -> None:
    run = tmp_path / "bfi"
    command = [sys.executable, "-m", "llmpsych", "run", "--task", "psychobench", "-O", "scale=[BFI]"]
    command += ["-O", "runs=2", "--data-dir", str(SEED_DATA), "--out", str(run)]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI in a terminal of its own
        os.execv(sys.executable, command)
    screen = b""

    def read(timeout: float) -> bool:
        nonlocal screen
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            try:
                screen += os.read(fd, 65536)
            except OSError:  # the terminal closed: the child has exited
                return False
        return True

    store = run / "run.sqlite"
    pressed = False
    status: int | None = None
    for _ in range(2400):  # bounded: at most ~20 minutes of 0.5 s reads on a very busy machine
        if not read(0.5):
            break
        if not pressed and store.is_file():
            with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
                try:
                    running = db.execute("SELECT COUNT(*) FROM units WHERE status='running'").fetchone()[0]
                except sqlite3.OperationalError:  # the schema is still being made
                    running = 0
            if running:  # a unit has started: its llama.cpp call is in flight
                os.write(fd, b"\x03")
                pressed = True
        reaped, code = os.waitpid(pid, os.WNOHANG)
        if reaped:
            status = code
            break
    else:
        os.kill(pid, 9)
        pytest.fail("the run neither finished nor stopped")
    while read(0.2):
        pass
    if status is None:
        status = os.waitpid(pid, 0)[1]
    text = screen.decode("utf-8", "replace")
    assert pressed, text
    assert os.waitstatus_to_exitcode(status) == 130, text
    assert "stopping: saving the answers received so far; calls in flight are abandoned" in text
    assert f"continue with: llmpsych run --resume {run}" in text.replace("\r\n", " ").replace("\n", " ")
