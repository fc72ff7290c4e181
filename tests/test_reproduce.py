"""``llmpsych reproduce``: the published tables recomputed from the released data, cell by cell.

The whole command runs on ``../shared/seed-data`` (GAMA-Bench, LLMPersonality, EmotionBench,
MAS-Resilience, PsychoBench: about 7 s of CPU); a planted change to one printed value, or one recomputed
value, makes it exit 1 naming the cell."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.cli import app
from llmpsych.games import released_logs
from llmpsych.reliability import published as reliability_published
from llmpsych.reproduce import Cause, PrintedCell, Recomputed, compare, summarize
from llmpsych.reproduce.gamabench import VARIANT_MISPRINTS
from llmpsych.testing.runs import run_cli


@pytest.fixture(scope="module")
def command(seed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("runs") / "reproduce"  # where the web page looks in a runs folder
    result = run_cli("reproduce", "--data-dir", seed_data, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, out


def test_seed_data_every_covered_table_and_the_total(command: tuple[str, Path]) -> None:
    stdout, _ = command
    lines = stdout.splitlines()
    assert (
        "GAMA-Bench Tables 6.8-6.9: 108 of 234 printed cells reproduced; 126 not in the data folder; "
        "0 unexplained"
    ) in lines
    assert "LLMPersonality Table 3.10: 40 of 40 printed cells reproduced; 0 unexplained" in lines
    assert "LLMPersonality Table 3.13: 160 of 160 printed cells reproduced; 0 unexplained" in lines
    assert "LLMPersonality Table 3.14: 100 of 100 printed cells reproduced; 0 unexplained" in lines
    assert "LLMPersonality Table 3.15: 160 of 160 printed cells reproduced; 0 unexplained" in lines
    assert (
        "EmotionBench Table 5.10 (humans): 52 of 90 printed cells reproduced; 38 misprints; 0 unexplained"
    ) in lines
    assert (
        "GAMA-Bench Tables 6.2-6.18, §6.6.2: 323 of 1,039 printed cells reproduced; 1 misprint; "
        "2 not released; 713 not in the data folder; 0 unexplained"
    ) in lines  # the V1 / 1.0 / Default columns from run 1, whose copies they are
    assert (
        "PsychoBench Tables 4.2-4.8 (human norms): 162 of 168 printed cells reproduced; 6 conventions; "
        "0 unexplained"
    ) in lines
    assert (
        "MAS-Resilience Table 7.5: 26 of 63 printed cells reproduced; 23 misprints; 14 not released; "
        "0 unexplained"
    ) in lines
    assert "MAS-Resilience Table 7.6: 6 of 21 printed cells reproduced; 15 misprints; 0 unexplained" in lines
    assert (
        "total: 1,486 of 2,693 printed cells reproduced; 88 misprints; 6 conventions; 148 not released; "
        "965 not in the data folder; 0 unexplained"
    ) in lines
    # the released HumanEval verdicts are judged again only when asked, and the line says how
    assert any(
        line.startswith("skipped unless asked: MAS-Resilience HumanEval verdicts") and "--harness" in line
        for line in lines
    )
    # tables that need model calls are listed with their command, not run
    assert any("needs model calls (skipped)" in line and "llmpsych run --task" in line for line in lines)


def test_report_and_tidy_table(command: tuple[str, Path]) -> None:
    _, out = command
    with (out / "reproduce_cells.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "system", "table", "row", "column", "printed", "decimals", "llmpsych", "equal", "status", "cause",
        "switch", "citation",
    ]  # fmt: skip
    by_status: dict[str, int] = {}
    for row in rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
    assert by_status.get("unexplained", 0) == 0 and by_status["reproduced"] > 900
    (jail,) = [r for r in rows if (r["row"], r["column"]) == ("gpt-4o public_goods", "w/o jailbreak Std")]
    assert (jail["status"], jail["printed"], jail["citation"]) == ("misprint", "2.72", "000:2581")
    assert "population SD" in jail["cause"]
    (mad,) = [
        r for r in rows if (r["table"], r["row"], r["column"]) == ("Table 7.5", "P_e=0.4, P_m=1.0", "MAD")
    ]
    assert (mad["status"], mad["printed"], mad["llmpsych"][:5]) == ("misprint", "52.27", "54.26")
    assert "89 of 164" in mad["cause"] and mad["citation"].startswith("thesis Table 7.5 (000:")
    (bfi,) = [r for r in rows if (r["row"], r["column"]) == ("BFI sample", "Crowd n")]
    assert (bfi["status"], bfi["printed"], bfi["llmpsych"]) == ("convention", "1221", "6076.0")
    assert "--scale-file" in bfi["switch"]  # the CSV quotes a leading "-" (spreadsheet formulas)
    (v1,) = [
        r
        for r in rows
        if (r["table"], r["row"], r["column"]) == ("Table 6.12", "llama-3.1-70b guessing_game", "V1")
    ]
    assert v1["status"] == "reproduced"
    md = (out / "reproduce.md").read_text()
    assert "## Every difference and its cause" in md and "## Not yet covered" in md
    assert (out / "reproduce.html").is_file()


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["reproduce", *args])
    return result.exit_code, result.output


def test_a_planted_printed_value_exits_1_naming_the_cell(
    seed_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = dict(released_logs.PUBLISHED["gpt-4o"])
    row["pirate_game"] = (84.9, row["pirate_game"][1])  # printed 84.4
    monkeypatch.setitem(released_logs.PUBLISHED, "gpt-4o", row)
    code, output = _invoke("gamabench", "--data-dir", str(seed_data))
    assert code == 1, output
    assert "GAMA-Bench Tables 6.8-6.9 | gpt-4o | Pirate Game mean: printed 84.9" in output
    assert "[unexplained]" in output and "1 unexplained difference(s)" in output


def test_a_moved_recomputation_exits_1(seed_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change to the library that moves one published number fails the command (and so CI)."""
    table = dict(reliability_published.TABLE_3_10)
    mean, sd, difference, t = table[("Openness", "max")]
    table[("Openness", "max")] = (mean, sd, difference, t + 0.02)
    monkeypatch.setattr(reliability_published, "TABLE_3_10", table)
    code, output = _invoke("LLMPersonality", "--data-dir", str(seed_data))
    assert code == 1 and "Table 3.10 | Openness max | t: printed 19.00" in output, output


def test_a_documented_misprint_holds_only_for_its_documented_recomputation(
    seed_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cause is tied to the value it documents: if llmpsych's recomputation moves, the cell is
    unexplained again instead of staying excused."""
    from llmpsych.emotion import published as emotion_published

    crowd = dict(emotion_published.CROWD_CORRECTED)
    crowd["Guilt-4"] = (*crowd["Guilt-4"][:10], -4.8, *crowd["Guilt-4"][11:])  # documented -4.9
    monkeypatch.setattr(emotion_published, "CROWD_CORRECTED", crowd)
    code, output = _invoke("emotionbench", "--data-dir", str(seed_data))
    assert code == 1, output
    assert "Table 5.10 | Guilt-4 | positive change: printed -5.4" in output and "[unexplained]" in output


def test_comparison_rules() -> None:
    cell = PrintedCell("S", "T", "r", "c", "1.20", "here")
    misprint = Cause("misprint", "m")
    outcomes = compare(
        [
            Recomputed(cell, 1.204),  # equal at two decimals
            Recomputed(cell, 1.206),  # not equal, no cause
            Recomputed(cell, 1.206, misprint),
            Recomputed(cell, 1.2, misprint),  # equal: reproduced whatever cause is documented
            Recomputed(cell, None),  # no recomputation and no reason: unexplained
            Recomputed(cell, None, Cause("not-released", "n")),
        ]
    )
    assert [o.status for o in outcomes] == [
        "reproduced", "unexplained", "misprint", "reproduced", "unexplained", "not-released",
    ]  # fmt: skip
    assert summarize(outcomes).line() == (
        "total: 2 of 6 printed cells reproduced; 1 misprint; 1 not released; 2 unexplained"
    )


def test_no_data_is_one_error_line_and_unknown_system_too(tmp_path: Path) -> None:
    result = run_cli("reproduce", "--data-dir", tmp_path)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.startswith("error: no published table could be recomputed"), result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("reproduce", "nosuch", "--data-dir", tmp_path)
    assert result.returncode != 0 and "unknown system 'nosuch'" in result.stderr


def test_variant_misprints_are_the_documented_ones() -> None:
    """The causes of the variant-table differences are kept once, here, and name the twelve cells that
    the authors' full log folder does not reproduce (tests/test_games_variant_logs.py MISPRINTS)."""
    from test_games_variant_logs import MISPRINTS

    named = {(t if t.startswith("§") else t, r, c) for t, r, c in VARIANT_MISPRINTS}
    assert len(named) == len(MISPRINTS) == 12
    for table, row, column in VARIANT_MISPRINTS:
        assert any(m.startswith(f"{table} {row} {column}: printed") for m in MISPRINTS), (table, row, column)


def test_the_web_page_shows_the_report_and_follows_no_link(command: tuple[str, Path], tmp_path: Path) -> None:
    from test_web_security import WebServer

    _, out = command
    linked = tmp_path / "linked"
    (linked / "reproduce").mkdir(parents=True)
    (linked / "reproduce" / "reproduce.md").symlink_to(out / "reproduce.md")
    server = WebServer(out.parent, linked)
    try:
        status, _, body = server.request("/reproduce")
        page = body.decode()
        assert status == 200 and "Every difference and its cause" in page
        assert "1,486 of 2,693 printed cells reproduced" in page and str(out / "reproduce.md") in page
        status, _, body = server.request("/")
        assert status == 200 and 'href="/reproduce"' in body.decode()
    finally:
        server.stop()
    server = WebServer(linked)  # a report reached through a link is not shown
    try:
        status, _, body = server.request("/reproduce")
        page = body.decode()
        assert status == 200 and "No reproduction report in the runs folder" in page
        assert "printed cells reproduced" not in page
    finally:
        server.stop()


def test_a_malformed_released_file_is_one_error_line_not_a_skipped_table(
    seed_data: Path, tmp_path: Path
) -> None:
    source = seed_data / "GAMABench" / "raw_results" / "guessing_game" / "guessing_game_v1_1.json"
    target = tmp_path / "GAMABench" / "raw_results" / "guessing_game" / source.name
    target.parent.mkdir(parents=True)
    data = json.loads(source.read_text())
    data["round_records"][0]["responses"][2] = "fifty"
    target.write_text(json.dumps(data))
    result = run_cli("reproduce", "--data-dir", tmp_path)
    assert result.returncode not in (0, 1) and result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "guessing_game_v1_1.json" in lines[0], lines


def test_a_planted_printed_norm_exits_1(seed_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The printed human norms are compared with the norms llmpsych reads from questionnaires.json."""
    from llmpsych.reproduce import psychobench

    monkeypatch.setitem(psychobench.NORMS, ("BFI", "Openness"), (("Crowd", 4.1, 0.7, 1221),))  # printed 3.9
    code, output = _invoke("psychobench", "--data-dir", str(seed_data))
    assert code == 1, output
    assert (
        "BFI Openness | Crowd mean: printed 4.1 (thesis Table 4.3 (000:1188-1203)), llmpsych 3.920" in output
    )


def test_a_mas_misprint_holds_only_for_its_documented_recomputation(
    seed_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmpsych.reproduce import mas

    key = ("Table 7.5", "P_e=0.4, P_m=1.0", "MAD")
    monkeypatch.setitem(mas.MISPRINTS, key, (52.268, mas.MISPRINTS[key][1]))  # the runs give 54.268
    code, output = _invoke("mas", "--data-dir", str(seed_data))
    assert code == 1, output
    assert "Table 7.5 | P_e=0.4, P_m=1.0 | MAD: printed 52.27" in output and "[unexplained]" in output


def _experiments(seed_data: Path, tmp_path: Path) -> Path:
    """A data folder holding a copy of the released MAS-Resilience runs (outside the repository)."""
    shutil.copytree(seed_data / "MAS-Resilience-Experiments", tmp_path / "MAS-Resilience-Experiments")
    return tmp_path / "MAS-Resilience-Experiments"


def test_a_malformed_verdict_file_is_one_error_line_naming_it(seed_data: Path, tmp_path: Path) -> None:
    """A malformed released run stops the command with one line naming the file and line (exit 2),
    never a skipped or smaller table."""
    folder = _experiments(seed_data, tmp_path)
    target = folder / "MAD" / "mad_code_0.4.jsonl_results.jsonl"
    lines = target.read_text(encoding="utf-8").splitlines()
    lines[7] = '{"task_id": "HumanEval/7", "completion": "", "passed": "yes"}'
    target.chmod(0o644)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("reproduce", "mas", "--data-dir", tmp_path)
    assert result.returncode not in (0, 1) and result.stdout == "", result.stdout
    (error,) = result.stderr.strip().splitlines()
    assert error.startswith("error: MAS-Resilience verdicts") and str(target) in error, error
    assert "line 8: passed is 'yes', not true or false" in error and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"task_id": "HumanEval/999", "completion": "", "passed": true}', "is not a HumanEval task"),
        ('{"task_id": 3, "completion": "", "passed": true}', "is not a HumanEval task"),
        ('{"task_id": "HumanEval/3", "completion": 7, "passed": true}', "completion is not text"),
        ('["HumanEval/3", true]', "is not a JSON object"),
        ('{"task_id": "HumanEval/3", "passed": tru', "is not valid JSON"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_hostile_verdict_row_is_refused_naming_file_and_line(
    tmp_path: Path, line: str, expected: str
) -> None:
    from llmpsych.collab.released import read_rows
    from llmpsych.errors import DataError

    path = tmp_path / "x_results.jsonl"
    path.write_text('{"task_id": "HumanEval/0", "completion": "", "passed": false}\n' + line + "\n")
    with pytest.raises(DataError) as caught:
        read_rows(path)
    assert str(path) in str(caught.value) and "line 2" in str(caught.value) and expected in str(caught.value)


def test_a_verdict_file_that_is_not_one_run_or_too_large_is_refused(seed_data: Path, tmp_path: Path) -> None:
    from llmpsych.collab import released
    from llmpsych.errors import DataError

    folder = _experiments(seed_data, tmp_path)
    path = folder / "Camel" / "camel_length_0.jsonl_results.jsonl"  # HumanEval/0-49 only
    with pytest.raises(DataError, match="verdicts for 50 of HumanEval's 164 tasks"):
        released.read_verdicts(path)
    path = folder / "Camel" / "police_0.2_CAMEL_not_reviewed_HumanEval.jsonl_results.jsonl"  # two runs
    with pytest.raises(DataError, match="a second verdict for HumanEval/0"):
        released.read_verdicts(path)
    assert len(released.read_rows(path)) == 328
    big = tmp_path / "big_results.jsonl"
    with big.open("wb") as f:
        f.truncate(released.MAX_BYTES + 1)
    with pytest.raises(DataError, match="big_results.jsonl"):
        released.read_rows(big)


@pytest.mark.usefixtures("bubblewrap")
def test_harness_judges_released_completions_and_names_a_wrong_verdict(
    seed_data: Path, tmp_path: Path
) -> None:
    """--harness runs each released completion as OpenAI's harness does; a released verdict that the
    harness does not give is named and makes the command exit 1."""
    from llmpsych.reproduce.harness import harness_verdicts

    (tmp_path / "MAS-Resilience" / "benchmarks").mkdir(parents=True)
    shutil.copy(
        seed_data / "MAS-Resilience" / "benchmarks" / "HumanEval.jsonl",
        tmp_path / "MAS-Resilience" / "benchmarks",
    )
    released = seed_data / "MAS-Resilience-Experiments" / "MAD" / "mad_code_0.4.jsonl_results.jsonl"
    rows = [json.loads(line) for line in released.read_text(encoding="utf-8").splitlines()[:4]]
    assert [r["passed"] for r in rows] == [True, False, True, True]
    rows[2]["passed"] = False  # planted: the harness passes this completion
    (tmp_path / "MAS-Resilience-Experiments" / "MAD").mkdir(parents=True)
    target = tmp_path / "MAS-Resilience-Experiments" / "MAD" / "planted_results.jsonl"
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = harness_verdicts(tmp_path)
    assert (result.rows, result.agree, result.files) == (4, 3, 1)
    assert result.differences == [
        f"MAD/planted_results.jsonl: {rows[2]['task_id']} released False, harness True"
    ]
    assert "3 of 4 released verdicts" in result.line() and "1 unexplained" in result.line()


def test_harness_differences_exit_1(seed_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmpsych.reproduce import harness

    planted = harness.HarnessResult(
        rows=2, distinct=2, agree=1, files=1, differences=["MAD/x: HumanEval/1 ..."]
    )
    monkeypatch.setattr(harness, "harness_verdicts", lambda data_dir: planted)
    code, output = _invoke("mas", "--harness", "--data-dir", str(seed_data))
    assert code == 1 and "1 of 2 released verdicts" in output and "MAD/x: HumanEval/1" in output, output
