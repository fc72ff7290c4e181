"""A person at a real terminal (a pseudo-terminal): Ctrl-C at the prompt stops the run at once with the
resume hint; the resumed run asks only the unanswered rounds; the person is shown the rules, the round
reports and the question with the answers it accepts, not the model-facing JSON instruction."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from llmpsych.runs import RunStore

#: failure bounds, not timings: start-up imports can be slow on a busy machine
START_S = 120
STOP_S = 20


def _controlling_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin, so Ctrl-C (byte 0x03
    typed on the terminal) is delivered as SIGINT, as at a real terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``llmpsych ARGS`` with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self, args: list[str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llmpsych", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=_controlling_terminal,
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""  # everything the terminal showed
        self.unread = ""  # what expect() has not matched yet

    def expect(self, pattern: str, within: float) -> str:
        """Read until ``pattern`` (a regex) appears in the output not yet matched; return that output."""
        deadline = time.monotonic() + within
        while (match := re.search(pattern, self.unread)) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} within {within} s; the terminal showed:\n{self.unread[-3000:]}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    data = b""
                assert data, f"the output ended before {pattern!r}:\n{self.unread[-3000:]}"
                text = data.decode("utf-8", errors="replace")
                self.seen += text
                self.unread += text
        shown, self.unread = self.unread[: match.end()], self.unread[match.end() :]
        return shown

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, within: float) -> int:
        """Read the rest of the output until the process ends (at most ``within`` seconds); its exit code."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if not select.select([self.master], [], [], 0.2)[0]:
                if self.process.poll() is not None:
                    break
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:  # every copy of the terminal's other end is closed: the process ended
                data = b""
            if not data:
                break
            self.seen += data.decode("utf-8", errors="replace")
        try:
            return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.master)


PROMPT = r"Please type your answer for chosen_number: "


def test_ctrl_c_at_the_prompt_stops_at_once_and_resume_asks_only_what_was_not_answered(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "r"
    args = ["run", "--task", "gamabench", "--no-cache", "--out", str(run_dir)]
    args += ["--model", "openai-compatible/unused", "--base-url", "http://127.0.0.1:9/v1"]
    args += ["-O", "game=guessing", "-O", "players=2", "-O", "rounds=3", "-O", "runs=1"]
    args += ["-O", "seats=[human, 'fixed:50']"]
    first = Terminal(args)  # with the progress bar on: it must not hide the prompt
    shown = first.expect(PROMPT, START_S)
    assert (
        "round 1 =====" in shown and "[rules]" in shown and "picks a whole number from 0 up to 100" in shown
    )
    assert "Answer with chosen_number: integer between 0 and 100" in shown
    assert "JSON" not in shown and "{" not in shown  # the model-facing format instruction is not shown
    first.type("10\n")
    shown = first.expect(PROMPT, START_S)
    assert "round 2 =====" in shown and "the winning number was 10" in shown
    assert "(your answer: chosen_number 10)" in shown  # the player's own answer, not its JSON echo
    first.type("\x03")  # Ctrl-C, once
    code = first.finish(STOP_S)
    assert code == 130, first.seen[-2000:]
    assert f"llmpsych run --resume {run_dir}" in " ".join(first.seen.split()), first.seen[-2000:]

    store = RunStore.in_dir(run_dir)
    try:
        stored = {c.call_key: c.response["text"] for c in store.calls()}
    finally:
        store.close()
    assert stored == {"human:guessing-run01:p0:r1:number#0": "10"}

    second = Terminal(["run", "--resume", str(run_dir), "--no-progress"])
    shown = second.expect(PROMPT, START_S)
    assert "round 2 =====" in shown and "round 1 =====" not in shown  # round 1 is replayed, not asked
    second.type("20\n")
    shown = second.expect(PROMPT, START_S)
    assert "round 3 =====" in shown
    second.type("500\n")  # out of range: asked again, and told why (before: only that it "could not be used")
    shown = second.expect(PROMPT, START_S)
    assert "(the last answer could not be used: 500 is outside 0..100)" in shown
    second.type("30\n")
    assert second.finish(START_S) == 0, second.seen[-2000:]
    assert second.seen.count("=====") == 6  # three prompts (one a re-ask), two "=====" each

    store = RunStore.in_dir(run_dir)
    try:
        (unit,) = store.units()
    finally:
        store.close()
    assert unit.status == "done"
    assert [r["choices"] for r in unit.result["rounds"]] == [[10, 50], [20, 50], [30, 50]]
    # how each answer came, round 1's too (replayed from the store after the resume): typed, and the bot's
    hows = [[d["how"] for d in r["decisions"]] for r in unit.result["rounds"]]
    assert hows == [["typed", "bot"]] * 3
    seconds = [r["decisions"][0]["response_s"] for r in unit.result["rounds"]]
    assert all(s is not None and s >= 0 for s in seconds), seconds  # typed at once: may round to 0.0
    assert unit.result["rounds"][2]["decisions"][0]["refused"] == ["500"]  # the 500 typed before the 30
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "no model seats" in report and "openai-compatible/unused" not in report
