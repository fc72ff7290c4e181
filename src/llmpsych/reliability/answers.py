"""Reading a chunk's reply: statement number -> label -> choice position -> canonical level.

The templates ask for a JSON object from statement number to label. The reply is read as the JSON object it
contains, else line by line (``3: B``, ``3. B``, ``"3": "B"``), else as the complete ``"3": "B"`` pairs
of a JSON object cut short. Labels must be of the configuration's
format (see :func:`labels.position_of`); anything else is reported as invalid, never guessed. JSON is read
strictly (:func:`llmpsych.instruments.numbers.loads_strict`): ``3.0``, ``3e0``, ``NaN`` or ``Infinity`` as a
label is invalid, as are statement numbers or numerals in digits of another script (``٣``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..instruments.numbers import loads_strict
from ..instruments.parsing import detect_refusal
from .labels import level_of, position_of

_PAIR = re.compile(r"\"(?P<index>[0-9]{1,3})\"\s*:\s*\"?(?P<value>[^\",}\s]+)\"?")
_LINE = re.compile(
    r"^\s*[-*]?\s*\"?(?P<index>[0-9]{1,3})\"?\s*(?:[:.)=]|->|-)\s*\"?(?P<value>[^\",;\s]+)\"?\s*[,;]?\s*$"
)


@dataclass
class ChunkAnswers:
    """What one reply says about the ``expected`` statement numbers of a chunk."""

    expected: int
    positions: dict[int, int] = field(default_factory=dict)
    invalid: dict[int, str] = field(default_factory=dict)
    unexpected: dict[int, str] = field(default_factory=dict)
    refused: bool = False
    json_ok: bool = False

    @property
    def missing(self) -> list[int]:
        """Statement numbers without a valid answer."""
        return [i for i in range(1, self.expected + 1) if i not in self.positions]

    @property
    def complete(self) -> bool:
        """Every statement answered with a valid label."""
        return not self.missing


def _json_object(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = loads_strict(text[start : end + 1])
    except (ValueError, RecursionError):  # not JSON, an integer of 4,300+ digits, nesting past the limit
        return None
    return value if isinstance(value, dict) else None


def parse_chunk(text: str, expected: int, fmt: str, n_levels: int = 5) -> ChunkAnswers:
    """Parse a reply to a chunk of ``expected`` statements asked with label format ``fmt``."""
    result = ChunkAnswers(expected=expected)
    pairs: list[tuple[str, Any]] = []
    obj = _json_object(text or "")
    if obj is not None:
        result.json_ok = True
        pairs = list(obj.items())
    else:
        for line in (text or "").splitlines():
            match = _LINE.match(line)
            if match:
                pairs.append((match["index"], match["value"]))
        if not pairs:  # a JSON object cut short (e.g. at the token limit): read its complete pairs
            pairs = [(m["index"], m["value"]) for m in _PAIR.finditer(text or "")]
    seen: dict[int, set[int | None]] = {}
    raw: dict[int, str] = {}
    for key, value in pairs:
        key_text = str(key).strip()
        if not re.fullmatch(r"[0-9]{1,3}", key_text):
            continue
        index = int(key_text)
        if not 1 <= index <= expected:
            result.unexpected[index] = str(value)
            continue
        seen.setdefault(index, set()).add(position_of(fmt, value, n_levels))
        raw[index] = str(value)
    for index, positions in seen.items():
        position = positions.pop() if len(positions) == 1 else None
        if position is not None:
            result.positions[index] = position
        else:
            result.invalid[index] = raw[index]
    result.refused = not result.positions and detect_refusal(text or "")
    return result


def chunk_levels(parsed: ChunkAnswers, chunk: list[int], order: str, n_levels: int = 5) -> dict[int, int]:
    """Item number -> canonical level for the validly answered statements of a chunk."""
    return {chunk[i - 1]: level_of(p, order, n_levels) for i, p in parsed.positions.items()}
