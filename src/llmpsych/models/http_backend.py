"""Chat completions over HTTP against any OpenAI-compatible server.

Two transports, one behaviour (same request bytes, limits, timeout and error mapping):

* ``http://`` endpoints reached without a proxy - typically local servers (vLLM, llama.cpp, Ollama,
  the fault server), where the client's own cost decides throughput - use a small built-in HTTP/1.1
  keep-alive client on asyncio (:class:`_DirectHttp`). It writes each request from the calling task;
  aiohttp on Python 3.11 writes the body from a newly scheduled task, one event-loop pass later, which
  under 64 concurrent requests costs about 6 % of a 100 ms server's throughput
  (``docs/performance.md``).
* everything else (``https://``, proxies from ``HTTP_PROXY``/``HTTPS_PROXY``, URLs with a query or
  credentials) goes through ``aiohttp`` (:class:`_AiohttpTransport`).

``HttpBackend.direct_http = False`` sends everything through aiohttp.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import zlib
from contextlib import suppress
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from .. import __version__
from .retry import FatalRequestError, RetryableError
from .spec import ResolvedEndpoint
from .urls import redact_url, scrub

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
USER_AGENT = f"llmpsych/{__version__}"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _ssl_context() -> ssl.SSLContext:
    """CA certificates as httpx chose them: SSL_CERT_FILE / SSL_CERT_DIR if set, else certifi's."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx, a core dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class RemoteProtocolError(ConnectionError):
    """The server broke HTTP/1.1 (malformed status line, headers, framing or encoding)."""


class _Transport(Protocol):
    async def post(self, payload: bytes) -> tuple[int, str | None, bytes]:
        """POST ``payload``; (status, Retry-After header, decoded body)."""
        ...

    async def close(self) -> None: ...


class HttpBackend:
    """Sends chat-completions bodies to ``{base_url}/chat/completions``.

    Connections need a running event loop, so they are opened on the first request (and again if a
    later request runs in a different event loop); at most ``endpoint.concurrency`` at a time.
    """

    direct_http = True  # plain-HTTP endpoints without a proxy use the built-in HTTP/1.1 client

    def __init__(self, endpoint: ResolvedEndpoint) -> None:
        self.endpoint = endpoint
        self._url = chat_url(endpoint.base_url)
        self._headers = {"Content-Type": "application/json"}
        self._bad_key = False
        self._secrets = endpoint.secrets()  # scrubbed from anything the server says back
        if (authorization := endpoint.authorization()) is not None:
            self._bad_key = any(c in authorization for c in "\r\n\0") or not authorization.isascii()
            self._headers["Authorization"] = authorization
        self._transport: _Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"HttpBackend({redact_url(self._url)!r})"

    def _open(self) -> _Transport:
        loop = asyncio.get_running_loop()
        if self._transport is None or self._loop is not loop:
            # HTTP(S)_PROXY / NO_PROXY, looked up once: aiohttp's trust_env=True would do it (and a
            # ~/.netrc lookup) in a worker thread on every request, doubling the client's CPU time.
            proxy: URL | None = None
            proxy_auth: aiohttp.BasicAuth | None = None
            with suppress(LookupError):
                proxy, proxy_auth = get_env_proxy_for_url(URL(self._url))
            parts = urlsplit(self._url)
            if (
                self.direct_http
                and proxy is None
                and parts.scheme == "http"
                and parts.hostname
                and not (parts.query or parts.fragment or parts.username or parts.password)
            ):
                self._transport = _DirectHttp(self._url, self._headers, self.endpoint)
            else:
                self._transport = _AiohttpTransport(
                    self._url, self._headers, self.endpoint, proxy, proxy_auth
                )
            self._loop = loop
        return self._transport

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises RetryableError or FatalRequestError on failure."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return await self.send_encoded(payload.encode())

    async def send_encoded(self, payload: bytes) -> dict[str, Any]:
        """:meth:`send` for a body already encoded as JSON (the run engine encodes each request once)."""
        if self._bad_key:
            raise FatalRequestError("the API key holds characters an HTTP header cannot carry")
        transport = self._open()
        try:
            status, retry_after, raw = await transport.post(payload)
        except TimeoutError:  # asyncio's timeout and aiohttp's ServerTimeoutError
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:  # OSError: ConnectionError, RemoteProtocolError
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if status in RETRYABLE_STATUS:
            raise RetryableError(f"HTTP {status}", parse_retry_after(retry_after))
        if status >= 400:
            message = scrub(_error_message(raw), self._secrets)
            raise FatalRequestError(f"HTTP {status} from {self.endpoint.public_url}: {message}")
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or not data.get("choices"):
                raise ValueError("no choices")
            data["choices"][0]["message"]  # noqa: B018 - shape check
        except (ValueError, KeyError, IndexError, TypeError):  # JSONDecodeError, UnicodeDecodeError
            raise RetryableError("malformed response body") from None
        return data

    async def aclose(self) -> None:
        """Close the connections (if a request ever opened any)."""
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.close()


def chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, keeping a query (``?api_key=...``) after the path."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/chat/completions", fragment=""))


def _error_message(raw: bytes) -> str:
    """The server's error message, shortened to one line."""
    try:
        data = json.loads(raw)
        message = data.get("error", data)
        if isinstance(message, dict):
            message = message.get("message", message)
        text = str(message)
    except (ValueError, AttributeError):
        text = raw.decode("utf-8", errors="replace")
    return " ".join(text.split())[:200]


# -- aiohttp: HTTPS, proxies, anything unusual ----------------------------------------------------------
class _AiohttpTransport:
    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        endpoint: ResolvedEndpoint,
        proxy: URL | None,
        proxy_auth: aiohttp.BasicAuth | None,
    ) -> None:
        self._url = url
        connector = aiohttp.TCPConnector(
            limit=endpoint.concurrency, ssl=_ssl_context() if url.startswith("https:") else True
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": USER_AGENT, **headers},
            timeout=aiohttp.ClientTimeout(total=endpoint.timeout),
            proxy=proxy,
            proxy_auth=proxy_auth,
        )

    async def post(self, payload: bytes) -> tuple[int, str | None, bytes]:
        async with self._session.post(self._url, data=payload, allow_redirects=False) as response:
            return response.status, response.headers.get("Retry-After"), await response.read()

    async def close(self) -> None:
        await self._session.close()


# -- the built-in HTTP/1.1 client for plain-HTTP endpoints ----------------------------------------------
_MAX_LINE = 65536  # longest response head or chunk-size line accepted
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILERS, _TO_EOF, _DONE = range(7)


class _DirectHttp:
    """HTTP/1.1 keep-alive POSTs to one plain-HTTP URL: a pool of at most ``concurrency`` connections.

    Responses may be framed by Content-Length, chunked transfer coding or the end of the connection,
    and gzip/deflate-encoded; interim 1xx responses are skipped. Redirects are not followed. One
    deadline (the endpoint's timeout) covers waiting for a connection, connecting, sending and reading.
    """

    def __init__(self, url: str, headers: dict[str, str], endpoint: ResolvedEndpoint) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None
        self._host = parts.hostname
        self._port = parts.port or 80
        authority = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None and parts.port != 80:
            authority += f":{parts.port}"
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        lines = [
            f"POST {target} HTTP/1.1",
            f"Host: {authority}",
            "Accept: */*",
            "Accept-Encoding: gzip, deflate",
            "Connection: keep-alive",
            f"User-Agent: {USER_AGENT}",
            *(f"{name}: {value}" for name, value in headers.items()),
            "Content-Length: ",
        ]
        self._head = "\r\n".join(lines).encode("ascii")
        self._timeout = endpoint.timeout
        self._slots = asyncio.Semaphore(endpoint.concurrency)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def post(self, payload: bytes) -> tuple[int, str | None, bytes]:
        request = b"%s%d\r\n\r\n%s" % (self._head, len(payload), payload)
        async with asyncio.timeout(self._timeout), self._slots:
            conn = self._checkout()
            if conn is None:
                loop = asyncio.get_running_loop()
                _, conn = await loop.create_connection(_Connection, self._host, self._port)
                self._open.add(conn)
            try:
                status, headers, body, keep_alive = await conn.exchange(request)
            except BaseException:
                self._discard(conn)
                raise
            if keep_alive and not conn.closed:
                self._idle.append(conn)
            else:
                self._discard(conn)
        return status, headers.get("retry-after"), _decode(body, headers.get("content-encoding"))

    def _checkout(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._open.discard(conn)
        return None

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    async def close(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()


def _decode(body: bytes, encoding: str | None) -> bytes:
    coding = (encoding or "").strip().lower()
    if coding in ("", "identity"):
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)  # raw deflate, as some servers send it
    except zlib.error:
        raise RemoteProtocolError(f"undecodable {coding} body") from None
    raise RemoteProtocolError(f"unsupported content-encoding {coding!r}")


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one request at a time, its response parsed as the bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._buffer = bytearray()
        self._waiter: asyncio.Future[tuple[int, dict[str, str], bytes, bool]] | None = None
        self._state = _DONE
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body = bytearray()
        self._remaining = 0
        self._keep_alive = False

    def exchange(self, request: bytes) -> asyncio.Future[tuple[int, dict[str, str], bytes, bool]]:
        """Send ``request``; the future gives (status, headers, body, reusable)."""
        assert self.transport is not None and self._loop is not None
        self._waiter = self._loop.create_future()
        self._state = _HEAD
        self._body = bytearray()
        self.transport.write(request)
        return self._waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        if self._state == _DONE:  # bytes nobody asked for (say, a 408 before closing): not reusable
            self.close()
            return
        self._buffer += data
        try:
            self._parse()
        except RemoteProtocolError as exc:
            self._fail(exc)

    def eof_received(self) -> bool:
        if self._state == _TO_EOF:
            self._finish()
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._state == _TO_EOF and exc is None:
            self._finish()
        elif self._state != _DONE:
            self._fail(exc or ConnectionResetError("the server closed the connection"))

    # -- parsing ---------------------------------------------------------------------------------------
    def _finish(self) -> None:
        keep_alive = self._keep_alive and not self._buffer  # extra bytes: the framing is not to be trusted
        self._state = _DONE
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result((self._status, self._headers, bytes(self._body), keep_alive))

    def _fail(self, exc: BaseException) -> None:
        self._state = _DONE
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def _parse(self) -> None:
        buf = self._buffer
        while True:
            state = self._state
            if state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > _MAX_LINE:
                        raise RemoteProtocolError("response head too long")
                    return
                head = buf[:end].decode("latin-1")
                del buf[: end + 4]
                self._start(head)
            elif state == _LENGTH:
                if len(buf) < self._remaining:
                    return
                self._body = buf[: self._remaining]
                del buf[: self._remaining]
                self._finish()
                return
            elif state in (_CHUNK_SIZE, _TRAILERS):
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > _MAX_LINE:
                        raise RemoteProtocolError("chunk line too long")
                    return
                line = buf[:end].decode("latin-1")
                del buf[: end + 2]
                if state == _TRAILERS:
                    if not line:
                        self._finish()
                        return
                    continue
                size = line.split(";", 1)[0].strip()
                if not size or not _HEX.issuperset(size):
                    raise RemoteProtocolError("malformed chunk size")
                self._remaining = int(size, 16)
                self._state = _CHUNK_DATA if self._remaining else _TRAILERS
            elif state == _CHUNK_DATA:
                if len(buf) < self._remaining + 2:
                    return
                if buf[self._remaining : self._remaining + 2] != b"\r\n":
                    raise RemoteProtocolError("malformed chunk")
                self._body += buf[: self._remaining]
                del buf[: self._remaining + 2]
                self._state = _CHUNK_SIZE
            elif state == _TO_EOF:
                self._body += buf
                buf.clear()
                return
            else:
                return

    def _start(self, head: str) -> None:
        """Status line and headers; sets how the body is framed."""
        status_line, *lines = head.split("\r\n")
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not _DIGITS.issuperset(code):
            raise RemoteProtocolError("malformed status line")
        status = int(code)
        headers: dict[str, str] = {}
        for line in lines:
            name, sep, value = line.partition(":")
            name = name.strip().lower()
            if not sep or not name:
                raise RemoteProtocolError("malformed header line")
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if 100 <= status < 200:
            return  # 100 Continue and the like: the final response follows
        self._status, self._headers = status, headers
        connection = headers.get("connection", "").lower()
        self._keep_alive = "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
        coding = headers.get("transfer-encoding", "").lower()
        if status in (204, 304):
            self._finish()
        elif coding:
            if coding.rsplit(",", 1)[-1].strip() == "chunked":
                self._state = _CHUNK_SIZE
            else:  # another coding last: the body ends with the connection
                self._state, self._keep_alive = _TO_EOF, False
        elif "content-length" in headers:
            values = {v.strip() for v in headers["content-length"].split(",")}
            length = values.pop() if len(values) == 1 else ""
            if not length or not _DIGITS.issuperset(length):
                raise RemoteProtocolError("malformed content-length")
            self._remaining = int(length)
            self._state = _LENGTH
        else:
            self._state, self._keep_alive = _TO_EOF, False
