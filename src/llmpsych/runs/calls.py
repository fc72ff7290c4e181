"""A stored model call: the one typed shape of a row of ``run.sqlite``'s ``calls`` table.

The run record (:class:`~llmpsych.runs.record.Calls`), the store (:meth:`RunStore.calls
<llmpsych.runs.store.RunStore.calls>`), the transcripts (:mod:`llmpsych.report.transcripts`) and the web
pages (:mod:`llmpsych.web.store`) all hand out a :class:`StoredCall`; only how the JSON text of a request
or a response is parsed differs: the record and the store refuse text that is not JSON (a damaged store
is a :class:`~llmpsych.errors.DataError`), the web pages show it as stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError

#: The columns of a stored call, in the order :class:`StoredCall` holds them.
CALL_COLUMNS = (
    "unit_id",
    "call_key",
    "seq",
    "role",
    "model",
    "request",
    "response",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "attempts",
    "cached",
    "created",
)
_REQUEST, _RESPONSE = CALL_COLUMNS.index("request"), CALL_COLUMNS.index("response")


@dataclass(frozen=True, slots=True)
class StoredCall:
    """One stored model call: the request as sent and the response as received (both parsed), with the
    latency, the tokens the server reported, the attempts it took and whether the cache answered it."""

    unit_id: str
    call_key: str
    seq: int
    role: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any]
    latency_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int | None
    cached: bool
    created: float

    @classmethod
    def of(cls, row: Sequence[Any], request: Any, response: Any) -> StoredCall:
        """The call from its row of :data:`CALL_COLUMNS` and its parsed request and response; a request
        that is not a JSON object is kept as ``{"raw": ...}``, such a response as ``{"text": ...}``."""
        (
            unit_id,
            call_key,
            seq,
            role,
            model,
            _,
            _,
            latency_s,
            prompt,
            completion,
            attempts,
            cached,
            created,
        ) = row
        return cls(
            unit_id=unit_id,
            call_key=call_key,
            seq=seq,
            role=role,
            model=model,
            request=request if isinstance(request, dict) else {"raw": request},
            response=response if isinstance(response, dict) else {"text": str(response)},
            latency_s=latency_s,
            prompt_tokens=prompt,
            completion_tokens=completion,
            attempts=attempts,
            cached=bool(cached),
            created=created,
        )

    @classmethod
    def parse(cls, row: Sequence[Any], store_path: Path) -> StoredCall:
        """The call from its stored row (request and response as JSON text); text that is not JSON is a
        :class:`~llmpsych.errors.DataError` naming the store."""
        try:
            request, response = json.loads(row[_REQUEST]), json.loads(row[_RESPONSE])
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            said = " ".join(str(exc).split())
            raise DataError(f"run store {store_path}: {said}", "is the file damaged?") from None
        return cls.of(row, request, response)

    @property
    def text(self) -> str:
        """The reply's text (empty when the response holds none)."""
        return str(self.response.get("text") or "")

    def as_dict(self) -> dict[str, Any]:
        """The call as one JSON object, keys in :data:`CALL_COLUMNS` order (``llmpsych export``'s lines)."""
        return asdict(self)


__all__ = ["CALL_COLUMNS", "StoredCall"]
