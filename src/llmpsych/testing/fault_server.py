"""A small OpenAI-compatible chat server on 127.0.0.1 that injects faults at configurable rates.

It answers deterministically from the request body, so a run against it under faults must produce
exactly the records of a clean run. Each distinct request body suffers at most ``max_faults_per_request``
faults, so bounded retries always get through; ``hits`` counts how often each body was received.

Run it by hand with ``python -m llmpsych.testing.fault_server --port 8099 --rate-429 0.1``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


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
    ) -> None:
        self.rates = rates or FaultRates()
        self.responder = responder
        self.api_key = api_key
        self.hits: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.fault_log: Counter[str] = Counter()
        self.authorization_headers: list[str] = []
        self.paths: list[str] = []  # request targets of the POSTs (with any query)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL clients should use."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

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


def main() -> None:
    """Serve from the command line until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8099)
    for name in ("429", "500", "timeout", "drop", "malformed", "slow"):
        parser.add_argument(f"--rate-{name}", type=float, default=0.0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    args = parser.parse_args()
    rates = FaultRates(
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        rate_timeout=args.rate_timeout,
        rate_drop=args.rate_drop,
        rate_malformed=args.rate_malformed,
        rate_slow=args.rate_slow,
        latency_s=args.latency,
    )
    server = FaultServer(rates, port=args.port)
    print(f"fault server on {server.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._httpd.serve_forever()


if __name__ == "__main__":
    main()
