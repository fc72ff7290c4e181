"""Client and server agree on parallel slots: a client without a concurrency of its own asks the server
(llama.cpp's ``GET /props``, ``total_slots``) and keeps that many requests in flight, so none waits in the
server's queue until its timeout runs out. Real loopback aiohttp servers, one slot served at a time."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from llmpsych.cli import app
from llmpsych.models import GenerationParams, open_client
from llmpsych.models.spec import DEFAULT_HTTP_CONCURRENCY

TOKEN = "slots-test-token"
Props = Callable[[web.Request], Awaitable[web.StreamResponse]]


class OneSlotServer:
    """Answers chat completions one at a time (a lock, like a llama.cpp server with one slot).

    ``in_flight`` counts requests the server holds, queued or served; ``peak`` its highest value."""

    def __init__(self, props: Props | None, delay_s: float = 0.05) -> None:
        self.props = props
        self.delay_s = delay_s
        self.in_flight = 0
        self.peak = 0
        self.chats = 0
        self.props_hits = 0
        self.props_auth: list[str] = []
        self._slot = asyncio.Lock()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def _chat(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": {"message": "Invalid API Key"}}, status=401)
        self.chats += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            body = await request.json()
            async with self._slot:
                await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        text = body["messages"][-1]["content"]
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"re {text}"}}]}
        )

    async def _props(self, request: web.Request) -> web.StreamResponse:
        self.props_hits += 1
        self.props_auth.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"error": {"message": "Invalid API Key"}}, status=401)
        assert self.props is not None
        return await self.props(request)

    async def __aenter__(self) -> OneSlotServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        if self.props is not None:
            app.router.add_get("/props", self._props)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)  # a hanging handler is cut off
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def reply(payload: Any, status: int = 200) -> Props:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(payload, status=status)

    return handler


def raw(data: bytes, headers: dict[str, str] | None = None, status: int = 200) -> Props:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=data, status=status, headers=headers or {"Content-Type": "application/json"})

    return handler


def run(props: Props | None, requests: int = 8, **client_options: Any) -> tuple[OneSlotServer, Any, list]:
    """Send ``requests`` chat requests at once through a client with ``client_options``."""

    async def go():
        async with OneSlotServer(props) as server:
            client = open_client("openai-compatible/m", base_url=server.base_url, **client_options)
            try:
                results = await asyncio.gather(
                    *(
                        client.complete([{"role": "user", "content": f"q{i}"}], GenerationParams(), i)
                        for i in range(requests)
                    )
                )
            finally:
                await client.aclose()
            return server, client, results

    return asyncio.run(go())


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMPSYCH_API_KEY", TOKEN)


def test_a_client_without_concurrency_keeps_to_the_servers_one_slot() -> None:
    server, client, results = run(reply({"total_slots": 1, "model_path": "/m.gguf"}))
    assert [r.text for r in results] == [f"re q{i}" for i in range(8)]  # all succeed
    assert server.peak == 1  # never more than one request at the server: none waits in its queue
    assert server.chats == 8 and client.stats.retries == 0 and all(r.attempts == 1 for r in results)
    assert server.props_hits == 1 and server.props_auth == [f"Bearer {TOKEN}"]  # asked once, with the key
    assert client.describe()["concurrency"] == 1
    assert client.describe()["concurrency_from"] == "server slots"


def test_the_instrument_sees_a_queue_when_the_client_ignores_the_slots() -> None:
    """The same server and requests with the old default in flight: the server holds several at once."""
    server, client, results = run(reply({"total_slots": 1}), concurrency=DEFAULT_HTTP_CONCURRENCY)
    assert len(results) == 8 and server.peak > 1
    assert server.props_hits == 0  # a concurrency the user chose is not questioned
    assert client.describe()["concurrency_from"] == "set"


def test_a_timeout_no_longer_runs_out_in_the_servers_queue() -> None:
    """12 requests of 0.25 s each against one slot, 1.5 s timeout: with 16 in flight the later ones time out
    in the server's queue and are retried; with the server's slot count each is sent when the slot is free
    and none is."""
    slow = reply({"total_slots": 1})

    async def go(concurrency: int | None):
        async with OneSlotServer(slow, delay_s=0.25) as server:
            client = open_client(
                "openai-compatible/m",
                base_url=server.base_url,
                timeout=1.5,
                concurrency=concurrency,
                max_retries=1,
            )
            try:
                results = await asyncio.gather(
                    *(
                        client.complete([{"role": "user", "content": f"q{i}"}], GenerationParams(), i)
                        for i in range(12)
                    ),
                    return_exceptions=True,
                )
            finally:
                await client.aclose()
            return server, client, results

    server, client, results = asyncio.run(go(None))
    assert all(not isinstance(r, BaseException) for r in results)
    assert server.chats == 12 and client.stats.retries == 0 and server.peak == 1
    server, client, _ = asyncio.run(go(DEFAULT_HTTP_CONCURRENCY))
    assert client.stats.retries > 0 and server.chats > 12  # the symptom of the issue, reproduced


def test_a_server_without_props_keeps_the_default() -> None:
    server, client, results = run(None)
    assert len(results) == 8 and server.chats == 8
    assert client.concurrency == DEFAULT_HTTP_CONCURRENCY
    assert client.describe()["concurrency_from"] == "default"


HOSTILE_PROPS = {
    "not found": reply({"error": "no"}, status=404),
    "server error": reply({"total_slots": 1}, status=500),
    "redirect": raw(b"", {"Location": "http://127.0.0.1:9/props"}, status=302),
    "zero slots": reply({"total_slots": 0}),
    "negative slots": reply({"total_slots": -3}),
    "a billion slots": reply({"total_slots": 10**9}),
    "slots as text": reply({"total_slots": "1"}),
    "slots as a float": reply({"total_slots": 1.5}),
    "slots as true": reply({"total_slots": True}),
    "a list": reply([{"total_slots": 1}]),
    "not json": raw(b"<html>total_slots: 1</html>", {"Content-Type": "text/html"}),
    "oversized": raw(json.dumps({"total_slots": 1, "pad": "x" * 200_000}).encode()),
    "gzip bomb": raw(
        gzip.compress(b'{"total_slots": 1, "pad": "' + b"0" * 50_000_000 + b'"}'),
        {"Content-Type": "application/json", "Content-Encoding": "gzip"},
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_PROPS))
def test_a_props_reply_that_is_not_a_slot_count_keeps_the_default(name: str) -> None:
    server, client, results = run(HOSTILE_PROPS[name], requests=2)
    assert [r.text for r in results] == ["re q0", "re q1"]
    assert server.props_hits == 1
    assert (
        client.concurrency == DEFAULT_HTTP_CONCURRENCY and client.describe()["concurrency_from"] == "default"
    )


def test_a_props_reply_that_never_ends_keeps_the_default() -> None:
    """A /props that never answers is given up after the probe's bound (here the 0.5 s request timeout)."""

    async def hang(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    server, client, results = run(hang, requests=2, timeout=0.5)
    assert len(results) == 2 and client.concurrency == DEFAULT_HTTP_CONCURRENCY


def test_a_served_slot_count_is_used_up_to_its_number() -> None:
    server, client, results = run(reply({"total_slots": 3}), requests=9)
    assert len(results) == 9 and client.concurrency == 3 and server.peak <= 3


def test_a_run_without_concurrency_records_the_servers_slots_in_its_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented run command against a one-slot server: 8 units, none retried, manifest says why."""
    loop = asyncio.new_event_loop()
    server = OneSlotServer(reply({"total_slots": 1}))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(30)
    try:
        command = ["run", "--task", "echo", "--model", "openai-compatible/m", "--base-url", server.base_url]
        command += ["--no-cache", "--no-progress", "-O", "units=8", "--out", str(tmp_path / "run")]
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
    model = json.loads((tmp_path / "run" / "manifest.json").read_text())["models"]["subject"]
    assert model["concurrency"] == 1 and model["concurrency_from"] == "server slots"
    assert server.peak == 1 and server.chats == 8 and server.props_hits == 1
