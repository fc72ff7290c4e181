"""The run store's JSON text: orjson where exact, the standard library where orjson would change a value."""

from __future__ import annotations

import json
import math
from pathlib import Path

from llmpsych.runs.store import RunStore, finish_unit_statements, stored_json


def _same(a: object, b: object) -> bool:
    """Equality that treats NaN as equal to NaN (json.loads reads NaN back as a float)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_values_read_back_as_written() -> None:
    """NaN, infinities, None, huge integers, unicode and text that says null all read back unchanged."""
    values = [
        {"score": 1.5, "rounds": [1, 2, 3], "name": "Zoë 😀", "ok": True},
        {"mean": math.nan, "sd": math.inf, "low": -math.inf},
        {"winner": None, "scores": [0.1, 0.2]},
        {"note": "nullify the null hypothesis", "x": 0.30000000000000004},
        {"big": 2**80, "neg": -(2**70)},
        [1e-7, 1e300, -0.0],
    ]
    for value in values:
        assert _same(json.loads(stored_json(value)), value), value


def test_integer_keys_become_strings_as_with_json() -> None:
    """Non-string keys are written as the standard library writes them."""
    value = {1: "a", 2: {3: 4}}
    assert json.loads(stored_json(value)) == json.loads(json.dumps(value))


def test_finite_trusts_the_caller_and_keeps_nulls() -> None:
    """``finite=True`` (a response without log-probabilities) keeps orjson's text, nulls included."""
    response = {"text": "3", "finish_reason": None, "logprobs": None, "latency_s": 0.1}
    text = stored_json(response, finite=True)
    assert json.loads(text) == response and text == json.dumps(response, separators=(",", ":"))


def test_a_unit_result_with_nan_reads_back_through_the_store(tmp_path: Path) -> None:
    """A unit result holding NaN comes back from the store as NaN, not None."""
    store = RunStore(tmp_path / "run.sqlite", create=True)
    try:
        store.add_units([("u1", {})])
        store.write(finish_unit_statements("u1", {"mean": math.nan, "n": 0}))
        (row,) = store.units()
        assert math.isnan(row.result["mean"]) and row.result["n"] == 0
    finally:
        store.close()
