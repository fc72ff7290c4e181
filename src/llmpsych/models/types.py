"""Request parameters and results of one chat completion, read from whatever the server sent."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

Message = dict[str, Any]


class GenerationParams(BaseModel):
    """Sampling parameters of a request (OpenAI names).

    In a run, the object a task passes to ``ctx.chat`` is the task's *defaults* for that call: only the
    fields it sets count, and the user's run and role parameters win over them
    (:func:`llmpsych.runs.params.merge_params`, applied once by the run context). Fields the call cannot
    do without are marked with :class:`CallParams`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: list[str] | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)

    def request_fields(self) -> dict[str, Any]:
        """The fields to merge into a chat-completions request body."""
        body = self.model_dump(exclude_none=True)
        if not self.logprobs:
            body.pop("logprobs", None)
            body.pop("top_logprobs", None)
        return body


class CallParams(GenerationParams):
    """A task's parameters for one call, some of them *fixed*: what the measurement needs (log-prob
    scoring needs ``logprobs``; a game played at the paper's temperature), which win over the user's run
    and role parameters. The other fields set are the call's defaults, as in a :class:`GenerationParams`.

    ``CallParams(max_tokens=16, logprobs=True, top_logprobs=20, fixed={"logprobs", "top_logprobs"})``
    """

    fixed: AbstractSet[str] = frozenset()  # validated into a frozenset

    @model_validator(mode="after")
    def _fixed_are_set(self) -> CallParams:
        unset = sorted(self.fixed - (self.model_fields_set - {"fixed"}))
        if unset:
            raise ValueError(f"fixed names parameters the call does not set: {', '.join(unset)}")
        return self

    def request_fields(self) -> dict[str, Any]:
        """As :meth:`GenerationParams.request_fields` (``fixed`` is no request field)."""
        return GenerationParams.model_validate(self.model_dump(exclude={"fixed"})).request_fields()


@dataclass
class Usage:
    """Token usage reported by the endpoint."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class ChatResult:
    """One completed chat request: the answer and how it was obtained."""

    text: str
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    logprobs: list[dict[str, Any]] | None = None
    errors: list[str] = field(default_factory=list)  # why earlier attempts of this request failed

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (used by the cache and the run store).

        Built by hand: ``dataclasses.asdict`` deep-copies recursively, a measurable cost per request."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
            "latency_s": self.latency_s,
            "attempts": self.attempts,
            "cached": self.cached,
            "logprobs": copy.deepcopy(self.logprobs) if self.logprobs is not None else None,
            "errors": list(self.errors),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChatResult:
        """Inverse of :meth:`to_json` (text stored by an older version is normalised as a reply is)."""
        data = dict(data)
        data["usage"] = Usage(**data.get("usage") or {})
        if not isinstance(data.get("text"), str):
            data["text"] = reply_text(data.get("text"))
        return cls(**data)

    @classmethod
    def from_response(cls, body: Any, latency_s: float = 0.0, attempts: int = 1) -> ChatResult:
        """Build a result from an OpenAI chat-completions response body, whatever it holds.

        An envelope without a first choice holding a message raises :class:`MalformedReply` (the
        client retries it). Everything inside is normalised, so a task never sees a type it did not
        ask for: the text is :func:`reply_text` of the content, token counts are
        :func:`token_count`, log-probabilities are :func:`reply_logprobs`, and ``finish_reason`` is a
        short string or None.
        """
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices:
            raise MalformedReply("no choices")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise MalformedReply("no message")
        usage = body.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        finish = choice.get("finish_reason")
        return cls(
            text=reply_text(message.get("content")),
            finish_reason=clean_text(finish[:_MAX_FINISH_REASON]) if isinstance(finish, str) else None,
            usage=Usage(token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))),
            latency_s=latency_s,
            attempts=attempts,
            logprobs=reply_logprobs(choice.get("logprobs")),
        )


class MalformedReply(ValueError):
    """A response without a first choice holding a message: nothing to read, so the call is retried."""


_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_FINISH_REASON = 64
_MAX_TOKEN_CHARS = 1000  # a log-probability "token" longer than this is not a token
_MAX_TOKENS = 2**53  # token counts beyond a double's exact integers are not counts


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (``\\ud800``, which JSON escapes can carry) replaced by U+FFFD.

    SQLite, orjson and UTF-8 files cannot encode a lone surrogate; a reply holding one would fail
    the store write, the cache and the report.
    """
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def reply_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list (OpenAI content parts).

    Anything else (null, a number, an object, a list without text parts) is no text: ``""``, which a
    task's parser counts as an invalid answer.
    """
    if isinstance(content, str):
        return clean_text(content)
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return clean_text("".join(parts))
    return ""


def token_count(value: Any) -> int:
    """A usage count: a whole number in [0, 2**53), else 0 (``1e999``, ``-5``, ``"12"``, null)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value if 0 <= value < _MAX_TOKENS else 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if 0 <= value < _MAX_TOKENS else 0
    return 0


def _logprob_entry(entry: Any, nested: bool) -> dict[str, Any] | None:
    """One token's entry (``token``, ``logprob``, ``bytes``, ``top_logprobs``), or None if malformed."""
    if not isinstance(entry, dict):
        return None
    token = entry.get("token")
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
        return None
    logprob = entry.get("logprob")
    if isinstance(logprob, bool) or not isinstance(logprob, int | float) or not math.isfinite(logprob):
        logprob = None  # unreadable: the scorers skip it
    clean: dict[str, Any] = {"token": clean_text(token), "logprob": logprob}
    if "bytes" in entry:
        raw = entry["bytes"]
        ok = isinstance(raw, list) and all(type(b) is int and 0 <= b < 256 for b in raw)
        clean["bytes"] = raw if ok else None
    if nested and "top_logprobs" in entry:
        top = entry["top_logprobs"]
        if top is None:
            top = []
        if not isinstance(top, list):
            return None
        candidates = [_logprob_entry(candidate, False) for candidate in top]
        if any(candidate is None for candidate in candidates):
            return None
        clean["top_logprobs"] = candidates
    return clean


def reply_logprobs(value: Any) -> list[dict[str, Any]] | None:
    """``choice.logprobs.content`` as a list of well-formed entries, or None if any part is malformed.

    A malformed list is dropped whole (the tasks then read the answer from the text) rather than
    half-used: a missing token would shift every position after it.
    """
    content = value.get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return None
    entries = [_logprob_entry(entry, True) for entry in content]
    wellformed = [entry for entry in entries if entry is not None]
    return wellformed if len(wellformed) == len(entries) else None
