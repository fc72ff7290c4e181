"""Export a run's transcripts and unit results as tidy files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .store import RunStore


def calls_frame(run_dir: Path) -> pd.DataFrame:
    """One row per model call: unit, role, model, full request and answer, timing and usage."""
    store = RunStore.in_dir(run_dir)
    try:
        rows = [
            {
                "unit_id": call["unit_id"],
                "seq": call["seq"],
                "role": call["role"],
                "model": call["model"],
                "messages": json.dumps(call["request"].get("messages"), ensure_ascii=False),
                "answer": call["response"].get("text"),
                "finish_reason": call["response"].get("finish_reason"),
                "latency_s": call["latency_s"],
                "prompt_tokens": call["prompt_tokens"],
                "completion_tokens": call["completion_tokens"],
                "attempts": call["attempts"],
                "cached": call["cached"],
            }
            for call in store.calls()
        ]
    finally:
        store.close()
    return pd.DataFrame(rows)


def units_frame(run_dir: Path) -> pd.DataFrame:
    """One row per work unit: status, error and result (as JSON)."""
    store = RunStore.in_dir(run_dir)
    try:
        rows = [
            {
                "unit_id": u.unit_id,
                "status": u.status,
                "attempts": u.attempts,
                "error": u.error,
                "payload": json.dumps(u.payload),
                "result": json.dumps(u.result),
            }
            for u in store.units()
        ]
    finally:
        store.close()
    return pd.DataFrame(rows)


def export_run(run_dir: Path, out_dir: Path | None = None) -> list[Path]:
    """Write ``transcripts.jsonl``, ``calls.csv`` and ``units.csv`` into ``out_dir`` (default: the run)."""
    out_dir = out_dir or run_dir / "export"
    out_dir.mkdir(parents=True, exist_ok=True)
    store = RunStore.in_dir(run_dir)
    transcripts = out_dir / "transcripts.jsonl"
    try:
        with transcripts.open("w", encoding="utf-8") as handle:
            for call in store.calls():
                handle.write(json.dumps(call, ensure_ascii=False) + "\n")
    finally:
        store.close()
    calls_csv, units_csv = out_dir / "calls.csv", out_dir / "units.csv"
    calls_frame(run_dir).to_csv(calls_csv, index=False)
    units_frame(run_dir).to_csv(units_csv, index=False)
    return [transcripts, calls_csv, units_csv]
