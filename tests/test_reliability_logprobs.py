"""Scoring by label probabilities: the distribution at each statement's label token."""

from __future__ import annotations

import math
from pathlib import Path

from llmpsych.reliability.logprobs import expected_levels, label_distributions
from llmpsych.runs import RunStore, parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer


def entry(token: str, top: dict[str, float]) -> dict:
    return {
        "token": token,
        "logprob": math.log(top.get(token.strip('"'), 0.5)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
    }


def test_distributions_at_each_label_token() -> None:
    tokens = [
        {"token": '{"', "logprob": 0.0},
        {"token": "1", "logprob": 0.0},
        {"token": '":', "logprob": 0.0},
        {"token": ' "', "logprob": 0.0},
        entry("B", {"B": 0.6, "C": 0.2, "x": 0.1, "b": 0.1}),  # lower case is another format: ignored
        {"token": '",', "logprob": 0.0},
        {"token": ' "', "logprob": 0.0},
        {"token": "2", "logprob": 0.0},
        {"token": '":', "logprob": 0.0},
        {"token": ' "', "logprob": 0.0},
        entry("E", {"E": 0.9, "D": 0.1}),
        {"token": '"}', "logprob": 0.0},
    ]
    found = label_distributions(tokens, 2, "au")
    assert set(found) == {1, 2}
    assert set(found[1]) == {2, 3} and math.isclose(found[1][2], 0.75) and math.isclose(found[1][3], 0.25)
    assert math.isclose(found[2][5], 0.9)
    levels = expected_levels(found, [17, 4], "r")  # descending: position p is level 6 - p
    assert math.isclose(levels[17], 0.75 * 4 + 0.25 * 3) and math.isclose(levels[4], 0.9 * 1 + 0.1 * 2)
    assert label_distributions(tokens, 2, "ru") == {}  # Roman numerals share prefixes: no reading
    assert label_distributions([], 2, "au") == {}


def test_logprob_mode_falls_back_to_written_labels_without_logprobs(tmp_path: Path, seed_data: Path) -> None:
    from test_reliability_task import Respondent

    grid = {"languages": ["En"], "templates": ["t1"], "versions": ["v1"], "labels": ["au"], "orders": ["f"]}
    with FaultServer(responder=Respondent(seed_data)) as server:
        config = parse_run_config(
            {
                "task": "reliability",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "data_dir": str(seed_data),
                "options": {"method": "logprob", **grid},
            }
        )
        start_run(config, tmp_path / "r", False)
    store = RunStore.in_dir(tmp_path / "r")
    try:
        (unit,) = store.units()
        (call,) = [c for c in store.calls()][:1]
    finally:
        store.close()
    assert unit.result["n_logprob_items"] == 0
    assert unit.result["scores_expected"] == unit.result["scores"]
    assert call.request["logprobs"] is True and call.request["top_logprobs"] == 20
