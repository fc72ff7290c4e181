"""Chat completions over HTTP against any OpenAI-compatible server, on one HTTP stack (``http11.py``).

Every response is bounded, whatever the server does (``docs/security.md`` section 3):

* its body may be at most :data:`MAX_RESPONSE_BYTES` (32 MiB) on the wire and again after gzip/deflate
  decoding, which this module does itself, in steps of at most 1 MiB of output, so a gzip bomb
  (10 GB of zeros in 10 MB) stops after 32 MiB, not after the 10 GB;
* one deadline (the endpoint's timeout, 120 s by default) covers waiting for a connection, connecting,
  sending and reading the whole body, so an endless chunked stream or a server trickling one byte a
  second ends with the deadline at the latest;
* the body is parsed by orjson (the standard library only for what orjson refuses, such as lone
  surrogates; its recursion limit stops deeply nested JSON).

An oversized body and an unsupported content coding fail the call at once; timeouts, dropped
connections, 408/409/425/429/5xx and undecodable bodies are retried (``retry.py``); 3xx (redirects
are not followed), other 4xx, an unsupported URL scheme and a certificate that does not verify are
permanent and not retried.

The client is llmpsych's own HTTP/1.1 client on asyncio (``http11.py``, which says what it guarantees).
Until November 2026 it was aiohttp (and before that aiohttp beside a second, hand-written client for plain
HTTP): with aiohttp the layer cost 0.17 ms of CPU per request, with this client about 0.10 ms
(``benchmarks/throughput_http.py --against``, run for run at load: 0.166 -> 0.106 ms), and importing
aiohttp cost 0.19 s at every start.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import ssl
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from .. import __version__
from .http11 import (
    HttpClient,
    Inflater,
    RemoteProtocolError,
    ResponseTooLarge,
    UndecodableBody,
    UnsupportedEncoding,
)
from .retry import RETRYABLE_STATUS, FatalRequestError, RetryableError, parse_retry_after
from .spec import ResolvedEndpoint
from .types import clean_text
from .urls import redact_url, scrub

USER_AGENT = f"llmpsych/{__version__}"
#: Largest response body accepted, on the wire and after decoding (a 128k-token answer is ~0.5 MiB;
#: 8k tokens with 20 top log-probabilities each ~ 20 MiB).
MAX_RESPONSE_BYTES = 32 * 2**20
#: Largest error body read for its message (a 4xx/5xx); the rest is not read.
MAX_ERROR_BYTES = 64 * 2**10
#: The server-slots question (``GET /props``): its reply is read up to 64 KiB and waited for 5 s at most.
MAX_PROPS_BYTES = 64 * 2**10
PROPS_TIMEOUT_S = 5.0
#: Most slots believed from a server (the highest concurrency a run config accepts).
MAX_SLOTS = 4096
#: Sent with every request: only the codings the client decodes itself, in bounded steps.
_HEADERS = {"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"}

__all__ = [
    "MAX_RESPONSE_BYTES",
    "HttpBackend",
    "Inflater",
    "ResponseTooLarge",
    "UndecodableBody",
    "UnsupportedEncoding",
    "ssl_context",
]


def ssl_context() -> ssl.SSLContext:
    """CA certificates as httpx chose them: SSL_CERT_FILE / SSL_CERT_DIR if set, else certifi's (also used by
    ``llmpsych.data.fetch``)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi is a core dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def _url_problem(url: str) -> str | None:
    """Why ``url`` cannot be sent to (an unsupported scheme, no host), or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "the base URL is malformed"
    if parts.scheme not in ("http", "https"):
        return f"unsupported URL scheme {parts.scheme!r} (use http:// or https://)"
    if not host:
        return "the base URL has no host"
    return None


class HttpBackend:
    """Sends chat-completions bodies to ``{base_url}/chat/completions``.

    Connections need a running event loop, so they are opened on the first request (and again if a
    later request runs in a different event loop); at most :attr:`concurrency` at a time (the endpoint's,
    or the server's slots when the client asked the server, :meth:`server_slots`).
    """

    #: Body cap in bytes, on the wire and decoded (tests lower it on an instance).
    max_response_bytes = MAX_RESPONSE_BYTES

    def __init__(self, endpoint: ResolvedEndpoint) -> None:
        self.endpoint = endpoint
        self._url = chat_url(endpoint.base_url)
        self._headers = {"Content-Type": "application/json"}
        self._problem = _url_problem(self._url)
        self._secrets = endpoint.secrets()  # scrubbed from anything the server says back
        if (authorization := endpoint.authorization()) is not None:
            if any(c in authorization for c in "\r\n\0") or not authorization.isascii():
                self._problem = "the API key holds characters an HTTP header cannot carry"
            self._headers["Authorization"] = authorization
        self._transport: HttpClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Connections open at most at once (set before the first request when the server's slots are known).
        self.concurrency = endpoint.concurrency

    def __repr__(self) -> str:
        return f"HttpBackend({redact_url(self._url)!r})"

    def _client(self, url: str, method: str, limit: int, timeout: float) -> HttpClient:
        headers = {**_HEADERS, **self._headers} if method == "POST" else {**_HEADERS, **self._auth_only()}
        context = ssl_context() if url.startswith("https:") else None
        return HttpClient(url, method, headers, limit=limit, timeout=timeout, ssl_context=context)

    def _auth_only(self) -> dict[str, str]:
        return {k: v for k, v in self._headers.items() if k == "Authorization"}

    def _open(self) -> HttpClient:
        loop = asyncio.get_running_loop()
        if self._transport is None or self._loop is not loop:
            # HTTP(S)_PROXY / NO_PROXY are looked up here, once per client (not per request).
            self._transport = self._client(self._url, "POST", self.concurrency, self.endpoint.timeout)
            self._loop = loop
        return self._transport

    async def server_slots(self) -> int | None:
        """The parallel slots the server reports (llama.cpp: ``total_slots`` of ``GET /props``), or None.

        Asked once per endpoint, with the request's own credentials, no redirect followed, at most
        :data:`PROPS_TIMEOUT_S` seconds and :data:`MAX_PROPS_BYTES` of reply; any failure (no such route,
        401, a timeout, not JSON, not a positive integer) is None and the configured default stays."""
        if self._problem is not None:
            return None
        timeout = min(PROPS_TIMEOUT_S, self.endpoint.timeout)
        client = None
        try:
            client = self._client(props_url(self.endpoint.base_url), "GET", 1, timeout)
            status, _, raw = await client.request(None, MAX_PROPS_BYTES, 0)
        except Exception:  # whatever goes wrong (refused, timeout, too large), the default stays
            return None
        finally:
            if client is not None:
                await client.close()
        if status != 200:
            return None
        data = parse_json(raw)
        slots = data.get("total_slots") if isinstance(data, dict) else None
        if type(slots) is not int or not 1 <= slots <= MAX_SLOTS:
            return None
        return slots

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises RetryableError or FatalRequestError on failure."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return await self.send_encoded(payload.encode())

    async def send_encoded(self, payload: bytes, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """:meth:`send` for a body already encoded as JSON (the run engine encodes each request once);
        ``headers``: extra request headers for this request only."""
        if self._problem is not None:
            raise FatalRequestError(self._problem)
        transport = self._open()
        try:
            head = None if not headers else transport.head_with(headers)
            status, headers, raw = await transport.request(
                payload, self.max_response_bytes, MAX_ERROR_BYTES, head=head
            )
        except TimeoutError:  # the client's one deadline covers connecting, sending and the whole body
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except ResponseTooLarge:
            limit = self.max_response_bytes
            raise FatalRequestError(f"response body larger than {limit} bytes; not retried") from None
        except UnsupportedEncoding as exc:
            raise FatalRequestError(f"response in unsupported content-encoding {exc}") from None
        except UndecodableBody as exc:
            raise RetryableError(f"undecodable {exc} body") from None
        except ssl.SSLCertVerificationError as exc:
            reason = " ".join(str(exc.verify_message or exc.reason or "").split())[:120]
            raise FatalRequestError(
                f"the TLS certificate of {self.endpoint.public_url} does not verify ({reason}); not retried"
            ) from None
        except RemoteProtocolError as exc:
            raise RetryableError(f"connection error: {exc}") from None
        except OSError as exc:  # ConnectionError, a reset, a refused or unresolvable address, TLS
            if _refused(exc):
                raise RetryableError(
                    f"connection refused by {self.endpoint.public_url}: is the server running?",
                    max_attempts=REFUSED_ATTEMPTS,
                ) from None
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if status in RETRYABLE_STATUS:
            raise RetryableError(f"HTTP {status}", parse_retry_after(headers.get("retry-after")))
        if 300 <= status < 400:
            raise FatalRequestError(
                f"HTTP {status} from {self.endpoint.public_url}: redirects are not followed; "
                "use the final address as the base URL"
            )
        if status >= 400 or status < 200:
            message = scrub(_error_message(raw), self._secrets)
            raise FatalRequestError(f"HTTP {status} from {self.endpoint.public_url}: {message}")
        data = parse_json(raw)
        if not isinstance(data, dict):
            raise RetryableError("malformed response body")
        return data

    async def aclose(self) -> None:
        """Close the connections (if a request ever opened any)."""
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.close()


#: Attempts at a server that refuses the connection (nothing listens on the port): a server restarting gets
#: a second and third chance within about a second; a server that is not running is reported at once.
REFUSED_ATTEMPTS = 3


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` is a refused connection (no server on that port; asyncio raises a plain OSError
    naming every address it tried when there were several, localhost's ::1 and 127.0.0.1)."""
    if isinstance(exc, ConnectionRefusedError):
        return True
    return type(exc) is OSError and f"[Errno {errno.ECONNREFUSED}] Connect call failed" in str(exc)


def chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, keeping a query (``?api_key=...``) after the path."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/chat/completions", fragment=""))


def props_url(base_url: str) -> str:
    """llama.cpp's ``/props`` beside a base URL (``.../v1`` dropped), keeping a query after the path."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return urlunsplit(parts._replace(path=f"{path}/props", fragment=""))


def parse_json(raw: bytes | bytearray) -> Any:
    """A response body's JSON, or None when it is not JSON this client can hold.

    orjson first; the standard library reads what orjson refuses (lone surrogates such as ``\\ud800``,
    numbers beyond a double such as ``1e999``) and gives up on nesting past Python's recursion limit.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
        return None


def _error_message(raw: bytes | bytearray) -> str:
    """The server's error message, shortened to one line."""
    data = parse_json(raw)
    message = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(message, dict):
        message = message.get("message", message)
    if isinstance(message, str):
        text = message
    elif data is not None:
        text = str(message)[:400]
    else:
        text = bytes(raw[:400]).decode("utf-8", errors="replace")
    return clean_text(" ".join(text.split())[:200])  # it is stored with the failed unit
