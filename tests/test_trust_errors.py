"""Clear errors, never "internal error" (issue 14, class 7): hostile or broken files through the real CLI.

Each case must end with exit status 2 and one line on stderr that names the file, with no traceback.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest

from llmpsych.runs import parse_run_config, start_run
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli as _cli

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + zlib.compress(bytes(range(256)) * 8)
BILLION_LAUGHS = "\n".join(
    ["task: echo", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    + ["options: {x: *a8}"]
)


def _one_clear_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: ") and "internal error" not in line and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# -- run configs --------------------------------------------------------------------------------------
RUN_CONFIGS = {
    "png.toml": (PNG, "binary"),
    "png.yaml": (PNG, "binary"),
    "latin1.toml": ('task = "echo"\nmodel = "caf\xe9"\n'.encode("latin-1"), "not UTF-8"),
    "task-number.toml": (b"task = 5\n", "task"),
    "model-list.toml": (b'task = "echo"\nmodel = ["a", "b"]\n', "model"),
    "params-list.toml": (b'task = "echo"\nparams = [1, 2]\n', "params"),
    "options-string.toml": (b'task = "echo"\noptions = "units=3"\n', "options"),
    "models-list.yaml": (b"task: echo\nmodels: [a, b]\n", "models"),
    "seed-text.yaml": (b"task: echo\nseed: many\n", "seed"),
    "temperature-text.yaml": (b"task: echo\nparams: {temperature: hot}\n", "temperature"),
    "top-list.yaml": (b"- task: echo\n", "mapping"),
    "top-scalar.yaml": (b"echo\n", "mapping"),
    "task-option-type.yaml": (b"task: echo\noptions: {units: many}\n", "units"),
    "python-tag.yaml": (b"task: !!python/object/apply:os.system ['echo pwned']\n", "invalid YAML"),
    "billion-laughs.yaml": (BILLION_LAUGHS.encode(), "expands to more than"),
    "deep.yaml": (b"task: echo\noptions: {x: " + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "config file"),
    "key-number.yaml": (b"task: echo\n5: x\n", "5"),
}


@pytest.mark.parametrize("name", sorted(RUN_CONFIGS))
def test_a_broken_run_config_is_one_line_naming_the_file(tmp_path: Path, name: str) -> None:
    data, needle = RUN_CONFIGS[name]
    config = tmp_path / name
    config.write_bytes(data)
    out = tmp_path / "out"
    result = _cli("run", str(config), "--out", str(out), "--no-progress")
    _one_clear_line(result, str(config), needle)
    assert not out.exists()


def test_a_100_mb_run_config_is_refused_before_it_is_read(tmp_path: Path) -> None:
    config = tmp_path / "huge.toml"
    with config.open("wb") as handle:  # sparse: 100 MB on paper, nothing on disk
        handle.truncate(100_000_000)
    _one_clear_line(_cli("run", str(config)), str(config), "more than a config file may hold")


def test_a_run_config_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "config.toml"
    folder.mkdir()
    _one_clear_line(_cli("run", str(folder)), str(folder), "folder")


# -- the user config ---------------------------------------------------------------------------------
USER_CONFIGS = {
    "png": (PNG, "binary"),
    "endpoints-list": (b"endpoints = [1, 2]\n", "endpoints"),
    "endpoint-string": (b'[endpoints]\nmylab = "http://x"\n', "endpoints.mylab"),
    "concurrency-text": (b'[endpoints.mylab]\nconcurrency = "lots"\n', "concurrency"),
    "cache-list": (b"cache = [true]\n", "cache"),
    "enabled-list": (b"[cache]\nenabled = [1]\n", "enabled"),
    "bad-toml": (b"[cache\n", "not valid TOML"),
}


@pytest.mark.parametrize("name", sorted(USER_CONFIGS))
def test_a_broken_user_config_is_one_line_naming_it(tmp_path: Path, name: str) -> None:
    data, needle = USER_CONFIGS[name]
    config = tmp_path / "config.toml"
    config.write_bytes(data)
    result = _cli("cache", "stats", env={"LLMPSYCH_CONFIG": str(config)})
    _one_clear_line(result, str(config), needle)


def test_a_huge_or_folder_user_config_is_one_line(tmp_path: Path) -> None:
    huge = tmp_path / "huge.toml"
    with huge.open("wb") as handle:
        handle.truncate(100_000_000)
    _one_clear_line(
        _cli("cache", "stats", env={"LLMPSYCH_CONFIG": str(huge)}),
        str(huge),
        "more than a config file may hold",
    )
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    _one_clear_line(_cli("cache", "stats", env={"LLMPSYCH_CONFIG": str(folder)}), str(folder), "folder")


# -- run stores ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("store") / "run"
    with FaultServer() as server:
        config = parse_run_config(
            {
                "task": "echo",
                "model": "openai-compatible/m",
                "base_url": server.base_url,
                "cache": False,
                "options": {"units": 200, "turns": 2},
            }
        )
        start_run(config, run_dir, False)
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return run_dir


def _copy_run(finished_run: Path, tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(finished_run / "run.sqlite", run_dir / "run.sqlite")
    return run_dir


def _random_bytes(store: Path) -> None:
    store.write_bytes(os.urandom(64 * 1024))


def _truncated(store: Path) -> None:
    size = store.stat().st_size
    with store.open("r+b") as handle:
        handle.truncate(size // 3)


def _wrong_schema(store: Path) -> None:
    store.unlink()
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, result TEXT)")


def _wrong_columns(store: Path) -> None:
    store.unlink()
    with sqlite3.connect(store) as db:
        for table in ("meta", "units", "calls"):
            db.execute(f"CREATE TABLE {table} (something TEXT)")


def _newer(store: Path) -> None:
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA user_version=99")


def _garbled_json(store: Path) -> None:
    with sqlite3.connect(store) as db:
        db.execute("UPDATE meta SET value = '{not json' WHERE key = 'config'")
        db.execute("UPDATE calls SET response = '{not json' WHERE rowid = 3")


def _folder(store: Path) -> None:
    store.unlink()
    store.mkdir()


def _link(store: Path) -> None:
    elsewhere = store.parent.parent / "elsewhere.sqlite"
    store.rename(elsewhere)
    store.symlink_to(elsewhere)


def _wal_link(store: Path) -> None:
    victim = store.parent.parent / "victim"
    victim.write_text("precious\n")
    store.with_name("run.sqlite-wal").symlink_to(victim)


STORES = {
    "random-bytes": (_random_bytes, "file is not a database"),
    "truncated": (_truncated, "malformed"),
    "wrong-schema": (_wrong_schema, "not an llmpsych run store"),
    "wrong-columns": (_wrong_columns, "lacks"),
    "newer-version": (_newer, "newer llmpsych"),
    "garbled-json": (_garbled_json, "run store"),
    "folder": (_folder, "is a folder"),
    "symlink": (_link, "symbolic link"),
    "wal-symlink": (_wal_link, "symbolic link"),
}


#: Every damage through ``analyze``; ``export`` and ``run --resume`` open the store the same way
#: (``RunStore``), so three kinds of damage each are enough to show they take that path.
STORE_CASES = [(case, "analyze") for case in sorted(STORES)] + [
    (case, command)
    for case in ("random-bytes", "symlink", "newer-version", "garbled-json")
    for command in ("export", "resume")
]


@pytest.mark.parametrize(("case", "command"), STORE_CASES)
def test_a_damaged_or_foreign_run_store_is_one_line_naming_it(
    finished_run: Path, tmp_path: Path, case: str, command: str
) -> None:
    run_dir = _copy_run(finished_run, tmp_path)
    store = run_dir / "run.sqlite"
    damage, needle = STORES[case]
    damage(store)
    args = (
        ["run", "--resume", str(run_dir), "--no-progress"] if command == "resume" else [command, str(run_dir)]
    )
    _one_clear_line(_cli(*args), str(store), needle)
    if case == "wal-symlink":
        assert (tmp_path / "victim").read_text() == "precious\n"


# -- released data files ----------------------------------------------------------------------------
RELEASED = {
    "binary": PNG,
    "latin-1": '{"player_data": "caf\xe9"}'.encode("latin-1"),
    "truncated": b'{"meta": {"name_exp": "guessing_game", "round_id": 3}, "player_data": [{"records": [1',
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("case", sorted(RELEASED))
def test_a_malformed_gamabench_log_is_one_line(tmp_path: Path, case: str) -> None:
    log = tmp_path / "guessing_game_v1_1.json"
    log.write_bytes(RELEASED[case])
    _one_clear_line(_cli("gamabench", "rescore", str(log)), str(log))


@pytest.mark.parametrize("case", sorted(RELEASED))
def test_a_malformed_reliability_save_file_is_one_line(tmp_path: Path, case: str) -> None:
    save = tmp_path / "results.json"
    save.write_bytes(RELEASED[case])
    _one_clear_line(_cli("reliability", "rescore", str(save)), str(save))


@pytest.mark.parametrize("case", sorted(RELEASED))
def test_a_malformed_scale_file_is_one_line(tmp_path: Path, case: str) -> None:
    scale = tmp_path / "scale.json"
    scale.write_bytes(RELEASED[case])
    _one_clear_line(_cli("scales", "validate", str(scale)), str(scale))


@pytest.mark.parametrize("case", ["binary", "latin-1"])
def test_a_malformed_emotionbench_results_file_is_one_line(
    tmp_path: Path, case: str, seed_data: Path
) -> None:
    results = tmp_path / "gpt-3.5-turbo-PANAS-testing.csv"
    results.write_bytes(RELEASED[case])
    result = _cli("emotionbench", "rescore", str(results), "--scale", "PANAS", "--data-dir", str(seed_data))
    _one_clear_line(result, str(results))


def test_a_billion_laughs_scale_file_is_refused(tmp_path: Path) -> None:
    scale = tmp_path / "scale.yaml"
    scale.write_text(
        "name: X\nresponse: {min: 1, max: 5}\nscoring: sum\n"
        + BILLION_LAUGHS.split("\n", 1)[1].replace("options: {x: *a8}", "items: *a8")
    )
    _one_clear_line(_cli("scales", "validate", str(scale)), str(scale), "expands to more than")
