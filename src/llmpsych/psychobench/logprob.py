"""Log-probability mode: one statement per request, scored by the probability-weighted Likert value.

In the manner of PsyBORGS (Serapio-García et al.), the answer to an item is not the sampled number but the
distribution the model puts on the response options at the position where it writes its score: the
``top_logprobs`` of that token are restricted to the in-range numbers (``" 4"`` and ``"4"`` pooled),
renormalised, and summarised by the expected value and the most likely option. ``mass`` is the raw
probability on the options before renormalising (low mass means the model wanted to write something
else). Endpoints without ``top_logprobs`` fall back to the number written in the text; each item records
which of the two it got, and the report counts them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..instruments.parsing import parse_likert_number
from ..instruments.scale import Scale

ItemStatus = Literal["logprobs", "text_fallback", "no_answer"]

# "17: 4", "17. 4", "Statement 17 - 4": the score follows an item number.
_INDEXED = re.compile(
    r"^\s*(?:statement|item)?\s*#?\s*\d+\s*[:.)=\-]\s*(?P<score>\d+)(?![\d.])", re.IGNORECASE
)
_NUMBER = re.compile(r"(?<![\d.])\d+(?![\d.]*\d)")


@dataclass
class ItemDistribution:
    """What one single-item request yielded."""

    item: int
    status: ItemStatus
    value: float | None = None  # expected value under the option distribution (or the written number)
    argmax: int | None = None
    mass: float | None = None
    probabilities: dict[int, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (option keys become strings)."""
        data = asdict(self)
        data["probabilities"] = {str(k): v for k, v in self.probabilities.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemDistribution:
        """Inverse of :meth:`to_json`."""
        fields = dict(data)
        fields["probabilities"] = {int(k): v for k, v in (fields.get("probabilities") or {}).items()}
        return cls(**fields)


def score_position(text: str) -> int | None:
    """Character offset of the score in a reply (after an item number if there is one)."""
    indexed = _INDEXED.match(text)
    if indexed:
        return indexed.start("score")
    first = _NUMBER.search(text)
    return first.start() if first else None


def option_value(token: str, response_min: int, response_max: int) -> int | None:
    """The response option a token spells (``" 4"`` -> 4), or ``None``."""
    stripped = unicodedata.normalize("NFKC", token).strip()  # as the text parser: "３" is 3, "٣" is not
    if not re.fullmatch(r"[0-9]+", stripped):
        return None
    value = int(stripped)
    return value if response_min <= value <= response_max else None


def option_distribution(
    logprobs: Sequence[Mapping[str, Any]], response_min: int, response_max: int
) -> tuple[dict[int, float], float] | None:
    """``({option: probability}, mass)`` at the token that carries the score, or ``None`` if none does."""
    tokens = [str(entry.get("token", "")) for entry in logprobs]
    position = score_position("".join(tokens))
    if position is None:
        return None
    offset = 0
    for token, entry in zip(tokens, logprobs, strict=True):
        if offset <= position < offset + len(token) or (offset == position and not token):
            if option_value(token, response_min, response_max) is None:
                return None
            candidates = list(entry.get("top_logprobs") or []) or [entry]
            raw: dict[int, float] = {}
            for candidate in candidates:
                value = option_value(str(candidate.get("token", "")), response_min, response_max)
                logprob = candidate.get("logprob")
                if value is not None and isinstance(logprob, int | float) and math.isfinite(logprob):
                    raw[value] = raw.get(value, 0.0) + math.exp(logprob)
            mass = sum(raw.values())
            if mass <= 0:
                return None
            return {v: p / mass for v, p in sorted(raw.items())}, mass
        offset += len(token)
    return None


def read_item(
    item: int, text: str, logprobs: Sequence[Mapping[str, Any]] | None, response_min: int, response_max: int
) -> ItemDistribution:
    """The item's weighted value from logprobs, else the number written in the text, else no answer."""
    if logprobs:
        found = option_distribution(logprobs, response_min, response_max)
        if found is not None:
            probabilities, mass = found
            expected = sum(v * p for v, p in probabilities.items())
            argmax = max(probabilities, key=lambda v: (probabilities[v], -v))
            return ItemDistribution(item, "logprobs", expected, argmax, mass, probabilities)
    indexed = _INDEXED.match(text or "")
    answer = parse_likert_number(indexed["score"] if indexed else text or "", response_min, response_max)
    if answer.value is not None:
        return ItemDistribution(item, "text_fallback", float(answer.value), answer.value)
    return ItemDistribution(item, "no_answer")


def weighted_scores(scale: Scale, values: Mapping[int, float]) -> dict[str, float]:
    """Subscale scores from real-valued item values (reverse keying ``min + max - x``; NaN if incomplete).

    :meth:`Scale.score` accepts whole-number answers only; expected values need this real-valued twin.
    """
    reverse = set(scale.reverse_indices)
    flip = scale.response_min + scale.response_max
    keyed = {i: (flip - v if i in reverse else v) for i, v in values.items()}
    scores: dict[str, float] = {}
    for sub in scale.subscales:
        numbers = [keyed.get(i) for i in sub.item_indices]
        if any(v is None for v in numbers):
            scores[sub.name] = math.nan
            continue
        total = float(sum(v for v in numbers if v is not None))
        scores[sub.name] = {"SUM": total, "SUM*2": 2 * total}.get(scale.scoring, total / len(numbers))
    return scores
