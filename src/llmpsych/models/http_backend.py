"""Chat completions over HTTP against any OpenAI-compatible server, on one HTTP stack (aiohttp).

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

Until November 2026 plain-HTTP endpoints went through a second, hand-written HTTP/1.1 client that
saved 0.02-0.07 ms of CPU per request: 1-2 % of ideal throughput on a 2-core machine with a core to
spare (0.949 vs 0.932, both above the 0.90 target), 8 % on a saturated one (``benchmarks/throughput_http.py``,
``docs/performance.md``). It was dropped so that one client carries the bounds.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import zlib
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from .. import __version__
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
_INFLATE_STEP = 2**20  # most bytes one decompression step may produce


class ResponseTooLarge(Exception):
    """The body exceeded the byte cap (on the wire or decoded)."""


class UnsupportedEncoding(Exception):
    """A content coding this client did not ask for."""


class UndecodableBody(Exception):
    """A gzip/deflate body that does not decode (truncated or corrupt)."""


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
        self._transport: _AiohttpTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Connections open at most at once (set before the first request when the server's slots are known).
        self.concurrency = endpoint.concurrency

    def __repr__(self) -> str:
        return f"HttpBackend({redact_url(self._url)!r})"

    def _proxy(self) -> tuple[URL | None, aiohttp.BasicAuth | None]:
        # HTTP(S)_PROXY / NO_PROXY, looked up once: aiohttp's trust_env=True would do it (and a
        # ~/.netrc lookup) in a worker thread on every request, doubling the client's CPU time.
        with suppress(LookupError):
            return get_env_proxy_for_url(URL(self._url))
        return None, None

    def _open(self) -> _AiohttpTransport:
        loop = asyncio.get_running_loop()
        if self._transport is None or self._loop is not loop:
            proxy, proxy_auth = self._proxy()
            self._transport = _AiohttpTransport(
                self._url, self._headers, self.endpoint, self.concurrency, proxy, proxy_auth
            )
            self._loop = loop
        return self._transport

    async def server_slots(self) -> int | None:
        """The parallel slots the server reports (llama.cpp: ``total_slots`` of ``GET /props``), or None.

        Asked once per endpoint, with the request's own credentials, no redirect followed, at most
        :data:`PROPS_TIMEOUT_S` seconds and :data:`MAX_PROPS_BYTES` of reply; any failure (no such route,
        401, a timeout, not JSON, not a positive integer) is None and the configured default stays."""
        if self._problem is not None:
            return None
        proxy, proxy_auth = self._proxy()
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=1, ssl=ssl_context() if self._url.startswith("https:") else True
            ),
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate", **self._headers},
            timeout=aiohttp.ClientTimeout(total=min(PROPS_TIMEOUT_S, self.endpoint.timeout)),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            proxy=proxy,
            proxy_auth=proxy_auth,
        )
        try:
            async with session.get(props_url(self.endpoint.base_url), allow_redirects=False) as response:
                if response.status != 200:
                    return None
                raw = await _read_body(response, MAX_PROPS_BYTES)
        except Exception:  # whatever goes wrong (refused, timeout, too large), the default stays
            return None
        finally:
            await session.close()
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
            status, retry_after, raw = await transport.post(payload, self.max_response_bytes, headers)
        except TimeoutError:  # aiohttp's total timeout covers connecting, sending and the whole body
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except ResponseTooLarge:
            limit = self.max_response_bytes
            raise FatalRequestError(f"response body larger than {limit} bytes; not retried") from None
        except UnsupportedEncoding as exc:
            raise FatalRequestError(f"response in unsupported content-encoding {exc}") from None
        except UndecodableBody as exc:
            raise RetryableError(f"undecodable {exc} body") from None
        except (
            aiohttp.InvalidURL,
            aiohttp.NonHttpUrlClientError,
            aiohttp.ClientConnectorCertificateError,
        ) as exc:
            raise FatalRequestError(f"{type(exc).__name__}: not retried") from None
        except (aiohttp.ClientError, OSError) as exc:  # OSError: ConnectionError and the like
            if _refused(exc):
                raise RetryableError(
                    f"connection refused by {self.endpoint.public_url}: is the server running?",
                    max_attempts=REFUSED_ATTEMPTS,
                ) from None
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if status in RETRYABLE_STATUS:
            raise RetryableError(f"HTTP {status}", parse_retry_after(retry_after))
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
    """Whether ``exc`` is a refused connection (no server on that port), also wrapped by aiohttp."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = getattr(seen, "os_error", None) or seen.__cause__
    return False


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


async def _read_body(response: aiohttp.ClientResponse, limit: int) -> bytes | bytearray:
    """The response body, decoded, at most ``limit`` bytes on the wire and after decoding."""
    length = response.content_length
    if length is not None and length > limit:
        raise ResponseTooLarge
    coding = response.headers.get("Content-Encoding", "").strip().lower()
    if coding in ("", "identity"):
        if length is not None:
            return await response.read()  # framed by Content-Length: aiohttp stops there
        inflater = None
    elif coding in ("gzip", "x-gzip", "deflate"):
        inflater = Inflater(coding)
    else:
        raise UnsupportedEncoding(repr(coding[:40]))
    body = bytearray()
    received = 0
    stream = response.content
    while data := await stream.readany():
        received += len(data)
        if received > limit:
            raise ResponseTooLarge
        if inflater is None:
            body += data
            continue
        for chunk in inflater.feed(data, limit - len(body)):
            body += chunk
        if inflater.eof:
            break  # anything after the end of the gzip stream is not part of the body
    if inflater is not None and not inflater.eof and received:
        raise UndecodableBody(coding)
    return body


class _AiohttpTransport:
    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        endpoint: ResolvedEndpoint,
        concurrency: int,
        proxy: URL | None,
        proxy_auth: aiohttp.BasicAuth | None,
    ) -> None:
        self._url = url
        connector = aiohttp.TCPConnector(
            limit=concurrency, ssl=ssl_context() if url.startswith("https:") else True
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            # Only the codings _read_body decodes, in bounded steps (aiohttp would decode by itself).
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate", **headers},
            timeout=aiohttp.ClientTimeout(total=endpoint.timeout),
            auto_decompress=False,
            # No cookies: a server's Set-Cookie headers would pile up in the jar for the whole run.
            cookie_jar=aiohttp.DummyCookieJar(),
            proxy=proxy,
            proxy_auth=proxy_auth,
        )

    async def post(
        self, payload: bytes, limit: int, headers: dict[str, str] | None = None
    ) -> tuple[int, str | None, bytes | bytearray]:
        """POST ``payload`` (with extra ``headers``); (status, Retry-After header, decoded body of at most
        ``limit`` bytes)."""
        async with self._session.post(
            self._url, data=payload, headers=headers, allow_redirects=False
        ) as response:
            status = response.status
            if 200 <= status < 300:
                body = await _read_body(response, limit)
            else:  # read for its error message (and to reuse the connection), up to 64 KiB
                try:
                    body = await _read_body(response, MAX_ERROR_BYTES)
                except (ResponseTooLarge, UnsupportedEncoding, UndecodableBody):
                    body = b""
            return status, response.headers.get("Retry-After"), body

    async def close(self) -> None:
        await self._session.close()
