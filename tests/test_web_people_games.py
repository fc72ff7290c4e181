"""All eight games with browser seats, as people see them: real Chromium on a 390 px phone viewport, two
participants (two browser contexts) and a scripted model seat play every game at one table through
``llmpsych gamabench host``, answering with the keyboard only.

Each question page shows the game's question for people (never the model's prompt), the history written
for people and the game's instructions; a number is asked with ``inputmode="numeric"``, a choice with
radio buttons, a Pirate plan with one numeric field per pirate; a refused entry stays in its field with
the reason; nothing is wider than the phone; axe-core finds nothing critical or serious. A second session
runs in German. The whole session is played once (a module fixture); each game's checks are one
parametrised test. A phone screenshot of a question page goes to ``$LLMPSYCH_SCREENSHOTS`` (default: the
test's temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from web_host import Host

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.usefixtures("chromium")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
GAMES = ["guessing", "bar", "divide_dollar", "public_goods", "diner", "auction", "battle_royale", "pirate"]
PHONE = {"width": 390, "height": 844}
#: What a model reads and a person must not: the JSON instruction, the model-facing history's answers.
MODEL_TEXT = re.compile(r"JSON|equilibrium|Your answer:|What did you|player_\d|\{|\}|Gleichgewicht")
#: Upper bound of one wait (a loaded 2-core machine); each wait ends on its event sooner.
PATIENCE_S = 240.0


def axe_serious(page: Any) -> list[str]:
    """The critical and serious axe-core findings on ``page`` (axe-core as the axe-playwright-python
    package ships it: no network at test time)."""
    script = resources.files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")
    page.evaluate(script)
    found = page.evaluate("axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
        for v in found
        if v["impact"] in ("critical", "serious")
    ]


def wider_than_phone(page: Any) -> int:
    """How many CSS pixels the page is wider than the viewport (0: it fits)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def live_page(page: Any, box: str) -> dict[str, Any]:
    """What a page that waits (the lobby, the waiting page) is made of: whether it shows ``box``, reloads
    itself on a timer (a meta refresh), listens to the server's live updates; its axe findings."""
    return {
        "shown": page.locator(box).count(),
        "refresh": page.locator("meta[http-equiv=refresh]").count(),
        "events": page.get_attribute("#live", "data-events") or "",
        "axe": axe_serious(page),
    }


def next_question(people: list[Any], host: Host, links: dict[int, str]) -> int | None:
    """The first participant whose page shows a question, or None once the game is over (each page is
    loaded again between looks: the waiting page's own refresh is not waited for)."""
    end = time.monotonic() + PATIENCE_S
    while time.monotonic() < end:
        for i, page in enumerate(people):
            if page.locator("#answer").count():
                return i
        if host.over.is_set():
            return None
        assert host.proc.poll() is None, "".join(host.lines) + host.proc.stderr.read()
        for i, page in enumerate(people):
            try:
                page.goto(links[i])
            except playwright.Error:  # the page refreshed itself under the load
                continue
    raise AssertionError(f"no question for {PATIENCE_S:.0f} s: " + "".join(host.lines))


def answer_by_keyboard(page: Any, kind: str, key: str) -> str:
    """Answer the page's question with the keyboard only; the answer text the game receives."""
    assert page.evaluate("document.activeElement && document.activeElement.name") in ("answer", "share")
    if kind == "choice":
        # the first choice has the focus: Space checks it; a Diner and a Bar seat take the second (arrow)
        second = key.endswith(":dish") or key.endswith(":go_or_stay")
        page.keyboard.press("ArrowDown" if second else "Space")
        value = page.evaluate("document.querySelector('input[name=answer]:checked').value")
        page.keyboard.press("Tab")  # out of the radio group: the send button
        assert page.evaluate("document.activeElement.id") == "send"
        with page.expect_navigation():
            page.keyboard.press("Enter")
        return str(value)
    if kind == "shares":
        fields = page.locator("input[name=share]").count()
        shares = [str(100 - (fields - 1))] + ["1"] * (fields - 1)
        for i, share in enumerate(shares):
            page.keyboard.type(share)
            if i < fields - 1:
                page.keyboard.press("Tab")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        return ",".join(shares)
    value = {"guessing": "25", "public_goods": "5", "divide_dollar": "30", "auction": "0"}[
        key.split("-run")[0]
    ]
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    return value


def input_kind(page: Any) -> str:
    if page.locator("input[type=radio][name=answer]").count():
        return "choice"
    if page.locator("input[name=share]").count():
        return "shares"
    return "number"


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=ARGS)
        yield launched
        launched.close()


def host(server: FaultServer, run_dir: Path, *args: str) -> Host:
    """A host that serves on after the game (the finished page), until the test ends it."""
    return Host(
        ["--model", "openai-compatible/scripted", "--base-url", server.base_url, "--seed", "1"]
        + ["--deadline", "0", "--out", str(run_dir), "--linger", *args]
    )


@pytest.fixture(scope="module")
def session(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every game played once by Ann and Bob (two phones) and a model; what each question page showed."""
    run_dir = tmp_path_factory.mktemp("people-games") / "session"
    shots = Path(os.environ.get("LLMPSYCH_SCREENSHOTS", run_dir.parent / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    seen: dict[str, list[dict[str, Any]]] = {g: [] for g in GAMES}
    typed: dict[str, str] = {}
    refused: dict[str, Any] = {}
    checked: set[tuple[str, str]] = set()
    calm: dict[str, dict[str, Any]] = {}
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        game_args = ["--game", ",".join(GAMES), "--players", "3", "--rounds", "2"]
        table = host(server, run_dir, *game_args, "-O", "seats=[web:Ann, web:Bob, llm]")
        try:
            people = [browser.new_context(viewport=PHONE).new_page() for _ in range(2)]
            for page in people:
                page.set_default_timeout(PATIENCE_S * 1000)  # bounds, not expectations of speed
            people[0].goto(table.links[0])  # Ann is in the lobby until Bob comes
            calm["lobby"] = live_page(people[0], "#lobby")
            people[1].goto(table.links[1])
            while (i := next_question(people, table, table.links)) is not None:
                page = people[i]
                key = str(page.get_attribute("input[name=key]", "value"))
                game, kind = key.split("-run")[0], input_kind(page)
                shown = {
                    "player": i,
                    "key": key,
                    "kind": kind,
                    "ask": page.inner_text("#ask"),
                    "history": page.inner_text("#history") if page.locator("#history").count() else "",
                    "rules": page.inner_text("#rules"),
                    "main": page.inner_text("main"),
                    "inputmode": page.get_attribute("#answer", "inputmode"),
                    "choices": page.locator("input[type=radio]").count(),
                    "wider": wider_than_phone(page),
                }
                if (game, kind) not in checked:  # axe once per game and kind of input
                    checked.add((game, kind))
                    shown["axe"] = axe_serious(page)
                seen[game].append(shown)
                if game == "guessing" and shown["history"] and not (shots / "seat-phone.png").exists():
                    page.screenshot(path=str(shots / "seat-phone.png"), full_page=True)  # docs/web.md
                if game == "guessing" and not refused:  # out of range: refused, kept, with the reason
                    page.keyboard.type("150")
                    with page.expect_navigation():
                        page.keyboard.press("Enter")
                    refused = {
                        "error": page.inner_text("#error"),
                        "value": page.input_value("#answer"),
                        "key": page.get_attribute("input[name=key]", "value"),
                        "wider": wider_than_phone(page),
                        "axe": axe_serious(page),
                    }
                typed[key] = answer_by_keyboard(page, kind, key)
                if "waiting" not in calm and page.locator("#waiting").count() and i == 0:
                    calm["waiting"] = live_page(page, "#waiting")  # Bob has not answered yet: it stays
            people[0].goto(table.links[0])
            final = {"main": people[0].inner_text("main"), "axe": axe_serious(people[0])}
        finally:
            table.close()
    with RunStore.in_dir(run_dir, readonly=True) as store:
        stored = {c.call_key: c.response for c in store.calls() if c.role == "web"}
    return {
        "seen": seen,
        "typed": typed,
        "refused": refused,
        "stored": stored,
        "final": final,
        "calm": calm,
        "dir": run_dir,
    }


@pytest.mark.parametrize("game", GAMES)
def test_each_game_shows_people_its_question_history_and_instructions(
    game: str, session: dict[str, Any]
) -> None:
    pages = session["seen"][game]
    assert pages, f"no question of {game} reached a person"
    for shown in pages:
        assert not MODEL_TEXT.search(shown["main"]), shown["main"]  # never the model's prompt
        assert shown["wider"] <= 0, f"{game}: {shown['wider']} px wider than a 390 px phone"
        assert "Instructions" in shown["rules"] and ("result" in shown["rules"] or "goal" in shown["rules"])
        if shown["kind"] == "number":
            assert shown["inputmode"] == "numeric"
        elif shown["kind"] == "choice":
            assert shown["choices"] >= 2
        assert shown.get("axe", []) == [], shown["axe"]
    later = [s for s in pages if s["history"]]
    if game not in ("battle_royale", "pirate"):  # a simultaneous game: round 2 shows round 1 for people
        assert later and "Round 1:" in later[0]["history"], pages
    for shown in pages:  # what the person typed is what the game stored, as typed (a web answer)
        assert session["stored"][f"web:{shown['key']}#0"]["text"] == session["typed"][shown["key"]]
        assert session["stored"][f"web:{shown['key']}#0"]["how"] == "typed"


def test_the_kinds_of_input_fit_the_games(session: dict[str, Any]) -> None:
    kinds = {
        (g, s["key"].rsplit(":", 1)[1], s["kind"]) for g, pages in session["seen"].items() for s in pages
    }
    assert ("bar", "go_or_stay", "choice") in kinds and ("diner", "dish", "choice") in kinds
    assert ("battle_royale", "shoot", "choice") in kinds
    assert ("pirate", "propose", "shares") in kinds and ("pirate", "vote", "choice") in kinds
    for game in ("guessing", "public_goods", "divide_dollar", "auction"):
        assert {k for g, _, k in kinds if g == game} == {"number"}


def test_a_refused_entry_stays_in_its_field_with_the_games_reason(session: dict[str, Any]) -> None:
    refused = session["refused"]
    assert refused["value"] == "150" and refused["key"].startswith("guessing-run01:p")
    assert "150 is outside 0..100" in refused["error"] and "a whole number from 0 to 100" in refused["error"]
    assert refused["wider"] <= 0 and refused["axe"] == []
    # the refused entry is kept with the decision, not stored as the answer
    assert session["stored"][f"web:{refused['key']}#0"]["refused"] == ["150"]


def test_the_history_is_written_for_people(session: dict[str, Any]) -> None:
    later = [s for s in session["seen"]["guessing"] if s["history"]]
    line = re.compile(
        r"Round 1: average [\d.]+, target [\d.]+, winning number [\d, ]+; "
        r"your pick 25, you (won|did not win)\."
    )
    assert line.search(later[0]["history"]), later[0]["history"]
    assert "The game is over" in session["final"]["main"] and session["final"]["axe"] == []


def test_german_pages(browser: Any, tmp_path: Path) -> None:
    """The same pages in German (``--lang de``): page text, instructions, question, history, the refusal
    (the session ends with the test: the finished page's words are checked in English above)."""
    run_dir = tmp_path / "de"
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        game = ["--game", "public_goods", "--players", "2", "--rounds", "2", "--lang", "de"]
        table = host(server, run_dir, *game, "-O", "seats=[web:Ann, llm]")
        try:
            page = browser.new_context(viewport=PHONE).new_page()
            page.set_default_timeout(PATIENCE_S * 1000)
            page.goto(table.links[0])
            assert next_question([page], table, table.links) == 0
            assert page.get_attribute("html", "lang") == "de"
            main = page.inner_text("main")
            assert "Öffentliches-Gut-Spiel" in main and "Runde 1 von 2" in main and "Anleitung" in main
            assert "Wie viele geben Sie in den Topf (0 bis 20)?" in page.inner_text("#ask")
            assert not MODEL_TEXT.search(main)
            page.keyboard.type("99")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert "Diese Antwort kann nicht verwendet werden" in page.inner_text("#error")
            assert page.input_value("#answer") == "99"
            assert axe_serious(page) == [] and wider_than_phone(page) <= 0
            answer_by_keyboard(page, "number", "public_goods-run01")
            assert next_question([page], table, table.links) == 0
            assert "Runde 1: Die Spieler zahlten" in page.inner_text("#history")
            assert page.inner_text("#send") == "Antwort senden"
            answer_by_keyboard(page, "number", "public_goods-run01")
            assert "Danke — Ihre Antwort ist angekommen" in page.inner_text("main")
        finally:
            table.close()
    session = json.loads((run_dir / "session.json").read_text())
    assert session["lang"] == "de"


def test_the_lobby_and_waiting_pages_update_live_and_pass_axe(session: dict[str, Any]) -> None:
    """The pages that wait update over the server's live events, not a meta refresh (which axe reports
    as a critical finding: a page that reloads under a screen reader's user)."""
    calm = session["calm"]
    assert set(calm) == {"lobby", "waiting"}, calm
    for name, page in calm.items():
        assert page["shown"] == 1 and page["refresh"] == 0, (name, page)
        assert page["events"].startswith("/play/") and page["events"].endswith("/events"), (name, page)
        assert page["axe"] == [], (name, page["axe"])
