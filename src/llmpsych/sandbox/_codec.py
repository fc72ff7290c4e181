"""Plain values across the sandbox boundary: exact builtin types only, tagged so nothing is lost.

Used on both sides (standard library only, importable inside the sandbox as a top-level module). The
program's side encodes what its function returned; the trusted side decodes it strictly and refuses
anything else, so a returned object can never carry its own ``__eq__`` (or any other method) out of the
sandbox: what the test compares is a fresh ``int``, ``str``, ``list``... built by trusted code.

Tags: ``n`` None, ``b`` bool, ``i`` int (hexadecimal, so no digit limit), ``f`` float (``float.hex``),
``c`` complex, ``s`` str, ``y`` bytes (hex), ``l`` list, ``t`` tuple, ``S`` set, ``F`` frozenset,
``d`` dict (pairs), ``g`` an iterator or generator, consumed into a list (the trusted side hands the
test a fresh iterator over it), ``e`` Ellipsis.
"""

from __future__ import annotations

import json
from typing import Any

#: Values nested deeper than this, or with more items in all than ``MAX_ITEMS``, are refused.
MAX_DEPTH = 64
MAX_ITEMS = 1_000_000

_ITERATORS: tuple[type[Any], ...] = (
    type(iter([])),
    type(iter(())),
    type(iter("")),
    type(iter(range(0))),
    type(iter({})),
    type(iter(set())),
    type({}.keys()),
    type({}.values()),
    type({}.items()),
    type(iter({}.items())),
    type(reversed([])),
    type(i for i in range(0)),
    map,
    filter,
    zip,
    enumerate,
    reversed,
    range,
)


class CodecError(ValueError):
    """A value that cannot cross the boundary (wrong type, too deep, malformed)."""


def encode(value: Any) -> Any:
    """A JSON-ready tagged form of ``value``; CodecError for any type not listed in the module docstring."""
    count = [0]
    return _encode(value, 0, count)


def _encode(value: Any, depth: int, count: list[int]) -> Any:
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_ITEMS:
        raise CodecError("value too deep or too large")
    kind = type(value)
    if value is None:
        return ["n"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", hex(value)]
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if value is Ellipsis:
        return ["e"]
    tags: dict[type[Any], str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}
    tag = tags.get(kind)
    if tag is not None:
        return [tag, [_encode(v, depth + 1, count) for v in value]]
    if kind is dict:
        return ["d", [[_encode(k, depth + 1, count), _encode(v, depth + 1, count)] for k, v in value.items()]]
    if kind in _ITERATORS:
        items = []
        for item in value:
            items.append(_encode(item, depth + 1, count))
        return ["g", items]
    raise CodecError(f"unsupported type {kind.__name__}")


def decode(data: Any) -> Any:
    """The value of a tagged form, built from fresh builtin objects; CodecError if malformed."""
    count = [0]
    try:
        return _decode(data, 0, count)
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"malformed value ({exc})") from None


def _decode(data: Any, depth: int, count: list[int]) -> Any:
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_ITEMS:
        raise CodecError("value too deep or too large")
    if type(data) is not list or not data or type(data[0]) is not str:
        raise CodecError("malformed value")
    tag, rest = data[0], data[1:]
    if tag == "n" and not rest:
        return None
    if tag == "e" and not rest:
        return Ellipsis
    if tag == "b" and len(rest) == 1 and type(rest[0]) is bool:
        return bool(rest[0])
    if tag == "i" and len(rest) == 1 and type(rest[0]) is str:
        return int(rest[0], 16)
    if tag == "f" and len(rest) == 1 and type(rest[0]) is str:
        return float.fromhex(rest[0])
    if tag == "c" and len(rest) == 2 and all(type(r) is str for r in rest):
        return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
    if tag == "s" and len(rest) == 1 and type(rest[0]) is str:
        return str(rest[0])
    if tag == "y" and len(rest) == 1 and type(rest[0]) is str:
        return bytes.fromhex(rest[0])
    if len(rest) != 1 or type(rest[0]) is not list:
        raise CodecError("malformed value")
    items = rest[0]
    if tag == "d":
        out: dict[Any, Any] = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("malformed value")
            out[_decode(pair[0], depth + 1, count)] = _decode(pair[1], depth + 1, count)
        return out
    values = [_decode(v, depth + 1, count) for v in items]
    if tag == "l":
        return values
    if tag == "t":
        return tuple(values)
    if tag == "S":
        return set(values)
    if tag == "F":
        return frozenset(values)
    if tag == "g":
        return iter(values)
    raise CodecError(f"unknown tag {tag!r}")


def dumps(message: dict[str, Any]) -> bytes:
    """One frame: a 4-byte big-endian length, then compact JSON."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    return len(body).to_bytes(4, "big") + body
