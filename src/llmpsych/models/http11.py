"""A lean HTTP/1.1 client on asyncio: llmpsych's one HTTP stack (model calls in ``http_backend.py``,
dataset downloads in ``llmpsych.data.fetch``).

Why not a library: every model request went through aiohttp's request machinery (a request object, its
headers, a response object, the connector, a timer): the HTTP layer cost 0.17 ms of CPU per request, about
0.10 ms on this client (``benchmarks/throughput_http.py --against``, run for run: 0.166 -> 0.106 ms;
``HttpBackend.send_encoded`` alone 0.15 -> 0.07 ms, the cost of a minimal raw client), and
``import aiohttp`` cost ~0.19 s of CPU at start-up, 40 % of ``llmpsych run``'s fixed cost. A model call
needs little of HTTP: one POST of bytes to one URL, a keep-alive pool, TLS, a proxy, and a bounded
response. What this client guarantees (``docs/security.md`` section 3):

* **Bounded head.** At most :data:`MAX_HEAD_BYTES` (64 KiB) for the status line and headers, at most
  :data:`MAX_HEADERS` (128) header lines, at most :data:`MAX_INTERIM` interim (1xx) responses; a chunk-size
  line of at most 4 KiB, trailers under the same bounds as the head. Past a bound, or on a malformed status
  line, header line, ``Content-Length``, chunk size or chunk end, or a connection closed before the body's
  declared end: :class:`RemoteProtocolError` (a ``ConnectionError``: retried by the caller).
* **Bounded body.** At most ``limit`` bytes on the wire (chunk framing included) and again after
  gzip/deflate decoding, decoded as the bytes arrive in steps of at most 1 MiB (:class:`Inflater`); a
  ``Content-Length`` over the limit is refused before the body is read (:class:`ResponseTooLarge`).
  Only the codings it asks for (``gzip, deflate``) are decoded; any other is :class:`UnsupportedEncoding`.
  A non-2xx body is read up to its own (smaller) limit for its message and is empty past it.
* **One deadline** (``timeout``) covers waiting for a free connection, connecting (TLS and a proxy's
  tunnel included), sending and reading the last byte: a server trickling a byte a second or streaming
  forever ends at the deadline (``TimeoutError``).
* **At most ``limit`` connections** at once, kept alive and reused only when the response was framed
  exactly (nothing after its end, no ``Connection: close``, not read to the end of the connection).
* **Redirects are never followed** and no cookie is kept: the caller sees the 3xx and the key goes to
  its own URL only.
* **TLS** through the ``ssl`` module with certificate and host-name verification (the caller's context).
* **Downloads** (``llmpsych.data.fetch``) use the same client with no deadline for the whole file but
  one for connecting and one for the silence between two reads, the body handed to the caller as it
  arrives (never held whole) and left coded; redirects are the caller's to follow.
* **Proxies** from ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` (looked up once per client, as aiohttp
  did for llmpsych): an ``http://`` proxy, credentials in its URL sent as ``Proxy-Authorization``; HTTPS
  through it via ``CONNECT``, verified end to end.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import ssl
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

#: Status line and header lines of a response (and its trailers), in bytes and in lines.
MAX_HEAD_BYTES = 64 * 2**10
MAX_HEADERS = 128
#: Interim (1xx) responses accepted before the final one.
MAX_INTERIM = 8
_MAX_CHUNK_LINE = 4096
_INFLATE_STEP = 2**20  # most bytes one decompression step may produce
#: A header name (RFC 9110 token).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILERS, _TO_EOF, _DONE = range(7)


class RemoteProtocolError(ConnectionError):
    """The server broke HTTP/1.1 (status line, headers, framing) or closed the connection mid-response."""


class ResponseTooLarge(Exception):
    """The body exceeded the byte cap (on the wire or decoded)."""


class UnsupportedEncoding(Exception):
    """A content coding this client did not ask for."""


class UndecodableBody(Exception):
    """A gzip/deflate body that does not decode (truncated or corrupt)."""


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # names in lower case; repeated headers joined by ", "
    body: bytes | bytearray  # decoded


class Inflater:
    """gzip or deflate (zlib-wrapped or raw, as some servers send it), decoded in bounded steps."""

    def __init__(self, coding: str) -> None:
        self._gzip = coding != "deflate"
        self._decoder: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._gzip else None

    @property
    def eof(self) -> bool:
        return self._decoder is not None and self._decoder.eof

    def feed(self, data: bytes, room: int) -> list[bytes]:
        """Decode ``data``; raises ResponseTooLarge once the output exceeds ``room`` bytes."""
        if self._decoder is None:  # deflate: a zlib header (RFC 1950) or raw deflate
            wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._decoder = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: list[bytes] = []
        decoder = self._decoder
        try:
            while data and not decoder.eof:
                chunk = decoder.decompress(data, min(_INFLATE_STEP, room + 1))
                room -= len(chunk)
                if room < 0:
                    raise ResponseTooLarge
                out.append(chunk)
                data = decoder.unconsumed_tail
        except zlib.error:
            raise UndecodableBody("gzip" if self._gzip else "deflate") from None
        return out


def env_proxy(url: str) -> tuple[str, int, str | None] | None:
    """The proxy for ``url`` from ``HTTP(S)_PROXY`` / ``NO_PROXY``: (host, port of an ``http://`` proxy,
    its ``Proxy-Authorization`` or None), or None for a direct connection.

    As aiohttp's ``get_env_proxy_for_url`` (used until November 2026): the scheme's proxy, none for a host
    that ``NO_PROXY`` names; an ``https://`` proxy is not supported and ignored. The environment is read
    only when it names a proxy (``urllib.request`` costs ~10 ms to import)."""
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    import urllib.request

    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy:
        return None
    proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if proxy_parts.scheme != "http" or not proxy_parts.hostname:
        return None
    auth = None
    if proxy_parts.username is not None:
        pair = f"{unquote(proxy_parts.username)}:{unquote(proxy_parts.password or '')}"
        auth = "Basic " + base64.b64encode(pair.encode("latin-1", "replace")).decode()
    return proxy_parts.hostname, proxy_parts.port or 80, auth


def _authority(host: str, port: int, default_port: int) -> str:
    host = f"[{host}]" if ":" in host else host
    return host if port == default_port else f"{host}:{port}"


#: Called with a final response's status and headers before its body: returns where the body's bytes go
#: (they are then not kept), or None to keep them; it may raise to stop the response.
OnHead = Callable[[int, dict[str, str]], Callable[[bytes], None] | None]


class HttpClient:
    """Requests to one origin over at most ``limit`` keep-alive connections.

    ``url``, ``method`` and ``headers`` make the default request head (built once: the model calls send
    the same head with every body); :meth:`head` makes another for a URL of the same origin. ``Host``,
    ``Content-Length`` and the proxy's headers are added. ``timeout`` is the one deadline of a request
    (None: none), ``connect_timeout`` bounds connecting alone and ``idle_timeout`` the silence between two
    reads. ``decode=False`` leaves the body as it came (any content coding). Connections belong to the
    event loop of the first request; make one client per loop.
    """

    def __init__(
        self,
        url: str,
        method: str,
        headers: dict[str, str],
        *,
        limit: int,
        timeout: float | None,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout: float | None = None,
        idle_timeout: float | None = None,
        decode: bool = True,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {parts.scheme}://")
        self.origin = origin(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        default_port = 443 if self._tls else 80
        self._port = parts.port or default_port
        self._authority = _authority(self._host, self._port, default_port)  # the Host header
        self._tunnel_target = _authority(self._host, self._port, 0)  # host:port, always with the port
        self._ssl = (ssl_context or ssl.create_default_context()) if self._tls else None
        self._proxy: tuple[str, int] | None = None
        self._proxy_auth: str | None = None
        if (proxy := env_proxy(url)) is not None:
            proxy_host, proxy_port, self._proxy_auth = proxy
            self._proxy = (proxy_host, proxy_port)
        self._head = self.head(method, url, headers)
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._idle_timeout = idle_timeout
        self._decode = decode
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    def head(self, method: str, url: str, headers: dict[str, str]) -> bytes:
        """The head of a ``method`` request to ``url`` (of this client's origin), without its blank line."""
        parts = urlsplit(url)
        if origin(url) != self.origin:
            raise ValueError("another origin")
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~") + (
            f"?{parts.query}" if parts.query else ""
        )
        extra: list[str] = []
        if self._proxy is not None and not self._tls:
            # plain HTTP through the proxy: the absolute URL, the proxy's credentials
            target = f"http://{self._authority}{target}"
            if self._proxy_auth is not None:
                extra.append(f"Proxy-Authorization: {self._proxy_auth}")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._authority}", *extra]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        return "\r\n".join(lines).encode("latin-1") + b"\r\n"

    def head_with(self, headers: dict[str, str]) -> bytes:
        """The default request head with ``headers`` added for one request; a name or value that could end
        a header line (CR, LF, NUL), a name that is not a token or a value that is not Latin-1 is refused
        (ValueError)."""
        lines = []
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name) or any(c in value for c in "\r\n\0"):
                raise ValueError(f"request header {name[:40]!r} is not a single header line")
            lines.append(f"{name}: {value}")
        try:
            return self._head + ("\r\n".join(lines) + "\r\n").encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError("a request header value is not Latin-1 text") from None

    async def request(
        self,
        body: bytes | None,
        limit: int,
        error_limit: int,
        *,
        head: bytes | None = None,
        on_head: OnHead | None = None,
    ) -> Response:
        """Send one request; the response with a body of at most ``limit`` bytes on the wire and decoded
        (``error_limit`` for a non-2xx status, whose body is empty when it breaks that bound)."""
        head = self._head if head is None else head
        if body is None:
            message = head + b"\r\n"
        else:
            message = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        # One deadline: asyncio.timeout() while waiting for a slot or a connection; for the exchange, a
        # timer on the connection (asyncio.timeout costs 4.3 us a request, a timer 1.9 us).
        deadline = None if self._timeout is None else asyncio.get_running_loop().time() + self._timeout
        slots = self._slots
        if slots.locked():
            async with asyncio.timeout_at(deadline):
                await slots.acquire()
        else:
            await slots.acquire()  # free: returns at once
        try:
            conn = None
            while self._idle:
                candidate = self._idle.pop()
                if candidate.reusable:
                    conn = candidate
                    break
                self._discard(candidate)
            if conn is None:
                async with asyncio.timeout_at(deadline):
                    if self._connect_timeout is None:
                        conn = await self._connect()
                    else:
                        async with asyncio.timeout(self._connect_timeout):
                            conn = await self._connect()
            try:
                response = await conn.exchange(
                    message, limit, error_limit, on_head=on_head, deadline=deadline
                )
            except BaseException:
                self._discard(conn)
                raise
            if conn.reusable:
                self._idle.append(conn)
            else:
                self._discard(conn)
            return response
        finally:
            slots.release()

    def _connection(self) -> _Connection:
        return _Connection(self._decode, self._idle_timeout)

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._proxy is None:
            _, conn = await loop.create_connection(
                self._connection,
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host if self._ssl else None,
            )
            self._open.add(conn)
            return conn
        _, conn = await loop.create_connection(self._connection, *self._proxy)
        self._open.add(conn)
        if self._ssl is not None:  # a tunnel through the proxy, then TLS with the server inside it
            lines = [f"CONNECT {self._tunnel_target} HTTP/1.1", f"Host: {self._tunnel_target}"]
            if self._proxy_auth is not None:
                lines.append(f"Proxy-Authorization: {self._proxy_auth}")
            try:
                status, _, _ = await conn.exchange(
                    ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), 0, 0, tunnel=True
                )
                if status != 200:
                    raise RemoteProtocolError(f"the proxy refused the tunnel: HTTP {status}")
                await conn.start_tls(loop, self._ssl, self._host)
            except BaseException:
                self._discard(conn)
                raise
        return conn

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    async def close(self) -> None:
        """Close every connection."""
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL: where a connection goes."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


class _Connection(asyncio.Protocol):
    """One connection: one request at a time, its response parsed and bounded as the bytes arrive."""

    def __init__(self, decode: bool = True, idle_timeout: float | None = None) -> None:
        self._decode = decode
        self._idle_timeout = idle_timeout
        self._idle_timer: asyncio.TimerHandle | None = None
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._sink: Callable[[bytes], None] | None = None
        self._on_head: OnHead | None = None
        self.transport: asyncio.Transport | None = None
        self._closed = False
        self._buffer = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self._state = _DONE
        self._keep_alive = False
        self._tunnel = False
        self._interim = 0
        self._status = 0
        self._headers: dict[str, str] = {}
        self._limit = self._error_limit = 0
        self._received = 0
        self._remaining = 0
        self._body = bytearray()
        self._inflater: Inflater | None = None
        self._coding = ""
        self._lenient = False  # a non-2xx body: broken bounds make it empty instead of failing
        self._trailer_bytes = self._trailer_lines = 0

    @property
    def reusable(self) -> bool:
        return not self._closed and self._state == _DONE and self._keep_alive and not self._buffer

    def exchange(
        self,
        message: bytes,
        limit: int,
        error_limit: int,
        tunnel: bool = False,
        on_head: OnHead | None = None,
        deadline: float | None = None,
    ) -> asyncio.Future[Response]:
        """Send ``message``; the future gives the response (or TimeoutError at ``deadline``, loop time)."""
        assert self.transport is not None
        if self._closed:
            raise RemoteProtocolError("the server closed the connection")
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        self._state, self._tunnel, self._interim = _HEAD, tunnel, 0
        self._limit, self._error_limit = limit, error_limit
        self._on_head, self._sink = on_head, None
        self.transport.write(message)
        if deadline is not None:
            self._deadline_timer = loop.call_at(deadline, self._fail, TimeoutError())
        if self._idle_timeout is not None:
            self._arm()
            waiter.add_done_callback(self._disarm)
        if self._buffer:  # bytes that arrived before the request: nothing to trust
            self._fail(RemoteProtocolError("the server sent bytes before the request"))
        return self._waiter

    async def start_tls(self, loop: asyncio.AbstractEventLoop, context: ssl.SSLContext, host: str) -> None:
        assert self.transport is not None
        transport = await loop.start_tls(self.transport, self, context, server_hostname=host)
        if transport is None:  # pragma: no cover - only when the connection closed meanwhile
            raise RemoteProtocolError("the proxy closed the tunnel")
        self.transport = transport

    def close(self) -> None:
        self._closed = True
        if self.transport is not None:
            self.transport.close()

    def _arm(self) -> None:
        """(Re)start the idle timer: the server may stay silent for ``idle_timeout`` seconds at most."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        assert self._idle_timeout is not None
        loop = asyncio.get_running_loop()
        self._idle_timer = loop.call_later(self._idle_timeout, self._fail, TimeoutError())

    def _disarm(self, _: object = None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    # -- asyncio.Protocol ------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._state == _DONE:  # bytes nobody asked for (a 408 before closing, say): not reusable
            self._keep_alive = False
            self.close()
            return
        if self._idle_timer is not None:
            self._arm()
        self._buffer += data
        try:
            self._parse()
        except Exception as exc:  # the bounds, malformed bytes, and whatever a body sink raises
            if self._lenient and isinstance(exc, (ResponseTooLarge, UnsupportedEncoding, UndecodableBody)):
                self._body = bytearray()
                self._keep_alive = False
                self._finish()
            else:
                self._fail(exc)

    def eof_received(self) -> bool:
        self._ended()
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._ended(exc)

    def _ended(self, exc: Exception | None = None) -> None:
        if self._state == _TO_EOF and exc is None:
            try:
                self._finish()
            except Exception as error:  # noqa: BLE001 - an undecodable end, or a body sink's own error
                self._fail(error)
        elif self._state != _DONE:
            self._fail(RemoteProtocolError("the server closed the connection before the response ended"))

    # -- the response --------------------------------------------------------------------------------
    def _finish(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        inflater = self._inflater
        if inflater is not None and not inflater.eof and self._received:
            if not self._lenient:
                raise UndecodableBody(self._coding)
            self._body, self._keep_alive = bytearray(), False
        self._state = _DONE
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Response(self._status, self._headers, self._body))
        self._inflater = None
        self._body = bytearray()

    def _fail(self, exc: BaseException) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        self._state = _DONE
        self._keep_alive = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    def _take(self, data: bytes | bytearray, wire: int) -> None:
        """Body bytes (``wire`` of them on the wire, framing included), bounded and decoded."""
        self._received += wire
        if self._received > self._limit:
            raise ResponseTooLarge
        inflater = self._inflater
        if self._sink is not None:
            self._sink(bytes(data))
        elif inflater is None:
            self._body += data
        elif not inflater.eof:  # anything after the end of the gzip stream is not part of the body
            for chunk in inflater.feed(bytes(data), self._limit - len(self._body)):
                self._body += chunk

    def _parse(self) -> None:
        buf = self._buffer
        while True:
            state = self._state
            if state == _LENGTH:
                take = min(len(buf), self._remaining)
                if take:
                    self._take(buf[:take] if take < len(buf) else buf, take)
                    del buf[:take]
                    self._remaining -= take
                if self._remaining:
                    return
                self._finish()
                return
            if state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        raise RemoteProtocolError("response head larger than 64 KiB")
                    return
                if end > MAX_HEAD_BYTES:
                    raise RemoteProtocolError("response head larger than 64 KiB")
                head = bytes(buf[:end])
                del buf[: end + 4]
                self._start(head)
                if self._state == _DONE:
                    return
            elif state in (_CHUNK_SIZE, _TRAILERS):
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > _MAX_CHUNK_LINE:
                        raise RemoteProtocolError("chunk-size line longer than 4 KiB")
                    return
                line = bytes(buf[:end])
                del buf[: end + 2]
                if state == _TRAILERS:
                    if not line:
                        self._finish()
                        return
                    self._trailer_bytes += len(line) + 2
                    self._trailer_lines += 1
                    if self._trailer_bytes > MAX_HEAD_BYTES or self._trailer_lines > MAX_HEADERS:
                        raise RemoteProtocolError("trailers beyond the head's bounds")
                    continue
                self._take(b"", len(line) + 2)
                size = line.split(b";", 1)[0].rstrip(b" \t")
                if not size or len(size) > 16 or not _HEX.issuperset(size):
                    raise RemoteProtocolError("malformed chunk size")
                self._remaining = int(size, 16)
                self._state = _CHUNK_DATA if self._remaining else _TRAILERS
            elif state == _CHUNK_DATA:
                if self._remaining:
                    take = min(len(buf), self._remaining)
                    if not take:
                        return
                    self._take(buf[:take], take)
                    del buf[:take]
                    self._remaining -= take
                    if self._remaining:
                        return
                if len(buf) < 2:
                    return
                if buf[:2] != b"\r\n":
                    raise RemoteProtocolError("malformed chunk end")
                del buf[:2]
                self._state = _CHUNK_SIZE
            elif state == _TO_EOF:
                if buf:
                    self._take(buf, len(buf))
                    buf.clear()
                return
            else:
                return

    def _start(self, head: bytes) -> None:
        """The status line and headers: how the body is framed, coded and bounded."""
        lines = head.decode("latin-1").split("\r\n")
        if len(lines) > MAX_HEADERS + 1:
            raise RemoteProtocolError(f"more than {MAX_HEADERS} header lines")
        status_line = lines[0]
        version = status_line[:9]
        code = status_line[9:12]
        if (
            version not in ("HTTP/1.1 ", "HTTP/1.0 ")
            or not (code.isascii() and code.isdigit() and len(code) == 3)
            or status_line[12:13] not in ("", " ")
            or code < "100"
        ):
            raise RemoteProtocolError("malformed status line")
        status = int(code)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not _TOKEN.fullmatch(name):
                raise RemoteProtocolError("malformed header line")
            name = name.lower()
            value = value.strip(" \t")
            if name in headers:
                value = f"{headers[name]}, {value}"
            headers[name] = value
        if status < 200:
            self._interim += 1
            if status == 101 or self._interim > MAX_INTERIM:
                raise RemoteProtocolError(f"unexpected status {status}")
            return  # 100 Continue and the like: the final response follows
        self._status, self._headers = status, headers
        connection = headers.get("connection")
        if connection is None:
            self._keep_alive = version == "HTTP/1.1 "
        else:
            connection = connection.lower()
            self._keep_alive = (
                "keep-alive" in connection if version == "HTTP/1.0 " else "close" not in connection
            )
        self._received = 0
        self._body = bytearray()
        self._trailer_bytes = self._trailer_lines = 0
        self._lenient = not 200 <= status < 300
        if self._lenient:
            self._limit = self._error_limit
        self._inflater = None
        if self._tunnel and 200 <= status < 300:  # a CONNECT's answer: the tunnel follows, no body
            self._finish()
            return
        if self._on_head is not None:
            self._sink = self._on_head(status, headers)
        coding = headers.get("content-encoding")
        if coding is not None and self._decode:
            coding = self._coding = coding.strip().lower()
            if coding in ("gzip", "x-gzip", "deflate"):
                self._inflater = Inflater(coding)
            elif coding not in ("", "identity"):
                raise UnsupportedEncoding(repr(coding[:40]))
        transfer = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if status == 204 or status == 304:
            self._finish()
        elif transfer is not None:
            if transfer.strip().lower() != "chunked":
                raise RemoteProtocolError("unsupported transfer-encoding")
            self._state = _CHUNK_SIZE
            if length is not None:  # both framings: the chunks count, the connection is not reused
                self._keep_alive = False
        elif length is not None:
            if "," in length:  # the same length repeated is one length
                values = {v.strip() for v in length.split(",")}
                length = values.pop() if len(values) == 1 else ""
            if not (length.isascii() and length.isdigit()):
                raise RemoteProtocolError("malformed content-length")
            if len(length) > 18 or int(length) > self._limit:
                raise ResponseTooLarge
            self._remaining = int(length)
            self._state = _LENGTH
        else:
            self._state, self._keep_alive = _TO_EOF, False
