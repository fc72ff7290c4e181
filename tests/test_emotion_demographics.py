"""The human subjects by demographic group (thesis 000:1819-1839, Figs. 5.3-5.7), recomputed from crowd.xlsx.

The thesis prints no per-group number (the figures are images); it prints the total of 1,266 responses
(000:1819) and the five groupings (000:1839). The per-group counts checked here are those of the spec's
re-derivation from the released file (spec §8.4), and the pooled row must equal the human table's overall
row (thesis Table 5.10: ↓ (-5.1) / ↑ (+10.4)).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmpsych.emotion.crowd import Respondent, crowd_path, human_table, load_crowd
from llmpsych.emotion.demographics import (
    ALL,
    DIMENSIONS,
    MIN_GROUP_N,
    NO_ANSWER,
    clean_label,
    demographic_counts,
    group_chart,
    group_markdown,
    group_of,
    group_table,
)
from llmpsych.emotion.scales import load_scales
from llmpsych.errors import DataError


@pytest.fixture(scope="module")
def crowd(seed_data: Path) -> tuple[list[Respondent], Any]:
    panas = load_scales(seed_data)["PANAS"]
    return load_crowd(crowd_path(seed_data), panas), panas


def test_every_grouping_counts_all_1266_people_with_the_released_group_sizes(crowd: Any) -> None:
    people, _ = crowd
    counts = demographic_counts(people)
    assert tuple(counts) == DIMENSIONS == ("age", "gender", "region", "education", "employment")
    assert all(sum(groups.values()) == 1266 for groups in counts.values())  # 000:1819
    assert counts["gender"] == {"Female": 685, "Male": 576, "Prefer not to say": 5}
    assert counts["age"] == {"18-24": 81, "25-34": 334, "35-44": 320, "45-54": 231, "55-64": 189, "65+": 111}
    assert counts["employment"] == {"Student": 54, "Employed": 958, "Unemployed": 106, "Retired": 148}
    assert counts["education"] == {
        "None": 1,
        "Primary school": 1,
        "Lower secondary school": 47,
        "Upper secondary school": 447,
        "University - Bachelors": 562,
        "University - Masters": 171,
        "University - Doctorate": 37,
    }
    region = counts["region"]
    assert list(region)[:4] == ["United Kingdom", "South Africa", "Australia", "United States"]
    assert (region["United Kingdom"], region["South Africa"], region["Zimbabwe"]) == (998, 93, 8)
    assert len(region) == 24 and sum(1 for n in region.values() if n == 1) == 12


def test_group_tables_pool_to_the_human_tables_overall_row(crowd: Any) -> None:
    people, panas = crowd
    overall = human_table(people, panas)["overall"]
    for by in DIMENSIONS:
        rows = group_table(people, panas, by)
        assert rows[-1].group == ALL and rows[-1].people == 1266
        for measure in ("positive", "negative"):
            assert getattr(rows[-1], measure) == overall[measure]
    last = group_table(people, panas, "gender")[-1]
    p, n = last.positive, last.negative
    printed = [(28.0, 8.9, 22.9, 8.7, -5.1), (13.6, 5.5, 24.1, 9.7, 10.4)]
    for cell, want in zip((p, n), printed, strict=True):
        got = (cell.default_mean, cell.default_sd, cell.evoked_mean, cell.evoked_sd, cell.change)
        assert tuple(round(v, 1) for v in got) == want
    assert (p.mark, n.mark) == ("↓", "↑")


def test_per_group_values_and_the_small_flag(crowd: Any) -> None:
    people, panas = crowd
    rows = {r.group: r for r in group_table(people, panas, "gender")}
    female, small = rows["Female"], rows["Prefer not to say"]
    assert female.people == female.positive.n == 685 and not female.small
    assert round(female.negative.evoked_mean, 1) == 24.7 and round(female.positive.change, 1) == -5.7
    assert small.people == 5 < MIN_GROUP_N and small.small and small.positive.mark == "—"
    age = {r.group: r for r in group_table(people, panas, "age")}
    # the thesis's example (000:1839): older people report lower negative affect
    assert age["65+"].negative.default_mean < age["18-24"].negative.default_mean
    strict = group_table(people, panas, "employment", min_n=100)
    assert [r.group for r in strict if r.small] == ["Student"]
    text = group_markdown(group_table(people, panas, "region"), "region")
    assert "| Zimbabwe " in text and "n = people in the group" in text and "n < 34" in text


def test_the_command_writes_tables_and_a_figure(seed_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "llmpsych", "emotionbench", "crowd", "--by", "age", "--by", "gender"]
    done = subprocess.run(
        [*cmd, "--data-dir", str(seed_data), "--out", str(out)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "by gender: 3 groups, 1 with n < 34" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        f"crowd-{b}.{ext}" for b in ("age", "gender") for ext in ("csv", "md", "png")
    ]
    assert (out / "crowd-age.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "crowd-gender.md").read_text()
    assert "| Female " in md and "685" in md and "![by gender](crowd-gender.png)" in md
    csv = (out / "crowd-gender.csv").read_text().splitlines()
    assert csv[0].startswith("grouping,group,people,small,pa_n,pa_before_mean")
    as_json = subprocess.run(
        [*cmd[:5], "--by", "employment", "--json", "--data-dir", str(seed_data)],
        capture_output=True,
        text=True,
        check=False,
    )
    data = json.loads(as_json.stdout)
    assert [r["group"] for r in data["employment"]] == ["Student", "Employed", "Unemployed", "Retired", ALL]
    bad = subprocess.run([*cmd[:5], "--by", "shoe-size"], capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "unknown --by 'shoe-size'" in bad.stderr
    (tmp_path / "a-file").write_text("keep me")
    args = [*cmd[:5], "--by", "age", "--data-dir", str(seed_data), "--out", str(tmp_path / "a-file")]
    on_file = subprocess.run(args, capture_output=True, text=True, check=False)
    assert on_file.returncode != 0 and "is a file; give a folder" in on_file.stderr
    assert (tmp_path / "a-file").read_text() == "keep me"


# -- hostile files ------------------------------------------------------------------------------------
def _small_crowd(seed_data: Path, tmp_path: Path, edits: dict[tuple[str, int], Any], keep: int = 6) -> Path:
    """The first ``keep`` respondents of the released crowd.xlsx (read at run time), with some answers
    replaced: ``edits[(label word, respondent k)] = value`` (k 0-based)."""
    openpyxl = pytest.importorskip("openpyxl")
    source = openpyxl.load_workbook(crowd_path(seed_data), read_only=True, data_only=True)
    rows = [list(r) for r in source["Raw"].iter_rows(values_only=True)]
    source.close()
    first = next(i for i, v in enumerate(rows[0]) if isinstance(v, str) and "_F" in v)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Raw"
    for r, row in enumerate(rows):
        values = row[: first + keep]
        label = str(row[first - 1] or "").lower()
        for (word, k), value in edits.items():
            if r > 0 and word in label:
                values[first + k] = value
        sheet.append(values)
    target = tmp_path / "crowd.xlsx"
    book.save(target)
    return target


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("19x0", "year of birth '19x0' is not a whole number"),
        (1990.5, "year of birth '1990.5' is not a whole number"),
        ("١٩٩٠", "is not a whole number"),  # Arabic-Indic digits
        (1850, "year of birth 1850 is outside 1900-2023"),
        (2031, "year of birth 2031 is outside 1900-2023"),
    ],
)
def test_a_bad_year_of_birth_is_an_error_naming_the_cell(
    seed_data: Path, tmp_path: Path, value: Any, message: str
) -> None:
    panas = load_scales(seed_data)["PANAS"]
    people = load_crowd(_small_crowd(seed_data, tmp_path, {("birth", 2): value}), panas)
    assert group_table(people, panas, "gender")[-1].people == 6  # other groupings are unaffected
    with pytest.raises(DataError) as info:
        group_table(people, panas, "age")
    text = str(info.value)
    assert message in text and "sheet Raw cell E3" in text and "crowd.xlsx" in text


def test_the_command_refuses_a_bad_year_in_one_line(seed_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    crowd_dir = data / "EmotionBench/results/PANAS_Test"
    crowd_dir.mkdir(parents=True)
    _small_crowd(seed_data, tmp_path, {("birth", 1): "19x0"}).rename(crowd_dir / "crowd.xlsx")
    questionnaires = (seed_data / "EmotionBench/questionnaires.json").read_bytes()
    (data / "EmotionBench/questionnaires.json").write_bytes(questionnaires)  # a run-time copy, in tmp
    base = [sys.executable, "-m", "llmpsych", "emotionbench", "crowd", "--data-dir", str(data)]
    done = subprocess.run([*base, "--by", "age"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "sheet Raw cell D3" in done.stderr and "year of birth '19x0' is not a whole number" in done.stderr
    fine = subprocess.run([*base, "--by", "gender"], capture_output=True, text=True, check=False)
    assert fine.returncode == 0 and re.search(r"^\| All respondents +\| +6 \|", fine.stdout, flags=re.M)


def test_odd_answers_become_one_line_labels_and_tiny_groups_do_not_break(
    seed_data: Path, tmp_path: Path
) -> None:
    panas = load_scales(seed_data)["PANAS"]
    edits = {
        ("gender", 0): "Fe|male\n| injected | row |",
        ("gender", 1): "x" * 500,
        ("gender", 2): None,
        ("gender", 3): "   ",
        ("birth", 4): None,
        ("birth", 5): 2005.0,  # a whole number stored as a float is a year
        ("country", 0): "\tRed\r\n\x9b31m land",  # xlsx cannot hold C0 controls but these
    }
    path = _small_crowd(seed_data, tmp_path, edits)
    people = load_crowd(path, panas)
    labels = [group_of(p, "gender") for p in people]
    assert labels[0] == "Fe|male | injected | row |" and labels[2] == labels[3] == NO_ANSWER
    assert len(labels[1]) == 60 and labels[1].endswith("…")
    assert group_of(people[0], "region") == "Red 31m land"  # control characters gone
    assert clean_label("\x1b[31mRed\x07") == "[31mRed" and clean_label(float("nan")) == NO_ANSWER
    assert group_of(people[4], "age") == NO_ANSWER and group_of(people[5], "age") == "18-24"
    rows = group_table(people, panas, "gender")
    assert rows[-1].group == ALL and rows[-1].people == 6 and all(r.small for r in rows)
    text = group_markdown(rows, "gender")
    table_lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table_lines) == 2 + len(rows)  # header, rule, one line per group: nothing injected
    assert all(line.count("|") - line.count("\\|") == 10 for line in table_lines)
    assert "n/a" in text and "no test (" in text  # a group of one has no sd and no test
    assert group_chart(rows, "gender", tmp_path / "g.png") == tmp_path / "g.png"
