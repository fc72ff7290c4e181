"""An experiment around a game, end to end in real Chromium: a session file declares consent, a quiz, Guess
2/3 at two tables of two people and a model, a questionnaire (a scale file), payment and a debrief. Four
participants arrive through the one room link with panel labels (an unlisted label is refused) and are
matched into the two tables; the host is killed and resumed mid-session and every link still works (same
tokens, same port); one participant fails the quiz once; all play, answer the questionnaire and get
their payment and the completion code. The files the experimenter keeps are checked: payments,
participants (consent time, quiz attempts), each decision's how, the questionnaire scored by the
PsychoBench analysis, and one ``load_runs`` frame with people's and a model's answers to the same scale.

Screenshots of the consent, instructions and quiz, questionnaire and debrief pages and of the monitor's
payments go to ``$LLMPSYCH_SCREENSHOTS`` (default: the test's temporary folder).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmpsych
from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from test_own_instruments import TIDY_YAML, scripted
from test_web_people_games import axe_serious
from web_host import Host

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.usefixtures("chromium")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Upper bound of each wait below (a loaded machine); each ends on its event sooner.
PATIENCE_S = 300.0
LABELS = ["A1", "A2", "B1", "B2"]

SESSION = """\
labels = ["A1", "A2", "B1", "B2", "C1"]
debrief = "Thank you. This study compares how people and AI models play guessing games."
completion_url = "https://panel.example.org/complete?cc={code}&pid={label}"

[game]
game = "guessing"
players = 3
rounds = 1
seats = ["web", "web", "llm"]
tables = 2
deadline = 0

[consent]
text = "You will play a short game. Your answers are stored under your panel label only."

[[quiz]]
question = "How many rounds will you play?"
choices = ["1", "2", "5"]
answer = "1"

[questionnaire]
scale_file = "tidy.yaml"

[payment]
currency = "EUR"
per_point = 0.5
fee = 2.0
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seat_links(host: Host) -> list[str]:
    return sorted(line.rsplit(" ", 1)[1].strip() for line in host.lines if "/play/" in line)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def on_monitor(page: Any, url: str, look: Any) -> Any:
    """``look(page)`` on a fresh load of the monitor, again on a new load if the monitor's own refresh
    (every 3 s) detached the page under the read; a bounded number of times."""
    for attempt in range(5):
        try:
            page.goto(url)
            return look(page)
        except playwright.Error:
            if attempt == 4:
                raise
    return None


def _wait(page: Any, selector: str) -> None:
    """Wait for ``selector`` on a page that reloads itself while it waits (lobby, waiting pages)."""
    for attempt in range(20):
        try:
            page.wait_for_selector(selector)
            return
        except playwright.Error:  # the page navigated under the wait: look again
            if attempt == 19:
                raise


def test_a_session_file_runs_consent_quiz_two_tables_questionnaire_and_payments(
    tmp_path: Path, chromium: str
) -> None:
    shots = Path(os.environ.get("LLMPSYCH_SCREENSHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tidy.yaml").write_text(TIDY_YAML, encoding="utf-8")
    session_file = tmp_path / "session.toml"
    session_file.write_text(SESSION, encoding="utf-8")
    run_dir = tmp_path / "session"
    typed: dict[str, str] = {}  # question key -> the answer typed for it
    # a model answers the same scale in the meantime (its own process: it overlaps the pages' waits)
    with FaultServer(responder=scripted) as scale_server:
        model_run = subprocess.Popen(
            [sys.executable, "-m", "llmpsych", "psychobench", "run", "--model", "openai-compatible/m"]
            + ["--scale-file", str(tmp_path / "tidy.yaml"), "--runs", "1", "--no-cache", "--no-progress"]
            + ["--base-url", scale_server.base_url, "--out", str(tmp_path / "model")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _session_in_browsers(tmp_path, run_dir, session_file, chromium, shots, typed)
            output, _ = model_run.communicate(timeout=PATIENCE_S)
        finally:
            if model_run.poll() is None:
                model_run.kill()
                model_run.wait(30)
        assert model_run.returncode == 0, output
    _check_files(tmp_path, run_dir, typed)


def _session_in_browsers(
    tmp_path: Path, run_dir: Path, session_file: Path, chromium: str, shots: Path, typed: dict[str, str]
) -> None:
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        host = Host(
            ["--session", str(session_file), "--model", "openai-compatible/scripted"]
            + ["--base-url", server.base_url, "--seed", "1", "--out", str(run_dir)]
            + ["--port", str(_free_port()), "--exit"]
        )
        try:
            assert host.room and "/room/" in host.room
            links = _seat_links(host)
            assert len(links) == 4 and all("table" in line for line in host.lines if "/play/" in line)
            with playwright.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=ARGS)
                people = [browser.new_context().new_page() for _ in LABELS]
                monitor = browser.new_context().new_page()
                for page in [monitor, *people]:
                    page.set_default_timeout(PATIENCE_S * 1000)
                # a label the session does not list is refused; the room asks for a label without one
                people[0].goto(host.room + "?label=ZZ9")
                assert "not on the session's list" in people[0].inner_text("#error")
                people[0].goto(host.room)
                assert people[0].locator("#label").count() == 1
                findings = {"room": axe_serious(people[0])}  # axe-core: nothing critical or serious
                for label, page in zip(LABELS, people, strict=True):
                    page.goto(f"{host.room}?label={label}")
                    assert page.locator("#consent").count() == 1, page.content()
                people[0].screenshot(path=str(shots / "consent.png"), full_page=True)
                findings["consent"] = axe_serious(people[0])
                for page in people:
                    page.check("#agree")
                    with page.expect_navigation():
                        page.click("#send")
                    assert page.locator("#quiz").count() == 1
                # the same label again: the same seat (a panel participant clicking the link twice)
                again = browser.new_context().new_page()
                again.goto(f"{host.room}?label=A1")
                assert again.url == people[0].url
                again.close()
                seats = {page.url for page in people}
                assert len(seats) == 4

                # killed and resumed: the same monitor, room and seat links (same port), consent kept
                monitor_link, room_link = host.monitor, host.room
                host.proc.send_signal(signal.SIGKILL)
                host.proc.wait(30)
                host = Host(["--resume", str(run_dir), "--exit"])
                assert (host.monitor, host.room, _seat_links(host)) == (monitor_link, room_link, links)
                assert "A1" in on_monitor(monitor, host.monitor, lambda m: m.inner_text("#seats"))

                # the instructions: the game's text for people, with the stakes; the quiz, failed once
                for n, page in enumerate(people):
                    page.goto(page.url)
                    text = page.inner_text("#instructions")
                    assert "Guess 2/3 of the Average" in text and "0.5 EUR" in text, text
                    assert "computer player" in text
                    if n == 0:
                        page.check("#q1-3")  # "5": wrong
                        with page.expect_navigation():
                            page.click("#send")
                        assert "1 of 1 answers are not right" in page.inner_text("#error")
                        page.screenshot(path=str(shots / "instructions-quiz.png"), full_page=True)
                        findings["quiz"] = axe_serious(page)
                    page.check("#q1-1")
                    with page.expect_navigation():
                        page.click("#send")

                # two tables play at once: each person answers their own table's question
                for n, page in enumerate(people):
                    _wait(page, "#answer")
                    key = page.get_attribute("input[name=key]", "value")
                    assert key is not None
                    table = LABELS[n % 4][0]
                    assert ("run01" in key) == (table == "A"), (key, table)
                    typed[key] = "10" if n == 0 else str(20 + 7 * n)  # A1 wins (the model says 14)
                    if n == 1:  # refused by the game's own check; kept with the decision
                        page.fill("#answer", "abc")
                        with page.expect_navigation():
                            page.click("#send")
                        assert page.locator("#error").count() == 1
                    page.fill("#answer", typed[key])
                    with page.expect_navigation():
                        page.click("#send")
                for page in people:
                    _wait(page, "#questionnaire")
                people[0].screenshot(path=str(shots / "questionnaire.png"), full_page=True)
                findings["questionnaire"] = axe_serious(people[0])

                pay, code = on_monitor(
                    monitor, host.monitor, lambda m: (m.inner_text("#payments"), m.inner_text("#code"))
                )
                assert all(label in pay for label in LABELS), pay
                csv_url = host.room.split("/room/")[0] + "/session/payments.csv"
                assert httpx.get(csv_url, trust_env=False).status_code == 403  # experimenter only
                download = monitor.context.request.get(csv_url)  # the monitor's own cookie
                assert download.status == 200 and download.text().startswith("label,table,player,")
                on_monitor(
                    monitor,
                    host.monitor,
                    lambda m: m.screenshot(path=str(shots / "monitor-payments.png"), full_page=True),
                )

                for n, page in enumerate(people):
                    for item in range(1, 7):
                        page.check(f"#i{item}-{1 + (item + n) % 5}")
                    with page.expect_navigation():
                        page.click("#send")
                    assert page.inner_text("#code") == code
                    link = page.get_attribute("#complete", "href")
                    assert link == f"https://panel.example.org/complete?cc={code}&pid={LABELS[n]}"
                    assert "EUR" in page.inner_text("#total")
                people[0].screenshot(path=str(shots / "debrief.png"), full_page=True)
                findings["debrief"] = axe_serious(people[0])
                assert findings == dict.fromkeys(findings, []), findings
                browser.close()
            assert host.proc.wait(PATIENCE_S) == 0, "".join(host.lines) + host.proc.stderr.read()
        finally:
            host.close()


def _check_files(tmp_path: Path, run_dir: Path, typed: dict[str, str]) -> None:
    # every decision of the people, as typed, at its own table; the model's beside them
    store = RunStore.in_dir(run_dir)
    try:
        web = {c.call_key: c.response["text"] for c in store.calls() if c.role == "web"}
    finally:
        store.close()
    assert web == {f"web:{k}#0": v for k, v in typed.items()}
    session = json.loads((run_dir / "session.json").read_text())
    assert {t["how"] for t in session["answers"]} == {"typed"}
    assert {s["label"]: s["table"] for s in session["seats"]} == {"A1": 1, "A2": 1, "B1": 2, "B2": 2}

    payments = _rows(run_dir / "payments.csv")
    assert [(r["label"], r["table"]) for r in payments] == [
        ("A1", "1"),
        ("A2", "1"),
        ("B1", "2"),
        ("B2", "2"),
    ]
    seats = {(int(r["run"]), int(r["player"])): r for r in _rows(run_dir / "seats.csv")}
    for row in payments:
        won = float(seats[(int(row["table"]), int(row["player"]))]["rounds won"])
        assert row["points column"] == "rounds won" and float(row["paid points"]) == won
        assert float(row["money"]) == round(won * 0.5, 2) and float(row["fee"]) == 2.0
        assert float(row["total"]) == round(won * 0.5 + 2.0, 2)
    assert payments[0]["total"] == "2.5"  # A1's round won: 0.5 EUR, plus the fee
    people_rows = {r["label"]: r for r in _rows(run_dir / "participants.csv")}
    assert [people_rows[label]["quiz attempts"] for label in LABELS] == ["2", "1", "1", "1"]
    assert people_rows["A1"]["quiz wrong"] == "1; "
    assert all(r["consent"] and r["debrief"] and r["typed"] == "1" for r in people_rows.values())

    assert "label" not in _rows(run_dir / "decisions.csv")[0]  # the game's own table is left as it is
    decisions = {r["label"]: r for r in _rows(run_dir / "participant_decisions.csv")}
    assert sorted(decisions) == LABELS and {r["how"] for r in decisions.values()} == {"typed"}
    assert [decisions[label]["answer"] for label in LABELS] == list(typed.values())
    assert decisions["A2"]["refused"] == "1" and json.loads(decisions["A2"]["refused_texts"]) == ["abc"]
    assert all(float(r["response_s"]) >= 0 and r["shown"] <= r["answered"] for r in decisions.values())

    # the questionnaire: scored by the PsychoBench analysis, beside a model's answers to the same scale
    scored = run_dir / "questionnaire"
    assert (scored / "scores.csv").is_file()
    frames = llmpsych.load_runs([scored, tmp_path / "model", run_dir])
    items = frames.items
    people_items = items[items["source"] == "person"]
    assert people_items["respondent"].nunique() == 4 and len(people_items) == 4 * 6
    assert (people_items["status"] == "answered").all()
    model_rows = items[items["source"] == "model"]
    assert set(model_rows["run"]) == {str(tmp_path / "model" / "openai-compatible_m")}
    assert len(model_rows) == 6 and set(model_rows["scale"]) == set(people_items["scale"]) == {"TIDY"}
    number = {r["label"]: int(r["questionnaire respondent"]) for r in people_rows.values()}
    first = people_items[people_items["respondent"] == f"{scored}#{number['A1']}"]
    assert first.sort_values("item")["response"].tolist() == [float(1 + i % 5) for i in range(1, 7)]
    calls = frames.calls[frames.calls["run_dir"] == str(run_dir)]
    assert set(calls["how"]) == {"typed", "model"} and (calls[calls["how"] == "typed"]["role"] == "web").all()
