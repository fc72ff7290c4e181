"""The item-level long format (``load_runs(...).items``, ``llmpsych validity items``): one row per
respondent x item of a real run store made against a scripted OpenAI-compatible server, every status as
it happened (answered, invalid, refused, missing), a human sample in import-answers format beside it, and
the CSV export read back unchanged (long and wide)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import llmpsych
from llmpsych import cli
from llmpsych.errors import DataError
from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.items import ITEM_COLUMNS
from llmpsych.testing.fault_server import FaultServer
from llmpsych.validity.items import export_items, item_frame, read_items

SCALE = """\
llmpsych_scale: 1
name: KNOT
title: Rope and knot habits (written for llmpsych's tests)
source: written for llmpsych's tests
license: CC0-1.0
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: I coil a rope before I put it away.}
  - {index: 2, text: I leave knots for someone else to undo., reverse: true}
  - {index: 3, text: I check a knot twice before I trust it.}
  - {index: 4, text: I know more than three knots by name.}
subscales:
  - name: Care
    items: [1, 2, 3]
"""

_LISTED = re.compile(r"^(\d+)\. ", re.MULTILINE)


def responder(body: dict) -> str:
    """Run 1 answers all; run 2 gives item 2 a 9 (out of range) and leaves out item 4; run 3 refuses.
    Each run is told apart by the item order it was shown (the task shuffles per run)."""
    last = body["messages"][-1]["content"]
    order = [int(x) for x in _LISTED.findall(last)]
    kind = sum(i * p for p, i in enumerate(order)) % 3 if order else 0
    if kind == 2:
        return "I'm sorry, but I cannot answer questions about myself."
    lines = [f"{i}: {1 + (i + p) % 5}" for p, i in enumerate(order)]
    if kind == 1:
        lines = [line if not line.startswith("2:") else "2: 9" for line in lines if not line.startswith("4:")]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("items")
    (root / "knot.yaml").write_text(SCALE, encoding="utf-8")
    out = root / "run"
    with FaultServer(responder=responder) as server:
        config = {
            "task": "psychobench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "options": {"scale_files": [str(root / "knot.yaml")], "runs": 6, "max_reasks": 0},
        }
        outcome = start_run(parse_run_config(config), out, False)
    assert outcome.summary.failed == 0
    return out


def stored(run_dir: Path) -> list[dict]:
    return [u.result for u in llmpsych.read_run(run_dir).units]


def test_every_item_of_every_administration_is_one_row_with_what_happened_to_it(run_dir: Path) -> None:
    items = llmpsych.load_runs(run_dir).items
    assert list(items.columns) == ITEM_COLUMNS
    results = stored(run_dir)
    assert len(items) == 4 * len(results) == 24
    assert set(items["respondent"]) == {f"{run_dir}#{r['run']}" for r in results}
    assert (items["source"] == "model").all() and (items["run"] == str(run_dir)).all()
    assert (items["model"] == "openai-compatible/scripted").all()
    assert (items["persona"] == "default").all() and (items["template"] == "v1").all()
    assert (items["language"] == "").all()  # the run names no language: empty, not guessed
    for result in results:
        rows = items[items["respondent"] == f"{run_dir}#{result['run']}"].set_index("item")
        for item in range(1, 5):
            row = rows.loc[item]
            if str(item) in result["answers"]:
                assert row["status"] == "answered" and row["response"] == result["answers"][str(item)]
            else:
                assert math.isnan(row["response"])
                expected = (
                    "refused"
                    if result["refused"]
                    else "invalid"
                    if str(item) in result["out_of_range"]
                    else "missing"
                )
                assert row["status"] == expected, (result, item)
    statuses = set(items["status"])
    assert statuses == {"answered", "invalid", "refused", "missing"}, statuses  # the scripted runs made each
    knot = items.drop_duplicates("item").set_index("item")
    assert knot["subscale"].to_dict() == {1: "Care", 2: "Care", 3: "Care", 4: ""}
    assert knot["reverse"].to_dict() == {1: False, 2: True, 3: False, 4: False}
    assert (items["min"] == 1).all() and (items["max"] == 5).all()


HUMAN_WIDE = "run,1,2,3,4\n1,5,1,4,2\n2,3,,3,3\n7,1,5,2,1\n"


def test_a_human_sample_joins_the_runs_as_people_and_the_export_reads_back(
    run_dir: Path, tmp_path: Path
) -> None:
    people = tmp_path / "pilot.csv"
    people.write_text(HUMAN_WIDE, encoding="utf-8")
    scale = tmp_path / "knot.yaml"
    scale.write_text(SCALE, encoding="utf-8")
    items = item_frame([run_dir], human=people, scale_files=[scale])
    humans = items[items["source"] == "person"]
    assert set(humans["respondent"]) == {"pilot#1", "pilot#2", "pilot#7"}
    assert (humans["run"] == "pilot").all() and (humans["model"] == "").all()
    gap = humans[(humans["respondent"] == "pilot#2") & (humans["item"] == 2)].iloc[0]
    assert gap["status"] == "missing" and math.isnan(gap["response"])
    assert humans[humans["respondent"] == "pilot#7"].set_index("item")["response"].to_dict() == {
        1: 1.0,
        2: 5.0,
        3: 2.0,
        4: 1.0,
    }

    written = export_items(items, tmp_path / "out")
    assert [p.name for p in written] == ["items.csv", "wide_KNOT.csv"]
    pd.testing.assert_frame_equal(read_items(tmp_path / "out" / "items.csv"), items)
    wide = pd.read_csv(tmp_path / "out" / "wide_KNOT.csv")
    assert list(wide.columns[-4:]) == ["item_1", "item_2", "item_3", "item_4"]
    assert len(wide) == items["respondent"].nunique()
    row = wide[wide["respondent"] == "pilot#2"].iloc[0]
    assert row["item_1"] == 3 and math.isnan(row["item_2"])


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


def test_the_command_writes_the_files_and_refuses_a_bad_human_file(
    app, run_dir: Path, tmp_path: Path
) -> None:
    scale = tmp_path / "knot.yaml"
    scale.write_text(SCALE, encoding="utf-8")
    out = tmp_path / "exported"
    result = CliRunner().invoke(app, ["validity", "items", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "items.csv").is_file() and (out / "wide_KNOT.csv").is_file()

    bad = tmp_path / "bad.csv"
    bad.write_text("run,1,2,3,4\n1,5,1,6,2\n", encoding="utf-8")  # 6 on a 1-5 scale
    result = CliRunner().invoke(
        app, ["validity", "items", "--human", str(bad), "--scale-file", str(scale), "--out", str(out)]
    )
    # main() prints an LlmpsychError as one line (exit 2); the runner shows the error itself
    assert isinstance(result.exception, DataError), result.output
    assert "row 2: answer 6 to item 3 is outside KNOT's range 1-5" in str(result.exception)
    result = CliRunner().invoke(app, ["validity", "items", "--out", str(out)])
    assert isinstance(result.exception, DataError) and "no answers" in str(result.exception)


def test_an_edited_items_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_text("respondent,item\nx,1\n", encoding="utf-8")
    with pytest.raises(DataError, match="no column 'source'"):
        read_items(path)
