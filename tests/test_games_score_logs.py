"""``llmpsych gamabench rescore PATHS`` (formerly ``score-logs``): official GAMA-Bench logs scored through the
real command line.

Expected values: thesis Tables 6.8/6.9, the same ``PUBLISHED`` numbers test_games_scoring.py checks the
library against (kept once, in ``llmpsych.games.released_logs``).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from llmpsych.games.released_logs import DEFAULT_MODEL, PUBLISHED, PUBLISHED_ARXIV, released_models
from llmpsych.games.score_logs import GAME_KEYS
from llmpsych.testing.runs import run_cli as cli

#: The brief's acceptance tolerance against the printed (one-decimal) thesis values.
TOL = 0.1
KEYS = {
    "guess_2_3",
    "el_farol",
    "divide_dollar",
    "public_goods",
    "diners_dilemma",
    "sealed_bid_auction",
    "battle_royale",
    "pirate",
}


@pytest.fixture(scope="module")
def raw_results(seed_data: Path) -> Path:
    return seed_data / "GAMABench" / "raw_results"


@pytest.fixture(scope="module")
def folder_result(raw_results: Path) -> subprocess.CompletedProcess[str]:
    return cli("gamabench", "rescore", raw_results, "--json")


def _copy(raw_results: Path, relpath: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(raw_results / relpath, target)
    return target


def test_game_keys_are_the_documented_ones() -> None:
    assert set(GAME_KEYS.values()) == KEYS


def test_folder_reproduces_the_thesis_leaderboard(folder_result, seed_data: Path) -> None:
    """Every model in raw_results: each game mean and the overall within 0.1 of thesis Tables 6.8/6.9."""
    assert folder_result.returncode == 0, folder_result.stderr
    scores = json.loads(folder_result.stdout)
    assert set(scores) == set(released_models(seed_data))
    deviations = {}
    for model, row in scores.items():
        assert set(row) == KEYS | {"overall"}, model
        published = PUBLISHED[model]
        for game, key in GAME_KEYS.items():
            mean, sd = published[game]
            assert row[key]["runs"] == 5, (model, key)
            assert abs(row[key]["mean"] - mean) <= TOL, (model, key, row[key]["mean"], mean)
            assert abs(row[key]["std"] - sd) <= TOL, (model, key, row[key]["std"], sd)
            deviations[(model, key)] = abs(row[key]["mean"] - mean)
        mean, sd = published["overall"]
        assert set(row["overall"]) == {"mean", "std"}
        assert abs(row["overall"]["mean"] - mean) <= TOL, (model, row["overall"], mean)
        assert abs(row["overall"]["std"] - sd) <= TOL, (model, row["overall"], sd)
        deviations[(model, "overall")] = abs(row["overall"]["mean"] - mean)
    assert max(deviations.values()) <= 0.05 + 1e-6  # in fact every cell matches to the printed digit


def test_folder_scores_the_explicit_and_second_price_logs_as_variants(folder_result) -> None:
    """The 40 El Farol explicit / second-price logs are no longer skipped: they are variant logs."""
    err = folder_result.stderr
    assert "skipped" not in err
    scored = re.search(r"note: (\d+) variant log\(s\) scored, grouped by setting", err)
    assert scored and int(scored[1]) >= 40, err  # 40 in the seed data, 925 in the authors' full folder


def test_single_file(raw_results: Path) -> None:
    path = raw_results / "pirate_game" / "gpt-4o_pirate_game_v1_1.json"
    result = cli("gamabench", "rescore", path, "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert list(scores) == ["gpt-4o"]
    assert scores["gpt-4o"]["pirate"] == {
        "mean": pytest.approx(77.3, abs=0.05),
        "std": None,
        "runs": 1,
        "above_range": 0,
    }
    assert scores["gpt-4o"]["overall"] is None
    assert "no overall score" in result.stderr


def test_default_model_is_the_prefixless_files(raw_results: Path, tmp_path: Path) -> None:
    _copy(raw_results, "guessing_game/guessing_game_v1_1.json", tmp_path / "a" / "guessing_game_v1_1.json")
    _copy(raw_results, "guessing_game/gpt-4o_guessing_game_v1_1.json", tmp_path / "b" / "c" / "x.json")
    (tmp_path / "b" / "c" / "x.json").rename(tmp_path / "b" / "c" / "gpt-4o_guessing_game_v1_1.json")
    result = cli("gamabench", "rescore", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert sorted(scores) == sorted([DEFAULT_MODEL, "gpt-4o"]) and DEFAULT_MODEL == "gpt-3.5-turbo-0125"
    assert scores[DEFAULT_MODEL]["guess_2_3"]["mean"] == pytest.approx(65.4, abs=0.05)  # thesis T1
    assert scores["gpt-4o"]["guess_2_3"]["mean"] == pytest.approx(94.9, abs=0.05)


def test_malformed_file_is_one_error_line_naming_it(raw_results: Path, tmp_path: Path) -> None:
    _copy(raw_results, "divide_dollar/divide_dollar_v1_1.json", tmp_path / "divide_dollar_v1_1.json")
    bad = _copy(raw_results, "divide_dollar/divide_dollar_v1_2.json", tmp_path / "divide_dollar_v1_2.json")
    data = json.loads(bad.read_text())
    data["round_records"][3]["responses"][0] = "fifty"
    bad.write_text(json.dumps(data))
    result = cli("gamabench", "rescore", tmp_path, "--json")
    assert result.returncode != 0
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "divide_dollar_v1_2.json" in lines[0] and "round 4 player 1: bid is not a number" in lines[0]
    # --skip-malformed: a warning naming the file, the other log is scored
    result = cli("gamabench", "rescore", tmp_path, "--json", "--skip-malformed")
    assert result.returncode == 0, result.stderr
    assert "warning:" in result.stderr and "divide_dollar_v1_2.json" in result.stderr
    assert json.loads(result.stdout)[DEFAULT_MODEL]["divide_dollar"]["runs"] == 1


def test_variant_logs_are_scored_apart_and_unnamed_logs_skipped(raw_results: Path, tmp_path: Path) -> None:
    src = "guessing_game/guessing_game_v1_1.json"
    _copy(raw_results, src, tmp_path / "guessing_game_v1_1.json")
    _copy(raw_results, src, tmp_path / "guessing_game_v1_t0.json")
    _copy(raw_results, src, tmp_path / "guessing_game_v2_1.json")
    _copy(raw_results, src, tmp_path / "notes.json")
    sweep = _copy(raw_results, src, tmp_path / "guessing_game_v1_2.json")
    data = json.loads(sweep.read_text())
    data["meta"]["ratio"] = 0.5
    sweep.write_text(json.dumps(data))
    out = tmp_path / "out"
    result = cli("gamabench", "rescore", tmp_path, "--json", "--verbose", "--out", out)
    assert result.returncode == 0, result.stderr
    # only run 1 is a leaderboard run; the three others are variant logs, not leaderboard runs
    assert json.loads(result.stdout)[DEFAULT_MODEL]["guess_2_3"]["runs"] == 1
    err = result.stderr
    assert "notes.json: file name is not" in err
    assert "note: 3 variant log(s) scored, grouped by setting" in err
    with (out / "variant_scores.csv").open(newline="") as f:
        settings = {(r["family"], r["mode"], r["game"], r["setting"]) for r in csv.DictReader(f)}
    assert ("temperature", "default", "guessing_game", "0.0") in settings
    assert ("other", "default", "guessing_game", "v2_1") in settings
    assert ("other", "default", "guessing_game", "non-default parameters ratio=0.5, run 2") in settings
    assert ("runs", "default", "guessing_game", "T1") in settings


def test_table_arxiv_scoring_and_aliases(raw_results: Path, seed_data: Path) -> None:
    folder = raw_results / "sealed_bid_auction"
    result = cli("games", "score-logs", folder, "--scoring", "arxiv_v4", "--json")  # old names, hidden
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    mean, _ = PUBLISHED_ARXIV[DEFAULT_MODEL]["sealed_bid_auction"]
    assert abs(scores[DEFAULT_MODEL]["sealed_bid_auction"]["mean"] - mean) <= TOL
    result = cli("gamabench", "rescore", raw_results / "guessing_game")
    assert result.returncode == 0, result.stderr
    assert "Guess 2/3 of the Average" in result.stdout and "63.4 ± 3.4" in result.stdout
    result = cli("gamabench", "rescore", "--data-dir", seed_data, "--model", "gpt-4o")
    assert result.returncode == 0, result.stderr
    assert "66.7±4.7" in result.stdout
    result = cli("gamabench", "rescore", raw_results / "nope")
    assert result.returncode != 0 and "nope not found" in result.stderr


def test_log_the_scorer_rejects_is_an_error(raw_results: Path, tmp_path: Path) -> None:
    relpath = "sealed_bid_auction/first_price/sealed_bid_auction_v1_1.json"
    path = _copy(raw_results, relpath, tmp_path / "sealed_bid_auction_v1_1.json")
    data = json.loads(path.read_text())
    for record in data["round_records"]:
        record["valuations"] = [0] * len(record["valuations"])
    path.write_text(json.dumps(data))
    result = cli("gamabench", "rescore", path, "--method", "arxiv_v4", "--json")
    assert result.returncode != 0
    assert "sealed_bid_auction_v1_1.json cannot be scored: the arXiv auction score needs" in result.stderr
