"""Bounded retries with exponential back-off, full jitter and Retry-After: one policy for every HTTP request
llmpsych makes (model calls in ``http_backend.py``, dataset downloads in ``llmpsych.data.fetch``)."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")

#: HTTP statuses worth another attempt (timeouts, conflicts, rate limits, overloaded or failing servers and
#: the 52x codes of Cloudflare-fronted ones); any other 4xx or 5xx is permanent.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class RetryableError(Exception):
    """A transient failure (429, 5xx, timeout, dropped connection, malformed body)."""

    def __init__(
        self, reason: str, retry_after: float | None = None, max_attempts: int | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        #: At most this many attempts in all for this kind of failure (None: the policy's). A refused
        #: connection means no server listens: worth a short second chance (a server restarting), not the
        #: minute of back-off a rate limit deserves.
        self.max_attempts = max_attempts


class FatalRequestError(Exception):
    """A failure that retrying cannot fix (400, 401, 404, ...)."""


class RetriesExhausted(Exception):
    """Every attempt failed; ``reasons`` lists what happened on each."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(f"gave up after {len(reasons)} attempts; last error: {reasons[-1]}")
        self.reasons = reasons


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


async def call_with_retries(
    attempt_once: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    rng: random.Random | None = None,
    on_retry: Callable[[int, str], None] | None = None,
) -> tuple[T, int]:
    """Run ``attempt_once`` until it succeeds or retries run out; return (result, attempts)."""
    rng = rng or random.Random()
    reasons: list[str] = []
    for attempt in range(1, policy.max_retries + 2):
        try:
            return await attempt_once(), attempt
        except RetryableError as exc:
            reasons.append(exc.reason)
            if attempt > policy.max_retries or (exc.max_attempts is not None and attempt >= exc.max_attempts):
                break
            if on_retry:
                on_retry(attempt, exc.reason)
            await asyncio.sleep(policy.delay(attempt, exc.retry_after, rng))
    raise RetriesExhausted(reasons)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); the retry policy caps it."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if math.isnan(seconds) else max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    try:
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except TypeError:  # a date without a time zone
        return None
