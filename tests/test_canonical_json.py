"""The canonical request JSON (orjson) is the standard library's sorted, compact, UTF-8 JSON."""

from __future__ import annotations

import hashlib
import json

import pytest

from llmpsych.models.cache import cache_key
from llmpsych.models.canonical import canonical_json


def _stdlib(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def test_every_code_point_is_written_as_the_standard_library_writes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert canonical_json({"content": text}) == _stdlib({"content": text})


@pytest.mark.parametrize(
    "value",
    [
        {"model": "m", "messages": [{"role": "user", "content": "é “q” \n\t\x00"}], "temperature": 0.7},
        {"b": 1, "a": {"d": [1, 2.5, None, True, False], "c": {"z": 0, "y": -3}}},
        {"top_p": 0.30000000000000004, "seed": 123456789012345678, "big": 1e16, "tiny": 5e-324},
    ],
)
def test_request_bodies_match_the_standard_library(value: object) -> None:
    assert canonical_json(value) == _stdlib(value)


def test_what_orjson_refuses_falls_back_to_the_standard_library() -> None:
    assert (
        canonical_json({2: "int keys", 1: "x"})
        == _stdlib({2: "int keys", 1: "x"})
        == '{"1":"x","2":"int keys"}'
    )
    assert canonical_json({"n": 2**70}) == _stdlib({"n": 2**70})


def test_the_one_known_difference_small_float_exponents() -> None:
    assert canonical_json({"x": 1e-7}) == '{"x":1e-7}'  # the standard library writes 1e-07
    assert json.loads(canonical_json({"x": 1e-7})) == {"x": 1e-7}


@pytest.mark.parametrize(
    "body",
    [
        {
            "model": "m",
            "messages": [{"role": "user", "content": 'Zoë \u2028 😀 "quoted"'}],
            "temperature": 0.7,
        },
        {"model": "m", "messages": [], "stop": ["\n"], "seed": 2**70},
    ],
)
def test_cache_key_of_an_encoded_body_equals_that_of_the_body(body: dict) -> None:
    """The response cache key is the same whether the client passes the body or its canonical JSON,
    and equals the hash of the canonical JSON of the whole key record (existing caches stay valid)."""
    expected = hashlib.sha256(
        canonical_json({"endpoint": "http://e", "model": "m", "body": body, "sample": "0:1"}).encode()
    ).hexdigest()
    assert cache_key("http://e", "m", body, "0:1") == expected
    assert cache_key("http://e", "m", canonical_json(body), "0:1") == expected
