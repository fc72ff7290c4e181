"""Browser seats end to end: real Chromium, three participants and two model seats (a scripted server) play
Guess 2/3 and the Public Goods Game through ``llmpsych gamabench host``; one participant's unusable answer
is refused with the game's reason, one reloads mid-game, the server process is killed and resumed
mid-session, and the stored answers equal those typed (nothing of the refused one).

Screenshots of the lobby, a game seat (early and later) and the monitor (lobby, playing, end) go to
``$LLMPSYCH_SCREENSHOTS`` (default: the test's temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from web_host import Host

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.usefixtures("chromium")  # a missing browser: skipped before any setup (CI: fails)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCRIPT = "<script>document.title='pwned'</script>"
#: The participants (ordinary names: the screenshots illustrate docs/web.md; a name holding markup is
#: tested in test_web_session.py).
NAMES = ["Ann", "Bob", "Cy"]
#: Upper bounds of the waits below: generous for a loaded machine; each wait ends on its event sooner.
PATIENCE_S = 300.0


def hostile(body: dict[str, Any]) -> str:
    """A valid game answer preceded by a script tag (a model reply that tries XSS)."""
    return f"{SCRIPT}\n{game_answer(body, fenced=True)}"


def on_monitor(page: Any, url: str, look: Any) -> Any:
    """``look(page)`` on a fresh load of the monitor. The monitor reloads itself every 3 s (a meta
    refresh), which can detach the page under a read ("Not attached to an active page", "navigation
    interrupted"): such a read is made again on a new load, a bounded number of times."""
    for attempt in range(5):
        try:
            page.goto(url)
            return look(page)
        except playwright.Error:
            if attempt == 4:
                raise
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def next_question(people: list[Any], host: Host, links: dict[int, str]) -> int | None:
    """The first participant whose page shows a question, or None once the game is over.

    Bounded (:data:`PATIENCE_S` without any page showing a question) and ended by its events: a question
    on a page, the host's "game is over" line, or the host process ending. A page that lost the server
    (the kill and restart) is opened again from its link, as a participant would."""
    end = time.monotonic() + PATIENCE_S
    while time.monotonic() < end:
        for i, page in enumerate(people):
            try:
                if page.locator("#answer").count():
                    return i
                if page.locator("main.seat").count() == 0:  # the browser's error page: come back
                    page.goto(links[i])
            except playwright.Error:  # between two loads (the waiting page refreshes itself)
                continue
        if host.over.is_set():
            return None
        assert host.proc.poll() is None, "".join(host.lines) + host.proc.stderr.read()
        people[0].wait_for_timeout(200)  # a pause between looks, not a wait for anything to happen
    raise AssertionError(f"no question for {PATIENCE_S:.0f} s: " + "".join(host.lines))


def test_three_people_and_two_models_play_two_games_through_a_kill_and_resume(
    tmp_path: Path, chromium: str
) -> None:
    shots = Path(os.environ.get("LLMPSYCH_SCREENSHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    run_dir = tmp_path / "session"
    port = _free_port()
    seats = f"seats=[{', '.join(f'web:{n}' for n in NAMES)}, llm, llm]"
    typed: dict[str, str] = {}  # question key -> the answer typed for it
    with FaultServer(responder=hostile) as server:
        host = Host(
            ["--game", "guessing,public_goods", "--players", "5", "--rounds", "3", "--deadline", "0"]
            + ["--model", "openai-compatible/scripted", "--base-url", server.base_url, "--seed", "1"]
            + ["-O", seats, "--out", str(run_dir), "--port", str(port), "--exit"]
        )
        assert sorted(host.links) == [0, 1, 2]
        assert len({link.rsplit("/", 1)[1] for link in host.links.values()}) == 3
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS)
            monitor = browser.new_context().new_page()
            assert "0 of 3 joined" in on_monitor(monitor, host.monitor, lambda m: m.inner_text("#state"))
            people = [browser.new_context().new_page() for _ in NAMES]
            for page in [monitor, *people]:
                page.set_default_timeout(PATIENCE_S * 1000)  # bounds, not expectations of speed
            people[0].goto(host.links[0])
            assert "1 of 3 participants have joined" in people[0].inner_text("#lobby")
            people[0].screenshot(path=str(shots / "lobby.png"), full_page=True)
            seated = on_monitor(monitor, host.monitor, lambda m: m.inner_text("#seats"))
            assert all(name in seated for name in NAMES)
            on_monitor(
                monitor,
                host.monitor,
                lambda m: m.screenshot(path=str(shots / "monitor-lobby.png"), full_page=True),
            )
            for i in (1, 2):
                people[i].goto(host.links[i])

            # seat A's form cannot answer for seat B, another token opens nothing, a replay is refused
            people[0].wait_for_selector("#answer")
            key = people[0].get_attribute("input[name=key]", "value")
            csrf = people[0].get_attribute("input[name=csrf]", "value")
            base = f"http://127.0.0.1:{port}"
            token_b = host.links[1].rsplit("/", 1)[1]
            with httpx.Client(base_url=base, trust_env=False, timeout=30) as client:
                form = {"key": key, "csrf": csrf, "answer": "1"}
                assert client.post(f"/play/{token_b}", data=form).status_code == 403
                assert client.post("/play/" + "x" * 43, data=form).status_code == 403
                assert client.get("/play/").status_code == 403
                assert client.get("/session").status_code == 403  # the monitor needs the experimenter token
                assert client.post(f"/play/{token_b}", data={**form, "answer": "9" * 5000}).status_code == 413

            answered = 0
            killed = reloaded = refused = False
            while (i := next_question(people, host, host.links)) is not None:
                page = people[i]
                key = page.get_attribute("input[name=key]", "value")
                assert key is not None and key not in typed, f"asked twice: {key}"
                heading = page.inner_text("#question")
                value = str(10 + 7 * i + answered % 5) if "guessing" in key else str(3 + i)
                if answered == 2 and not refused:  # the game's own check refuses it; the same question stays
                    page.fill("#answer", "abc")
                    with page.expect_navigation():
                        page.click("#send")
                    assert "'abc' is not a whole number" in page.inner_text("#error")
                    assert page.get_attribute("input[name=key]", "value") == key
                    refused = True
                if answered == 4 and not reloaded:
                    page.screenshot(path=str(shots / "seat.png"), full_page=True)
                    page.fill("#answer", "not a number")
                    page.reload()  # mid-game reload: the same question is still there
                    reloaded = True
                    assert page.get_attribute("input[name=key]", "value") == key
                    assert "Round" in heading
                page.fill("#answer", value)
                with page.expect_navigation():
                    page.click("#send")
                if page.locator("main.seat").count() == 0 or page.locator("#error").count():
                    continue  # sent while the host was down, or had not asked it again yet: asked later
                typed[key] = value
                answered += 1
                if answered == 13:  # later in the game: the seat's own score, the monitor's scores so far
                    if people[i].locator("#answer").count():
                        people[i].screenshot(path=str(shots / "seat-later.png"), full_page=True)
                    shown = on_monitor(monitor, host.monitor, lambda m: m.inner_text("main"))
                    assert "Scores per seat so far" in shown
                    on_monitor(
                        monitor,
                        host.monitor,
                        lambda m: m.screenshot(path=str(shots / "monitor-playing.png"), full_page=True),
                    )
                if answered == 7 and not killed:
                    host.proc.send_signal(signal.SIGKILL)
                    host.proc.wait(30)
                    killed = True
                    host = Host(["--resume", str(run_dir), "--port", str(port)])
            assert killed and reloaded and refused
            # the restarted server has a new experimenter token
            on_monitor(
                monitor,
                host.monitor,
                lambda m: m.screenshot(path=str(shots / "monitor-end.png"), full_page=True),
            )
            assert "Scores per seat" in on_monitor(monitor, host.monitor, lambda m: m.inner_text("main"))
            scores = on_monitor(monitor, host.monitor, lambda m: m.inner_text("#scores"))
            assert "nan" not in scores and "2.6666" not in scores  # missing cells read "–", numbers rounded
            people[0].reload()
            assert people[0].locator("#finished").count() == 1
            own = people[0].inner_text("#own")  # the participant's own result only, whole numbers whole
            assert re.search(r"Guess 2/3 of the Average: rounds won \d+$", own, re.M), own
            people[0].screenshot(path=str(shots / "finished.png"), full_page=True)
            # the model reply holding a script renders inert on the run's unit page
            unit = monitor
            unit.click("#state a")  # the run's report
            unit.goto(unit.url + "/unit?id=guessing-run01")
            assert SCRIPT in unit.inner_text("main")
            unit.screenshot(path=str(shots / "transcript-game.png"))
            assert unit.title() != "pwned"
            browser.close()
        host.proc.send_signal(signal.SIGINT)
        host.proc.wait(30)

    store = RunStore.in_dir(run_dir)
    try:
        assert {u.status for u in store.units()} == {"done"}
        web = {c.call_key: c.response["text"] for c in store.calls() if c.role == "web"}
    finally:
        store.close()
    assert web == {f"web:{k}#0": v for k, v in typed.items()}
    assert len(web) == 3 * 2 * 3  # three people, two games, three rounds: each asked once
    seats_csv = (run_dir / "seats.csv").read_text()
    assert (
        "web:Ann" in seats_csv
        and "model openai-compatible/scripted" in (run_dir / "seat_kinds.csv").read_text()
    )
    session = json.loads((run_dir / "session.json").read_text())
    assert {t["how"] for t in session["answers"]} == {"typed"}
    assert oct((run_dir / "session.json").stat().st_mode & 0o777) == "0o600"
