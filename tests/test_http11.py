"""The model calls' own HTTP/1.1 client (``llmpsych.models.http11``) against hostile loopback servers.

Every server here is a real socket on 127.0.0.1 that answers with bytes written as an attacker (or a
broken proxy) would: a malformed status line, a head past its bounds, chunk sizes that are not sizes, a
body that stops early, a length that lies. Each must end as one counted, bounded failure of the call
(retried like a dropped connection), never a hang, a crash or a wrong answer; and a well-formed answer in
any of HTTP/1.1's framings must still be read exactly, over reused connections, TLS and a proxy.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from llmpsych.errors import EndpointError
from llmpsych.models import open_client
from llmpsych.models.http11 import MAX_HEADERS, HttpClient
from llmpsych.models.retry import RetryPolicy

CERT = Path(__file__).with_name("tls_localhost.pem")  # a self-signed certificate for 127.0.0.1 and its key
ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]}).encode()


def ok(body: bytes = ANSWER, *headers: str) -> bytes:
    """A well-formed 200 framed by Content-Length."""
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(*pieces: bytes, head: str = "") -> bytes:
    frames = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return f"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{head}\r\n".encode() + frames + b"0\r\n\r\n"


class RawServer:
    """A loopback TCP server answering each request with ``reply(request)``: bytes written as they are,
    or None to hold the connection without a word. ``close``: the server closes after each answer."""

    def __init__(
        self, reply: Callable[[bytes], bytes | None], *, close: bool = False, tls: bool = False
    ) -> None:
        self.reply = reply
        self.close = close
        self.requests: list[bytes] = []
        self.connections = 0
        self._tls: ssl.SSLContext | None = None
        if tls:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(CERT)
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self._tls is not None:
                try:
                    conn = self._tls.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):  # the client refused the certificate
                    return
            buffer = b""
            while not self._stop.is_set():
                request, buffer = read_request(conn, buffer)
                if request is None:
                    return
                self.requests.append(request)
                answer = self.reply(request)
                if answer is None:
                    self._stop.wait()
                    return
                conn.sendall(answer)
                if self.close:
                    return
        except OSError:
            return
        finally:
            conn.close()


def read_request(conn: socket.socket, buffer: bytes) -> tuple[bytes | None, bytes]:
    """One request (head and Content-Length body) from ``conn``; None when the client closed."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None, b""
        rest += data
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


def ask(url: str, retries: int = 1, timeout: float = 10.0) -> str:
    """One chat request through the model client (its retries, its error mapping); the answer's text."""
    # a concurrency of its own: no server-slots question (GET /props) before the request
    client = open_client("openai-compatible/m", base_url=url, timeout=timeout, concurrency=4)
    client.policy = RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=0.02)

    async def go() -> str:
        try:
            result = await asyncio.wait_for(client.complete([{"role": "user", "content": "q"}]), 60)
            return result.text
        finally:
            await client.aclose()

    return asyncio.run(go())


def fails(url: str, message: str, attempts: int = 2) -> None:
    """The call fails after ``attempts`` (a retried connection error) with ``message`` in its one line."""
    with pytest.raises(EndpointError) as info:
        ask(url, retries=attempts - 1)
    line = str(info.value)
    assert "\n" not in line and f"gave up after {attempts} attempts" in line and message in line, line


# -- malformed responses: a retried connection error each, with a bounded number of attempts -----------
@pytest.mark.parametrize(
    "status_line",
    [
        b"HTTP/1.1 2OO OK",
        b"HTTP/2 200 OK",
        b"ICY 200 OK",
        b"HTTP/1.1 099 Low",
        b"HTTP/1.1 200OK",
        b"\x00" * 40,
    ],
)
def test_a_malformed_status_line_is_a_connection_error(status_line: bytes) -> None:
    answer = status_line + b"\r\nContent-Length: 2\r\n\r\n{}"
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "connection error: malformed status line")
        assert len(server.requests) == 2


@pytest.mark.parametrize(
    "header",
    [b"No colon here", b"Space before : colon", b" Folded: continuation", b"Bad\x01Name: x", b": no name"],
)
def test_a_malformed_header_line_is_a_connection_error(header: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\n" + header + b"\r\nContent-Length: 2\r\n\r\n{}"
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "connection error: malformed header line")


def test_a_head_past_64_kib_is_cut_off_without_waiting_for_its_end() -> None:
    """One header line of 1 MiB that never ends: refused at 64 KiB, not read to the deadline."""
    answer = b"HTTP/1.1 200 OK\r\nX-Junk: " + b"y" * 2**20
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "response head larger than 64 KiB")


def test_more_header_lines_than_the_bound_are_refused_and_the_bound_itself_is_read() -> None:
    too_many = [f"X-{i}: y" for i in range(MAX_HEADERS + 1)]
    with RawServer(lambda _: ok(ANSWER, *too_many)) as server:
        fails(server.url(), f"more than {MAX_HEADERS} header lines")
    just_enough = [f"X-{i}: y" for i in range(MAX_HEADERS - 2)]  # + Content-Type and Content-Length
    with RawServer(lambda _: ok(ANSWER, *just_enough)) as server:
        assert ask(server.url()) == "fine"


@pytest.mark.parametrize(
    "size_line",
    [b"zz", b"-1", b"0x10", b"1" * 17, b"", b" 5", b"+5"],
)
def test_a_chunk_size_that_is_not_a_size_is_a_connection_error(size_line: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size_line + b"\r\n{}\r\n0\r\n\r\n"
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "connection error: malformed chunk size")


def test_a_chunk_longer_than_its_size_is_a_connection_error() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}junk\r\n0\r\n\r\n"
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "connection error: malformed chunk end")


def test_an_endless_chunk_size_line_is_cut_off() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"x" * 2**20
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "chunk-size line longer than 4 KiB")


@pytest.mark.parametrize(
    "answer",
    [
        ok(ANSWER)[:-10],  # Content-Length promises 10 bytes more
        chunked(ANSWER)[:-20],  # the last chunk and its end are missing
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",  # the head itself is cut
    ],
    ids=["content-length", "chunked", "head"],
)
def test_a_connection_closed_mid_response_is_a_connection_error(answer: bytes) -> None:
    with RawServer(lambda _: answer, close=True) as server:
        fails(server.url(), "closed the connection before the response ended")


@pytest.mark.parametrize("length", [b"12abc", b"1, 2", b"-5", b"\xb2", b""])
def test_a_content_length_that_is_not_one_length_is_a_connection_error(length: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n" + ANSWER
    with RawServer(lambda _: answer) as server:
        fails(server.url(), "connection error: malformed content-length")


def test_bytes_past_the_declared_length_are_not_the_body_and_the_connection_is_not_reused() -> None:
    """A lying Content-Length: the declared bytes are the answer; what follows is distrusted (it could
    pose as the next response), so the next request opens a new connection."""
    with RawServer(lambda _: ok(ANSWER) + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") as server:
        assert ask(server.url()) == "fine"
        assert ask(server.url()) == "fine"
        assert server.connections == 2


def test_endless_interim_responses_are_refused() -> None:
    with RawServer(lambda _: b"HTTP/1.1 100 Continue\r\n\r\n" * 100) as server:
        fails(server.url(), "unexpected status 100")


# -- well-formed answers in every framing, reused connections ---------------------------------------
@pytest.mark.parametrize(
    "answer",
    [
        ok(ANSWER),
        b"HTTP/1.1 100 Continue\r\n\r\n" + ok(ANSWER),
        chunked(ANSWER[:10], ANSWER[10:], head="X-Other: 1\r\n"),
        chunked(ANSWER).replace(b"\r\n0\r\n\r\n", b"\r\n0;ext=1\r\nTrailer-Field: x\r\n\r\n"),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
        + chunked(gzip.compress(ANSWER)).split(b"\r\n", 1)[1],
    ],
    ids=["content-length", "interim-100", "chunked", "chunk-extension-and-trailer", "gzip-chunked"],
)
def test_each_framing_is_read_exactly_over_one_kept_alive_connection(answer: bytes) -> None:
    with RawServer(lambda _: answer) as server:

        async def go() -> list[bytes]:
            client = HttpClient(server.url(), "POST", {}, limit=4, timeout=10)
            try:
                return [bytes((await client.request(b"{}", 2**20, 2**16)).body) for _ in range(5)]
            finally:
                await client.close()

        assert asyncio.run(go()) == [ANSWER] * 5
        assert server.connections == 1


def test_a_response_read_to_the_end_of_the_connection_is_whole_and_not_reused() -> None:
    answer = b"HTTP/1.1 200 OK\r\n\r\n" + ANSWER
    with RawServer(lambda _: answer, close=True) as server:
        assert ask(server.url()) == "fine"
        assert ask(server.url()) == "fine"
        assert server.connections == 2


def test_connection_close_is_honoured_and_the_pool_never_exceeds_its_limit() -> None:
    with RawServer(lambda _: ok(ANSWER, "Connection: close"), close=True) as server:

        async def go() -> None:
            client = HttpClient(server.url(), "POST", {}, limit=3, timeout=10)
            try:
                await asyncio.gather(*(client.request(b"{}", 2**20, 2**16) for _ in range(12)))
            finally:
                await client.close()

        asyncio.run(go())
        assert server.connections == 12 and len(server.requests) == 12

    with RawServer(lambda _: ok(ANSWER)) as server:
        asyncio.run(_many(server.url(), limit=3, n=30))
        assert server.connections == 3  # kept alive: 30 requests over the limit's 3 connections


async def _many(url: str, limit: int, n: int) -> None:
    client = HttpClient(url, "POST", {}, limit=limit, timeout=10)
    try:
        await asyncio.gather(*(client.request(b"{}", 2**20, 2**16) for _ in range(n)))
    finally:
        await client.close()


def test_the_request_carries_exactly_the_body_host_and_key() -> None:
    with RawServer(lambda _: ok()) as server:
        url = server.url() + "?api-version=1"
        client = open_client("openai-compatible/m", base_url=url, timeout=5, concurrency=4)
        client.backend._headers["Authorization"] = "Bearer k-canary"  # type: ignore[attr-defined]

        async def go() -> None:
            try:
                await client.complete([{"role": "user", "content": "é"}])
            finally:
                await client.aclose()

        asyncio.run(go())
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions?api-version=1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}" in lines and "Authorization: Bearer k-canary" in lines
    assert f"Content-Length: {len(body)}" in lines and json.loads(body)["messages"][0]["content"] == "é"


# -- TLS: verified, or refused once ------------------------------------------------------------------
def test_tls_is_verified_and_an_unverifiable_certificate_is_refused_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with RawServer(lambda _: ok(), tls=True) as server:
        with pytest.raises(EndpointError, match="does not verify") as info:
            ask(server.url("https"), retries=3)
        assert "\n" not in str(info.value) and server.requests == []  # not retried, nothing sent
        monkeypatch.setenv("SSL_CERT_FILE", str(CERT))
        assert ask(server.url("https")) == "fine"
        assert ask(server.url("https").replace("127.0.0.1", "localhost")) == "fine"


# -- proxies from the environment -----------------------------------------------------------------------
class TunnelProxy(RawServer):
    """An HTTP proxy: absolute-form requests are answered itself (as the origin would), ``CONNECT``
    requests are tunnelled to the named port on 127.0.0.1. ``seen`` keeps every request head."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        super().__init__(lambda request: ok())

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            request, _ = read_request(conn, b"")
            if request is None:
                return
            self.seen.append(request)
            if not request.startswith(b"CONNECT "):
                conn.sendall(ok(b'{"choices": [{"message": {"content": "via proxy"}}]}', "Connection: close"))
                return
            port = int(request.split()[1].rsplit(b":", 1)[1])
            with socket.create_connection(("127.0.0.1", port)) as upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                threading.Thread(target=_pipe, args=(upstream, conn), daemon=True).start()
                _pipe(conn, upstream)


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def test_the_environments_proxy_carries_plain_and_tls_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(CERT))
    with TunnelProxy() as proxy, RawServer(lambda _: ok(), tls=True) as origin:
        monkeypatch.setenv("http_proxy", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        monkeypatch.setenv("https_proxy", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        assert ask("http://models.invalid:8000/v1") == "via proxy"  # resolved by the proxy, not here
        head = proxy.seen[0].split(b"\r\n\r\n")[0].decode()
        assert head.startswith("POST http://models.invalid:8000/v1/chat/completions HTTP/1.1\r\n")
        assert "Proxy-Authorization: Basic dXNlcjpwQHNz" in head  # user:p@ss

        assert ask(origin.url("https")) == "fine"  # TLS inside the tunnel, verified end to end
        assert proxy.seen[1].startswith(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1".encode())
        assert b"Proxy-Authorization: Basic dXNlcjpwQHNz" in proxy.seen[1]
        assert len(origin.requests) == 1 and b"Proxy-Authorization" not in origin.requests[0]

        monkeypatch.setenv("no_proxy", "127.0.0.1")
        assert ask(origin.url("https")) == "fine"
        assert len(proxy.seen) == 2  # NO_PROXY: straight to the origin


# -- start-up --------------------------------------------------------------------------------------------
def test_a_run_loads_no_http_library(tmp_path: Path) -> None:
    """``import aiohttp`` cost ~0.19 s of CPU at every ``llmpsych run`` (its connector builds TLS contexts
    at import): 40 % of the run's fixed cost. The model calls need no HTTP library now, and neither does
    anything else before the first request or after the last answer."""
    from test_fixed_cost import clocked_run

    clock = clocked_run(tmp_path, "-O", "units=2")
    assert clock["requests"] == 2
    for when in ("modules_at_first_request", "modules_at_exit"):
        modules = clock[when]
        assert isinstance(modules, list)
        assert [name for name in ("aiohttp", "httpx", "yarl", "multidict") if name in modules] == [], when


def test_a_request_header_that_is_not_one_header_line_is_refused() -> None:
    """Per-request headers (the in-house runner's) go into the request head only as single header lines."""
    client = HttpClient(
        "http://127.0.0.1:9/v1/x", "POST", {"Content-Type": "application/json"}, limit=1, timeout=1
    )
    head = client.head_with({"X-Llmpsych-Unit": "HumanEval/0"})
    assert head.endswith(b"X-Llmpsych-Unit: HumanEval/0\r\n") and head.startswith(client._head)
    for bad in (
        {"X-A": "one\r\nAuthorization: Bearer stolen"},
        {"X-A": "nul\0"},
        {"X-A\r\nB": "v"},
        {"X A": "v"},
        {"X-A": "caf\u00e9 \u2603"},
    ):
        with pytest.raises(ValueError, match="header"):
            client.head_with(bad)
