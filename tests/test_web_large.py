"""A large run (2,500 units, 50,000 calls, a synthetic store in the real format) through the real server:
every page answers, paginated; a page of units and a unit's transcripts read slices, not the whole run.
The page times are measured by ``benchmarks/web_pages.py`` (no timed assertion here)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.runs.store import RunStore, put_call_statements
from llmpsych.web.catalog import _run_id
from test_web_security import WebServer


def synthetic_run(
    run_dir: Path, units: int = 2500, calls_per_unit: int = 20, failed_every: int = 100
) -> Path:
    """A finished PsychoBench-shaped run written through the store's own statements: each unit one
    conversation of ``calls_per_unit`` turns (every request holds the history so far), every
    ``failed_every``-th unit failed."""
    store = RunStore.in_dir(run_dir, create=True)
    config = {"task": "psychobench", "model": "openai-compatible/synthetic", "options": {}}
    store.set_meta("config", config)
    store.set_meta(
        "manifest", {"task": "psychobench", "created": "2026-01-01T00:00:00+00:00", "units": units}
    )
    store.add_units((f"u{i:05d}", {"index": i}) for i in range(units))
    now = time.time()
    statements = []
    for i in range(units):
        uid = f"u{i:05d}"
        history = [{"role": "system", "content": "Answer each statement from 1 to 5."}]
        for turn in range(calls_per_unit):
            history.append({"role": "user", "content": f"unit {i}, statement {turn}: I like order."})
            request = {"model": "synthetic", "messages": list(history), "temperature": 0}
            text = f"{turn}: {1 + (i + turn) % 5}"
            response = {
                "text": text,
                "usage": {"prompt_tokens": 20 + turn, "completion_tokens": 3},
                "latency_s": 0.1,
                "attempts": 1,
            }
            statements += put_call_statements(
                uid, f"k{turn}#0", turn + 1, "subject", "synthetic", request, response
            )
            history.append({"role": "assistant", "content": text})
        if failed_every and i % failed_every == failed_every - 1:
            statements.append(
                (
                    "UPDATE units SET status='failed', error=?, started=?, finished=? WHERE unit_id=?",
                    ("HTTP 500 from the server", now, now + 1, uid),
                )
            )
        else:
            result = {"answers": {str(t): 1 + (i + t) % 5 for t in range(calls_per_unit)}}
            statements.append(
                (
                    "UPDATE units SET status='done', result=?, started=?, finished=? WHERE unit_id=?",
                    (json.dumps(result), now, now + 1, uid),
                )
            )
    store.write(statements)
    store.close()
    return run_dir


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    root = tmp_path_factory.mktemp("large")
    synthetic_run(root / "big")
    server = WebServer(root)
    yield server
    server.stop()


def test_large_run_pages_are_paginated_and_complete(web: WebServer) -> None:
    rid = _run_id(0, "big")
    status, _, body = web.request("/")
    page = body.decode()
    assert status == 200 and "2500/2500" in page and "(25 failed)" in page
    assert "100.0% (49500/49500)" in page  # 2,475 done units x 20 answers
    status, _, body = web.request(f"/run/{rid}")
    page = body.decode()
    assert status == 200 and page.count("/unit?id=u") == 50 and "page 1 of 50" in page
    status, _, body = web.request(f"/run/{rid}?page=50")
    assert status == 200 and "/unit?id=u02499" in body.decode() and "/unit?id=u00000" not in body.decode()
    status, _, body = web.request(f"/run/{rid}?status=failed")
    page = body.decode()
    assert status == 200 and page.count("/unit?id=u") == 25 and "HTTP 500 from the server" in page
    assert web.request(f"/run/{rid}?page=99999")[0] == 200  # clamped to the last page
    assert web.request(f"/run/{rid}?page=abc")[0] == 200


def test_a_long_conversation_is_one_thread(web: WebServer) -> None:
    status, _, body = web.request(f"/run/{_run_id(0, 'big')}/unit?id=u01234")
    page = body.decode()
    assert status == 200 and page.count('class="thread"') == 1
    assert page.count("msg msg-user") == 20 and page.count("msg msg-system") == 1  # each message once
    assert "20 in 1 conversation(s)" in page
