"""What one connection may hold: uvicorn's HTTP/1.1 protocol (h11) with time, size and per-client limits.

With ``--host`` anyone who can reach the port can connect, so neither a participant nor a stranger may
hold the server. Measured on the unchanged uvicorn set-up (``limit_concurrency=64``, no read timeout):
one client holding 64 idle sockets made every page answer 503 for as long as it held them (20 s
measured, and nothing ended it), so a participant could not answer and the deadline entered the default
action for them; a 100 kB request head sent in one write was served (h11's size limit counts only an
unfinished head). This protocol adds, per connection:

- **Read time**: a request's head and body must arrive within :data:`REQUEST_READ_S` seconds of its first
  byte (of the connection opening, for the first request); otherwise the connection is closed (with
  ``408`` when part of a head had come). A connection kept alive between requests is closed after
  :data:`KEEP_ALIVE_S` seconds without one (uvicorn's own timer).
- **Head size**: a request head over :data:`MAX_HEAD_BYTES` gets ``431`` however it arrives (one write
  or many), counted before h11 parses it.
- **Per client**: at most :data:`CONNECTIONS_PER_CLIENT` connections from one remote address at once; a
  further one gets ``503`` and is closed at once, so it never counts toward the server's total
  (:data:`LIMIT_CONCURRENCY`, past which uvicorn answers ``503``). A client is the address the
  connection comes from: behind a reverse proxy or a NAT every participant shares the proxy's address
  (``X-Forwarded-For`` is not read: anyone could write it).

WebSocket upgrades are not offered (no page uses one), so no connection leaves these counts.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any, ClassVar

import h11
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds for a request's head and body to arrive, from its first byte (or the connection opening).
REQUEST_READ_S = 10.0
#: Seconds a kept-alive connection may wait for its next request.
KEEP_ALIVE_S = 5
#: Largest request head (request line and headers), bytes.
MAX_HEAD_BYTES = 16 * 1024
#: Connections one remote address may hold at once.
CONNECTIONS_PER_CLIENT = 32
#: Connections (and requests in progress) the server holds at once; past it, uvicorn answers 503.
LIMIT_CONCURRENCY = 128

_BLANK_LINE = re.compile(rb"\n\r?\n")  # the end of a head, as h11 finds it


def _response(code: int, reason: str, text: str) -> bytes:
    body = text.encode() + b"\n"
    head = (
        f"HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


_TOO_MANY = _response(503, "Service Unavailable", "too many connections from your address")
_TOO_SLOW = _response(408, "Request Timeout", "the request did not arrive in time")
_TOO_LARGE = _response(431, "Request Header Fields Too Large", "request head too large")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the limits above; :func:`guarded_protocol` makes one class per server
    (its own count of connections per client)."""

    clients: ClassVar[Counter[str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address: str | None = None  # set while this connection is counted for its client
        self._read_timer: asyncio.TimerHandle | None = None
        self._refused = False

    # -- per client --------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else ""
        if self.clients[address] >= CONNECTIONS_PER_CLIENT:
            self.connections.discard(self)  # never counts toward the server's total
            self._refused = True
            transport.write(_TOO_MANY)
            transport.close()
            return
        self.clients[address] += 1
        self._address = address
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._address is not None:
            self.clients[self._address] -= 1
            if self.clients[self._address] <= 0:
                del self.clients[self._address]
            self._address = None
        self._disarm()
        super().connection_lost(exc)

    # -- read time and head size -------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # refused: what else comes is read and dropped until the client or the timer closes
        if self._read_timer is None and self.conn.their_state is not h11.DONE:
            self._arm()  # the first byte of a request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE):
            self._disarm()  # the whole request is in; answering it is the server's time, not the client's

    def handle_events(self) -> None:
        # also reached for a pipelined request already in the buffer, so every head is measured
        if self.conn.their_state is h11.IDLE and not self._refused:
            buffered = self.conn.trailing_data[0]
            end = _BLANK_LINE.search(buffered)
            if (end.end() if end else len(buffered)) > MAX_HEAD_BYTES:
                self._refuse(_TOO_LARGE)
                return
        super().handle_events()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # a pipelined request whose head or body is still coming: its time runs from now
        pending = self.conn.their_state is h11.SEND_BODY or (
            self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
        )
        if pending and self._read_timer is None and not self.transport.is_closing():
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(REQUEST_READ_S, self._read_expired)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_expired(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        # no request of this connection is being answered and part of a head came: say why it ends
        if (
            not self._refused
            and self.conn.their_state is h11.IDLE
            and self.conn.trailing_data[0]
            and (self.cycle is None or self.cycle.response_complete)
        ):
            self.transport.write(_TOO_SLOW)
        self.transport.close()  # a request being answered sees a disconnect

    def _refuse(self, response: bytes) -> None:
        """Answer ``response`` and end the connection once the client has read it: the rest of its
        request is read and dropped (closing with unread data would reset the connection and could lose
        the answer) until it closes or the read time is up."""
        self._refused = True
        self.transport.write(response)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        if self._read_timer is None:
            self._arm()


def guarded_protocol() -> type[GuardedH11Protocol]:
    """A protocol class for one server (uvicorn's ``http=``), with its own per-client counts."""

    class ServerProtocol(GuardedH11Protocol):
        clients: ClassVar[Counter[str]] = Counter()

    return ServerProtocol


class QuietDisconnects:
    """ASGI: a client that went away (or was closed for sending too slowly) while its request was read
    ends that request silently, instead of a traceback in the experimenter's terminal."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            return
