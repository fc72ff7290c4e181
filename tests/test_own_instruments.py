"""Your own scale file through PsychoBench, and answers imported from elsewhere analysed like a run.

The scale (TIDY) is written here, in our own words, for these tests. Runs go through the real CLI against
the loopback scripted server; imports go through the real CLI and, for the exit status, a real process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import ConfigError, DataError
from llmpsych.instruments import load_scale_file
from llmpsych.psychobench.cipher import decipher
from llmpsych.psychobench.imports import import_answers
from llmpsych.runs import RunStore, analyze_run, resume_run
from llmpsych.testing.fault_server import FaultServer

TIDY_YAML = """\
llmpsych_scale: 1
name: TIDY
title: Desk and diary habits (written for llmpsych's tests)
language: en
source: written for llmpsych's tests
license: CC0-1.0
response:
  min: 1
  max: 5
  labels: {1: not like me, 5: very like me}
scoring: AVG
items:
  - {index: 1, text: My desk is clear at the end of the day.}
  - {index: 2, text: I often hunt for a pen I just had., reverse: true}
  - {index: 3, text: Every folder I own has a label.}
  - {index: 4, text: I write the week's errands down on Monday.}
  - {index: 5, text: A calendar reminder rarely surprises me.}
  - {index: 6, text: I decide what to do next only once I am done., reverse: true}
subscales:
  - name: Order
    items: [1, 2, 3]
    norms:
      - {group: Pilot, mean: 3.1, sd: 0.8, n: 40, citation: invented for llmpsych's tests}
  - name: Planning
    items: [4, 5, 6]
"""

#: A reply with every statement but item 3, which comes only when re-asked: every run needs a re-ask.
_LISTED = re.compile(r"^(\d+)\. ", re.MULTILINE)
_REASK = re.compile(r"still need a valid score: ([\d, ]+)\.")
_RANGE = re.compile(r"from (\d+) to (\d+)")


def scripted(body: dict) -> str:
    """Answers by (item, position in the prompt): different item orders give different scores.

    Messages may arrive Caesar-enciphered (digits are never shifted), so each text is read both ways.
    """
    texts = [m["content"] for m in body["messages"]]
    readings = [t for text in texts for t in (text, decipher(text))]
    low, high = next((int(a), int(b)) for t in reversed(readings) for a, b in _RANGE.findall(t)[-1:])
    last = body["messages"][-1]["content"]
    reask = _REASK.search(last) or _REASK.search(decipher(last))
    if reask:
        asked = [int(x) for x in reask.group(1).split(",")]
        return "\n".join(f"{i}: {low}" for i in asked)
    listed = [int(x) for x in _LISTED.findall(last)]
    lines = [
        f"{item}: {low + (item * 7 + position) % (high - low + 1)}"
        for position, item in enumerate(listed)
        if item != 3 or len(listed) == 1  # one item per request (logprob mode): no re-ask there
    ]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


@pytest.fixture(scope="module")
def server():
    with FaultServer(responder=scripted) as s:
        yield s


def tidy_file(folder: Path, kind: str) -> Path:
    """TIDY as YAML, or the same content as JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "yaml":
        path = folder / "tidy.yaml"
        path.write_text(TIDY_YAML, encoding="utf-8")
    else:
        import yaml

        path = folder / "tidy.json"
        path.write_text(json.dumps(yaml.safe_load(TIDY_YAML), indent=2), encoding="utf-8")
    return path


def run_cli(app, *args: str):
    return CliRunner().invoke(app, ["psychobench", "run", *args, "--no-cache", "--no-progress"])


def stored_config(run_dir: Path) -> dict:
    store = RunStore.in_dir(run_dir)
    try:
        return store.get_meta("config")
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["yaml", "json"])
def test_scale_file_runs_end_to_end_without_official_data(app, server, tmp_path: Path, kind: str) -> None:
    scale_path = tidy_file(tmp_path / "mine", kind)
    out = tmp_path / "out"
    result = run_cli(
        app, "-m", "openai-compatible/scripted", "--scale-file", str(scale_path), "--runs", "3",
        "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = out / "openai-compatible_scripted"

    # the stored config holds the file's path, sha256 and text: the run is self-contained
    [record] = stored_config(run_dir)["options"]["scale_file"]
    raw = scale_path.read_bytes()
    import hashlib

    assert record["sha256"] == hashlib.sha256(raw).hexdigest() and record["content"] == raw.decode()
    assert record["path"] == str(scale_path.resolve())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["data"] == {str(scale_path.resolve()): record["sha256"]}  # no official data file used

    # every run needed one re-ask (item 3), and every item is answered
    valid = pd.read_csv(run_dir / "valid.csv")
    assert valid["run"].tolist() == [1, 2, 3] and (valid["valid"] == 6).all() and (valid["asks"] == 2).all()

    # scores recomputed by hand from the stored answers, with reverse keys 2 and 6 (min + max - x)
    answers = pd.read_csv(run_dir / "answers.csv")
    scores = pd.read_csv(run_dir / "scores.csv").set_index(["run", "subscale"])["score"]
    for run, part in answers.groupby("run"):
        given = dict(zip(part["item"], part["answer"], strict=True))
        assert given[3] == 1  # the re-asked item, answered with the bottom of the range
        assert scores[(run, "Order")] == pytest.approx((given[1] + 6 - given[2] + given[3]) / 3)
        assert scores[(run, "Planning")] == pytest.approx((given[4] + given[5] + 6 - given[6]) / 3)
    assert scores.groupby(level="run").size().tolist() == [2, 2, 2]

    # the file's norm is tested (n = 3 runs against the pilot group's 40); Planning has none
    comparisons = pd.read_csv(run_dir / "comparisons.csv")
    assert comparisons[["scale", "subscale", "human_label", "model_n", "human_n"]].values.tolist() == [
        ["TIDY", "Order", "Pilot", 3, 40]
    ]
    report = (run_dir / "report.md").read_text()
    assert f"`{scale_path.name}` (sha256 {record['sha256'][:12]}" in report
    assert "official questionnaires.json" not in report
    # the instructions were ours (the file has none), with its range and level labels
    transcript = (run_dir / "transcripts.md").read_text()
    assert "from 1 to 5 (1 = not like me; 5 = very like me)" in transcript


def test_mixed_with_official_scale_in_chunks_with_persona_and_cipher(
    app, server, tmp_path: Path, seed_data: Path
) -> None:
    scale_path = tidy_file(tmp_path, "yaml")
    out = tmp_path / "out"
    result = run_cli(
        app, "-m", "openai-compatible/scripted", "--scale", "DTDD", "--scale-file", str(scale_path),
        "--runs", "2", "--chunk-size", "4", "--persona", "hero", "--cipher",
        "--data-dir", str(seed_data), "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = out / "openai-compatible_scripted"
    summary = pd.read_csv(run_dir / "summary.csv")
    assert summary["scale"].unique().tolist() == ["DTDD", "TIDY"] and (summary["n"] == 2).all()
    valid = pd.read_csv(run_dir / "valid.csv")
    tidy = valid[valid["scale"] == "TIDY"]
    assert (tidy["valid"] == 6).all() and (tidy["asks"] == 3).all()  # 2 chunks (4 + 2) and one re-ask
    # the cipher wrapped every request: the stored requests carry no plain statement text
    store = RunStore.in_dir(run_dir)
    try:
        sent = [json.dumps(c.as_dict()) for c in store.calls()]
    finally:
        store.close()
    assert sent and not any("Every folder I own has a label" in s for s in sent)
    report = (run_dir / "report.md").read_text()
    assert "DTDD from PsychoBench's official questionnaires.json" in report
    assert "TIDY from `tidy.yaml`" in report and "Persona: hero" in report
    comparisons = pd.read_csv(run_dir / "comparisons.csv")
    assert {"DTDD", "TIDY"} == set(comparisons["scale"])


def test_scale_file_in_logprob_mode(app, server, tmp_path: Path) -> None:
    scale_path = tidy_file(tmp_path, "yaml")
    out = tmp_path / "out"
    result = run_cli(
        app, "-m", "openai-compatible/scripted", "--scale-file", str(scale_path), "--runs", "2",
        "--method", "logprob", "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    valid = pd.read_csv(out / "openai-compatible_scripted" / "valid.csv")
    # the scripted server sends no top_logprobs: each of the 6 items is read from its written number
    assert (valid["asks"] == 6).all() and (valid["from_text"] == 6).all() and (valid["valid"] == 6).all()
    answers = pd.read_csv(out / "openai-compatible_scripted" / "answers.csv")
    expected = {item: 1 + (item * 7) % 5 for item in range(1, 7)}  # position 0 in a one-item prompt
    assert dict(zip(answers["item"], answers["value"], strict=False)) == expected


def test_resume_refuses_a_changed_scale_file_and_analysis_needs_no_file(server, tmp_path: Path) -> None:
    from llmpsych.runs import parse_run_config, start_run

    scale_path = tidy_file(tmp_path, "yaml")
    config = {
        "task": "psychobench", "model": "openai-compatible/scripted", "base_url": server.base_url,
        "cache": False, "options": {"scale_file": [str(scale_path)], "runs": 2},
    }  # fmt: skip
    run_dir = tmp_path / "run"
    start_run(parse_run_config(config), run_dir, False)
    before = (run_dir / "scores.csv").read_text()

    scale_path.write_text(TIDY_YAML.replace("mean: 3.1", "mean: 3.9"), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        resume_run(run_dir, False)
    assert str(refused.value).startswith(f"{scale_path.resolve()} changed since this run started (sha256")
    assert "\n" not in str(refused.value)

    # analysis reads the recorded text: the changed file (and then no file at all) changes nothing
    assert analyze_run(run_dir) and (run_dir / "scores.csv").read_text() == before
    assert pd.read_csv(run_dir / "norms.csv")["mean"].tolist() == [3.1]  # the recorded norm, not the new one
    scale_path.unlink()
    assert analyze_run(run_dir) and (run_dir / "scores.csv").read_text() == before
    outcome = resume_run(run_dir, False)  # the file is gone: the run resumes from its recorded text
    assert outcome.summary.calls_sent == 0

    # a stored text that no longer matches its sha256 is refused
    store = RunStore.in_dir(run_dir)
    try:
        stored = store.get_meta("config")
        stored["options"]["scale_file"][0]["content"] += "\n# edited\n"
        store.set_meta("config", stored)
    finally:
        store.close()
    with pytest.raises(ConfigError, match="does not match its sha256"):
        analyze_run(run_dir)


def test_scale_file_name_clashes_are_refused(tmp_path: Path, seed_data: Path) -> None:
    from llmpsych.psychobench.task import PsychoBenchTask
    from llmpsych.runs import parse_run_config

    clash = tmp_path / "bfi.yaml"
    clash.write_text(TIDY_YAML.replace("name: TIDY", "name: bfi"), encoding="utf-8")
    config = {"task": "psychobench", "data_dir": str(seed_data)}
    with pytest.raises(ConfigError, match="has the name of an official PsychoBench scale"):
        PsychoBenchTask(
            parse_run_config({**config, "options": {"scale": ["EPQ-R"], "scale_file": [str(clash)]}})
        )
    twice = tidy_file(tmp_path / "a", "yaml"), tidy_file(tmp_path / "b", "json")
    with pytest.raises(ConfigError, match="is also defined in"):
        PsychoBenchTask(parse_run_config({**config, "options": {"scale_file": [str(p) for p in twice]}}))
    broken = tmp_path / "broken.yaml"
    broken.write_text(TIDY_YAML.replace("max: 5", "max: 1"), encoding="utf-8")
    with pytest.raises(DataError, match="response min \\(1\\) must be below max \\(1\\)"):
        PsychoBenchTask(parse_run_config({**config, "options": {"scale_file": [str(broken)]}}))


# -- import ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(app, server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A three-run TIDY run against the scripted server, and its scale file."""
    folder = tmp_path_factory.mktemp("own-run")
    scale_path = tidy_file(folder, "yaml")
    result = run_cli(
        app, "-m", "openai-compatible/scripted", "--scale-file", str(scale_path), "--runs", "3",
        "--base-url", server.base_url, "--out", str(folder / "out"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return folder / "out" / "openai-compatible_scripted", scale_path


TABLES = ("answers", "scores", "summary", "comparisons", "norms")


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_imported_answers_give_the_same_analysis_as_the_run(
    app, finished_run: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    run_dir, scale_path = finished_run
    answers = pd.read_csv(run_dir / "answers.csv")
    if kind == "csv":
        source = run_dir / "answers.csv"  # the run's own table imports back unchanged
    else:
        source = tmp_path / "answers.jsonl"
        rows = answers.astype(object).where(answers.notna(), None).to_dict("records")
        source.write_text("".join(json.dumps({k: v for k, v in r.items()}) + "\n" for r in rows))
    out = tmp_path / "imported"
    result = CliRunner().invoke(
        app,
        [
            "psychobench", "import-answers", str(source), "--scale-file", str(scale_path),
            "--out", str(out), "--label", "openai-compatible/scripted",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in TABLES:
        pd.testing.assert_frame_equal(pd.read_csv(out / f"{name}.csv"), pd.read_csv(run_dir / f"{name}.csv"))
    ran, imported = pd.read_csv(run_dir / "valid.csv"), pd.read_csv(out / "valid.csv")
    pd.testing.assert_frame_equal(imported.drop(columns="asks"), ran.drop(columns="asks"))
    assert (imported["asks"] == 0).all()  # no model was asked
    report = (out / "report.md").read_text()
    assert f"imported from `{source.name}`" in report and "no model was called" in report

    # an imported run is a run folder: `llmpsych analyze` rebuilds it, resume refuses it in one line
    (out / "summary.csv").unlink()
    rebuilt = CliRunner().invoke(app, ["analyze", str(out)])
    assert rebuilt.exit_code == 0 and (out / "summary.csv").is_file()
    with pytest.raises(ConfigError, match="was imported from .*there is no model to run"):
        resume_run(out, False)
    compared = CliRunner().invoke(app, ["psychobench", "compare", str(run_dir), str(out)])
    assert compared.exit_code == 0, compared.output


HEADER = "scale,run,item,answer\n"


def good_rows(run: int = 1, skip: int | None = None, answer: dict[int, str] | None = None) -> str:
    values = {i: str(1 + i % 5) for i in range(1, 7)} | (answer or {})
    return "".join(f"TIDY,{run},{i},{values[i]}\n" for i in range(1, 7) if i != skip)


HOSTILE_CSV = {
    "out of range (99 on 1-5)": (
        HEADER + good_rows(answer={4: "99"}),
        "row 5: answer 99 to item 4 is outside",
    ),
    "3.0": (
        HEADER + good_rows(answer={2: "3.0"}),
        "row 3: answer to item 2 must be a whole number, got '3.0'",
    ),
    "NaN": (
        HEADER + good_rows(answer={6: "NaN"}),
        "row 7: answer to item 6 must be a whole number, got 'NaN'",
    ),
    "formula": (
        HEADER + good_rows(answer={1: "=2+1"}),
        "row 2: answer '=2+1' looks like a spreadsheet formula",
    ),
    "formula in a name": (
        HEADER + "=HYPERLINK(1),1,1,3\n",
        "row 2: scale '=HYPERLINK(1)' looks like a spreadsheet formula",
    ),
    "missing item": (HEADER + good_rows(skip=5), "row 2: scale 'TIDY' run 1 has no row for item 5"),
    "duplicate row": (
        HEADER + good_rows() + "TIDY,1,3,2\n",
        "row 8: scale 'TIDY' run 1 item 3 again (first in row 4)",
    ),
    "unknown item": (HEADER + good_rows() + "TIDY,1,7,2\n", "row 8: scale 'TIDY' has no item '7'"),
    "unknown scale": (HEADER + "BFI,1,1,3\n", "row 2: unknown scale 'BFI'"),
    "unknown column": ("scale,run,item,answer,respondent\n", "row 1: unknown column 'respondent'"),
    "ragged row": (HEADER + "TIDY,1,1\n", "row 2: 3 cells, the header has 4"),
    "run zero": (HEADER + good_rows(run=0), "row 2: run must be a positive whole number"),
    "negative answer": (HEADER + good_rows(answer={1: "-1"}), "row 2: answer -1 to item 1 is outside"),
    "other-script digit": (
        HEADER + good_rows(answer={1: "٣"}),
        "row 2: answer to item 1 must be a whole number",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_CSV))
def test_hostile_csv_import_is_refused_naming_file_and_row(tmp_path: Path, case: str) -> None:
    text, message = HOSTILE_CSV[case]
    scale_path = tidy_file(tmp_path, "yaml")
    source = tmp_path / "answers.csv"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as refused:
        import_answers(source, tmp_path / "out", scale_files=[scale_path])
    assert str(refused.value).startswith(f"{source}, ") and message in str(refused.value), str(refused.value)
    assert not (tmp_path / "out").exists()  # nothing half-made


HOSTILE_JSONL = {
    "answer as text": (
        '{"run": 1, "item": 1, "answer": "3"}',
        "answer to item 1 must be a JSON whole number",
    ),
    "3.0": (
        '{"run": 1, "item": 1, "answer": 3.0}',
        "answer to item 1 must be a JSON whole number, got '3.0'",
    ),
    "NaN": ('{"run": 1, "item": 1, "answer": NaN}', "must be a JSON whole number, got 'NaN'"),
    "boolean": ('{"run": true, "item": 1, "answer": 3}', "run must be a JSON whole number"),
    "not an object": ("[1, 1, 3]", "expected a JSON object, got list"),
    "broken JSON": ('{"run": 1,', "invalid JSON"),
    "huge run": ('{"run": 10000000000000000, "item": 1, "answer": 3}', "run must be a JSON whole number"),
    "unknown key": ('{"run": 1, "item": 1, "answer": 3, "rt_ms": 850}', "unknown column 'rt_ms'"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_JSONL))
def test_hostile_jsonl_import_is_refused_naming_file_and_row(tmp_path: Path, case: str) -> None:
    line, message = HOSTILE_JSONL[case]
    scale_path = tidy_file(tmp_path, "yaml")
    source = tmp_path / "answers.jsonl"
    source.write_text('{"run": 1, "item": 2, "answer": 4}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        import_answers(source, tmp_path / "out", scale_files=[scale_path])
    assert str(refused.value).startswith(f"{source}, row 2: ") and message in str(refused.value)


def test_hostile_import_exits_2_with_one_line(tmp_path: Path) -> None:
    scale_path = tidy_file(tmp_path, "yaml")
    source = tmp_path / "answers.csv"
    source.write_text(HEADER + good_rows(answer={4: "99"}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "psychobench", "import-answers", str(source),
         "--scale-file", str(scale_path), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("error: ") and "answers.csv, row 5: answer 99 to item 4" in lines[0]
    assert not (tmp_path / "out").exists()


def test_import_people_with_blank_answers_and_positions(tmp_path: Path) -> None:
    """Respondents numbered freely, a blank answer (no valid answer), item positions given."""
    scale_path = tidy_file(tmp_path, "yaml")
    source = tmp_path / "people.csv"
    rows = ["run,item,answer,position"]
    for person, values in ((7, [5, 1, 4, 4, 5, 2]), (12, [2, 4, 1, 3, 3, 4]), (30, [4, 2, 5, 5, "", 1])):
        rows += [f"{person},{i},{v},{7 - i}" for i, v in enumerate(values, start=1)]
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    import_answers(source, tmp_path / "out", scale_files=[scale_path], label="pilot people")
    valid = pd.read_csv(tmp_path / "out" / "valid.csv")
    assert valid["run"].tolist() == [7, 12, 30] and valid["valid"].tolist() == [6, 6, 5]
    scores = pd.read_csv(tmp_path / "out" / "scores.csv").set_index(["run", "subscale"])["score"]
    assert scores[(7, "Order")] == pytest.approx((5 + 5 + 4) / 3)  # item 2 reversed: 6 - 1
    assert pd.isna(scores[(30, "Planning")])  # item 5 unanswered: the subscale is not scored
    answers = pd.read_csv(tmp_path / "out" / "answers.csv")
    assert answers[answers["run"] == 7].sort_values("position")["item"].tolist() == [6, 5, 4, 3, 2, 1]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv").set_index("subscale")
    assert summary.loc["Order", "n"] == 3 and summary.loc["Planning", "n"] == 2
    assert (tmp_path / "out" / "report.md").is_file()
    assert load_scale_file(scale_path)[0].name == "TIDY"


@pytest.mark.model
def test_scale_file_on_the_embedded_model(tmp_path: Path) -> None:
    """Two statements, one run, on the embedded 0.5B model: the path works on a real model."""
    from llmpsych.runs import parse_run_config, start_run

    small = TIDY_YAML.split("  - {index: 3")[0] + "subscales:\n  - name: Order\n    items: [1, 2]\n"
    scale_path = tmp_path / "tiny.yaml"
    scale_path.write_text(small, encoding="utf-8")
    config = {
        "task": "psychobench", "model": "local/qwen2.5-0.5b", "cache": False, "params": {"max_tokens": 48},
        "options": {"scale_file": [str(scale_path)], "runs": 1, "max_reasks": 1},
    }  # fmt: skip
    outcome = start_run(parse_run_config(config), tmp_path / "run", False)
    assert outcome.summary.done == 1 and outcome.summary.failed == 0
    valid = pd.read_csv(tmp_path / "run" / "valid.csv")
    # it answers (measured: both), or numbers its answers by position: counted invalid, not scored
    assert valid["items"].tolist() == [2] and ((valid["valid"] + valid["positional"]) >= 1).all()
    answers = pd.read_csv(tmp_path / "run" / "answers.csv")
    assert answers["answer"].dropna().between(1, 5).all()
    assert "tiny.yaml" in (tmp_path / "run" / "report.md").read_text()


def test_which_scales_run_with_scale_files(tmp_path: Path, seed_data: Path) -> None:
    """Without `scales` only the files run (no data folder read); `all` adds every scored official scale."""
    from llmpsych.psychobench.task import PsychoBenchTask
    from llmpsych.runs import parse_run_config

    scale_path = tidy_file(tmp_path, "yaml")
    nowhere = tmp_path / "no-data-here"

    def task(**options):
        data = {
            "task": "psychobench",
            "data_dir": str(nowhere),
            "options": {"scale_file": [str(scale_path)]},
        }
        data["options"] |= options
        return PsychoBenchTask(parse_run_config(data))

    only = task()
    assert [s.name for s in only.scales] == ["TIDY"] and only.data_files() == [scale_path.resolve()]
    assert [s.name for s in task(scale=["tidy"]).scales] == ["TIDY"]  # a file's scale, named: still no data
    with pytest.raises(DataError):  # an official name needs the data folder, which is not there
        task(scale=["BFI"])
    config = {"task": "psychobench", "data_dir": str(seed_data)}
    both = PsychoBenchTask(
        parse_run_config({**config, "options": {"scale": ["all"], "scale_file": [str(scale_path)]}})
    )
    names = [s.name for s in both.scales]
    assert len(names) == 14 and names[-1] == "TIDY" and "16P" not in names and "BFI" in names


def test_import_answers_to_an_official_scale(app, tmp_path: Path, seed_data: Path) -> None:
    """People's BFI answers (all 3s, then all 5s before keying) tested against the data file's norms."""
    source = tmp_path / "bfi.csv"
    rows = ["scale,run,item,answer"] + [
        f"bfi,{run},{i},{value}" for run, value in ((1, 3), (2, 5)) for i in range(1, 45)
    ]
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["psychobench", "import-answers", str(source), "--scale", "BFI", "--data-dir", str(seed_data),
         "--out", str(out), "--label", "two people"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    scores = pd.read_csv(out / "scores.csv").set_index(["run", "subscale"])["score"]
    assert scores[(1, "Openness")] == 3.0
    # run 2 answered 5 everywhere: a subscale's reverse-keyed items count 1, so its score lies below 5
    assert 1 < scores[(2, "Extraversion")] < 5
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert len(comparisons) == 5 and set(comparisons["model_n"]) == {2}
    manifest = json.loads((out / "manifest.json").read_text())
    assert str(source) in manifest["data"] and any(
        p.endswith("questionnaires.json") for p in manifest["data"]
    )
    assert "BFI from PsychoBench's official questionnaires.json" in (out / "report.md").read_text()
    missing = CliRunner().invoke(
        app, ["psychobench", "import-answers", str(source), "--out", str(tmp_path / "x")]
    )
    assert missing.exit_code != 0 and "name the answers' scale" in str(missing.exception)


def test_wide_people_file_imports_like_the_long_one(tmp_path: Path) -> None:
    """One row per respondent, one column per item: the same tables as the long file of the same answers."""
    scale_path = tidy_file(tmp_path, "yaml")
    people = {3: [5, 1, 4, 4, 5, 2], 8: [2, 4, 1, 3, 3, 4], 9: [4, 2, 5, 5, "", 1]}
    wide = tmp_path / "wide.csv"
    wide.write_text(
        "run,1,2,3,4,5,6\n" + "".join(f"{p},{','.join(map(str, v))}\n" for p, v in people.items()),
        encoding="utf-8",
    )
    long = tmp_path / "long.csv"
    long.write_text(
        "run,item,answer\n"
        + "".join(f"{p},{i},{a}\n" for p, v in people.items() for i, a in enumerate(v, start=1)),
        encoding="utf-8",
    )
    import_answers(wide, tmp_path / "w", scale_files=[scale_path], label="people")
    import_answers(long, tmp_path / "l", scale_files=[scale_path], label="people")
    for name in TABLES:
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "w" / f"{name}.csv"), pd.read_csv(tmp_path / "l" / f"{name}.csv")
        )

    # the same checks, each naming the row as a spreadsheet shows it
    cases = {
        "run,1,2,3,4,5,6\n1,5,1,4,4,5,9\n": "row 2: answer 9 to item 6 is outside",
        "run,1,2,3,4,5,6\n1,5,1,4,4,5,2\n2,5,1,4.0,4,5,2\n": "row 3: answer to item 3 must be a whole number",
        "run,1,2,3,4,5,7\n1,5,1,4,4,5,2\n": "row 2: scale 'TIDY' has no item '7'",
        "run,1,2,3,4,5\n1,5,1,4,4,5\n": "row 2: scale 'TIDY' run 1 has no row for item 6",
        "run,1,2,3,4,5,6\n1,5,1,4,4,5,2\n1,5,1,4,4,5,2\n": "row 3: scale 'TIDY' run 1 item 1 again (first in",
        "run,1,2,3,4,5,6\n1,5,1,=4,4,5,2\n": "row 2: answer '=4' looks like a spreadsheet formula",
        "run,1,1,2,3,4,5,6\n": "row 1: a wide file names each column once",
        "respondent,1,2,3,4,5,6\n": "row 1: unknown column 'respondent'",
    }
    for number, (text, message) in enumerate(cases.items()):
        source = tmp_path / f"bad{number}.csv"
        source.write_text(text, encoding="utf-8")
        with pytest.raises(DataError) as refused:
            import_answers(source, tmp_path / f"bad{number}", scale_files=[scale_path])
        assert str(refused.value).startswith(f"{source}, ") and message in str(refused.value), str(
            refused.value
        )
