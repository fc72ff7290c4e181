"""Issue 14, a gap of classes 4 and 7: a damaged or foreign response cache.

The cache lives in the user's cache directory (``LLMPSYCH_CACHE_DIR``), where a crash, a full disk, a
copy cut short or another program can leave anything. Every case runs ``llmpsych run`` (a PsychoBench
scale against a real loopback server) or ``llmpsych cache stats`` in a real process on a real file:
a cache that cannot be opened is one line naming it and exit 2; damage met only mid-run turns the cache
off with one warning line and the run completes; a row that is not a result is a counted cache miss,
asked again and replaced, never replayed.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from llmpsych.models.cache import ResponseCache, decode_row
from llmpsych.models.types import ChatResult
from llmpsych.testing.fault_server import FaultServer


def _llmpsych(cache_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLMPSYCH_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "llmpsych", *args], capture_output=True, text=True, env=env)


def _run(
    tmp: Path, server: FaultServer, name: str, seed_data: Path, runs: int = 1
) -> subprocess.CompletedProcess[str]:
    config = {
        "task": "psychobench",
        "model": "openai-compatible/m",
        "base_url": server.base_url,
        "max_retries": 1,
        "data_dir": str(seed_data),
        "options": {"scale": ["DTDD"], "runs": runs, "max_reasks": 0},
    }
    path = tmp / f"{name}.yaml"  # JSON is YAML
    path.write_text(json.dumps(config))
    return _llmpsych(tmp / "cache", "run", str(path), "--no-progress", "--out", str(tmp / name))


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


def _good_cache(path: Path, rows: int = 3) -> None:
    cache = ResponseCache(path)
    for i in range(rows):
        cache.put(f"k{i:05d}", "e", "m", ChatResult(text="x" * 500))
    cache.close()


def _plant_bytes(path: Path) -> None:
    path.write_bytes(random.Random(5).randbytes(5000))


def _plant_truncated(path: Path) -> None:
    _good_cache(path, 2000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _sql(path: Path, *statements: str) -> None:
    """Run statements and close the connection (so that no WAL side file lingers)."""
    db = sqlite3.connect(path)
    try:
        with db:
            for statement in statements:
                db.execute(statement)
    finally:
        db.close()


def _plant_foreign(path: Path) -> None:
    _sql(path, "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('my own data')")


def _plant_wrong_columns(path: Path) -> None:
    _sql(path, "CREATE TABLE responses (key TEXT, value TEXT)")


def _plant_extra_table(path: Path) -> None:
    _good_cache(path)
    _sql(path, "CREATE TABLE notes (body TEXT)")


def _plant_folder(path: Path) -> None:
    path.mkdir()


def _plant_link(path: Path) -> None:
    target = path.parent.parent / "elsewhere.sqlite"
    _good_cache(target)  # even a link to a sound cache: the file must be the user's own, here
    path.symlink_to(target)


def _plant_linked_wal(path: Path) -> None:
    _good_cache(path)
    (path.parent / (path.name + "-wal")).symlink_to(path.parent.parent / "victim")


PLANTS = {
    "random-bytes": (_plant_bytes, "file is not a database"),
    "truncated": (_plant_truncated, "malformed"),
    "foreign-sqlite": (_plant_foreign, "not an llmpsych response cache"),
    "wrong-columns": (_plant_wrong_columns, "not an llmpsych response cache"),
    "extra-table": (_plant_extra_table, "not an llmpsych response cache"),
    "folder": (_plant_folder, "is a folder"),
    "symlink": (_plant_link, "is a symbolic link"),
    "linked-wal": (_plant_linked_wal, "is a symbolic link"),
}


@pytest.mark.parametrize("name", list(PLANTS))
def test_a_cache_that_cannot_be_opened_is_one_line_naming_it(
    name: str, tmp_path: Path, seed_data: Path
) -> None:
    plant, reason = PLANTS[name]
    (tmp_path / "cache").mkdir()
    cache_file = tmp_path / "cache" / "responses.sqlite"
    plant(cache_file)
    before = sorted(p.name for p in (tmp_path / "cache").iterdir())
    with FaultServer() as server:
        run = _run(tmp_path, server, "run", seed_data)
        assert sum(server.hits.values()) == 0  # refused before anything is asked
    _assert_one_line_error(run, str(cache_file), reason)
    _assert_one_line_error(_llmpsych(tmp_path / "cache", "cache", "stats"), str(cache_file), reason)
    # nothing was written into the foreign file or beside it
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == before
    if name == "foreign-sqlite":
        with sqlite3.connect(cache_file) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master")]
        assert tables == ["notes"]


def test_damage_met_mid_run_turns_the_cache_off_and_the_run_completes(
    tmp_path: Path, seed_data: Path
) -> None:
    """Pages overwritten inside the file: it opens, but a lookup meets the damage during the run."""
    (tmp_path / "cache").mkdir()
    cache_file = tmp_path / "cache" / "responses.sqlite"
    _good_cache(cache_file, 5000)
    data = bytearray(cache_file.read_bytes())
    data[4096 * 300 : 4096 * 700] = b"\xff" * (4096 * 400)
    cache_file.write_bytes(bytes(data))
    with FaultServer() as server:
        run = _run(tmp_path, server, "run", seed_data)
        sent = sum(server.hits.values())
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        assert db.execute("SELECT COUNT(*), SUM(cached) FROM calls").fetchone() == (sent, 0)
    assert "Traceback" not in run.stderr
    warnings = [line for line in run.stderr.splitlines() if "response cache" in line]
    assert len(warnings) == 1 and "is damaged" in warnings[0] and str(cache_file) in warnings[0]
    assert (tmp_path / "run" / "valid.csv").read_text().startswith("scale,run,items,valid,")


GARBAGE = [
    "not json at all",
    "[" * 100_000 + "]" * 100_000,  # deeper than Python's recursion limit
    '{"text": 4}',
    json.dumps(
        {**ChatResult(text="A").to_json(), "extra": 1}
    ),  # a key ChatResult does not have (a TypeError before)
]


def test_a_garbage_row_is_a_counted_miss_never_a_replayed_answer(tmp_path: Path, seed_data: Path) -> None:
    cache_file = tmp_path / "cache" / "responses.sqlite"
    with FaultServer() as server:
        first = _run(tmp_path, server, "first", seed_data, runs=4)
        assert first.returncode == 0, first.stderr
        sent = sum(server.hits.values())
        with sqlite3.connect(cache_file) as db:
            keys = [row[0] for row in db.execute("SELECT key FROM responses ORDER BY key")]
            assert len(keys) == sent == 4
            for key, garbage in zip(keys, GARBAGE, strict=False):
                db.execute("UPDATE responses SET result = ? WHERE key = ?", (garbage, key))
        second = _run(tmp_path, server, "second", seed_data, runs=4)
        assert sum(server.hits.values()) == 2 * sent  # all four asked again, none replayed
        third = _run(tmp_path, server, "third", seed_data, runs=4)
        assert sum(server.hits.values()) == 2 * sent  # the fresh answers replaced the garbage
    assert second.returncode == 0 and third.returncode == 0, second.stderr + third.stderr
    assert "4 damaged entries in the response cache" in second.stderr and str(cache_file) in second.stderr
    assert "damaged" not in third.stderr
    for name in ("second", "third"):
        for out in ("valid.csv", "answers.csv", "scores.csv"):
            assert (tmp_path / name / out).read_text() == (tmp_path / "first" / out).read_text()


@pytest.mark.parametrize(
    "text",
    [*GARBAGE, "null", "[]", '"x"', "1e999",
     json.dumps({**ChatResult(text="A").to_json(), "usage": {"prompt_tokens": -1, "completion_tokens": 0}}),
     json.dumps({**ChatResult(text="A").to_json(), "cached": "yes"}),
     json.dumps({**ChatResult(text="A").to_json(), "logprobs": [{"token": 5}]}),
     json.dumps({**ChatResult(text="A").to_json(), "finish_reason": "x" * 65}),
     json.dumps({**ChatResult(text="A").to_json(), "latency_s": None})],
)  # fmt: skip
def test_decode_row_refuses_what_to_json_does_not_write(text: str) -> None:
    assert decode_row(text) is None


def test_a_row_of_an_older_llmpsych_without_newer_fields_is_read() -> None:
    back = decode_row('{"text": "C", "usage": {"prompt_tokens": 3, "completion_tokens": 1}}')
    assert back is not None and back.text == "C" and back.errors == [] and back.usage.prompt_tokens == 3


def test_decode_row_reads_back_what_to_json_writes() -> None:
    result = ChatResult(text="B", finish_reason="stop", logprobs=[{"token": "B", "logprob": -0.1}])
    back = decode_row(json.dumps(result.to_json()))
    assert back is not None and back.cached and back.text == "B" and back.logprobs == result.logprobs
