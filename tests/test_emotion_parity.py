"""Parity with the published EmotionBench tables, recomputed from the authors' released raw data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.emotion.crowd import crowd_path, human_table, load_crowd
from llmpsych.emotion.published import (
    CHALLENGING_DEFAULT,
    CHALLENGING_REPRODUCED,
    CROWD_CORRECTED,
    GPT35_DEFAULT,
    GPT35_MISPRINTS,
    GPT35_PANAS,
)
from llmpsych.emotion.rescore import score_released
from llmpsych.instruments.official import load_emotionbench_scales

HALF = 0.05 + 1e-9


def rows(result: dict) -> dict:
    return {**result["factors"], **result["emotions"], "Overall": result["overall"]}


@pytest.fixture(scope="module")
def scales(seed_data: Path) -> dict:
    return load_emotionbench_scales(seed_data)


def test_gpt35_panas_column_reproduces_every_value_and_mark_except_the_misprints(
    seed_data: Path, scales: dict
) -> None:
    path = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    result = score_released(path, scales["PANAS"])
    for measure, (mean, sd) in GPT35_DEFAULT.items():
        got = result["default"][measure]
        assert (round(got["mean"], 1), round(got["sd"], 1), got["n"]) == (mean, sd, 50)
    recomputed = rows(result)
    assert set(recomputed) == set(GPT35_PANAS)
    mismatches = []
    for row, (p_mark, p_change, n_mark, n_change) in GPT35_PANAS.items():
        for measure, mark, change in (("positive", p_mark, p_change), ("negative", n_mark, n_change)):
            cell = recomputed[row][measure]
            expected = GPT35_MISPRINTS.get((row, measure), (None, change))[1]
            if cell["mark"] != mark or abs(cell["change"] - expected) > HALF:
                mismatches.append((row, measure, cell["mark"], cell["change"], mark, change))
    assert mismatches == []
    assert recomputed["Overall"]["positive"]["n"] == 1750
    assert recomputed["Jealousy-3"]["negative"]["n"] == 20


@pytest.mark.parametrize("name", sorted(CHALLENGING_REPRODUCED))
def test_challenging_bench_reproduces_the_recomputed_values_with_plain_sums(
    seed_data: Path, scales: dict, name: str
) -> None:
    path = seed_data / f"EmotionBench/results/Challenging_Bench/gpt-3.5-turbo-{name}-testing.csv"
    result = score_released(path, scales[name], published=True)
    emotion, mean, sd = CHALLENGING_DEFAULT[name]
    default = result["default"]["total"]
    assert (round(default["mean"], 1), round(default["sd"], 1), default["n"]) == (mean, sd, 10)
    changes, average = CHALLENGING_REPRODUCED[name]
    cells = list(result["factors"].values())
    assert [c["total"]["change"] for c in cells] == pytest.approx(changes, abs=HALF)
    assert result["emotions"][emotion]["total"]["change"] == pytest.approx(average, abs=HALF)
    expected_mark = "↑" if name == "BDI" else "—"
    assert {c["total"]["mark"] for c in cells} | {result["emotions"][emotion]["total"]["mark"]} == {
        expected_mark
    }


def test_corrected_scoring_reverse_keys_and_doubles_dass(seed_data: Path, scales: dict) -> None:
    base = seed_data / "EmotionBench/results/Challenging_Bench"
    agq = score_released(base / "gpt-3.5-turbo-AGQ-testing.csv", scales["AGQ"], published=False)
    dass = score_released(base / "gpt-3.5-turbo-DASS-21-testing.csv", scales["DASS-21"], published=False)
    bfne = score_released(base / "gpt-3.5-turbo-BFNE-testing.csv", scales["BFNE"], published=False)
    assert (
        round(agq["default"]["total"]["mean"], 1) == 117.3 and round(agq["default"]["total"]["sd"], 1) == 9.6
    )
    assert (
        round(dass["default"]["total"]["mean"], 1) == 65.0
        and round(dass["default"]["total"]["sd"], 1) == 20.0
    )
    assert (
        round(bfne["default"]["total"]["mean"], 1) == 42.2 and round(bfne["default"]["total"]["sd"], 1) == 2.6
    )


def test_crowd_reproduces_the_corrected_human_table(seed_data: Path, scales: dict) -> None:
    panas = scales["PANAS"]
    people = load_crowd(crowd_path(seed_data), panas)
    assert len(people) == 1266
    table = rows(human_table(people, panas))
    assert set(table) == set(CROWD_CORRECTED)
    for row, ref in CROWD_CORRECTED.items():
        p, n = table[row]["positive"], table[row]["negative"]
        got = (
            p.n,
            *(round(x, 1) for x in (p.default_mean, p.default_sd, n.default_mean, n.default_sd)),
            *(round(x, 1) for x in (p.evoked_mean, p.evoked_sd, n.evoked_mean, n.evoked_sd)),
            p.mark,
            round(p.change, 1),
            n.mark,
            round(n.change, 1),
            p.independent_mark,
            n.independent_mark,
        )
        assert got == ref, row


def test_score_results_command_prints_the_documented_json(seed_data: Path) -> None:
    from llmpsych.emotion.cli import app

    path = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    result = CliRunner().invoke(
        app, ["rescore", str(path), "--scale", "PANAS", "--json", "--data-dir", str(seed_data)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["default"]["positive"]["n"] == 50
    assert data["factors"]["Anger-1"]["positive"]["mark"] == "↓"
    assert round(data["factors"]["Anger-1"]["positive"]["change"], 1) == -11.1
    assert set(data["emotions"]) == set(CHALLENGING_DEFAULT[n][0] for n in CHALLENGING_DEFAULT)
    assert data["overall"]["negative"]["mark"] == "—"
    bdi = seed_data / "EmotionBench/results/Challenging_Bench/gpt-3.5-turbo-BDI-testing.csv"
    result = CliRunner().invoke(app, ["rescore", str(bdi), "--json", "--data-dir", str(seed_data)])
    assert result.exit_code == 0, result.output
    assert "total" in json.loads(result.output)["default"]


def test_paper_layout_table_has_both_affects_and_the_run_counts(seed_data: Path, scales: dict) -> None:
    from llmpsych.emotion.tables import paper_table

    path = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    frame = paper_table({"gpt-3.5": score_released(path, scales["PANAS"])})
    assert list(frame.columns) == ["ID", "Factor", "P", "N", "n"]
    first = frame.iloc[1]
    assert (first["ID"], first["P"], first["N"], first["n"]) == ("Anger-1", "↓ (-11.1)", "↓ (-3.9)", 50)
    assert frame.iloc[0]["P"] == "39.2 ± 2.3" and frame.iloc[-1]["ID"] == "Overall: Average"


def test_unparseable_released_runs_are_counted_and_skipped(tmp_path: Path, scales: dict) -> None:
    import csv

    columns = ["question-0", "order-0"]
    columns += [f"General_test-{t}_order-0" for t in range(3)]
    columns += [f"Fear-0_scenario-0_test-{t}_order-0" for t in range(3)]
    rows = [["Prompt: ours", "ours"] + [" "] * 3 + ["our situation"] * 3]
    for item in range(1, 21):
        low, high = ("2", "4") if item % 2 else ("1", "3")
        answers = [low, high, low, high, high, "x" if item == 7 else low]
        rows.append([f"{item}. ours", str(item), *answers])
    path = tmp_path / "mine-PANAS-testing.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([columns, *rows])
    result = score_released(path, scales["PANAS"])
    assert result["model"] == "mine" and result["runs"] == 6
    assert result["invalid_runs"] == {"Fear-1": 1}
    assert result["default"]["positive"]["n"] == 3 and result["factors"]["Fear-1"]["positive"]["n"] == 2


def test_human_command_prints_the_table_as_json(seed_data: Path) -> None:
    from llmpsych.emotion.cli import app

    result = CliRunner().invoke(app, ["human", "--json", "--data-dir", str(seed_data)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["overall"]["negative"]["n"] == 1266 and data["overall"]["negative"]["mark"] == "↑"
    assert data["factors"]["Jealousy-3"]["positive"]["n"] == 16


def test_rescore_names_which_published_numbers_it_gives_and_reaches_the_authors_code(
    seed_data: Path,
) -> None:
    from llmpsych.emotion.cli import app

    runner = CliRunner()
    base = seed_data / "EmotionBench/results/Challenging_Bench"

    def rescore(name: str, *flags: str) -> dict:
        args = ["rescore", str(base / f"gpt-3.5-turbo-{name}-testing.csv"), "--data-dir", str(seed_data)]
        done = runner.invoke(app, [*args, "--json", *flags])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)

    # published: the thesis's printed plain sums; the authors' code: reverse keys and x2 (117.3, 65.0, 42.2)
    for name, printed, code in (("AGQ", 128.3, 117.3), ("DASS-21", 32.5, 65.0), ("BFNE", 39.0, 42.2)):
        published, authors = rescore(name), rescore(name, "--authors-code")
        assert (
            round(published["default"]["total"]["mean"], 1) == printed and published["scoring"] == "published"
        )
        assert round(authors["default"]["total"]["mean"], 1) == code and authors["scoring"] == "authors-code"
        assert authors["published"] is True  # the original code's F-test details, as with --published
    # a scale without reverse keys or x2: the two give the same numbers
    fds, fds_code = rescore("FDS"), rescore("FDS", "--authors-code")
    assert {**fds_code, "scoring": "published"} == fds
    both = runner.invoke(
        app, ["rescore", str(base / "gpt-3.5-turbo-AGQ-testing.csv"), "--authors-code", "--corrected"]
    )
    assert both.exit_code != 0 and "two different scorings" in str(both.exception)
    shown = runner.invoke(app, ["rescore", "--help"], env={"COLUMNS": "250"}).output
    assert "as the authors' code did" not in shown and "--authors-code" in shown
    assert "the numbers the thesis prints" in shown and "not what the authors' code computes" in shown
