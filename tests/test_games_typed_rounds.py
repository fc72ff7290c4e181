"""Game rounds typed to the leaf: each game's ``Round``, parsed where a stored round is read.

``games_store_before_typed_rounds.json`` holds game results exactly as llmpsych stored them before the
rounds were typed (the eight games, two with a person's web seat, one pirate game whose answer records
predate ``how``), and the CSV files that version's analysis wrote from a run store holding them. A store
written then must load now, and its scores, tables, seat payoffs and plot data must not move.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from llmpsych.errors import DataError
from llmpsych.games import registry
from llmpsych.games.analysis import game_score
from llmpsych.games.engine import AnswerRecord, Decision, SimultaneousRound
from llmpsych.games.guessing import GuessingRound
from llmpsych.games.leaderboard import leaderboard, left_out_frame
from llmpsych.games.pirate import PirateGameRound
from llmpsych.games.result import GamaBenchResult
from llmpsych.runs import RunStore, parse_run_config
from llmpsych.runs.runner import analyze_run
from llmpsych.runs.store import finish_unit_statements

FIXTURE = json.loads((Path(__file__).parent / "games_store_before_typed_rounds.json").read_text("utf-8"))
RESULTS: list[dict[str, Any]] = FIXTURE["results"]


def _store(run_dir: Path, results: list[dict[str, Any]]) -> Path:
    """A finished gamabench run store holding ``results``, written through the run store."""
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/m",
            "base_url": "http://127.0.0.1:9/v1",
            "options": {"game": "all", "players": 3, "rounds": 2, "runs": 1},
        }
    )
    units = [(f"{r['game']}-run{r['run']:02d}", {"game": r["game"], "run": r["run"]}) for r in results]
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", config.stored())
        store.set_meta("manifest", {"task": "gamabench"})
        store.add_units(units)
        for (unit_id, _), result in zip(units, results, strict=True):
            store.write(finish_unit_statements(unit_id, result))
    return run_dir


@pytest.mark.parametrize("stored", RESULTS, ids=lambda r: f"{r['game']}-run{r['run']}")
def test_every_stored_round_parses_into_its_games_round_and_is_written_back_unchanged(
    stored: dict[str, Any],
) -> None:
    result = GamaBenchResult.model_validate(stored)
    rounds = registry.rounds_of(result)
    assert all(type(r) is registry.get(stored["game"]).Round for r in rounds)
    # the same mapping, key order included: a round read and stored again is byte-identical JSON
    assert json.dumps([r.stored() for r in rounds]) == json.dumps(stored["rounds"])


def test_a_store_written_before_the_rounds_were_typed_is_analysed_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("llmpsych.games.plots.pyplot", lambda: None)  # the plots' data, not their pixels
    run_dir = _store(tmp_path / "run", RESULTS)
    analyze_run(run_dir)
    for name, text in FIXTURE["csv"].items():
        assert (run_dir / name).read_text(encoding="utf-8") == text, name


def test_scores_and_attribute_reads_of_the_stored_rounds() -> None:
    by_game = {(r["game"], r["run"]): GamaBenchResult.model_validate(r) for r in RESULTS}
    guessing = by_game[("guessing", 1)].rounds_as(GuessingRound)
    assert [r.choices for r in guessing] == [[0, 30, 50], [0, 70, 50]]
    assert guessing[0].decisions[2].fallback and guessing[0].decisions[2].refused == ["abc", "abc"]
    assert [r.actions() for r in guessing] == [r.choices for r in guessing]
    (pirate,) = by_game[("pirate", 2)].rounds_as(PirateGameRound)  # answer records from before ``how``
    assert pirate.proposal.how is None and [v.player for v in pirate.votes] == [1, 2]
    assert {a.how for a in by_game[("pirate", 2)].answers()} == {"bot", "strategy"}  # by their seats
    assert game_score(by_game[("guessing", 1)]) == pytest.approx(200 / 3)
    assert game_score(by_game[("pirate", 1)], published=True) == pytest.approx(67.5)


def test_a_stored_round_that_does_not_fit_its_game_is_named_and_left_out(tmp_path: Path) -> None:
    hostile = copy.deepcopy(RESULTS[0])  # guessing run 1
    hostile["rounds"][1]["mean"] = "half of it"
    result = GamaBenchResult.model_validate(hostile)
    with pytest.raises(DataError, match=r"guessing run 1: stored round 2 does not fit GuessingRound \(mean:"):
        registry.rounds_of(result)
    assert game_score(result) is None
    _, infos = leaderboard([_store(tmp_path / "run", [hostile, RESULTS[1]])])
    (left,) = left_out_frame(infos).to_dict("records")
    assert left["reason"].startswith("cannot be scored: DataError: guessing run 1: stored round 2 does not")


def test_a_decision_is_asked_by_keyword_only() -> None:
    fields: dict[str, Any] = dict(request="?", fields=["n"], validate=lambda d: d["n"], fallback=0)
    with pytest.raises(TypeError):
        Decision(0, 1, "number", **fields)  # type: ignore[call-arg]
    decision = Decision(player=0, round=1, kind="number", **fields)
    assert decision.primary == "n" and decision.info == {}


def test_an_answer_record_keeps_only_what_was_set() -> None:
    stored = {"player": 1, "seat": "fixed:7", "action": 7, "asks": 1, "how": "bot", "response_s": None}
    assert AnswerRecord.model_validate(stored).model_dump(exclude_unset=True) == stored
    played = SimultaneousRound.model_validate({"round": 1, "decisions": [stored], "extra": [1]})
    assert played.stored() == {"round": 1, "decisions": [stored], "extra": [1]}
