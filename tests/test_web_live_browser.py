"""Deadlines, the experimenter's controls and live pages of ``gamabench host``, in real Chromium.

Four hosts play at once (one per deadline policy). In the main one, Ann and Bob (two browser contexts)
and a model play three rounds of Guess 2/3 with a 5 s deadline: the pages move from the lobby to each
question by server-sent events (no reload: a marker set in the page survives, and no page carries a meta
refresh); the countdown ticks; Bob lets round 1 run out, his page moves on by itself and says what was
entered, and his late answer gets a page written for people (409), not a bare 403; the experimenter
pauses the clocks (Bob's page says so), gives Ann more time, enters her default, moves Bob on, removes
him (his page says so) and sees Ann offline once she closes her tab, then moves her on. The three other
hosts each let a question run out under ``skip``, ``repeat`` and ``llm`` (a model stand-in). The session
file, ``decisions.csv`` and ``seats.csv`` must name how every answer came.

Every wait ends on its event (a selector, a page function, the host's "game is over" line) and is bounded
by :data:`PATIENCE_S`; the deadlines are the server's, never the test's.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from web_host import Host

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.usefixtures("chromium")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Upper bound of each wait (a loaded machine); each ends on its event far sooner.
PATIENCE_S = 120.0
STAY = "window.__stay = 1"  # a page that reloads loses it
STAYED = "() => window.__stay === 1"


def _host(args: list[str]) -> Host:
    return Host(args)


def _decisions(run_dir: Path, player: int) -> list[tuple[int, str, Any]]:
    frame = pd.read_csv(run_dir / "decisions.csv")
    mine = frame[frame["player"] == player].sort_values("round")
    return [(int(r["round"]), str(r["how"]), r["action"]) for _, r in mine.iterrows()]


def _no_meta_refresh(page: Any) -> None:
    assert page.locator("meta[http-equiv=refresh]").count() == 0, page.url


def _monitor_click(monitor: Any, row: str, action: str) -> None:
    """Press a seat's button on the monitor (a real form POST; the monitor page comes back)."""
    with monitor.expect_navigation():
        monitor.locator(f"#seats tr:has-text('{row}') button[value={action}]").click()


def test_deadline_policies_monitor_controls_and_live_pages(tmp_path: Path, chromium: str) -> None:
    with FaultServer(responder=lambda body: game_answer(body)) as server:
        model = ["--model", "openai-compatible/m", "--base-url", server.base_url, "--exit", "--seed", "1"]
        main = tmp_path / "main"
        runs = {
            "main": [*model, "--out", str(main), "--players", "3", "--rounds", "3", "--deadline", "6"]
            + ["-O", "seats=[web:Ann, web:Bob, llm]"],
            **{
                policy: [*model, "--out", str(tmp_path / policy), "--players", "2", "--on-deadline", policy]
                + [
                    "--rounds",
                    "2" if policy == "repeat" else "1",
                    "--deadline",
                    "15" if policy == "repeat" else "2",
                ]
                + ["-O", "seats=[web:Solo, llm]"]
                for policy in ("skip", "repeat", "llm")
            },
        }
        with ThreadPoolExecutor(4) as pool:
            started = {name: pool.submit(_host, args) for name, args in runs.items()}
            hosts = {name: future.result() for name, future in started.items()}
        try:
            with playwright.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=ARGS)
                pages = {}
                for name in ("ann", "bob", "monitor", "skip", "repeat", "llm"):
                    pages[name] = browser.new_context().new_page()
                    pages[name].set_default_timeout(PATIENCE_S * 1000)
                ann, bob, monitor = pages["ann"], pages["bob"], pages["monitor"]
                for policy in ("repeat", "skip", "llm"):  # these play by themselves from here
                    pages[policy].goto(hosts[policy].links[0])
                    if policy == "repeat":  # typed in round 1 (15 s to do so); round 2 runs out: repeated
                        pages[policy].fill("#answer", "33")
                        with pages[policy].expect_navigation():
                            pages[policy].click("#send")

                host = hosts["main"]
                monitor.goto(host.monitor)
                _no_meta_refresh(monitor)
                ann.goto(host.links[0])
                assert "1 of 2 participants have joined" in ann.inner_text("#lobby")
                _no_meta_refresh(ann)
                ann.evaluate(STAY)
                bob.goto(host.links[1])  # the last to join starts the game
                bob.evaluate(STAY)
                ann.wait_for_selector("#answer")  # the lobby became the question by itself
                assert ann.evaluate(STAYED)
                # the countdown ticks
                first = int(bob.inner_text("#left"))
                bob.wait_for_function(
                    f"() => parseInt(document.getElementById('left').textContent) < {first}"
                )
                # round 1: Ann answers, Bob lets the time run out
                stale = {n: bob.get_attribute(f"input[name={n}]", "value") for n in ("key", "csrf")}
                ann.fill("#answer", "30")
                with ann.expect_navigation():
                    ann.click("#send")
                _no_meta_refresh(ann)  # the waiting page
                ann.evaluate(STAY)
                bob.wait_for_selector("#notice:has-text('Time ran out')")
                # round 2 is open: the experimenter stops the clocks (no deadline passes from here on
                # unless resumed, so the steps below race nothing)
                monitor.wait_for_selector("#seats td.due:text-matches('^[0-9]+$')")
                with monitor.expect_navigation():
                    monitor.click("#pause")
                assert bob.evaluate(STAYED)  # moved on without a reload
                assert "default answer" in bob.inner_text("#notice")
                # Bob's late answer to round 1: a page saying what happened, not a bare 403
                with bob.expect_navigation() as late:
                    bob.evaluate(
                        """([key, csrf]) => { const f = document.createElement('form'); f.method = 'post';
                        for (const [n, v] of [['key', key], ['csrf', csrf], ['answer', '12']]) {
                          const i = document.createElement('input'); i.name = n; i.value = v; f.append(i); }
                        document.body.append(f); f.submit(); }""",
                        [stale["key"], stale["csrf"]],
                    )
                assert late.value is not None and late.value.status == 409
                said = bob.inner_text("main")
                assert "came after this question had closed" in said and "Time ran out" in said
                assert bob.locator("#answer").count() == 1  # and the question open now is below it
                bob.evaluate(STAY)
                ann.wait_for_selector("#answer")  # round 2 reached Ann's waiting page by itself
                assert ann.evaluate(STAYED)

                # round 2, paused: the pages say so; resumed, the clock runs again; paused again, the
                # experimenter gives Ann more time, enters her default and moves Bob on
                bob.wait_for_selector("#paused")
                assert bob.get_attribute("#countdown", "data-paused") == "1"
                presence = monitor.inner_text("#seats")
                assert presence.count("online") == 2, presence  # both tabs are open
                with monitor.expect_navigation():
                    monitor.click("#resume")
                bob.wait_for_selector("#countdown[data-paused='0']")
                with monitor.expect_navigation():
                    monitor.click("#pause")
                ann.wait_for_selector("#paused")
                before = int(ann.get_attribute("#countdown", "data-left") or 0)
                _monitor_click(monitor, "Ann", "extend")
                ann.wait_for_function(
                    f"() => parseInt(document.getElementById('countdown').dataset.left) > {before}"
                )
                _monitor_click(monitor, "Ann", "default")
                ann.wait_for_selector("#notice:has-text('The experimenter entered')")
                _monitor_click(monitor, "Bob", "advance")

                # round 3 (the clocks still paused): Bob removed; Ann closes her tab, shows offline, and
                # is moved on
                bob.wait_for_selector("#question:has-text('Round 3')")
                _monitor_click(monitor, "Bob", "remove")
                bob.wait_for_selector("#removed")
                assert bob.evaluate(STAYED)
                ann.close()
                monitor.wait_for_selector("#seats tr:has-text('Ann') td.presence:has-text('offline')")
                _monitor_click(monitor, "Ann", "advance")
                assert host.over.wait(PATIENCE_S), "".join(host.lines)

                # the other policies: each page said what was entered for the person
                texts = {
                    "skip": "you sat this round out",
                    "repeat": "your previous answer (33) was entered again",
                    "llm": "a computer player answered for you",
                }
                for policy, text in texts.items():
                    pages[policy].wait_for_selector(f"#notice:has-text('{text}')")
                    assert hosts[policy].over.wait(PATIENCE_S), "".join(hosts[policy].lines)
                browser.close()
        finally:
            for h in hosts.values():
                h.close()

    session = json.loads((main / "session.json").read_text())
    hows = [(a["player"], a["round"], a["how"], a.get("trigger")) for a in session["answers"]]
    assert sorted(hows) == [
        (0, 1, "typed", None),
        (0, 2, "default", "default"),
        (0, 3, "default", "advance"),
        (1, 1, "deadline", "deadline"),
        (1, 2, "default", "advance"),
        (1, 3, "default", "remove"),
    ]
    actions = [e["action"] for e in session["events"]]
    assert actions == ["pause", "resume", "pause", "extend", "default", "advance", "remove", "advance"]
    assert _decisions(main, 1) == [(1, "deadline", 0), (2, "default", 0), (3, "default", 0)]
    seats = pd.read_csv(main / "seats.csv").set_index("player")
    assert seats.loc[1, "answers"] == "typed 0 of 3 (1 deadline defaults, 2 experimenter defaults)"
    assert seats.loc[0, "experimenter defaults"] == 2 and seats.loc[0, "typed answers"] == 1
    # each policy flagged in the data: skip takes the game's no-answer action (Guess 2/3: the midpoint)
    assert _decisions(tmp_path / "skip", 0) == [(1, "skipped", 50)]
    assert _decisions(tmp_path / "repeat", 0) == [(1, "typed", 33), (2, "repeated", 33)]
    [(_, how, _)] = _decisions(tmp_path / "llm", 0)
    assert how == "stand-in"
    for policy, column in (
        ("skip", "skipped answers"),
        ("repeat", "repeated answers"),
        ("llm", "stand-in answers"),
    ):
        assert pd.read_csv(tmp_path / policy / "seats.csv").set_index("player").loc[0, column] == 1


def test_a_deadline_policy_is_one_of_four_and_a_stand_in_needs_a_model_role(tmp_path: Path) -> None:
    from llmpsych.errors import ConfigError
    from llmpsych.runs import parse_run_config
    from llmpsych.web.host import prepare
    from llmpsych.web.session import Session

    options = {"game": "guessing", "players": 2, "rounds": 1, "seats": ["web:Ann", "llm"]}
    config = parse_run_config({"task": "gamabench", "model": "openai-compatible/m", "options": options})
    for bad, says in (("pray", "unknown deadline policy 'pray'"), ("llm:judge", "no model role 'judge'")):
        with pytest.raises(ConfigError, match=says):
            prepare(config, tmp_path / bad, 5.0, on_deadline=bad)
        assert not (tmp_path / bad).exists()  # refused before anything is written
    assert prepare(config, tmp_path / "llm", 5.0, on_deadline="LLM").policy == "llm:subject"
    assert Session.load(tmp_path / "llm").stand_in == "subject"  # kept for --resume
