"""A small OpenAI-compatible chat server on 127.0.0.1 that injects faults at configurable rates.

It answers deterministically from the request body, so a run against it under faults must produce
exactly the records of a clean run. Each distinct request body suffers at most ``max_faults_per_request``
faults, so bounded retries always get through; ``hits`` counts how often each body was received.

In hostile mode (``hostile=``, a function from the request body to a :class:`RawReply`) it answers every
chat request with bytes written as they are: a gzip bomb (:func:`gzip_bomb`), an endless chunked
stream (:func:`endless_stream`), a server trickling one byte a second (:func:`slow_loris`), a redirect,
or any of the replies of :data:`HOSTILE_REPLIES` (content as a list, a number, 10 MB, lone surrogates,
``1e999`` tokens, no choices, HTML...). ``sent_bytes`` counts the body bytes it managed to write.

Run it by hand with ``python -m llmpsych.testing.fault_server --port 8099 --rate-429 0.1``, or
``--hostile gzip-bomb`` (``--hostile list`` names them all).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


@dataclass
class RawReply:
    """A response written byte for byte: status, headers, then the body ``pieces``.

    ``chunked`` frames each piece as an HTTP/1.1 chunk; otherwise, without a Content-Length header, the
    body ends when the connection closes. ``pause_s`` is slept before each piece.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    pieces: Iterable[bytes] = ()
    chunked: bool = False
    pause_s: float = 0.0


Hostile = Callable[[dict[str, Any]], RawReply]


@dataclass
class FaultRates:
    """Probability of each fault per received request."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_timeout: float = 0.0
    rate_drop: float = 0.0
    rate_malformed: float = 0.0
    rate_slow: float = 0.0
    latency_s: float = 0.0
    slow_s: float = 0.3
    timeout_s: float = 5.0
    retry_after_s: float | None = 0.01
    max_faults_per_request: int = 2


def body_key(body: dict[str, Any]) -> str:
    """Identity of a request body."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def echo_responder(body: dict[str, Any]) -> str:
    """A deterministic answer derived from the request."""
    return "answer-" + body_key({"m": body.get("messages"), "seed": body.get("seed")})[:16]


class FaultServer:
    """Threaded HTTP server; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        rates: FaultRates | None = None,
        responder: Responder = echo_responder,
        port: int = 0,
        seed: int = 0,
        api_key: str | None = None,
        hostile: Hostile | None = None,
    ) -> None:
        self.rates = rates or FaultRates()
        self.responder = responder
        self.api_key = api_key
        self.hostile = hostile
        self.sent_bytes = 0  # body bytes written in hostile mode
        self.hits: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.fault_log: Counter[str] = Counter()
        self.authorization_headers: list[str] = []
        self.paths: list[str] = []  # request targets of the POSTs (with any query)
        self.bodies: list[dict[str, Any]] = []  # the JSON bodies of the POSTs, as received
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL clients should use."""
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def start(self) -> FaultServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def choose_fault(self, key: str) -> str | None:
        """Pick a fault for this request (or None), respecting the per-request budget."""
        r = self.rates
        with self._lock:
            self.hits[key] += 1
            if self.faults[key] >= r.max_faults_per_request:
                return None
            roll = self._rng.random()
            for name, rate in (
                ("429", r.rate_429),
                ("500", r.rate_500),
                ("timeout", r.rate_timeout),
                ("drop", r.rate_drop),
                ("malformed", r.rate_malformed),
                ("slow", r.rate_slow),
            ):
                if roll < rate:
                    if name != "slow":
                        self.faults[key] += 1
                    self.fault_log[name] += 1
                    return name
                roll -= rate
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def _send_raw(self, reply: RawReply) -> None:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                elif not any(name.lower() == "content-length" for name in reply.headers):
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                try:
                    for piece in reply.pieces:
                        if reply.pause_s:
                            time.sleep(reply.pause_s)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if reply.chunked else piece)
                        self.wfile.flush()
                        with server._lock:
                            server.sent_bytes += len(piece)
                    if reply.chunked:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client hung up: what a bounded client does
                    self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fault-model"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                server.authorization_headers.append(self.headers.get("Authorization") or "")
                server.paths.append(self.path)
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, b'{"error": {"message": "invalid api key"}}')
                    return
                if not self.path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "invalid JSON"}}')
                    return
                with server._lock:
                    server.bodies.append(body)
                if server.hostile is not None:
                    with server._lock:
                        server.hits[body_key(body)] += 1
                    self._send_raw(server.hostile(body))
                    return
                fault = server.choose_fault(body_key(body))
                rates = server.rates
                if rates.latency_s:
                    time.sleep(rates.latency_s)
                if fault == "429":
                    headers = (
                        {"Retry-After": f"{rates.retry_after_s:g}"} if rates.retry_after_s is not None else {}
                    )
                    self._send(429, b'{"error": {"message": "rate limited"}}', headers)
                    return
                if fault == "500":
                    self._send(500, b'{"error": {"message": "internal error"}}')
                    return
                if fault == "timeout":
                    time.sleep(rates.timeout_s)
                    self.close_connection = True
                    return
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "malformed":
                    self._send(200, b'{"choices": [{"message": {"content": "trunc')
                    return
                if fault == "slow":
                    time.sleep(rates.slow_s)
                text = server.responder(body)
                completion = {
                    "id": "chatcmpl-" + body_key(body)[:12],
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "fault-model"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(json.dumps(body.get("messages"))) // 4,
                        "completion_tokens": max(1, len(text) // 4),
                    },
                }
                self._send(200, json.dumps(completion).encode())

        return Handler


# -- hostile replies -------------------------------------------------------------------------------------
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
_MIB = 2**20


def _zeros_block() -> bytes:
    """Raw deflate of 1 MiB of zeros that ends byte-aligned with the dictionary reset (about 1 kB).

    Such a block decodes the same wherever it stands, so repeating it makes a valid stream of any size.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(bytes(_MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)


def _bomb_pieces(total: int) -> Iterator[bytes]:
    block = _zeros_block()
    zeros = bytes(_MIB)
    crc = 0
    yield _GZIP_HEADER
    for _ in range(total // _MIB):
        yield block
        crc = zlib.crc32(zeros, crc)
    final = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH)  # an empty last block
    size = (total // _MIB * _MIB) & 0xFFFFFFFF
    yield final + crc.to_bytes(4, "little") + size.to_bytes(4, "little")


def gzip_bomb(total: int = 10 * 2**30, chunked: bool = True) -> Hostile:
    """200, ``Content-Encoding: gzip``: ``total`` bytes of zeros (10 GiB: ~10 MB sent), made on the fly."""
    return lambda body: RawReply(
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        pieces=_bomb_pieces(total),
        chunked=chunked,
    )


def _empty_blocks() -> Iterator[bytes]:
    yield _GZIP_HEADER
    while True:  # empty stored blocks: bytes on the wire that never decode to anything
        yield b"\x00\x00\x00\xff\xff" * 4096


def endless_gzip() -> Hostile:
    """200, gzip, chunked, never ending, decoding to nothing: only a cap on the compressed bytes stops it."""
    return lambda body: RawReply(
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        pieces=_empty_blocks(),
        chunked=True,
    )


def _forever(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


def endless_stream() -> Hostile:
    """200, chunked, a JSON string that never ends (64 KiB chunks as fast as the client reads)."""

    def pieces() -> Iterator[bytes]:
        yield b'{"choices": [{"message": {"content": "'
        yield from _forever(b"a" * 65536)

    return lambda body: RawReply(headers={"Content-Type": "application/json"}, pieces=pieces(), chunked=True)


def slow_loris(pause_s: float = 1.0) -> Hostile:
    """200 with a Content-Length of 1 MB, then one byte every ``pause_s`` seconds."""
    return lambda body: RawReply(
        headers={"Content-Type": "application/json", "Content-Length": str(_MIB)},
        pieces=_forever(b" "),
        pause_s=pause_s,
    )


def status_reply(status: int, headers: dict[str, str] | None = None) -> Hostile:
    """A bare status (a redirect with ``Location``, a 404...) with a small JSON error body."""
    payload = b'{"error": {"message": "hostile status"}}'
    return lambda body: RawReply(
        status,
        {"Content-Type": "application/json", "Content-Length": str(len(payload)), **(headers or {})},
        [payload],
    )


def completion_json(content: Any = "ok", **choice: Any) -> dict[str, Any]:
    """An OpenAI chat completion with this ``content`` (and other fields of the first choice)."""
    first = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
    return {"object": "chat.completion", "choices": [{**first, **choice}], "usage": {"prompt_tokens": 1}}


def body_reply(payload: bytes | Callable[[], bytes], content_type: str = "application/json") -> Hostile:
    """200 with this body (bytes, or a function making them, called per request)."""

    def reply(body: dict[str, Any]) -> RawReply:
        data = payload() if callable(payload) else payload
        headers = {"Content-Type": content_type, "Content-Length": str(len(data))}
        return RawReply(headers=headers, pieces=[data])

    return reply


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


_NESTED = 100_000
#: name -> (reply body, content type): each shape of issue 14 class 4. Bodies are made per request.
HOSTILE_REPLIES: dict[str, tuple[Callable[[], bytes], str]] = {
    "content-list": (
        lambda: _dumps(completion_json([{"type": "text", "text": "4"}, {"type": "image_url"}])),
        "application/json",
    ),
    "content-number": (lambda: _dumps(completion_json(4)), "application/json"),
    "content-null": (lambda: _dumps(completion_json(None)), "application/json"),
    "content-object": (lambda: _dumps(completion_json({"text": "4"})), "application/json"),
    "content-huge": (lambda: _dumps(completion_json("4 " * (5 * _MIB))), "application/json"),
    "content-nested-json-text": (
        lambda: _dumps(completion_json('{"a": ' + "[" * _NESTED + "]" * _NESTED + "}")),
        "application/json",
    ),
    "body-nested": (lambda: b'{"choices": ' + b"[" * _NESTED + b"]" * _NESTED + b"}", "application/json"),
    "lone-surrogate": (lambda: _dumps(completion_json("\ud800 4 \udfff")), "application/json"),
    "usage-hostile": (
        lambda: (
            _dumps(completion_json("4"))[:-1]
            + b', "usage": {"prompt_tokens": 1e999, "completion_tokens": -5, "total_tokens": "12"}}'
        ),
        "application/json",
    ),
    "no-choices": (lambda: b'{"object": "chat.completion"}', "application/json"),
    "empty-choices": (lambda: b'{"choices": []}', "application/json"),
    "message-null": (lambda: b'{"choices": [{"message": null}]}', "application/json"),
    "finish-reason-weird": (
        lambda: _dumps(completion_json("4", finish_reason={"why": ["x" * 1000]})),
        "application/json",
    ),
    "logprobs-malformed": (
        lambda: _dumps(
            completion_json("4", logprobs={"content": [{"token": "4", "logprob": "high"}, 7, None]})
        ),
        "application/json",
    ),
    "not-json": (lambda: b"<html><body>Welcome to the hotel wifi</body></html>", "text/html"),
    "wrong-content-type": (lambda: _dumps(completion_json("4")), "text/html"),
}


def hostile_reply(name: str) -> Hostile:
    """The hostile mode called ``name``: a reply of :data:`HOSTILE_REPLIES` or a stream above."""
    streams: dict[str, Callable[[], Hostile]] = {
        "gzip-bomb": gzip_bomb,
        "endless-gzip": endless_gzip,
        "endless-stream": endless_stream,
        "slow-loris": slow_loris,
        "redirect": lambda: status_reply(301, {"Location": "http://127.0.0.1:9/v1/chat/completions"}),
    }
    if name in streams:
        return streams[name]()
    payload, content_type = HOSTILE_REPLIES[name]
    return body_reply(payload, content_type)


HOSTILE_NAMES = ("gzip-bomb", "endless-gzip", "endless-stream", "slow-loris", "redirect", *HOSTILE_REPLIES)


def main() -> None:
    """Serve from the command line until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8099)
    for name in ("429", "500", "timeout", "drop", "malformed", "slow"):
        parser.add_argument(f"--rate-{name}", type=float, default=0.0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--hostile", help="answer every request in this hostile mode ('list' names them)")
    args = parser.parse_args()
    if args.hostile == "list":
        print("\n".join(HOSTILE_NAMES))
        return
    rates = FaultRates(
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        rate_timeout=args.rate_timeout,
        rate_drop=args.rate_drop,
        rate_malformed=args.rate_malformed,
        rate_slow=args.rate_slow,
        latency_s=args.latency,
    )
    hostile = hostile_reply(args.hostile) if args.hostile else None
    server = FaultServer(rates, port=args.port, hostile=hostile)
    print(f"fault server on {server.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._httpd.serve_forever()


if __name__ == "__main__":
    main()
