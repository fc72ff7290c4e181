"""Small readers of a finished run and a CLI runner, shared by the test suite and the benchmarks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

from llmpsych.runs.record import read_run


def unit_results(run_dir: Path) -> dict[str, Any]:
    """Each stored unit's result, by unit id."""
    return {u.unit_id: u.result for u in read_run(run_dir).units}


def call_keys(run_dir: Path) -> list[tuple[str, str]]:
    """Every stored call as (unit id, call key), read straight from SQLite (duplicates would show).

    Opened read-only: a poll while a run is starting must never create the store file itself (a run
    refuses a folder that already holds one)."""
    with closing(sqlite3.connect(f"{(run_dir / 'run.sqlite').resolve().as_uri()}?mode=ro", uri=True)) as db:
        return db.execute("SELECT unit_id, call_key FROM calls").fetchall()


def run_cli(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m llmpsych ARGS`` in a fresh process (``env`` added to this one's), wide enough that
    tables do not wrap."""
    return subprocess.run(
        [sys.executable, "-m", "llmpsych", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250", **(env or {})},
        timeout=timeout,
    )


def first_request(run_dir: Path, unit_id: str) -> list[dict[str, Any]]:
    """The messages of a unit's first stored call (lowest sequence number): what the model was sent."""
    calls = read_run(run_dir).calls.of_unit(unit_id)
    if not calls:
        raise AssertionError(f"unit {unit_id} of {run_dir} has no stored call")
    return list(min(calls, key=lambda c: c.seq).request["messages"])
