"""A ``llmpsych gamabench host`` process for the web tests, without a browser: the session, exposure and
people tests use it too, so a missing playwright or Chromium never skips them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import ClassVar

#: Upper bound of the host's start-up (its monitor line): generous for a loaded machine.
STARTUP_S = 240.0


class Host:
    """One ``llmpsych gamabench host`` process, its printed links read as they come."""

    #: Every host a test started: tests/conftest.py ends those still running after each test, so a test
    #: that fails between start and stop leaves no server behind (it would outlive pytest).
    started: ClassVar[list[Host]] = []

    def __init__(self, args: list[str]) -> None:
        Host.started.append(self)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "COLUMNS": "400"}
        command = [sys.executable, "-m", "llmpsych", "gamabench", "host", *args]
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.lines: list[str] = []
        self.links: dict[int, str] = {}
        self.monitor = ""
        self.room = ""
        self.ready = threading.Event()
        self.over = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        # bounded, and ended early by the event (the monitor line) or by the process ending
        assert self.ready.wait(STARTUP_S), (
            self.proc.stderr.read() if self.proc.poll() is not None else self.lines
        )

    def close(self) -> None:
        """End the process if it still runs (a failed test leaves no server behind)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            text = line.strip()
            if text.startswith("player ") and "/play/" in text:
                self.links[int(text.split()[1])] = text.rsplit(" ", 1)[1]
            if text.startswith("room"):
                self.room = text.rsplit(" ", 1)[1]
            if text.startswith("monitor"):
                self.monitor = text.rsplit(" ", 1)[1]
                self.ready.set()
            if text.startswith("the game is over"):
                self.over.set()
        self.ready.set()
        self.over.set()
