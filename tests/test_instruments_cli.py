"""``llmpsych scales``: list, show, corrections, validate (through the sub-app, no model calls)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from llmpsych.errors import DataError, LlmpsychError
from llmpsych.instruments.cli import app

SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"
runner = CliRunner()


@pytest.fixture(scope="module")
def data_dir() -> str:
    if not (SEED_DATA / "PsychoBench").is_dir():
        pytest.fail(f"the official seed data is missing: {SEED_DATA}")
    return str(SEED_DATA)


def invoke(*args: str):
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result


def test_list(data_dir: str) -> None:
    result = invoke("list", "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    for name in ("BFI", "EPQ-R", "16P", "PANAS", "DASS-21"):
        assert name in result.output
    assert "SUM*2" in result.output
    assert "unscored" in result.output
    assert "n=6076" in result.output


def test_list_one_dataset(data_dir: str) -> None:
    result = invoke("list", "--data-dir", data_dir, "--dataset", "emotionbench")
    assert result.exit_code == 0, result.output
    assert "PANAS" in result.output and "BFI" not in result.output


def test_show(data_dir: str) -> None:
    result = invoke("show", "dtdd", "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "Dark Triad Dirty Dozen" in result.output
    assert "subscale Narcissism (4 items, score 1-9): 9, 10, 11, 12" in result.output
    assert "norm Crowd: 4.88 ± 1.8, n = 577" in result.output
    assert "'Neuroticism' -> 'Narcissism'" in result.output


def test_show_as_published(data_dir: str) -> None:
    result = invoke("show", "DTDD", "--data-dir", data_dir, "--no-corrections")
    assert result.exit_code == 0, result.output
    assert "subscale Neuroticism" in result.output


def test_show_unknown_scale(data_dir: str) -> None:
    result = invoke("show", "NOPE", "--data-dir", data_dir)
    assert isinstance(result.exception, LlmpsychError)
    assert "no scale named 'NOPE'" in str(result.exception)


def test_corrections(data_dir: str) -> None:
    result = invoke("corrections", "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    for word in ("Pschoticism", "Narcissism", "Bahavioral", "Iniatives", "4 correction(s)"):
        assert word in result.output


def test_validate_good_file(tmp_path: Path) -> None:
    scale = {
        "name": "MINI",
        "response": {"min": 0, "max": 3},
        "scoring": "SUM",
        "items": [
            {"index": 1, "text": "First made-up line."},
            {"index": 2, "text": "Second one.", "reverse": True},
        ],
        "subscales": [{"name": "All", "items": [1, 2]}],
    }
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(scale), encoding="utf-8")
    result = invoke("validate", str(path))
    assert result.exit_code == 0, result.output
    assert "MINI: 2 items, range 0-3, SUM, 1 subscale(s)" in result.output
    assert "1 valid scale(s)" in result.output


def test_validate_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: BAD\nresponse: {min: 3, max: 1}\nscoring: SUM\nitems: []\n", encoding="utf-8")
    result = invoke("validate", str(path))
    assert isinstance(result.exception, DataError)
    assert str(result.exception) == f"{path}: scale 'BAD': response min (3) must be below max (1)"


def test_missing_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    result = invoke("list", "--data-dir", str(tmp_path))
    assert isinstance(result.exception, DataError)
    assert "not found" in str(result.exception)
