"""The HTTP client against a real loopback server: retries, faults, errors, cache."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from llmpsych.errors import EndpointError
from llmpsych.models import GenerationParams, open_client
from llmpsych.models.cache import ResponseCache
from llmpsych.models.http_backend import parse_retry_after
from llmpsych.testing.fault_server import FaultRates, FaultServer

MESSAGES = [{"role": "user", "content": "hello"}]


def _ask(client, n: int = 1, sample_base: int = 0):
    async def go():
        try:
            return await asyncio.gather(
                *(
                    client.complete(
                        [{"role": "user", "content": f"q{i}"}], GenerationParams(), i + sample_base
                    )
                    for i in range(n)
                )
            )
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_every_fault_kind_is_retried_to_the_clean_answer(fault_server: FaultServer) -> None:
    clean = _ask(open_client("openai-compatible/m", base_url=fault_server.base_url), n=40)
    fault_server.rates = FaultRates(
        rate_429=0.15,
        rate_500=0.15,
        rate_timeout=0.05,
        rate_drop=0.1,
        rate_malformed=0.1,
        rate_slow=0.05,
        timeout_s=1.5,
    )
    client = open_client("openai-compatible/m", base_url=fault_server.base_url, timeout=0.5, concurrency=8)
    client.policy = type(client.policy)(max_retries=6, base_delay=0.01, max_delay=0.05)
    faulty = _ask(client, n=40, sample_base=0)
    assert [r.text for r in faulty] == [r.text for r in clean]
    assert client.stats.retries > 0 and client.stats.failures == 0
    assert set(fault_server.fault_log) >= {"429", "500", "drop", "malformed"}
    assert any(r.attempts > 1 for r in faulty)
    assert all(len(r.errors) == r.attempts - 1 for r in faulty)  # each failed attempt is recorded


def test_non_retryable_error_fails_at_once(fault_server: FaultServer) -> None:
    fault_server.api_key = "right-key"
    client = open_client("openai-compatible/m", base_url=fault_server.base_url)
    with pytest.raises(EndpointError, match="HTTP 401"):
        _ask(client)
    assert sum(fault_server.hits.values()) == 0  # rejected before counting: exactly one attempt was made
    assert len(fault_server.authorization_headers) == 1


def test_unreachable_endpoint_gives_up_after_bounded_retries() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = open_client("openai-compatible/m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    client.policy = type(client.policy)(max_retries=2, base_delay=0.01)
    with pytest.raises(EndpointError, match="gave up after 3 attempts; last error: connection refused"):
        _ask(client)


def test_a_refused_connection_asks_whether_the_server_runs_after_three_attempts_not_seven() -> None:
    """Before: 7 attempts over ~25 s of back-off, ending in "connection error: ClientConnectorError"."""
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = open_client("openai-compatible/m", base_url=f"http://127.0.0.1:{port}/v1")
    assert client.policy.max_retries == 6  # the default policy would try 7 times
    with pytest.raises(EndpointError) as caught:
        _ask(client)
    message = str(caught.value)
    assert "gave up after 3 attempts" in message
    assert f"connection refused by http://127.0.0.1:{port}/v1: is the server running?" in message


def test_retry_after_header_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_cache_keeps_samples_distinct_and_hits(fault_server: FaultServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    async def go():
        client = open_client("openai-compatible/m", base_url=fault_server.base_url, cache=cache)
        params = GenerationParams(temperature=1.0)
        first = [await client.complete(MESSAGES, params, sample=i) for i in range(3)]
        again = [await client.complete(MESSAGES, params, sample=i) for i in range(3)]
        await client.aclose()
        return first, again, client.stats

    first, again, stats = asyncio.run(go())
    assert sum(fault_server.hits.values()) == 3  # three samples sent once each
    assert stats.cache_hits == 3 and all(r.cached for r in again) and not any(r.cached for r in first)
    summary = cache.stats()
    assert summary.entries == 3 and summary.by_model == {"m": 3}
    assert cache.clear(model="other") == 0 and cache.clear() == 3 and cache.stats().entries == 0


def test_request_body_follows_each_params_object() -> None:
    """The client reuses the fields of the params object it saw last, and only of that same object."""
    client = open_client("openai-compatible/m", base_url="http://127.0.0.1:9/v1")
    first = GenerationParams(temperature=0.5, stop=["x"])
    assert client.body([], first) == {"model": "m", "messages": [], "temperature": 0.5, "stop": ["x"]}
    client.body([], first)["temperature"] = 2.0  # a caller changing its body changes nothing stored
    assert client.body([], first)["temperature"] == 0.5
    changed = first.model_copy(update={"temperature": 1.0, "max_tokens": 7})
    assert client.body([], changed) == {
        "model": "m",
        "messages": [],
        "temperature": 1.0,
        "stop": ["x"],
        "max_tokens": 7,
    }
    assert client.body([], GenerationParams(logprobs=True, top_logprobs=3))["top_logprobs"] == 3
