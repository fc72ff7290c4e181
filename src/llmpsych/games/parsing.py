"""Reading a game answer: find the JSON object that carries the field, then validate its value.

Models wrap their JSON in markdown fences, reasoning text or several drafts; we take the *last* JSON object
that contains the wanted field (spec §4.6), falling back to a field-level regex for slightly broken JSON.
Validators raise :class:`InvalidAnswer` with a short reason, which the engine logs and may re-ask about.

Numbers follow :mod:`llmpsych.instruments.numbers`: an action is a whole number only when written as one
(``50`` or ``"50"``); ``2e5``, ``50.0``, ``5%``, ``+3``, ``1,000``, ``٣``, ``NaN`` or ``Infinity`` are
invalid answers (re-asked), never read as a value. The reference code's ``int()`` accepted ``"+3"``,
non-ASCII digits and a JSON ``50.0``; no published figure depends on that, as they were scored from logs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..instruments.numbers import STRICT_DECODER, whole_number


class InvalidAnswer(ValueError):
    """The answer could not be read as a valid action; the message says why."""


_DECODER = STRICT_DECODER


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in ``text`` (outer objects and the objects nested in them), in order of start."""
    found: list[dict[str, Any]] = []
    cleaned = text.replace("\\_", "_")
    position = cleaned.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(cleaned, position)
            if isinstance(value, dict):
                found.append(value)
                found.extend(_nested(value))
        except json.JSONDecodeError:
            position = cleaned.find("{", position + 1)
            continue
        except RecursionError:  # nested past Python's limit: no answer is; stop rather than rescan
            break
        position = cleaned.find("{", end)
    return found


def _nested(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        if isinstance(child, dict):
            out.append(child)
        if isinstance(child, dict | list):
            out.extend(_nested(child))
    return out


#: JSON objects are looked for in a reply's last 16,384 characters: each failed decode at position p
#: costs O(p) (``JSONDecodeError`` counts the lines before p), so a 10 MB reply of ``{`` would take hours.
JSON_SCAN_CHARS = 16_384


def extract_fields(text: str, fields: list[str]) -> dict[str, Any]:
    """The last JSON object holding ``fields[0]`` (the primary field), else a regex reading of each field."""
    primary = fields[0]
    candidates = [obj for obj in json_objects(text[-JSON_SCAN_CHARS:]) if primary in obj]
    if candidates:
        return candidates[-1]
    data: dict[str, Any] = {}
    for name in fields:
        matches = re.findall(rf'"{re.escape(name)}"\s*:\s*("([^"]*)"|[^,}}\s]+)', text)
        if matches:
            quoted, inner = matches[-1]
            data[name] = inner if quoted.startswith('"') else quoted
    if primary not in data:
        raise InvalidAnswer(f'no JSON with the field "{primary}" found')
    return data


def as_int(value: Any, low: int | None = None, high: int | None = None) -> int:
    """An integer written as one (``"50"`` or ``50``) within [low, high]; anything else is invalid."""
    if isinstance(value, str):
        value = value.strip().strip("'\"")
    result = whole_number(value)
    if result is None:
        raise InvalidAnswer(f"{str(value)[:40]!r} is not a whole number")
    if (low is not None and result < low) or (high is not None and result > high):
        raise InvalidAnswer(f"{result} is outside {low}..{high}")
    return result


def as_choice(value: Any, options: tuple[str, ...]) -> str:
    """One of ``options`` (case and surrounding space ignored)."""
    text = str(value).strip().strip("'\"").lower()
    if text not in options:
        raise InvalidAnswer(f"{value!r} is not one of {', '.join(options)}")
    return text


def as_int_list(value: Any) -> list[int]:
    """A list of integers from a JSON list, a dict's values (in order) or a string of numbers."""
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, list | tuple):
        items = list(value)
    elif isinstance(value, str):  # "96, 0, 1" or "[96, 0, 1]"; "96 0 1e5" is invalid, not [96, 0, 1, 5]
        items = [part for part in re.split(r"[\s,;]+", value.strip().strip("[](){}")) if part]
    else:
        raise InvalidAnswer(f"{value!r} is not a list of numbers")
    return [as_int(item) for item in items]
