"""How long ``read_run`` takes on a big run: a synthetic store of 2,500 units and 50,000 calls.

``python benchmarks/read_run.py [--units 2500] [--calls-per-unit 20]`` writes the store into a temporary
folder through :class:`~llmpsych.runs.store.RunStore` (each call a short conversation and answer, each
result a small dict, as an administration stores them) and prints the seconds of ``read_run``, of
iterating every call (JSON parsed on access) and of ``calls.frame()``, best of three.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from llmpsych.runs import parse_run_config, read_run
from llmpsych.runs.store import RunStore, finish_unit_statements, put_call_statements


def build(run_dir: Path, units: int, calls_per_unit: int) -> None:
    """A finished run store with ``units`` units of ``calls_per_unit`` calls each."""
    config = parse_run_config({"task": "echo", "model": "openai-compatible/m", "base_url": "http://x:1/v1"})
    with RunStore.in_dir(run_dir, create=True) as store:
        store.set_meta("config", config.stored())
        store.set_meta("manifest", {"task": "echo", "units": units})
        store.add_units((f"u{u:06d}", {"index": u}) for u in range(units))
        for u in range(units):
            unit_id = f"u{u:06d}"
            statements = []
            for seq in range(calls_per_unit):
                messages = [{"role": "user", "content": f"unit {u} statement {seq}: rate it from 1 to 5"}]
                response = {"text": f"{seq % 5 + 1}", "usage": {"prompt_tokens": 20, "completion_tokens": 1}}
                request = {"model": "m", "messages": messages, "max_tokens": 8}
                statements += put_call_statements(unit_id, f"k{seq}", seq, "subject", "m", request, response)
            result = {"answers": {str(i): i % 5 + 1 for i in range(calls_per_unit)}, "asks": calls_per_unit}
            store.write(statements + finish_unit_statements(unit_id, result))


def best_of(runs: int, action: object) -> float:
    """The fastest of ``runs`` timings of ``action()``, in seconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=2500)
    parser.add_argument("--calls-per-unit", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run_dir = Path(folder) / "run"
        build(run_dir, args.units, args.calls_per_unit)
        record = read_run(run_dir)
        print(f"{len(record.units)} units, {len(record.calls)} calls")
        print(f"read_run:           {best_of(3, lambda: read_run(run_dir)):.2f} s")
        print(f"every call parsed:  {best_of(3, lambda: sum(1 for _ in record.calls)):.2f} s")
        print(f"calls.frame():      {best_of(3, record.calls.frame):.2f} s")


if __name__ == "__main__":
    main()
