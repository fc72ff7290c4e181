"""Chat completions over HTTP against any OpenAI-compatible server (aiohttp)."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from contextlib import suppress
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from .retry import FatalRequestError, RetryableError
from .spec import ResolvedEndpoint

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}


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


class HttpBackend:
    """Sends chat-completions bodies to ``{base_url}/chat/completions``.

    The aiohttp session needs a running event loop, so it is opened on the first request (and again
    if a later request runs in a different event loop); at most ``endpoint.concurrency`` connections.
    """

    def __init__(self, endpoint: ResolvedEndpoint) -> None:
        self.endpoint = endpoint
        self._url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if endpoint.api_key is not None:
            self._headers["Authorization"] = f"Bearer {endpoint.api_key.get_secret_value()}"
        self._timeout = aiohttp.ClientTimeout(total=endpoint.timeout)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"HttpBackend({self._url!r})"

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(
                limit=self.endpoint.concurrency,
                ssl=_ssl_context() if self._url.startswith("https:") else True,
            )
            # HTTP(S)_PROXY / NO_PROXY, looked up once per session: trust_env=True would do it (and a
            # ~/.netrc lookup) in a worker thread on every request, doubling the client's CPU time.
            proxy, proxy_auth = None, None
            with suppress(LookupError):
                proxy, proxy_auth = get_env_proxy_for_url(URL(self._url))
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers,
                timeout=self._timeout,
                proxy=proxy,
                proxy_auth=proxy_auth,
            )
            self._loop = loop
        return self._session

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises RetryableError or FatalRequestError on failure."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        session = self._open()
        try:
            async with session.post(self._url, data=payload, allow_redirects=False) as response:
                status = response.status
                retry_after = response.headers.get("Retry-After")
                raw = await response.read()
        except TimeoutError:  # asyncio's total timeout and aiohttp's ServerTimeoutError
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if status in RETRYABLE_STATUS:
            raise RetryableError(f"HTTP {status}", parse_retry_after(retry_after))
        if status >= 400:
            raise FatalRequestError(f"HTTP {status} from {self.endpoint.base_url}: {_error_message(raw)}")
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or not data.get("choices"):
                raise ValueError("no choices")
            data["choices"][0]["message"]  # noqa: B018 - shape check
        except (ValueError, KeyError, IndexError, TypeError):  # JSONDecodeError, UnicodeDecodeError
            raise RetryableError("malformed response body") from None
        return data

    async def aclose(self) -> None:
        """Close the connection pool (if a request ever opened one)."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


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
