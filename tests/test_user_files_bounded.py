"""Every file a user hands llmpsych is read bounded (:mod:`llmpsych.userfiles`): its size is checked
before a byte is read, a pipe or device is refused without blocking, a file that grows while it is read is
refused, and a JSON/YAML/TOML document with a 5,000-digit integer or 100,000-deep nesting is one clear
error line, not an "internal error"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych import userfiles
from llmpsych.errors import ConfigError, DataError
from llmpsych.runs.config import read_config_file

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"
BIG = 2 * 2**30  # a sparse 2 GiB file: reading it would cost 2 GB or more

SCALE = """name: GRIT2
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: I finish what I start.}
  - {index: 2, text: Setbacks do not stop me.}
subscales:
  - {name: Grit, items: [1, 2]}
"""


def _llmpsych(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "llmpsych", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _one_clear_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "internal error" not in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_every_entry_point_refuses_a_huge_file_before_reading_it(tmp_path: Path, seed_data: Path) -> None:
    """Fifteen commands and flags that read a user's file, each handed a 2 GiB sparse file, in one child
    process: each refuses it with a user error naming the file and its cap, and the process's peak memory
    stays far below the file's size (every command reading it whole would need 2 GB or more each)."""
    child = subprocess.run(
        [sys.executable, str(TESTS / "bounded_reads_child.py"), str(tmp_path), str(BIG), str(seed_data)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout)
    for name, result in report["results"].items():
        assert result["exit_code"] != 0 and result["user_error"], (name, result)
        assert f"{BIG:,} bytes, more than a" in result["message"], (name, result["message"])
    assert len(report["results"]) == 15
    assert report["peak_bytes"] < BIG / 4, report["peak_bytes"]


def test_scales_validate_of_a_huge_file_is_one_line(tmp_path: Path) -> None:
    big = tmp_path / "huge.yaml"
    with big.open("wb") as handle:
        handle.truncate(BIG)  # sparse: costs no disk
    _one_clear_line(_llmpsych("scales", "validate", big, cwd=tmp_path), "huge.yaml", "more than a scale file")


HOSTILE_ANSWERS = {
    "5000-digit integer": (
        "jsonl",
        '{"scale": "GRIT2", "run": 1, "item": 1, "answer": ' + "9" * 5000 + "}\n",
    ),
    "100000-deep nesting": (
        "jsonl",
        '{"scale": "GRIT2", "run": 1, "item": 1, "answer": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    ),
    "5000-digit integer in a CSV": (
        "csv",
        "scale,run,item,answer\nGRIT2,1,1," + "9" * 5000 + "\nGRIT2,1,2,3\n",
    ),
}


def test_import_answers_of_a_5000_digit_integer_is_one_clear_line(tmp_path: Path) -> None:
    """Through the real command line: one ``error:`` line naming the file and row, no run folder."""
    (tmp_path / "grit.yaml").write_text(SCALE, encoding="utf-8")
    (tmp_path / "answers.jsonl").write_text(HOSTILE_ANSWERS["5000-digit integer"][1], encoding="utf-8")
    result = _llmpsych(
        "psychobench",
        "import-answers",
        "answers.jsonl",
        "--scale-file",
        "grit.yaml",
        "--out",
        "out",
        cwd=tmp_path,
    )
    _one_clear_line(result, "answers.jsonl, row 1: invalid JSON: Exceeds the limit (4300 digits)")
    assert not (tmp_path / "out" / "run.sqlite").exists()


@pytest.mark.parametrize("case", list(HOSTILE_ANSWERS))
def test_import_answers_of_a_hostile_file_is_a_user_error(tmp_path: Path, case: str) -> None:
    """In process, each hostile answers file is a user error (which ``llmpsych`` prints as one line)."""
    from llmpsych.psychobench.imports import import_answers

    suffix, body = HOSTILE_ANSWERS[case]
    (tmp_path / "grit.yaml").write_text(SCALE, encoding="utf-8")
    answers = tmp_path / f"answers.{suffix}"
    answers.write_text(body, encoding="utf-8")
    with pytest.raises(DataError, match=rf"answers\.{suffix}, row \d") as caught:
        import_answers(answers, tmp_path / "out", scale_files=[tmp_path / "grit.yaml"])
    assert "internal" not in caught.value.message
    assert not (tmp_path / "out" / "run.sqlite").exists()


DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_YAML = "a: " + "[" * 100_000 + "]" * 100_000 + "\n"
HUGE_INT = "9" * 5000


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (userfiles.parse_json, f'{{"n": {HUGE_INT}}}', "invalid JSON: Exceeds the limit (4300 digits)"),
        (userfiles.parse_json, DEEP_JSON, "invalid JSON: nested too deeply"),
        (userfiles.parse_json, "[" * 70 + "]" * 70, "nested more than 64 levels deep"),
        (userfiles.parse_yaml, f"n: {HUGE_INT}\n", "invalid YAML: Exceeds the limit (4300 digits)"),
        (userfiles.parse_yaml, DEEP_YAML, "invalid YAML: nested too deeply"),
        (userfiles.parse_yaml, "a: &a [1, 2]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}]\n"
         for p, c in zip("abcdefghi", "bcdefghij", strict=True)), "expands to more than 100,000 values"),
    ],
    ids=["json int", "json deep", "json 70 deep", "yaml int", "yaml deep", "yaml aliases"],
)  # fmt: skip
def test_the_safe_parsers_turn_every_failure_into_one_error(parse, text: str, message: str) -> None:
    with pytest.raises(DataError, match="^doc: ") as caught:
        parse(text, "doc")
    assert message in caught.value.message


@pytest.mark.parametrize("suffix", [".yaml", ".toml"])
@pytest.mark.parametrize("content", ["int", "deep"])
def test_a_config_file_of_a_huge_integer_or_deep_nesting_is_a_config_error(
    tmp_path: Path, suffix: str, content: str
) -> None:
    path = tmp_path / f"run{suffix}"
    if content == "int":
        path.write_text(f"seed = {HUGE_INT}\n" if suffix == ".toml" else f"seed: {HUGE_INT}\n")
    else:
        path.write_text("options = " + "[" * 2000 + "]" * 2000 + "\n" if suffix == ".toml" else DEEP_YAML)
    with pytest.raises(ConfigError, match="run" + suffix.replace(".", r"\.")):
        read_config_file(path)


def test_an_option_value_of_a_huge_integer_is_a_config_error() -> None:
    from llmpsych.clikit import parse_options

    with pytest.raises(ConfigError, match="--option runs: the value is not valid YAML: Exceeds the limit"):
        parse_options([f"runs={HUGE_INT}"])
    with pytest.raises(ConfigError, match="--option runs: the value is not valid YAML: nested too deeply"):
        parse_options(["runs=" + "[" * 100_000 + "]" * 100_000])


def test_a_pipe_a_device_and_a_folder_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "scale.yaml"
    os.mkfifo(fifo)  # nobody writes to it: a blocking open would hang here
    with pytest.raises(DataError, match="not a regular file"):
        userfiles.read_bytes(fifo, "scale file", 100)
    with pytest.raises(DataError, match="not a regular file"):
        userfiles.read_bytes("/dev/zero", "scale file", 100)
    with pytest.raises(DataError, match="a folder, not a scale file"):
        userfiles.read_bytes(tmp_path, "scale file", 100)
    with pytest.raises(DataError, match="absent.yaml: scale file not found"):
        userfiles.read_bytes(tmp_path / "absent.yaml", "scale file", 100)


def test_a_file_that_grows_after_its_size_was_checked_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size is checked, then at most cap + 1 bytes are read: a file that was small when checked and
    large when read (written to meanwhile) is refused, not read whole."""
    path = tmp_path / "growing.yaml"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        path.write_bytes(b"x" * 10_000)  # grows between the check and the read
        return info

    monkeypatch.setattr(userfiles.os, "fstat", fstat_then_grow)
    with pytest.raises(DataError, match="growing.yaml: grew while it was read: 101 bytes, more than a scale"):
        userfiles.read_bytes(path, "scale file", 100)
    monkeypatch.undo()
    assert userfiles.read_bytes(path, "scale file", 10_000) == b"x" * 10_000
