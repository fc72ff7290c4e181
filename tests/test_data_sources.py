"""The data directory, dataset folders, manifests and ``llmpsych data list``."""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.data import (
    DATASETS,
    QUESTION_SETS,
    all_manifests,
    data_file,
    data_status,
    dataset_path,
    dataset_status,
    default_data_dir,
    file_sha256,
    load_manifest,
    resolve_data_dir,
)
from llmpsych.data.cli import app
from llmpsych.data.registry import canonical_name, resolve_names
from llmpsych.errors import ChecksumError, DataError, LlmpsychError
from llmpsych.paths import cache_dir

REPO = Path(__file__).resolve().parents[1]
SEED = (Path(__file__).parents[1] / ".." / "shared" / "seed-data").resolve()


@pytest.fixture(scope="module")
def seed() -> Path:
    """The official data beside the repository; missing data is a failure, never a skip."""
    if not SEED.is_dir():
        pytest.fail(f"official seed data not found at {SEED} (expected ../shared/seed-data beside the repo)")
    return SEED


@pytest.fixture(autouse=True)
def _no_env_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMPSYCH_DATA_DIR", raising=False)


# -- resolution ----------------------------------------------------------------------------------
def test_explicit_beats_env_beats_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_dir, explicit = tmp_path / "env", tmp_path / "explicit"
    env_dir.mkdir()
    explicit.mkdir()
    assert resolve_data_dir() == cache_dir() / "data" == default_data_dir()
    monkeypatch.setenv("LLMPSYCH_DATA_DIR", str(env_dir))
    assert resolve_data_dir() == env_dir.resolve()
    assert resolve_data_dir(explicit) == explicit.resolve()


def test_missing_explicit_or_env_folder_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(DataError) as err:
        resolve_data_dir(missing)
    text = str(err.value)
    assert str(missing) in text and "--data-dir" in text and "\n" not in text
    monkeypatch.setenv("LLMPSYCH_DATA_DIR", str(missing))
    with pytest.raises(DataError, match="LLMPSYCH_DATA_DIR"):
        resolve_data_dir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(DataError, match="not a folder"):
        resolve_data_dir(a_file)


def test_dataset_path_and_data_file(seed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert dataset_path("PsychoBench", seed) == seed / "PsychoBench"
    assert dataset_path("psychobench", seed) == seed / "PsychoBench"  # case-insensitive
    monkeypatch.setenv("LLMPSYCH_DATA_DIR", str(seed))
    assert data_file("EmotionBench", "results/PANAS_Test/crowd.xlsx").is_file()
    assert data_file("FairEval", Path("review") / "review_gpt35_vicuna-13b_human.txt").is_file()


def test_missing_dataset_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        dataset_path("GAMABench", tmp_path)
    text = str(err.value)
    assert "llmpsych data fetch GAMABench" in text
    assert "--data-dir" in text and "LLMPSYCH_DATA_DIR" in text and str(tmp_path) in text
    assert isinstance(err.value, LlmpsychError)


def test_missing_file_and_bad_paths(seed: Path) -> None:
    with pytest.raises(DataError, match=r"PsychoBench file no/such\.json not found.*data fetch PsychoBench"):
        data_file("PsychoBench", "no/such.json", seed)
    with pytest.raises(DataError, match="relative"):
        data_file("PsychoBench", "../FairEval/question.jsonl", seed)


def test_unknown_dataset_lists_known_names(seed: Path) -> None:
    with pytest.raises(DataError) as err:
        dataset_path("PsychBench", seed)
    assert all(name in str(err.value) for name in DATASETS)
    assert canonical_name("mas-resilience") == "MAS-Resilience"
    assert resolve_names("ALL") == list(DATASETS)


# -- manifests -----------------------------------------------------------------------------------
def test_manifests_pin_full_commits_and_hold_only_paths_hashes_sizes() -> None:
    folder = resources.files("llmpsych.data") / "manifests"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
    assert names == sorted(f"{d}.json" for d in DATASETS + QUESTION_SETS)  # question sets: own test
    for manifest in all_manifests():
        raw = json.loads((folder / f"{manifest.dataset}.json").read_text(encoding="utf-8"))
        assert set(raw) <= {"dataset", "repository", "commit", "licence", "note", "files"}
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", manifest.repository)
        if manifest.dataset == "FairEval":  # only the short commit is known
            assert manifest.repository == "i-Eval/FairEval" and manifest.commit == "453c117"
        else:
            assert re.fullmatch(r"[0-9a-f]{40}", manifest.commit), manifest.dataset
        assert manifest.licence and manifest.files
        for f in raw["files"]:
            assert set(f) == {"path", "remote", "sha256", "size"}
            assert all(isinstance(part, str) and part and "/" not in part for part in f["path"] + f["remote"])
            assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) and f["size"] > 0
    assert load_manifest("PsychoBench").commit.startswith("d514fb0")


def test_emotionbench_renamed_folders_map_to_remote_names_with_spaces() -> None:
    manifest = load_manifest("EmotionBench")
    crowd = manifest.file("results/PANAS_Test/crowd.xlsx")
    assert crowd is not None and crowd.remote == "results/PANAS Test/crowd.xlsx"
    challenging = [f for f in manifest.files if f.path.startswith("results/Challenging_Bench/")]
    assert challenging and all(f.remote.startswith("results/Challenging Bench/") for f in challenging)
    others = [f for f in manifest.files if not f.path.startswith("results/")]
    assert all(f.remote == f.path for f in others)


def test_manifests_match_the_seed_data_exactly(seed: Path) -> None:
    statuses = data_status(seed)
    assert [s.dataset for s in statuses] == list(DATASETS)
    for s in statuses:
        assert s.location == seed / s.dataset
        assert s.complete and s.checksums_ok is True, (s.dataset, s.present, s.total, s.mismatched[:3])
        on_disk = {p.relative_to(s.location).as_posix() for p in s.location.rglob("*") if p.is_file()}
        assert on_disk == {f.path for f in s.manifest.files}, s.dataset


def test_status_reports_missing_and_changed_files(seed: Path, tmp_path: Path) -> None:
    shutil.copytree(seed / "EmotionBench", tmp_path / "EmotionBench")
    (tmp_path / "EmotionBench" / "situations.json").unlink()
    changed = tmp_path / "EmotionBench" / "questionnaires.json"
    changed.write_bytes(changed.read_bytes()[:-1] + b" ")
    status = dataset_status("EmotionBench", tmp_path)
    assert (status.present, status.total) == (13, 14)
    assert status.mismatched == ["questionnaires.json"] and status.checksums_ok is False
    assert file_sha256(changed) != load_manifest("EmotionBench").file("questionnaires.json").sha256
    absent = dataset_status("PsychoBench", tmp_path)
    assert absent.location is None and absent.present == 0 and absent.checksums_ok is None
    assert issubclass(ChecksumError, DataError)


# -- CLI -----------------------------------------------------------------------------------------
def test_data_list_cli(seed: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["list", "--data-dir", str(seed)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "424/424" in result.output and "CUHK-ARISE/PsychoBench@d514fb0" in result.output
    assert "i-Eval/FairEval@453c117" in result.output and "ok" in result.output

    result = runner.invoke(app, ["list", "--data-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "not found" in result.output and "data fetch" in result.output

    result = runner.invoke(app, ["list", "--data-dir", str(tmp_path / "missing")])
    assert isinstance(result.exception, DataError)  # the main CLI prints it as one line
