"""A hosted session and the run browser reached by strangers, over real sockets on 127.0.0.1: one client
holding 64 idle and slow connections, request heads past the size limit however they arrive, every page
of the run browser searched for the seat tokens and the form secret, run folders with a corrupt store.

A stranger's sockets come from 127.0.0.2 (another address of the loopback network, another client to the
server); the participant and the experimenter use 127.0.0.1. Every wait is bounded by a socket timeout
and ends on the server's answer or close; nothing sleeps.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.serving.connections import CONNECTIONS_PER_CLIENT, MAX_HEAD_BYTES, REQUEST_READ_S
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.game_player import game_answer
from llmpsych.web import store
from llmpsych.web.catalog import _run_id
from test_web_security import WebServer
from web_host import Host

STRANGER = "127.0.0.2"
#: Bound of any one socket wait: the server answers or closes far sooner (the longest limit is the
#: read time, REQUEST_READ_S).
SOCKET_WAIT_S = 60.0
PATIENCE_S = 240.0


def send(
    port: int,
    head: bytes,
    body: bytes = b"",
    *,
    source: str = "127.0.0.1",
    parts: int = 1,
) -> tuple[int | None, bytes]:
    """One request in ``parts`` writes; (status or None for a close without answer, the whole reply)."""
    with socket.create_connection(("127.0.0.1", port), SOCKET_WAIT_S, (source, 0)) as sock:
        data = head + body
        step = -(-len(data) // parts)
        for start in range(0, len(data), step):
            sock.sendall(data[start : start + step])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    match = re.match(rb"HTTP/1\.1 (\d{3})", reply)
    return (int(match.group(1)) if match else None), reply


def head_of(method: str, path: str, port: int, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def first_reply(sock: socket.socket) -> str:
    """How the server ended a stranger's socket: ``503``, ``408``... or ``closed`` (no answer)."""
    try:
        data = sock.recv(64)
    except ConnectionResetError:
        return "reset"
    match = re.match(rb"HTTP/1\.1 (\d{3})", data)
    return match.group(1).decode() if match else ("closed" if data == b"" else repr(data))


def crawl(port: int, cookie: str, start: str = "/", limit: int = 300) -> dict[str, bytes]:
    """Every page of the run browser under ``start`` reachable from it by links (the monitor excepted),
    and the runs page."""
    pages: dict[str, bytes] = {}
    todo = [start]
    while todo and len(pages) < limit:
        path = todo.pop()
        if path in pages:
            continue
        status, reply = send(port, head_of("GET", path, port, {"Cookie": cookie}))
        assert status == 200, (path, re.findall(rb"class=\"error\">([^<]*)", reply) or reply[:300])
        pages[path] = reply
        for link in re.findall(rb'(?:href|src|data-live)="([^"#]*)', reply):
            target = html.unescape(link.decode())
            if target.startswith(("/session", "/static", "//", "/?", "/compare?")):
                continue  # the monitor hands out the join links; filters of the runs list show no more
            if target.startswith(start) or target == "/":
                todo.append(target)
    return pages


def test_a_stranger_holding_64_sockets_neither_blocks_a_participant_nor_reads_the_seat_tokens(
    tmp_path: Path,
) -> None:
    """Before: 64 idle sockets of one client made every page 503 for as long as they were held, so the
    participant could not answer and the deadline entered the default action for her; the run browser
    listed and served ``session.json`` (every seat token and the form secret)."""
    run_dir = tmp_path / "hosted"
    with FaultServer(responder=lambda body: game_answer(body, fenced=True)) as server:
        args = ["--model", "openai-compatible/scripted", "--base-url", server.base_url, "--seed", "1"]
        args += ["--out", str(run_dir), "--linger", "--game", "guessing", "--players", "2", "--rounds", "1"]
        host = Host([*args, "--deadline", "600", "-O", "seats=[web:Ann, llm]", "--host", "127.0.0.1"])
        try:
            link = urlsplit(host.links[0])
            port, play = int(link.port or 0), link.path
            assert send(port, head_of("GET", play, port))[0] == 200  # Ann joins: the game starts
            # the stranger: a slow form body, slow request heads and idle sockets, 64 in all
            strangers = []
            for i in range(64):
                sock = socket.create_connection(("127.0.0.1", port), SOCKET_WAIT_S, (STRANGER, 0))
                if i == 0:
                    sock.sendall(head_of("POST", "/play/x", port, {"Content-Length": "4000"}) + b"answer=")
                elif i < 8:
                    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                strangers.append(sock)
            # while they are held, Ann's page answers, shows her question, and takes her answer as typed
            page = b""
            for _ in range(400):  # her question comes once the engine asks (each look is a request)
                status, page = send(port, head_of("GET", play, port))
                assert status == 200, page[:300]
                if b'name="key"' in page:
                    break
            form = dict(re.findall(rb'name="(key|csrf)" value="([^"]+)"', page))
            body = b"key=%s&csrf=%s&answer=33" % (form[b"key"], form[b"csrf"])
            headers = {"Content-Length": str(len(body)), "Origin": f"http://127.0.0.1:{port}"}
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            status, reply = send(port, head_of("POST", play, port, headers), body)
            assert status == 303, reply[:300]
            # the monitor answers the experimenter too
            token = host.monitor.split("token=", 1)[1]
            cookie = f"llmpsych_web_{port}={token}"
            assert send(port, head_of("GET", "/session", port, {"Cookie": cookie}))[0] == 200
            assert host.over.wait(PATIENCE_S), "".join(host.lines)

            # the run browser (the experimenter's cookie): no page holds a seat token or the form secret
            session = json.loads((run_dir / "session.json").read_text())
            secrets = [seat["token"].encode() for seat in session["seats"]] + [session["secret"].encode()]
            pages = crawl(port, cookie)
            rid = _run_id(0, run_dir.name)
            assert f"/run/{rid}" in pages and any("/unit?" in p for p in pages)
            assert any(p.endswith("report.md") for p in pages) and any("/transcripts/" in p for p in pages)
            for path, reply in pages.items():
                assert not any(s in reply for s in secrets), path
                assert b"session.json" not in reply, path
            for path in (
                "session.json",
                "session.json?raw=1",
                "./session.json",
                "transcripts/../session.json",
            ):
                status, reply = send(
                    port, head_of("GET", f"/run/{rid}/file/{path}", port, {"Cookie": cookie})
                )
                assert status == 404 and not any(s in reply for s in secrets), path

            # then each stranger socket ends: past the per-client limit at once (503), the others when their
            # read time is up (408 for a head begun, a close for an idle socket and for the slow body)
            ends = Counter(first_reply(sock) for sock in strangers)
            for sock in strangers:
                sock.close()
            over = 64 - CONNECTIONS_PER_CLIENT
            assert ends == {"503": over, "408": 7, "closed": CONNECTIONS_PER_CLIENT - 7}, (
                ends,
                REQUEST_READ_S,
            )
        finally:
            host.proc.send_signal(signal.SIGINT)
            host.proc.wait(60)
            host.close()
    # the participant's answer is hers, typed while the stranger held his sockets; nothing defaulted
    with RunStore.in_dir(run_dir, readonly=True) as run:
        (call,) = [c for c in run.calls() if c.role == "web"]
    assert call.response["text"] == "33" and call.response["how"] == "typed"
    assert [a["how"] for a in session["answers"]] == ["typed"]
    errors = host.proc.stderr.read() if host.proc.stderr else ""
    assert "Exception in ASGI application" not in errors and "Traceback" not in errors, errors


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good run and copies whose store is garbage, empty, cut in half, or holds values of the wrong
    type; another run holding a hosted session's file (at its top and in a sub-folder)."""
    root = tmp_path_factory.mktemp("exposed") / "runs"
    with FaultServer() as server:
        config = {"task": "echo", "model": "openai-compatible/m", "base_url": server.base_url, "cache": False}
        start_run(parse_run_config({**config, "options": {"units": 30, "turns": 2}}), root / "good", False)
    good = root / "good"
    (good / "report.md").write_text("# Report\n\n[transcripts](transcripts.md)\n")
    (good / "transcripts.md").write_text("## T\n")
    stored = (good / "run.sqlite").read_bytes()
    damaged = {"garbage": os.urandom(8192), "empty": b"", "truncated": stored[: len(stored) // 2]}
    side = shutil.ignore_patterns("run.sqlite-*")
    for name, data in damaged.items():
        shutil.copytree(good, root / name, ignore=side)
        (root / name / "run.sqlite").write_bytes(data)
    shutil.copytree(good, root / "typed", ignore=side)
    with sqlite3.connect(root / "typed" / "run.sqlite") as db:  # SQLite keeps any value in any column
        db.execute("UPDATE units SET started = 'yesterday' WHERE position = 3")
    secret = '{"secret": "f0rm-secret", "seats": [{"token": "seat-t0ken"}]}'
    (good / "session.json").write_text(secret)
    (good / "transcripts").mkdir()
    (good / "transcripts" / "session.json").write_text(secret)
    return root


@pytest.fixture(scope="module")
def web(runs: Path) -> object:
    server = WebServer(runs)
    yield server
    server.stop()


def test_a_request_head_over_the_limit_is_refused_however_it_arrives(web: WebServer) -> None:
    """Before: a 100 kB head sent in one write was served (200); h11 counts only an unfinished head."""
    cookie = {"Cookie": f"llmpsych_web_{web.port}={web.token}"}
    fits = head_of("GET", "/", web.port, {**cookie, "X-Pad": "a" * (MAX_HEAD_BYTES - 500)})
    assert send(web.port, fits)[0] == 200
    big = head_of("GET", "/", web.port, {**cookie, "X-Pad": "a" * MAX_HEAD_BYTES})
    for parts in (1, 2, 7):
        status, reply = send(web.port, big, parts=parts)
        assert status == 431 and b"<html" not in reply, parts
    many = head_of("GET", "/", web.port, {**cookie, **{f"X-{i}": "a" * 1000 for i in range(100)}})
    assert send(web.port, many)[0] == 431
    # a second, pipelined request in the same write is measured too
    pipelined = fits.replace(b"Connection: close", b"Connection: keep-alive") + big
    status, reply = send(web.port, pipelined)
    assert status == 200 and re.findall(rb"HTTP/1\.1 (\d{3})", reply) == [b"200", b"431"]


def test_the_run_browser_never_lists_or_serves_a_session_file(web: WebServer) -> None:
    cookie = f"llmpsych_web_{web.port}={web.token}"
    rid = _run_id(0, "good")
    pages = crawl(web.port, cookie, f"/run/{rid}")
    assert any(p.endswith("transcripts.md") for p in pages)
    for path, reply in pages.items():
        assert b"session.json" not in reply and b"seat-t0ken" not in reply and b"f0rm-secret" not in reply, (
            path
        )
    for name in ("session.json", "transcripts/session.json", "session.json?raw=1"):
        assert web.request(f"/run/{rid}/file/{name}")[0] == 404, name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("garbage", "is damaged or not a database: file is not a database"),
        ("empty", "is empty (0 bytes)"),
        ("truncated", "is damaged or not a database: database disk image is malformed"),
        ("typed", "is damaged: units.started holds 'yesterday', not a number"),
    ],
)
def test_a_run_whose_store_is_corrupt_gets_a_clear_page(web: WebServer, name: str, reason: str) -> None:
    """Before: the run and unit pages answered 500, the runs page called the run "failed", and a value of
    the wrong type in the store (text where a time belongs) made every page of the server a 500."""
    rid = _run_id(0, name)
    status, _, body = web.request("/")
    page = html.unescape(body.decode())
    assert status == 200 and f"/run/{_run_id(0, 'good')}" in page  # the other runs are still listed
    row = re.search(rf'href="/run/{rid}">{name}</a>(.*?)</tr>', page, re.S)
    assert row is not None and reason in row.group(1) and ">unreadable<" in row.group(1)
    for path in (f"/run/{rid}", f"/run/{rid}/unit?id=u000000"):
        status, _, body = web.request(path)
        page = html.unescape(body.decode())
        assert status == 422 and reason in page and "restore run.sqlite from a copy" in page, path
        assert f'href="/run/{rid}/file/report.md"' in page  # the run's own files are still offered
        assert "Traceback" not in page
    status, _, body = web.request(f"/api/run/{rid}")
    assert status == 200 and json.loads(body)["status"] == "unreadable"
    assert web.request(f"/run/{rid}/file/report.md")[0] == 200
    status, _, body = web.request(f"/compare?run={rid}")
    assert status == 200 and f"{name} cannot be compared" in html.unescape(body.decode())


def test_a_store_held_by_another_process_is_busy_not_damaged(tmp_path: Path) -> None:
    """A store another process holds past the busy timeout is a StoreBusy (the page answers 503 with
    Retry-After), never called damaged."""
    with sqlite3.connect(tmp_path / "run.sqlite", isolation_level=None) as writer:
        writer.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("INSERT INTO meta VALUES ('config', '{}')")
        with pytest.raises(store.StoreBusy, match="is busy"):
            store.read_meta(tmp_path)
        writer.execute("COMMIT")
    assert store.read_meta(tmp_path) == {"config": {}}
