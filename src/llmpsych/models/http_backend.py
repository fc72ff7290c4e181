"""Chat completions over HTTP against any OpenAI-compatible server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

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


class HttpBackend:
    """Sends chat-completions bodies to ``{base_url}/chat/completions``."""

    def __init__(self, endpoint: ResolvedEndpoint) -> None:
        self.endpoint = endpoint
        headers = {"Content-Type": "application/json"}
        if endpoint.api_key is not None:
            headers["Authorization"] = f"Bearer {endpoint.api_key.get_secret_value()}"
        limits = httpx.Limits(
            max_connections=endpoint.concurrency, max_keepalive_connections=endpoint.concurrency
        )
        self._client = httpx.AsyncClient(
            base_url=endpoint.base_url,
            headers=headers,
            limits=limits,
            timeout=httpx.Timeout(endpoint.timeout),
        )

    async def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises RetryableError or FatalRequestError on failure."""
        try:
            response = await self._client.post("/chat/completions", json=body)
        except httpx.TimeoutException:
            raise RetryableError(f"timeout after {self.endpoint.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}") from None
        if response.status_code in RETRYABLE_STATUS:
            raise RetryableError(
                f"HTTP {response.status_code}", parse_retry_after(response.headers.get("retry-after"))
            )
        if response.status_code >= 400:
            raise FatalRequestError(
                f"HTTP {response.status_code} from {self.endpoint.base_url}: {_error_message(response)}"
            )
        try:
            data = response.json()
            if not isinstance(data, dict) or not data.get("choices"):
                raise ValueError("no choices")
            data["choices"][0]["message"]  # noqa: B018 - shape check
        except (json.JSONDecodeError, ValueError, KeyError, IndexError, TypeError):
            raise RetryableError("malformed response body") from None
        return data

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def _error_message(response: httpx.Response) -> str:
    """The server's error message, shortened to one line."""
    try:
        data = response.json()
        message = data.get("error", data)
        if isinstance(message, dict):
            message = message.get("message", message)
        text = str(message)
    except (json.JSONDecodeError, AttributeError):
        text = response.text
    return " ".join(text.split())[:200]
