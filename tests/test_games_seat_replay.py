"""Answers of python: seats are recorded by the unit context like model calls: a resumed game replays them
instead of calling the function again; the report and the leaderboard name no model that did not play."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmpsych.games.leaderboard import model_label
from llmpsych.runs import RunStore, parse_run_config, resume_run, start_run
from llmpsych.testing.runs import unit_results

CALLS: list[int] = []
FAIL_IN_ROUND: list[int] = []


def flaky(observation: Any) -> int:
    """A python: seat that fails once, in the round FAIL_IN_ROUND names; it answers 10 x the round."""
    CALLS.append(observation.round)
    if FAIL_IN_ROUND and observation.round == FAIL_IN_ROUND[0]:
        FAIL_IN_ROUND.clear()
        raise RuntimeError("the seat's code failed")
    return 10 * observation.round


def test_a_resumed_game_replays_the_python_seat_answers(tmp_path: Path) -> None:
    CALLS.clear()
    FAIL_IN_ROUND[:] = [3]
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/unused",
            "base_url": "http://127.0.0.1:9/v1",
            "cache": False,
            "options": {
                "game": "guessing",
                "players": 2,
                "rounds": 4,
                "runs": 1,
                "seats": ["python:test_games_seat_replay:flaky", "fixed:50"],
            },
        }
    )
    first = start_run(config, tmp_path / "r", False)
    assert first.summary.failed == 1 and CALLS == [1, 2, 3]
    store = RunStore.in_dir(tmp_path / "r")
    try:
        stored = {c.call_key: (c.role, c.response["text"]) for c in store.calls()}
    finally:
        store.close()
    assert stored == {
        "python:guessing-run01:p0:r1:number#0": ("python", "10"),
        "python:guessing-run01:p0:r2:number#0": ("python", "20"),
    }
    second = resume_run(tmp_path / "r", False)
    assert second.summary.done == 1 and second.summary.calls_sent == 0
    assert CALLS == [1, 2, 3, 3, 4]  # rounds 1 and 2 were replayed from the store, not called again
    (result,) = unit_results(tmp_path / "r").values()
    assert [r["choices"] for r in result["rounds"]] == [[10, 50], [20, 50], [30, 50], [40, 50]]
    report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "no model seats; other seats: python:test_games_seat_replay:flaky, fixed:50" in report
    assert "openai-compatible/unused" not in report
    assert "0 model calls" in report  # the stored python: answers are not counted as model calls


def test_the_leaderboard_labels_a_run_by_the_models_that_played() -> None:
    config = {"model": "openai-compatible/a", "models": {"rival": "openai-compatible/b"}}
    assert model_label(config, {}) == "openai-compatible/a"
    assert model_label(config, {"seats": ["human", "fixed:50"], "players": 2}) == (
        "no model (seats human, fixed:50)"
    )
    assert model_label(config, {"seats": ["llm:rival", "fixed:50"], "players": 2}) == (
        "openai-compatible/b (mixed seats)"
    )
    assert model_label(config, {"seats": {1: "human"}, "players": 3}) == "openai-compatible/a (mixed seats)"
    assert model_label(config, {"seats": ["robot"], "players": 1}) == "openai-compatible/a (mixed seats)"
