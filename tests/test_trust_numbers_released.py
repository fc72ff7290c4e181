"""Trust, no silent wrong numbers (docs/security.md section 5): hostile released files.

Each test copies an authors' file from the seed data into tmp_path, corrupts it the way a careless or
hostile sender would, and runs the real command: either exit code 2 with one line naming the file and
the row (round, player, record, cell), or the bad part left out and counted in the output.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llmpsych.errors import DataError
from llmpsych.games.analysis import _summary
from llmpsych.games.scoring import DollarLog, GoodsLog, GuessingLog, score
from llmpsych.reliability.reanalysis import reanalyse
from llmpsych.reliability.saves import load_save
from llmpsych.stats import summarize
from llmpsych.stats.descriptive import StatsError
from llmpsych.stats.reliability import cronbach_alpha
from llmpsych.testing.runs import run_cli as cli


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# -- GAMA-Bench logs ----------------------------------------------------------------------------------
def _log(seed_data: Path, tmp_path: Path, relpath: str, mutate: Callable[[dict[str, Any]], None]) -> Path:
    source = seed_data / "GAMABench" / "raw_results" / relpath
    target = tmp_path / Path(relpath).name
    data = json.loads(source.read_text(encoding="utf-8"))
    mutate(data)
    target.write_text(json.dumps(data), encoding="utf-8")  # json.dumps writes NaN and Infinity as such
    return target


def _set(round_: int, player: int, value: Any, key: str = "responses") -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["round_records"][round_ - 1][key][player - 1] = value

    return mutate


GUESS = "guessing_game/guessing_game_v1_1.json"


@pytest.mark.parametrize(
    ("relpath", "mutate", "expected"),
    [
        (GUESS, _set(3, 2, 1e300), "round 3 player 2: guess 1e+300 is outside 0-100"),
        (GUESS, _set(3, 2, -5), "round 3 player 2: guess -5 is outside 0-100"),
        (GUESS, _set(3, 2, float("nan")), "round 3 player 2: guess is not a finite number"),
        (GUESS, _set(3, 2, float("inf")), "round 3 player 2: guess is not a finite number"),
        (GUESS, _set(3, 2, "50"), "round 3 player 2: guess is not a number: '50' (text)"),
        (GUESS, _set(3, 2, None), "round 3 player 2: guess is not a number: None"),
        (GUESS, _set(3, 2, 33.5), "round 3 player 2: guess is not a whole number: 33.5"),
        (
            GUESS,
            lambda d: d["round_records"][6]["responses"].pop(),
            "round 7 responses has 9 entries for 10 players",
        ),
        (GUESS, lambda d: d["round_records"].pop(), "meta.round_id says 20 rounds but the log holds 19"),
        ("divide_dollar/divide_dollar_v1_1.json", _set(5, 4, -5), "round 5 player 4: bid -5 is negative"),
        (
            "public_goods/public_goods_v1_1.json",
            _set(2, 1, -1),
            "round 2 player 1: contribution -1 is negative",
        ),
        (
            "bar_game_implicit/bar_game_implicit_v1_1.json",
            _set(4, 3, "maybe"),
            "round 4 player 3: answer 'maybe'",
        ),
        (
            "sealed_bid_auction/first_price/sealed_bid_auction_v1_1.json",
            _set(2, 5, -10),
            "round 2 player 5: bid -10 is negative",
        ),
        (
            "pirate_game/pirate_game_v1_1.json",
            _set(1, 1, 1e300, "gold_distribution"),
            "round 1: the plan's shares sum to",
        ),
        (
            "battle_royale/battle_royale_v1_1.json",
            lambda d: d["round_records"][0]["initial_players"][2].__setitem__(1, 150),
            "round 1 hit rate of",
        ),
    ],
)
def test_hostile_game_log_is_one_error_line_naming_file_round_and_player(
    seed_data: Path, tmp_path: Path, relpath: str, mutate: Callable[[dict[str, Any]], None], expected: str
) -> None:
    path = _log(seed_data, tmp_path, relpath, mutate)
    line = one_error_line(cli("gamabench", "rescore", path, "--json"))
    assert path.name in line and expected in line, line


def test_answers_above_the_asked_range_are_kept_and_counted(seed_data: Path, tmp_path: Path) -> None:
    """The reference accepted a bid above G (Mixtral's 187 of 100, in a leaderboard run): kept, counted,
    and the published figure reproduced; a contribution of 10**300 tokens cannot give a 0-100 score."""
    source = seed_data / "GAMABench/raw_results/divide_dollar/mixtral-8x7b_divide_dollar_v1_2.json"
    shutil.copy(source, tmp_path / source.name)
    result = cli("gamabench", "rescore", tmp_path / source.name, "--json")
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["mixtral-8x7b"]["divide_dollar"]
    assert entry["above_range"] == 1 and entry["runs"] == 1
    assert "1 answer(s) above the asked range kept" in result.stderr and "bid 187 > 100" in result.stderr
    path = _log(seed_data, tmp_path, "public_goods/public_goods_v1_1.json", _set(2, 1, 10**300))
    line = one_error_line(cli("gamabench", "rescore", path, "--json"))
    assert (
        path.name in line and "outside 0-100" in line and "round 2 player 1: contribution 1e+300 > 20" in line
    )


def test_the_pure_scorers_refuse_what_the_readers_refuse() -> None:
    for log, message in (
        (GuessingLog([[50, 1e300]]), "round 1 player 2: guess 1e+300 is outside 0-100"),
        (GuessingLog([[50, float("nan")]]), "round 1 player 2: guess nan is not a finite number"),
        (DollarLog([[50, -5]]), "round 1 player 2: bid -5 is negative"),
        (GoodsLog([[10, float("inf")]]), "round 1 player 2: contribution inf is not a finite number"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            score(log)


def test_game_summary_counts_the_runs_it_could_not_score() -> None:
    import pandas as pd

    games = pd.DataFrame(
        {
            "game": ["guessing"] * 3,
            "run": [1, 2, 3],
            "score": [80.0, None, 60.0],
            "fallbacks": 0,
            "valid_first_try": 1.0,
        }
    )
    row = _summary(games).iloc[0]
    assert (row["runs"], row["scored"], row["score mean"]) == (3, 2, 70.0)


# -- EmotionBench released runs -------------------------------------------------------------------------
BFNE = "EmotionBench/results/Challenging_Bench/gpt-3.5-turbo-BFNE-testing.csv"


def _csv(seed_data: Path, tmp_path: Path, mutate: Callable[[list[list[str]]], None]) -> Path:
    rows = list(csv.reader((seed_data / BFNE).open(encoding="utf-8-sig", newline="")))
    mutate(rows)
    target = tmp_path / Path(BFNE).name
    with target.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return target


def _score_results(seed_data: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return cli("emotionbench", "rescore", path, "--json", "--data-dir", seed_data)


@pytest.fixture(scope="module")
def clean_bfne(seed_data: Path) -> dict[str, Any]:
    from llmpsych.emotion.rescore import score_released
    from llmpsych.emotion.scales import load_scales

    return score_released(seed_data / BFNE, load_scales(seed_data)["BFNE"])


@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ("99", "answer outside the scale's range"),
        ("2e5", "answer not a whole number"),
        ("nan", "answer not a whole number"),
        ("٣", "answer not a whole number"),
        ("3.0", "answer not a whole number"),
        ("", "answer missing"),
    ],
)
def test_a_bad_released_answer_excludes_its_run_and_is_counted(
    seed_data: Path, tmp_path: Path, clean_bfne: dict[str, Any], cell: str, reason: str
) -> None:
    clean = clean_bfne
    path = _csv(seed_data, tmp_path, lambda rows: rows[4].__setitem__(2, cell))  # General_test-0, 3rd answer
    result = _score_results(seed_data, path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["invalid_runs"] == {"default": 1} and data["invalid_reasons"] == {reason: 1}
    assert data["invalid_examples"][0].startswith("General_test-0_order-0: ")
    assert data["default"]["total"]["n"] == clean["default"]["total"]["n"] - 1
    assert data["runs_per_group"]["default"] == clean["runs_per_group"]["default"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda rows: rows[0].__setitem__(3, rows[0][2]),
            "answer column General_test-0_order-0 appears twice",
        ),
        (lambda rows: rows[0].__setitem__(1, "ordre-0"), "no order-k column"),
        (lambda rows: rows[5].__setitem__(1, rows[4][1]), "column order-0 lists item"),
        (lambda rows: rows[4].__setitem__(1, "3e0"), "column order-0 holds a non-numeric item number"),
    ],
)
def test_a_malformed_released_file_is_one_error_line(
    seed_data: Path, tmp_path: Path, mutate, expected: str
) -> None:
    path = _csv(seed_data, tmp_path, mutate)
    line = one_error_line(_score_results(seed_data, path))
    assert path.name in line and expected in line, line


def test_a_truncated_released_file_is_counted_or_refused(seed_data: Path, tmp_path: Path) -> None:
    text = (seed_data / BFNE).read_text(encoding="utf-8-sig")
    path = tmp_path / Path(BFNE).name
    path.write_text(text[: int(len(text) * 0.9)], encoding="utf-8")  # the last answer rows cut short
    result = _score_results(seed_data, path)
    if result.returncode == 0:
        data = json.loads(result.stdout)
        assert sum(data["invalid_runs"].values()) > 0 and "answer missing" in data["invalid_reasons"]
    else:
        line = one_error_line(result)
        assert path.name in line and "General_test-0_order-0 has no answer to item" in line


def test_a_crowd_answer_of_99_is_an_error_naming_the_cell(seed_data: Path, tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    from llmpsych.emotion.crowd import load_crowd
    from llmpsych.emotion.scales import load_scales

    panas = load_scales(seed_data)["PANAS"]
    texts = {item.text.strip().lower() for item in panas.items}
    source = seed_data / "EmotionBench/results/PANAS_Test/crowd.xlsx"
    book = openpyxl.load_workbook(source)
    sheet = book["Raw"]
    header = [c.value for c in sheet[1]]
    column = next(i for i, v in enumerate(header, 1) if isinstance(v, str) and "_F" in v)
    row = next(  # a PANAS item row: its label ends with " - <item text>"
        r
        for r in range(2, sheet.max_row + 1)
        if str(sheet.cell(r, column - 1).value or "").rsplit(" - ", 1)[-1].strip().lower() in texts
    )
    sheet.cell(row, column).value = 99
    target = tmp_path / "crowd.xlsx"
    book.save(target)
    with pytest.raises(DataError) as info:
        load_crowd(target, panas)
    message = str(info.value)
    assert str(target) in message and f"{openpyxl.utils.get_column_letter(column)}{row}" in message
    assert "answer 99 is outside 1-5" in message and header[column - 1] in message


# -- reliability saves ----------------------------------------------------------------------------------
SAVE = "LLMPersonality/Analysis/save/personality_qa.json"


def _save(seed_data: Path, tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads((seed_data / SAVE).read_text(encoding="utf-8"))
    mutate(data)
    target = tmp_path / "personality_qa.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def _first_raw(value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        raw = data["data"][7]["raw"]
        raw[next(iter(raw))] = value

    return mutate


def _first_dimension(value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        scores = data["data"][7]["data"]
        scores[next(iter(scores))] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_first_raw(99), "data[7].raw."),
        (_first_raw(3.7), "is not an answer in 1-5"),
        (_first_raw("٣"), "is not an answer in 1-5"),
        (_first_dimension(float("nan")), "data[7].data."),
        (_first_dimension(float("inf")), "is not a score in 1-5"),
        (_first_dimension("3.2"), "is not a score in 1-5"),
        (_first_dimension(None), "is not a score in 1-5"),
        (lambda d: d["data"].__setitem__(7, "oops"), "data[7] is not an object"),
        (lambda d: d["data"][7]["info"].pop("template"), "data[7].info has no 'template'"),
    ],
)
def test_a_hostile_save_is_one_error_line_naming_the_record(
    seed_data: Path, tmp_path: Path, mutate, expected: str
) -> None:
    path = _save(seed_data, tmp_path, mutate)
    line = one_error_line(cli("reliability", "rescore", path, "--json"))
    assert str(path) in line and expected in line, line


def test_a_grid_configuration_listed_twice_is_refused(seed_data: Path, tmp_path: Path) -> None:
    data = json.loads((seed_data / "LLMPersonality/Analysis/save/save.json").read_text(encoding="utf-8"))
    data["data"].append(dict(data["data"][5]))
    path = tmp_path / "save.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        DataError, match=re.escape(f"{path}: data[2500] repeats the configuration of data[5]")
    ):
        load_save(path)


def test_a_missing_dimension_is_left_out_and_counted(seed_data: Path, tmp_path: Path) -> None:
    def drop(data: dict[str, Any]) -> None:
        for record in data["data"][:3]:
            record["data"].pop(next(iter(record["data"])))

    clean = reanalyse(load_save(seed_data / SAVE).frame)
    result = reanalyse(load_save(_save(seed_data, tmp_path, drop)).frame)
    assert result.settings["left_out_missing"] == 3 and clean.settings["left_out_missing"] == 0
    assert result.to_json()["n"] == clean.to_json()["n"] - 3


# -- psychobench compare ---------------------------------------------------------------------------------
def _analysed_run(root: Path, name: str, summary_rows: list[dict[str, Any]]) -> Path:
    run = root / name
    run.mkdir()
    with (run / "summary.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(summary_rows[0]))
        writer.writeheader()
        writer.writerows(summary_rows)
    return run


ROW = {"scale": "GSE", "subscale": "Self-efficacy", "runs": 10, "n": 10, "mean": 31.5, "sd": 2.1}


@pytest.mark.parametrize(
    ("row", "extra", "expected"),
    [
        ({**ROW, "mean": "inf"}, None, "row 2, column 'mean': 'inf' is not a finite number"),
        ({**ROW, "sd": "1e999"}, None, "row 2, column 'sd': '1e999' is not a finite number"),
        ({**ROW, "n": "ten"}, None, "row 2, column 'n': 'ten' is not a finite number"),
        (ROW, ROW, "row 3 repeats GSE, Self-efficacy"),
        ({k: v for k, v in ROW.items() if k != "sd"}, None, "no column 'sd'"),
    ],
)
def test_compare_refuses_a_corrupt_summary_table(tmp_path: Path, row, extra, expected: str) -> None:
    good = _analysed_run(tmp_path, "good", [ROW])
    bad = _analysed_run(tmp_path, "bad", [row, *([extra] if extra else [])])
    line = one_error_line(cli("psychobench", "compare", good, bad))
    assert str(bad / "summary.csv") in line and expected in line, line


def test_compare_shows_a_blank_score_as_no_score(tmp_path: Path) -> None:
    good = _analysed_run(tmp_path, "good", [ROW])
    blank = _analysed_run(tmp_path, "blank", [{**ROW, "n": 0, "mean": "", "sd": ""}])
    result = cli("psychobench", "compare", good, blank)
    assert result.returncode == 0, result.stderr
    assert "31.5 ± 2.1" in result.stdout and "–" in result.stdout and "nan" not in result.stdout


# -- statistics -------------------------------------------------------------------------------------------
def test_nan_is_missing_and_counted_but_infinity_is_refused() -> None:
    summary = summarize([1.0, float("nan"), 3.0])
    assert (summary.n, summary.n_missing, summary.mean) == (2, 1, 2.0)
    with pytest.raises(StatsError, match="value 1 is infinite"):
        summarize([1.0, float("inf"), 3.0])
    with pytest.raises(StatsError, match="row 1 holds an infinite response"):
        cronbach_alpha([[1, 2], [float("-inf"), 3], [2, 2]])
