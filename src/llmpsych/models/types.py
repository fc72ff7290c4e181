"""Request parameters and results of one chat completion."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]


class GenerationParams(BaseModel):
    """Sampling parameters sent with every request (OpenAI names)."""

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
        """Inverse of :meth:`to_json`."""
        data = dict(data)
        data["usage"] = Usage(**data.get("usage") or {})
        return cls(**data)

    @classmethod
    def from_response(cls, body: dict[str, Any], latency_s: float, attempts: int) -> ChatResult:
        """Build a result from an OpenAI chat-completions response body."""
        choice = body["choices"][0]
        message = choice.get("message") or {}
        usage = body.get("usage") or {}
        logprobs = (choice.get("logprobs") or {}).get("content")
        return cls(
            text=message.get("content") or "",
            finish_reason=choice.get("finish_reason"),
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            latency_s=latency_s,
            attempts=attempts,
            logprobs=logprobs,
        )
