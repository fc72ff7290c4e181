"""Export a run's transcripts and unit results as tidy files."""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path

import pandas as pd

from ..report.files import output_dir, write_csv, write_lines
from .provenance import call_provenance
from .record import RunRecord, read_run, record_from_store
from .store import RunStore, run_lock, run_locked


def calls_frame(run: Path | RunRecord) -> pd.DataFrame:
    """One row per stored call (a model's, or an answer recorded for a person, a fixed list, a strategy or
    a Python function): unit, role, model, full request and answer, timing and usage, and how the answer
    came (``how``, ``response_s``, ``refused``, ``refused_texts``: :mod:`.provenance`)."""
    record = run if isinstance(run, RunRecord) else read_run(run)
    rows = []
    for call in record.calls:
        how, seconds, refused = call_provenance(call)
        rows.append(
            {
                "unit_id": call.unit_id,
                "seq": call.seq,
                "role": call.role,
                "model": call.model,
                "messages": json.dumps(call.request.get("messages"), ensure_ascii=False),
                "answer": call.response.get("text"),
                "finish_reason": call.response.get("finish_reason"),
                "latency_s": call.latency_s,
                "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "attempts": call.attempts,
                "cached": call.cached,
                "how": how,
                "response_s": seconds,
                "refused": len(refused),
                "refused_texts": json.dumps(refused, ensure_ascii=False) if refused else "",
            }
        )
    return pd.DataFrame(rows)


def units_frame(run: Path | RunRecord) -> pd.DataFrame:
    """One row per work unit: status, error and result (as JSON).

    A unit the store holds as ``running`` reads ``interrupted`` when no process holds the run's lock (the
    run was stopped or crashed mid-unit; ``llmpsych run --resume`` finishes it); it stays ``running`` while
    the run really executes, here or elsewhere (:func:`~llmpsych.runs.store.run_locked`)."""
    record = run if isinstance(run, RunRecord) else read_run(run)
    stopped = any(u.status == "running" for u in record.units) and not run_locked(record.run_dir)
    rows = [
        {
            "unit_id": u.unit_id,
            "status": "interrupted" if stopped and u.status == "running" else u.status,
            "attempts": u.attempts,
            "error": u.error,
            "payload": json.dumps(u.payload),
            "result": json.dumps(u.result),
        }
        for u in record.units
    ]
    return pd.DataFrame(rows)


def export_run(run_dir: Path, out_dir: Path | None = None) -> list[Path]:
    """Write ``transcripts.jsonl``, ``calls.csv`` and ``units.csv`` into ``out_dir`` (default RUN/export).

    Each file is written atomically; CSV text cells are neutralised against spreadsheet formulas
    (:func:`~llmpsych.report.files.neutralise_cell`), the JSONL keeps every text exactly. Writing into
    the run folder holds the run's lock. A folder without a run store is an error and nothing is created.
    The store is read once (:func:`~llmpsych.runs.record.read_run`).
    """
    inside = out_dir is None or _inside(out_dir, run_dir)
    # the store is checked before the lock file is made, and read once the lock is held
    with RunStore.in_dir(run_dir, readonly=True) as store, run_lock(run_dir) if inside else nullcontext():
        record = record_from_store(store, run_dir)
        store.close()
        folder = output_dir(run_dir, "export") if out_dir is None else output_dir(out_dir)
        transcripts = write_lines(
            folder / "transcripts.jsonl",
            (json.dumps(call.as_dict(), ensure_ascii=False) + "\n" for call in record.calls),
        )
        calls_csv = write_csv(calls_frame(record), folder / "calls.csv")
        units_csv = write_csv(units_frame(record), folder / "units.csv")
    return [transcripts, calls_csv, units_csv]


def _inside(path: Path, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base
