"""Issue 14 class 3: every model response is bounded, in bytes and in time, whatever the server sends.

The servers are real loopback servers written as an attacker would: a 10 GiB gzip bomb made on the fly,
endless chunked streams, a server trickling one byte a second, redirects and permanent errors.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.errors import EndpointError, LlmpsychError
from llmpsych.models import open_client
from llmpsych.models.http_backend import MAX_RESPONSE_BYTES, _url_problem, parse_retry_after
from llmpsych.models.retry import RetryPolicy
from llmpsych.testing.fault_server import (
    FaultServer,
    RawReply,
    endless_gzip,
    endless_stream,
    gzip_bomb,
    hostile_reply,
    slow_loris,
    status_reply,
)

MIB = 2**20
#: What one bounded response may cost the client process beyond a clean run: the 32 MiB body, the
#: buffer it grows in and the decoder's output step (docs/security.md section 3 states 96 MiB).
RSS_BOUND_MIB = 3 * MAX_RESPONSE_BYTES // MIB


def _ask(client, guard_s: float = 120.0):
    """One request; the guard turns a hang into a failure instead of a stuck test."""

    async def go():
        try:
            return await asyncio.wait_for(client.complete([{"role": "user", "content": "q"}]), guard_s)
        finally:
            await client.aclose()

    return asyncio.run(go())


def _client(server: FaultServer, timeout: float = 30.0, retries: int = 2):
    client = open_client("openai-compatible/m", base_url=server.base_url, timeout=timeout)
    client.policy = RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=0.02)
    return client


def _run_child(server: FaultServer, run_dir: Path) -> tuple[int, float, str]:
    """``llmpsych run`` (echo, one unit) in a child process: exit code, its peak RSS in MiB, stderr."""
    command = [sys.executable, "-m", "llmpsych", "run", "--task", "echo", "--model", "openai-compatible/m"]
    command += ["--base-url", server.base_url, "--no-cache", "--no-progress", "-O", "units=1"]
    command += ["-O", "turns=1", "--out", str(run_dir)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode()  # type: ignore[union-attr]
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss / 1024, stderr


@pytest.mark.parametrize(
    "name, attack",
    [
        ("gzip bomb: 10 GiB of zeros in ~10 MB", gzip_bomb()),
        ("endless chunked stream", endless_stream()),
        ("endless gzip stream that decodes to nothing", endless_gzip()),
    ],
)
def test_hostile_stream_costs_bounded_memory_and_one_counted_failure(name, attack, tmp_path: Path) -> None:
    with FaultServer() as clean:
        code, clean_rss, _ = _run_child(clean, tmp_path / "clean")
    assert code == 0
    with FaultServer(hostile=attack) as server:
        code, rss, stderr = _run_child(server, tmp_path / "attacked")
        sent, hits = server.sent_bytes, sum(server.hits.values())
    growth = rss - clean_rss
    print(
        f"{name}: peak RSS {rss:.0f} MiB vs {clean_rss:.0f} MiB clean (+{growth:.0f}); server sent {sent} B"
    )
    assert code == 1 and "units failed" in stderr  # the run finished; the unit failed, counted, resumable
    assert f"larger than {MAX_RESPONSE_BYTES} bytes" in stderr
    assert hits == 1  # an oversized body is not retried
    assert growth < RSS_BOUND_MIB
    if "bomb" in name:
        assert sent < 10 * MIB  # it stopped reading long before the end of the bomb
    with sqlite3.connect(tmp_path / "attacked" / "run.sqlite") as db:
        assert db.execute("SELECT status, error FROM units").fetchall()[0][0] == "failed"
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0


def test_compressed_and_decoded_caps_hold_separately() -> None:
    """A small cap shows which side stops: the decoded bytes of a bomb, the wire bytes of empty blocks."""
    with FaultServer(hostile=gzip_bomb(total=64 * MIB)) as server:
        client = _client(server)
        client.backend.max_response_bytes = 4 * MIB
        with pytest.raises(EndpointError, match=f"larger than {4 * MIB} bytes; not retried"):
            _ask(client)
        assert server.sent_bytes < 64 * MIB // 1000  # 4 MiB decoded came from ~4 kB on the wire
    with FaultServer(hostile=endless_gzip()) as server:
        client = _client(server)
        client.backend.max_response_bytes = 4 * MIB
        with pytest.raises(EndpointError, match="larger than"):
            _ask(client)
        assert server.sent_bytes >= 4 * MIB  # nothing decoded: only the wire count could stop it


def test_declared_length_over_the_cap_is_refused_before_reading() -> None:
    def liar(body: dict) -> RawReply:
        return RawReply(headers={"Content-Length": str(10 * 2**30)}, pieces=iter(lambda: b"x" * 65536, b""))

    with FaultServer(hostile=liar) as server:
        with pytest.raises(EndpointError, match="larger than"):
            _ask(_client(server))
        assert sum(server.hits.values()) == 1


def test_gzip_bomb_under_the_cap_decodes_to_the_exact_bytes() -> None:
    """The bounded decoder is a real decoder: a valid 1 MiB gzip body of zeros is read in full."""
    with FaultServer(hostile=gzip_bomb(total=MIB)) as server:
        client = _client(server, retries=0)
        with pytest.raises(EndpointError, match="malformed response body"):
            _ask(client)  # a megabyte of NUL bytes decodes fine and then is not JSON
        assert sum(server.hits.values()) == 1


def test_slow_loris_ends_at_the_deadline_and_is_retried_a_bounded_number_of_times() -> None:
    with FaultServer(hostile=slow_loris(pause_s=0.5)) as server:
        client = _client(server, timeout=1.5, retries=1)
        with pytest.raises(EndpointError, match="gave up after 2 attempts; last error: timeout after 1.5 s"):
            _ask(client, guard_s=60)
        assert sum(server.hits.values()) == 2
        assert server.sent_bytes < 20  # a few bytes a second: the deadline, not a size, ended it


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308, 400, 401, 403, 404, 413, 422])
def test_permanent_statuses_are_not_retried(status: int) -> None:
    headers = {"Location": "http://127.0.0.1:9/v1/chat/completions"} if status < 400 else None
    with FaultServer(hostile=status_reply(status, headers)) as server:
        with pytest.raises(EndpointError, match=f"HTTP {status}") as info:
            _ask(_client(server, retries=3))
        assert sum(server.hits.values()) == 1
    if status < 400:
        assert "redirects are not followed" in str(info.value)


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504])
def test_transient_statuses_keep_bounded_retries(status: int) -> None:
    with FaultServer(hostile=status_reply(status, {"Retry-After": "0"})) as server:
        with pytest.raises(EndpointError, match=f"gave up after 4 attempts; last error: HTTP {status}"):
            _ask(_client(server, retries=3))
        assert sum(server.hits.values()) == 4


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "file:///etc", "gopher://x/v1", "http:///v1"])
def test_unsupported_url_fails_at_once_without_a_connection(url: str) -> None:
    """Refused when the endpoint is resolved (``spec.check_base_url``); the backend checks again."""
    with pytest.raises(LlmpsychError, match="not an http:// or https:// URL with a host"):
        open_client("openai-compatible/m", base_url=url)
    client = open_client("openai-compatible/m", base_url="http://127.0.0.1:9/v1")
    client.backend._problem = _url_problem(f"{url}/chat/completions")  # as if it had slipped through
    with pytest.raises(EndpointError, match="unsupported URL scheme|no host"):
        _ask(client)
    assert client.stats.retries == 0


def test_retry_after_is_parsed_defensively_and_capped() -> None:
    policy = RetryPolicy()
    rng = random.Random(0)
    assert parse_retry_after("1e999") == float("inf")
    assert policy.delay(1, parse_retry_after("1e999"), rng) == policy.max_retry_after
    assert policy.delay(1, parse_retry_after("86400"), rng) == policy.max_retry_after
    assert parse_retry_after("nan") is None and parse_retry_after("-5") == 0.0
    assert parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT") is not None
    assert parse_retry_after("Mon, 99 Foo 2020 99:99:99") is None
    assert parse_retry_after("\x00\r\n") is None


def test_hostile_modes_are_named_for_the_command_line() -> None:
    for name in ("gzip-bomb", "endless-stream", "slow-loris", "redirect", "content-list", "not-json"):
        assert callable(hostile_reply(name))
    with pytest.raises(KeyError):
        hostile_reply("nosuch")


def test_error_message_from_the_server_is_storable() -> None:
    """A 400 whose message holds a lone surrogate: the one-line error (stored with the unit) is clean."""
    payload = b'{"error": {"message": "bad \\ud800 request"}}'

    def reply(body: dict) -> RawReply:
        return RawReply(400, {"Content-Length": str(len(payload))}, [payload])

    with FaultServer(hostile=reply) as server, pytest.raises(EndpointError, match="HTTP 400") as info:
        _ask(_client(server))
    message = str(info.value)
    assert "bad \ufffd request" in message
    message.encode("utf-8")  # a lone surrogate would raise here, and in SQLite


def test_endless_headers_are_cut_off_by_the_parser() -> None:
    """10,000 header lines: the HTTP client stops at 128 header lines or 64 KiB of head."""
    headers = {f"X-Junk-{i}": "y" * 1000 for i in range(10_000)}
    with FaultServer(hostile=lambda body: RawReply(headers=headers, pieces=[b"{}"])) as server:
        with pytest.raises(EndpointError, match="gave up after 2 attempts; last error: connection error"):
            _ask(_client(server, retries=1))
        assert sum(server.hits.values()) == 2
