"""Terminal and report output are inert (issue 14, class 8): what servers, models and file names say is
shown, never run: no terminal escapes or Rich markup on the console, no formulas in CSV cells, no broken
Markdown tables, no script or outside image in HTML pages."""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd

from llmpsych.errors import terminal_text
from llmpsych.report.files import neutralise_cell, write_csv
from llmpsych.report.html import markdown_to_html
from llmpsych.report.markdown import table
from llmpsych.report.terminal import InertConsole
from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli as _cli

#: Clear screen, clipboard write (OSC 52), hyperlink (OSC 8), bell, carriage-return overwrite, one-byte
#: CSI (U+009B), a bidi override, and Rich markup.
HOSTILE = (
    "[bold red]PWNED[/bold red] \x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://e.example\x1b\\click\x1b]8;;\x1b\\"
    "\rfake ok\x9b31m\u202e [link=https://evil.example]x[/link]"
)
CONTROL_CHARS = ["\x1b", "\x07", "\r", "\x9b", "\u202e"]


class _HostileErrors(BaseHTTPRequestHandler):
    """Answers every request with HTTP 400 and a hostile error message."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": HOSTILE}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve_hostile_errors() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HostileErrors)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _assert_inert(output: str, styled: bool = False, markup: str = "[bold red]PWNED[/bold red]") -> None:
    if styled:  # Rich's own colours (SGR: ESC [ ... m) are allowed; then no other ESC may be left
        assert "\x1b[" in output, "styled output was not on"
        output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    for char in CONTROL_CHARS:
        assert char not in output, (char, output)
    assert markup in output  # shown as text, not applied


def test_a_servers_hostile_error_is_printed_inert(tmp_path: Path) -> None:
    server = _serve_hostile_errors()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        args = ["run", "--task", "echo", "-O", "units=1", "--model", "openai-compatible/m", "--base-url", url]
        args += ["--no-cache", "--no-progress", "--out"]
        plain = _cli(*args, str(tmp_path / "plain"))
        assert plain.returncode == 1 and "failed" in plain.stderr, plain.stderr
        _assert_inert(plain.stderr)
        coloured = _cli(*args, str(tmp_path / "coloured"), env={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
        assert coloured.returncode == 1
        _assert_inert(coloured.stderr, styled=True)
        test = _cli("models", "test", "openai-compatible/m", "--base-url", url)
        assert test.returncode != 0 and "PWNED" in test.stderr, test.stderr
        _assert_inert(test.stderr)
    finally:
        server.shutdown()
        server.server_close()


def test_a_hostile_file_name_in_an_error_is_printed_inert(tmp_path: Path) -> None:
    name = "\x1b]52;c;cHduZWQ=\x07[bold red]PWNED[blink]\r.toml"  # no "/" in a file name
    config = tmp_path / name
    config.write_bytes(b"task = 5\n")
    result = _cli("run", str(config))
    assert result.returncode == 2, result.stderr
    _assert_inert(result.stderr, markup="[bold red]PWNED[blink]")


def test_terminal_text_and_the_inert_console_keep_text_but_drop_controls() -> None:
    assert terminal_text("a\x1b[31mb\tc\nd\x07", markup=False) == "a[31mb\tc\nd"
    assert terminal_text("x [b]y[/b]") == "x \\[b]y\\[/b]"
    buffer = io.StringIO()
    console = InertConsole(file=buffer, force_terminal=True, width=200)
    from rich.table import Table

    grid = Table()
    grid.add_column("reply")
    grid.add_row("p\x1b[2Jq\x1b]52;c;eA==\x07")
    console.print("[bold]ok[/bold]", "r\x1b]8;;https://e\x1b\\s")
    console.print(grid)
    out = buffer.getvalue()
    assert "\x1b[1mok" in out  # the console's own styling still works
    assert "\x1b[2J" not in out and "\x1b]" not in out and "\x07" not in out
    assert "p[2Jq]52;c;eA==" in out


# -- CSV -----------------------------------------------------------------------------------------------
FORMULAS = [
    '=HYPERLINK("https://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\tx",
    "\r=1",
]


def test_csv_text_cells_that_start_a_formula_are_neutralised_and_numbers_stay_numbers(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "answer": FORMULAS + ["-5", "+0.25", "-", "plain"],
            "score": [-5, 3, -1, 0, 2, 1, -7, 8, 9, 10],
            "ratio": [-0.5] * 10,
        }
    )
    path = write_csv(frame, tmp_path / "t.csv")
    rows = list(csv.reader(path.open(newline="")))
    answers = [r[0] for r in rows[1:]]
    assert answers[:6] == ["'" + f for f in FORMULAS]
    assert answers[6:] == ["-5", "+0.25", "-", "plain"]  # plain numbers and a lone "-" are data
    assert [r[1] for r in rows[1:]][:3] == ["-5", "3", "-1"] and rows[1][2] == "-0.5"
    back = pd.read_csv(path)
    assert back["score"].dtype.kind == "i" and back["ratio"].tolist() == [-0.5] * 10
    assert neutralise_cell(-5) == -5 and neutralise_cell(None) is None


def test_export_neutralises_model_replies_in_csv_and_keeps_them_exact_in_jsonl(tmp_path: Path) -> None:
    def responder(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        index = int(text.split()[1])  # "unit <i> seat 0: say something"
        return FORMULAS[index % len(FORMULAS)]

    with FaultServer(responder=responder) as server:
        config = parse_run_config(
            {
                "task": "echo",
                "model": "openai-compatible/m",
                "base_url": server.base_url,
                "cache": False,
                "options": {"units": len(FORMULAS)},
            }
        )
        start_run(config, tmp_path / "run", False)
    result = _cli("export", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    export = tmp_path / "run" / "export"
    with (export / "calls.csv").open(newline="") as handle:
        answers = {row["unit_id"]: row["answer"] for row in csv.DictReader(handle)}
    assert sorted(answers.values()) == sorted("'" + f for f in FORMULAS)
    jsonl = [json.loads(line) for line in (export / "transcripts.jsonl").read_text().splitlines()]
    assert sorted(c["response"]["text"] for c in jsonl) == sorted(
        FORMULAS
    )  # exact where no spreadsheet reads


# -- Markdown and HTML ----------------------------------------------------------------------------------
def test_a_reply_with_pipes_and_newlines_stays_in_its_markdown_table_cell() -> None:
    frame = pd.DataFrame(
        {"model": ["m"] * 3, "reply": ["a | b", "line one\nline two\n| x | y |", "<script>alert(1)</script>"]}
    )
    text = table(frame)
    lines = text.splitlines()
    assert len(lines) == 2 + 3  # header, rule, one line per row
    page = markdown_to_html(text, title="t", base_dir=Path("."))
    assert page.count("<tr>") == 4 and page.count("<td") == 6
    assert "a | b" in page and "line one line two | x | y |" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_an_image_outside_the_report_folder_is_not_embedded(tmp_path: Path) -> None:
    report = tmp_path / "run"
    report.mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    (report / "plot.png").write_bytes(b"\x89PNG plot")
    (report / "linked.png").symlink_to(secret)
    text = "![a](../secret.png) ![b](linked.png) ![c](plot.png)"
    page = markdown_to_html(text, title="t", base_dir=report)
    assert page.count("data:image/png;base64,") == 1  # only the plot inside the folder
    assert 'src="../secret.png"' in page and 'src="linked.png"' in page


def test_a_human_seat_sees_other_seats_replies_inert() -> None:
    import asyncio

    from llmpsych.games.observation import Observation
    from llmpsych.games.seats import HumanSeat

    seat = HumanSeat("human", stdin=io.StringIO("42\n"), stdout=io.StringIO())
    observation = Observation(
        player=0,
        round=1,
        kind="number",
        rules=HOSTILE,
        history=[{"role": "assistant", "content": HOSTILE}, {"role": "user", "content": HOSTILE}],
        request="?",
        fields=["chosen_number"],
    )
    line = asyncio.run(seat._ask(observation))
    shown = seat.stdout.getvalue()
    assert line == "42" and "PWNED" in shown
    for char in CONTROL_CHARS:
        assert char not in shown
