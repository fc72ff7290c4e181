"""The boundary codec: exact plain types survive, anything else is refused, malformed input never decodes."""

from __future__ import annotations

import math

import pytest

from llmpsych.sandbox._codec import CodecError, decode, encode
from llmpsych.sandbox._seccomp import filter_program


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        pytest.param(-(1 << 20000), id="huge-int"),
        1.5,
        -0.0,
        math.inf,
        1 + 2j,
        "é\x00",
        b"\xff",
        [1, (2, "x")],
        {"a": [1], 2: None, (1, 2): {3}},
        frozenset({1, 2}),
        ...,
    ],
)
def test_plain_values_round_trip_with_their_exact_types(value: object) -> None:
    back = decode(encode(value))
    assert back == value and type(back) is type(value)


def test_nan_and_iterators() -> None:
    assert math.isnan(decode(encode(math.nan)))
    it = decode(encode(x * 2 for x in range(3)))
    assert list(it) == [0, 2, 4] and list(it) == []  # a fresh, single-use iterator, as the program's was
    assert list(decode(encode(map(str, [1, 2])))) == ["1", "2"]


class Liar(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize("value", [Liar(1), [Liar(1)], {"k": object()}, type("X", (), {})(), lambda: 1])
def test_subclasses_and_objects_are_refused(value: object) -> None:
    with pytest.raises(CodecError):
        encode(value)


@pytest.mark.parametrize(
    "data",
    [
        "x",
        [],
        ["i", 5],
        ["i", "zz"],
        ["b", 1],
        ["l", "abc"],
        ["d", [[["l", []], ["n"]]]],  # an unhashable key
        ["q", []],
        ["n", 1],
    ],
)
def test_malformed_forms_are_refused(data: object) -> None:
    with pytest.raises(CodecError):
        decode(data)


def test_deep_nesting_is_refused() -> None:
    data: list = ["n"]
    for _ in range(100):
        data = ["l", [data]]
    with pytest.raises(CodecError):
        decode(data)


def test_the_seccomp_filter_is_whole_instructions() -> None:
    program = filter_program("x86_64")
    assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 4096
    assert filter_program("sparc") is None
