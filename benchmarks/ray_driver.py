"""The Ray executor's driver: its CPU per unit, units/s it sustains, units/s rising with actors, the ceiling.

    python benchmarks/ray_driver.py              # (a) 20,000 units, (b) 1/2/4/8 actors, (c) projection
    python benchmarks/ray_driver.py --quick      # (a) 5,000 units, (b) 1/2/4/8 actors, (c)
    python benchmarks/ray_driver.py --units N --skip-scaling

Everything runs through the run engine (``start_run``: store, manifest, execution, analysis), response
cache off, on one private Ray instance on 127.0.0.1 started once by this script, against the asyncio
server of ``_common`` (its own process).

(a) the driver: the echo task (one request per unit) against a server answering at once, on the local
    executor and on 4 actors: units/s (execution seconds, ``RunSummary.seconds``) and the driver's CPU
    per unit (this process's CPU time, every thread, Ray's included, while the units execute), with the
    number of messages each way and units per message.
(b) units in flight scale with the actors: 1, 2, 4 and 8 actors against a server answering each request
    after 1 s, default settings (64 units in flight per actor, ``--concurrency`` 16 per actor): units/s
    against the ideal actors x 16 / 1 s.
(c) the ceiling of a driver: 1 / (driver CPU per unit) from (a), and for 100 actors a model fitted on
    measured costs: driver CPU per unit = u + m x messages per unit, through (a)'s 4-actor run and the
    same on a quarter of the units with a 1 ms batching window (many more messages). With A actors the
    driver gets and sends at most 2 A / window messages a second (``ray_executor.batch_window``: 500 ms
    at 100 actors), so its ceiling is (1 s - 2 A / window x m) / u units a second.

Results go to ``benchmarks/results/ray_driver.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import LoadMonitor, ServerProcess, check_quiet, markdown_table, write_results

import llmpsych.runs.runner as runner
from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.executors import ExecutorSettings, use
from llmpsych.runs.ray_executor import batch_window as _BATCH_WINDOW
from llmpsych.runs.ray_executor import connect, shutdown_actors


def _config(base_url: str, units: int) -> Any:
    return parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": base_url,
            "cache": False,
            "params": {"temperature": 0},
            "options": {"units": units, "max_tokens": 4},
        }
    )


class _DriverCpu:
    """This process's CPU seconds while :func:`~llmpsych.runs.engine.execute` runs (the units only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original = runner.execute

    def __enter__(self) -> _DriverCpu:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return await self.original(*args, **kwargs)
            finally:
                self.seconds = time.process_time() - started

        runner.execute = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        runner.execute = self.original  # type: ignore[assignment]


def _measure(config: Any, run_dir: Path, settings: ExecutorSettings) -> dict[str, Any]:
    from llmpsych.runs import ray_executor

    counters: dict[str, int] = getattr(ray_executor, "COUNTERS", {})
    before = dict(counters)
    with use(settings), _DriverCpu() as cpu:
        outcome = start_run(config, run_dir, False)
    summary = outcome.summary
    assert summary.failed == 0 and summary.done == summary.total, summary.errors[:3]
    row: dict[str, Any] = {
        "label": run_dir.name,
        "actors": settings.actors if settings.kind == "ray" else 0,
        "units": summary.done,
        "seconds": round(summary.seconds, 3),
        "units_per_s": round(summary.done / summary.seconds, 1),
        "driver_cpu_ms_per_unit": round(1000 * cpu.seconds / summary.done, 3),
    }
    if settings.kind == "ray" and counters:
        sent = counters["batches"] - before.get("batches", 0)
        received = counters["messages"] - before.get("messages", 0)
        row["messages_to_actors"] = sent
        row["messages_from_actors"] = received
        row["units_per_message"] = round(summary.done / max(1, sent + received) * 2, 1)
    return row


def _small_window(config: Any, units: int) -> Any:
    """``config`` for (c)'s second point: a quarter of the units, run with a 1 ms batching window."""
    from llmpsych.runs import ray_executor

    ray_executor.batch_window = lambda actors: 0.001  # type: ignore[assignment]
    data = config.model_dump()
    data["options"]["units"] = max(1000, units // 4)
    return parse_run_config(data)


def _projection(rows: list[dict[str, Any]], actors: int = 100) -> dict[str, Any]:
    """(c): driver CPU per unit = u + m x messages per unit, fitted through two measured runs; the
    driver's ceiling with ``actors`` actors, whose messages are capped at 2 x actors / window a second."""
    from llmpsych.runs import ray_executor

    points = [
        ((r["messages_to_actors"] + r["messages_from_actors"]) / r["units"], r["driver_cpu_ms_per_unit"])
        for r in rows
    ]
    (x1, y1), (x2, y2) = points
    per_message = (y2 - y1) / (x2 - x1) if x2 != x1 else 0.0
    per_unit = y1 - per_message * x1
    window = _BATCH_WINDOW(actors)
    messages_per_s = 2 * actors / window
    ceiling = (1000 - messages_per_s * per_message) / per_unit
    ray_executor.batch_window = _BATCH_WINDOW  # type: ignore[assignment]
    return {
        "per_unit_ms": round(per_unit, 4),
        "per_message_ms": round(per_message, 4),
        "actors": actors,
        "window_s": window,
        "messages_per_s_at_most": messages_per_s,
        "driver_cpu_share_for_messages": round(messages_per_s * per_message / 1000, 3),
        "ceiling_units_per_s": round(ceiling),
        "ceiling_at_4_actors_units_per_s": round(1000 / rows[0]["driver_cpu_ms_per_unit"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="5,000 units in (a)")
    parser.add_argument("--units", type=int, default=None, help="units in (a) (default 20,000)")
    parser.add_argument("--skip-scaling", action="store_true", help="without (b)")
    args = parser.parse_args()
    units = args.units or (5_000 if args.quick else 20_000)
    background = check_quiet()
    connect(ExecutorSettings(kind="ray", actors=8))  # one private loopback instance for all
    results: dict[str, Any] = {"background_cores": background}
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, LoadMonitor() as load:
        root = Path(tmp)
        with ServerProcess("asyncio", 0.0) as server:
            config = _config(server.base_url, units)
            warm = _config(server.base_url, 200)
            start_run(warm, root / "warm-local", False)
            local = _measure(config, root / "driver-local", ExecutorSettings())
            ray4 = ExecutorSettings(kind="ray", actors=4)
            with use(ray4):
                start_run(warm, root / "warm-ray4", False)  # the actors up before the measurement
            remote = _measure(config, root / "driver-ray4", ray4)
            remote["ratio_to_local"] = round(remote["units_per_s"] / local["units_per_s"], 2)
            # the same with a 1 ms window: many more messages, for the model's per-message cost
            small = _measure(_small_window(config, units), root / "driver-ray4-1ms-window", ray4)
            results["driver"] = [local, remote, small]
            results["model"] = _projection([remote, small])
        if not args.skip_scaling:
            rows = []
            with ServerProcess("asyncio", 1.0) as server:
                for actors in (1, 2, 4, 8):
                    settings = ExecutorSettings(kind="ray", actors=actors)
                    shutdown_actors()
                    with use(settings):  # the actors up before the measurement
                        start_run(_config(server.base_url, actors), root / f"warm{actors}", False)
                    row = _measure(
                        _config(server.base_url, 96 * actors), root / f"slow-ray{actors}", settings
                    )
                    row["ideal_units_per_s"] = 16 * actors
                    row["share_of_ideal"] = round(row["units_per_s"] / row["ideal_units_per_s"], 3)
                    rows.append(row)
            results["scaling"] = rows
    results["other_cores_during"] = load.other_cores
    print(markdown_table(list(results["driver"][1]), [list(r.values()) for r in results["driver"][1:]]))
    print(markdown_table(list(results["driver"][0]), [list(results["driver"][0].values())]))
    print(results["model"])
    if "scaling" in results:
        print(markdown_table(list(results["scaling"][0]), [list(r.values()) for r in results["scaling"]]))
    print(write_results("ray_driver", results, args.quick))


if __name__ == "__main__":
    main()
