"""A hosted session over plain HTTP against a real ``llmpsych gamabench host`` process and a scripted model
server: the deadline's default action, the experimenter's "Start now" with absent seats, answers the game
refuses (re-asked, nothing stored), scores so far, two games at once, ``--host``, and a read-only run
folder that still shows."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from llmpsych.runs import RunStore, StoredCall, analyze_run, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.web.catalog import _run_id
from test_web_security import WebServer
from web_host import Host

MODEL = ["--model", "openai-compatible/scripted"]
#: The longest any one wait below may take (a loaded 2-core machine); every wait ends on an event sooner.
PATIENCE_S = 240.0


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    """Hosts a test starts; any still running at its end are ended."""
    started: list[Host] = []
    yield started
    for host in started:
        host.close()


def models(body: dict[str, Any]) -> str:
    return game_answer(body, fenced=True)


def until(probe: Callable[[], Any], what: str, host: Host | None = None) -> Any:
    """``probe()``'s first true value, polled until :data:`PATIENCE_S` (the host's output on failure)."""
    end = time.monotonic() + PATIENCE_S
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        if host is not None and host.proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}: " + ("".join(host.lines) if host else ""))


def host_args(server: FaultServer, run_dir: Path, *rest: str, linger: bool = False) -> list[str]:
    end = "--linger" if linger else "--exit"
    return [*MODEL, "--base-url", server.base_url, "--seed", "1", "--out", str(run_dir), end, *rest]


def web_calls(run_dir: Path) -> dict[str, StoredCall]:
    with RunStore.in_dir(run_dir, readonly=True) as store:
        return {c.call_key: c for c in store.calls() if c.role == "web"}


def question(client: httpx.Client, link: str) -> str | None:
    """The seat's page if it shows a question, else None."""
    page = client.get(link).text
    return page if 'name="key"' in page else None


def form_of(page: str) -> dict[str, str]:
    """The hidden fields of a seat page's answer form."""
    return dict(re.findall(r'name="(key|csrf)" value="([^"]+)"', page))


def test_the_deadline_plays_the_default_action_and_records_it(tmp_path: Path, hosts: list[Host]) -> None:
    run_dir = tmp_path / "deadline"
    with FaultServer(responder=models) as server:
        args = ["--game", "guessing", "--players", "3", "--rounds", "1", "--deadline", "1"]
        host = Host(host_args(server, run_dir, *args, "-O", "seats=[web:Ann, llm, llm]"))
        hosts.append(host)
        with httpx.Client(trust_env=False, timeout=30) as client:
            page = client.get(host.links[0]).text  # Ann joins (the game starts) and never answers
            assert "You are <strong>Ann</strong>" in page
            assert host.over.wait(PATIENCE_S), "".join(host.lines)
        host.proc.wait(60)
    assert host.proc.returncode == 0, "".join(host.lines)
    # documented: the game's equilibrium action (Guess 2/3: the lowest number, 0), stored as a default
    (call,) = web_calls(run_dir).values()
    assert call.response["text"] == "0"
    assert call.response["how"] == "deadline" and call.response["response_s"] >= 1
    session = json.loads((run_dir / "session.json").read_text())
    assert [a["how"] for a in session["answers"]] == ["deadline"]
    seats = pd.read_csv(run_dir / "seats.csv")
    ann = seats[seats["player"] == 0].iloc[0]
    # the default is not Ann's action: her mean action has no typed answer to average
    assert ann["default answers"] == 1 and ann["mean action n"] == 0 and pd.isna(ann["mean action"])
    assert ann["answers"] == "typed 0 of 1 (1 deadline defaults)"
    assert seats[seats["player"] > 0]["default answers"].isna().all()  # model seats: no person's answers
    kinds = pd.read_csv(run_dir / "seat_kinds.csv")
    assert kinds.set_index("who").loc["web:Ann", "default answers"] == 1
    # `llmpsych analyze` rewrites both tables from the store alone: the same tables, the column kept
    written = [(run_dir / name).read_text() for name in ("seats.csv", "seat_kinds.csv")]
    analyze_run(run_dir)
    assert [(run_dir / name).read_text() for name in ("seats.csv", "seat_kinds.csv")] == written


def test_a_seat_name_with_markup_is_shown_as_text(tmp_path: Path, hosts: list[Host]) -> None:
    """The experimenter names the seats; a name holding markup is text on the seat's page, on the monitor
    (while playing and at the end, with the scores) and in the run's report."""
    run_dir = tmp_path / "names"
    name, escaped = "<b>Cy</b>", "&lt;b&gt;Cy&lt;/b&gt;"
    with FaultServer(responder=models) as server:
        args = ["--game", "guessing", "--players", "2", "--rounds", "1", "--deadline", "1"]
        host = Host(host_args(server, run_dir, *args, "-O", f"seats=['web:{name}', llm]", linger=True))
        hosts.append(host)
        base = host.monitor.split("/session", 1)[0]
        with (
            httpx.Client(trust_env=False, timeout=30) as cy,
            httpx.Client(base_url=base, trust_env=False, timeout=30) as lab,
        ):
            pages = {"seat": cy.get(host.links[0]).text}  # Cy joins and lets the deadline answer
            pages["monitor"] = lab.get(host.monitor, follow_redirects=True).text
            assert host.over.wait(PATIENCE_S), "".join(host.lines)
            pages["monitor at the end"] = lab.get("/session").text
            pages["report"] = lab.get(f"/run/{_run_id(0, run_dir.name)}").text
        host.proc.send_signal(signal.SIGINT)
        host.proc.wait(60)
    for where, page in pages.items():
        assert escaped in page and name not in page, where
    assert "Scores per seat</h2>" in pages["monitor at the end"]


def test_start_now_refused_answers_live_scores_and_two_games_at_once(
    tmp_path: Path, hosts: list[Host]
) -> None:
    run_dir = tmp_path / "session"
    seats = "seats=[web:Ann, web:Bob, llm]"
    rounds = 2
    with FaultServer(responder=models) as server:
        args = ["--game", "guessing,public_goods", "--players", "3", "--rounds", str(rounds)]
        host = Host(host_args(server, run_dir, *args, "--deadline", "0", "-O", seats, linger=True))
        hosts.append(host)
        base = host.monitor.split("/session", 1)[0]
        with (
            httpx.Client(trust_env=False, timeout=30) as ann,
            httpx.Client(base_url=base, trust_env=False, timeout=30) as lab,
        ):
            assert "0 of 2 joined" in lab.get(host.monitor, follow_redirects=True).text
            lobby = ann.get(host.links[0]).text  # Ann joins; Bob never comes
            assert "<strong>1</strong> of 2 participants have joined" in lobby
            monitor = lab.get("/session").text
            assert "Start now" in monitor
            csrf = re.search(r'name="csrf" value="([^"]+)"', monitor)
            assert csrf is not None
            assert lab.post("/session/start", data={"csrf": "forged"}).status_code == 403
            assert lab.post("/session/start", data={"csrf": csrf.group(1)}).status_code == 303

            typed: dict[str, str] = {}
            titles: set[str] = set()
            seen_more = seen_scores = False
            while len(typed) < 2 * rounds:
                page = until(lambda: question(ann, host.links[0]), "Ann's next question", host)
                form = form_of(page)
                key = form["key"]
                assert key not in typed, f"asked twice: {key}"
                # the page names the game and the round the question belongs to
                game = "Guess 2/3 of the Average" if key.startswith("guessing") else "Public Goods Game"
                round_no = int(re.search(r":r(\d+):", key).group(1))  # type: ignore[union-attr]
                assert f'id="game">{game}</p>' in page and f"Round {round_no} of {rounds}" in page
                titles.add(game)
                seen_more = seen_more or 'id="more"' in page
                if round_no == 2:  # a finished round: the seat's own payoff so far, nothing of others
                    own = re.search(r'id="own">(.*?)</section>', page, re.S)
                    assert own is not None, page
                    words = "rounds won" if game.startswith("Guess") else "total gain"
                    assert words in own.group(1) and "Bob" not in own.group(1) and "web:" not in own.group(1)
                    monitor = lab.get("/session").text
                    assert "Scores per seat so far" in monitor
                    kinds = re.search(r'<table id="kinds">(.*?)</table>', monitor, re.S)
                    assert kinds is not None and "model openai-compatible/scripted" in kinds.group(1)
                    assert "web:Bob" in kinds.group(1)
                    seen_scores = True
                # refused by the game's own check: the same question again, with the game's reason
                for bad, reason in (("150", "150 is outside 0..100"), ("abc", "'abc' is not a whole number")):
                    if not key.startswith("guessing"):
                        bad, reason = "999", "999 is outside 0.."
                    refused = ann.post(host.links[0], data={**form, "answer": bad})
                    assert refused.status_code == 400 and reason in html.unescape(refused.text), refused.text
                    assert form_of(refused.text)["key"] == key
                value = "33" if key.startswith("guessing") else "2"
                sent = ann.post(host.links[0], data={**form, "answer": value})
                assert sent.status_code == 303
                typed[key] = value
            assert titles == {"Guess 2/3 of the Average", "Public Goods Game"} and seen_scores
            assert seen_more  # both games asked Ann at once: the page said another question waits
            assert host.over.wait(PATIENCE_S), "".join(host.lines)
            final = lab.get("/session").text
            assert "Scores per seat</h2>" in final and "default answers" in final
            result = ann.get(host.links[0]).text  # Ann's own final payoffs, nobody else's
            assert 'id="finished"' in result and "Your result" in result
            assert "Guess 2/3 of the Average: rounds won" in result
            assert "Public Goods Game: total gain" in result
            assert "Bob" not in result
        host.proc.send_signal(signal.SIGINT)
        host.proc.wait(60)
    calls = web_calls(run_dir)
    # Ann: exactly the typed answers, one stored call per question (nothing of the refused ones)
    ann_calls = {k: c for k, c in calls.items() if ":p0:" in k}
    stored = {k.removeprefix("web:").removesuffix("#0"): c.response["text"] for k, c in ann_calls.items()}
    assert stored == typed
    assert {c.response["how"] for c in ann_calls.values()} == {"typed"}
    # the refused entries are kept with the answer that followed them
    assert all(len(c.response["refused"]) == 2 for c in ann_calls.values())
    # Bob never joined: every decision of his is the default action, stored as such
    bob = [c for k, c in calls.items() if ":p1:" in k]
    assert len(bob) == 2 * rounds and {c.response["how"] for c in bob} == {"never joined"}
    seats_csv = pd.read_csv(run_dir / "seats.csv").set_index(["game", "player"])
    assert (seats_csv.xs(1, level="player")["default answers"] == rounds).all()
    assert (seats_csv.xs(0, level="player")["default answers"] == 0).all()


def _address() -> str:
    """This machine's first non-loopback IPv4 address ("" if it has none)."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout.split()
    return next((a for a in out if "." in a and not a.startswith("127.")), "")


def test_another_address_needs_host_says_who_can_reach_it_and_keeps_the_token(
    tmp_path: Path, hosts: list[Host]
) -> None:
    address = _address()
    if not address:
        pytest.skip("this machine has no non-loopback address to test --host with")
    with FaultServer(responder=models) as server:
        args = ["--game", "guessing", "--players", "2", "--rounds", "1", "-O", "seats=[web:Ann, llm]"]
        loopback = Host(host_args(server, tmp_path / "a", *args))
        hosts.append(loopback)
        port = int(loopback.monitor.split(":")[2].split("/")[0])
        with pytest.raises(OSError), socket.create_connection((address, port), timeout=10):
            pass  # the default listens on loopback only
        assert any("only this machine can reach it" in line for line in loopback.lines)
        loopback.proc.terminate()
        loopback.proc.wait(60)

        host = Host(host_args(server, tmp_path / "b", *args, "--host", "0.0.0.0"))

        hosts.append(host)
        text = "".join(host.lines)
        assert "WARNING: bound to 0.0.0.0: anyone who can reach this machine on port" in text
        port = int(host.monitor.split(":")[2].split("/")[0])
        token = host.monitor.rsplit("=", 1)[1]
        with httpx.Client(base_url=f"http://{address}:{port}", trust_env=False, timeout=30) as other:
            assert other.get("/").status_code == 403  # the runs page needs the experimenter token
            assert other.get("/session").status_code == 403  # so does the monitor
            assert other.get(f"/session?token={'x' * len(token)}").status_code == 403
            opened = other.get(f"/session?token={token}", follow_redirects=True)
            assert opened.status_code == 200 and "Session monitor" in opened.text
            assert other.get("/").status_code == 200
            # the printed join link names this machine's network address; a participant there joins
            assert host.links[0].startswith(f"http://{address}:{port}/play/")
            assert other.get(host.links[0]).status_code == 200
            assert (
                other.get(f"http://{address}:{port}/", headers={"Host": f"evil.example:{port}"}).status_code
                == 421
            )
        host.proc.terminate()
        host.proc.wait(60)


def test_a_read_only_run_folder_still_shows_and_compares(tmp_path: Path, seed_data: Path) -> None:
    from typer.testing import CliRunner

    from llmpsych.collab.cli import app as mas_app
    from llmpsych.collab.scripted import ScriptedCollaborator
    from test_games_engine_runs import scripted
    from test_web_browser import scores_responder

    root = tmp_path / "runs"
    with FaultServer(responder=scores_responder) as server:
        for model in ("low", "high"):
            config = {
                "task": "psychobench",
                "model": f"openai-compatible/{model}",
                "base_url": server.base_url,
                "cache": False,
                "data_dir": str(seed_data),
                "options": {"scale": ["DTDD"], "runs": 1},
            }
            start_run(parse_run_config(config), root / f"pb-{model}", False)
    with FaultServer(responder=ScriptedCollaborator({}, answers={"Alice": "1.5"})) as server:
        for fault in ("none", "autoinject"):
            args = ["run", "--system", "mad", "--dataset", "ciar", "--items", "1", "--fault", fault]
            args += ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
            args += ["--data-dir", str(seed_data), "--no-cache", "--no-progress", "--out", str(root / fault)]
            result = CliRunner().invoke(mas_app, args)
            assert result.exit_code == 0, result.output
    with FaultServer(responder=scripted) as server:
        for model in ("a", "b"):
            config = {
                "task": "gamabench",
                "model": f"openai-compatible/{model}",
                "base_url": server.base_url,
                "cache": False,
                "options": {"players": 3, "rounds": 2, "game": ["guessing"], "runs": 1},
            }
            start_run(parse_run_config(config), root / f"games-{model}", False)
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    # root ignores file modes: then the folder is also mounted read-only (bubblewrap), as an archive is
    bwrap = shutil.which("bwrap")
    wrap: tuple[str, ...] = ()
    if os.geteuid() == 0:
        assert bwrap, "bubblewrap is needed to make a folder read-only for root"
        wrap = (bwrap, "--bind", "/", "/", "--ro-bind", str(root), str(root))
        wrap += ("--dev", "/dev", "--proc", "/proc", "--die-with-parent")  # stop() ends the server too
    web = WebServer(root, wrap=wrap)
    try:
        status, _, body = web.request("/")
        assert status == 200 and b"games-a" in body and b"games-b" in body
        run = _run_id(0, "games-a")
        status, _, body = web.request(f"/run/{run}")
        assert status == 200 and b"guessing-run01" in body
        status, _, body = web.request(f"/run/{run}/unit?id=guessing-run01")
        assert status == 200 and b"error" not in body.lower().split(b"<main", 1)[-1][:200]
        query = f"/compare?run={run}&run={_run_id(0, 'games-b')}"
        status, _, body = web.request(query)
        assert status == 200 and b"GAMA-Bench leaderboard" in body, body[-3000:]
        assert b'class="error"' not in body, body[-3000:]
        for pair, title in (
            (("pb-low", "pb-high"), b"PsychoBench"),
            (("none", "autoinject"), b"MAS-Resilience"),
        ):
            status, _, body = web.request("/compare?" + "&".join(f"run={_run_id(0, r)}" for r in pair))
            assert status == 200 and title in body and b'class="error"' not in body, body[-3000:]
    finally:
        web.stop()
        for path in [root, *root.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before  # nothing written, nothing added


def test_a_seat_page_between_questions_renders_before_any_question(tmp_path: Path) -> None:
    """Joined and started, but the game has not asked this seat yet: the waiting page, not an error."""
    from llmpsych.web.seat_pages import SessionApp
    from llmpsych.web.session import Session

    session = Session.create(tmp_path, [(0, "web:Ann", "Ann")], 0.0)
    app = SessionApp(session, lambda *a: None, token="t", port=1, hosts={"127.0.0.1"})  # type: ignore[arg-type]
    slot = session.slots[(1, 0)]  # (table, player)
    session.join(slot)  # the only seat: the game starts
    page = app._seat(slot, None, 200)
    assert page.status_code == 200 and b'id="waiting"' in page.body and b'id="game"' not in page.body
