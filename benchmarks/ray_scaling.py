"""Units per second on 1, 2 and 4 Ray actors against the local executor, and what bounds a cluster.

    python benchmarks/ray_scaling.py            # (a) HTTP, (b) embedded model, overhead, commit ceiling
    python benchmarks/ray_scaling.py --quick    # fewer units, (b) with 1 and 2 actors only
    python benchmarks/ray_scaling.py --no-model # without (b)
    python benchmarks/ray_scaling.py --sweep    # (e) only: a sweep's runs as Ray tasks

Everything runs through the run engine (``start_run``: store, manifest, execution, analysis), response
cache off, on one private Ray instance on 127.0.0.1 started once by this script.

(a) the echo task (one request per unit) against the fixed-latency asyncio server of ``_common`` (its own
    process), with a concurrency cap of ``--cap`` requests per actor; the local executor has the same cap
    in one process. The ideal is actors x cap / latency units per second.
(b) the echo task on the embedded model (max_tokens 8), one llama.cpp thread per actor; the local
    executor uses every core, as a local run does.
(c) Ray's overhead per unit: the echo task against the same server with no latency and a cap of 64,
    local vs one actor; (ray seconds - local seconds) / units.
(d) the driver's commit ceiling: units per second the driver records (one call and the unit's result
    each, through the grouped commits, 64 units in flight) with no model at all. However many actors a
    cluster has, a run cannot record faster.
(e) a sweep: 8 small echo runs (40 units each, one request per unit, cap 8) against the fixed-latency
    server, through ``run_sweep``: the local executor runs them one after another; with ``--executor ray``
    each run is one Ray task, 1 or 2 in flight (``actors``). Runs per second over the whole sweep (wall
    time: folders, manifests, analysis and the tasks' start-up included).

Reported per measurement: execution seconds (``RunSummary.seconds``, after the actors are up), units/s,
ratio to the local executor, and actor start-up (the executor placing its actors and each opening the
task and its model clients, measured alone). Results go to ``benchmarks/results/ray_scaling.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import LoadMonitor, ServerProcess, check_quiet, markdown_table, write_results

from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.executors import ExecutorSettings, use
from llmpsych.runs.group_commit import GroupCommit
from llmpsych.runs.ray_executor import connect
from llmpsych.runs.store import RunStore, finish_unit_statements, put_call_statements
from llmpsych.runs.sweep import PlannedRun, run_sweep

LATENCY_S = 0.1


def _config(model: str, base_url: str | None, units: int, cap: int, max_tokens: int = 4) -> Any:
    data: dict[str, Any] = {
        "task": "echo",
        "model": model,
        "cache": False,
        "concurrency": cap,
        "params": {"temperature": 0},
        "options": {"units": units, "max_tokens": max_tokens},
    }
    if base_url is not None:
        data["base_url"] = base_url
    return parse_run_config(data)


def _measure(config: Any, root: Path, label: str, settings: ExecutorSettings) -> dict[str, Any]:
    """One run; its execution seconds, wall seconds and units per second."""
    started = time.perf_counter()
    with use(settings):
        outcome = start_run(config, root / label, False)
    wall = time.perf_counter() - started
    summary = outcome.summary
    assert summary.failed == 0 and summary.done == summary.total, summary.errors[:3]
    return {
        "label": label,
        "actors": settings.actors if settings.kind == "ray" else 0,
        "units": summary.done,
        "seconds": round(summary.seconds, 3),
        "wall_s": round(wall, 3),
        "units_per_s": round(summary.done / summary.seconds, 2),
    }


def _series(config: Any, root: Path, name: str, actors: list[int], threads: int) -> list[dict[str, Any]]:
    local = _measure(config, root, f"{name}-local", ExecutorSettings())
    rows = [local]
    for count in actors:
        settings = ExecutorSettings(kind="ray", actors=count, threads_per_actor=threads)
        row = _measure(config, root, f"{name}-ray{count}", settings)
        row["ratio_to_local"] = round(row["units_per_s"] / local["units_per_s"], 2)
        row["actor_startup_s"] = round(_startup(config, root / f"{name}-startup{count}", settings), 2)
        rows.append(row)
    return rows


def _startup(config: Any, run_dir: Path, settings: ExecutorSettings) -> float:
    """Seconds the Ray executor takes to place its actors and have each open the task and its clients
    (what a run waits for before its first unit), measured alone."""
    from llmpsych.runs.ray_executor import RayExecutor, shutdown_actors
    from llmpsych.runs.runner import open_clients
    from llmpsych.runs.task import task_class

    shutdown_actors()  # the run before left its actors for the next run: start afresh
    task = task_class(config.task)(config)
    run_dir.mkdir()
    store = RunStore.in_dir(run_dir, create=True)

    async def start() -> float:
        clients = open_clients(config, None, task.model_roles())
        executor = RayExecutor(settings)
        started = time.perf_counter()
        try:
            await executor.open(task, config, clients, store)
            return time.perf_counter() - started
        finally:
            await executor.aclose()
            for client in clients.values():
                await client.aclose()

    try:
        return asyncio.run(start())
    finally:
        store.close()


async def _commit_ceiling(path: Path, units: int, in_flight: int = 64) -> float:
    """Units per second the driver records: one call and one result per unit, grouped commits."""
    store = RunStore(path, create=True)
    store.add_units((f"u{i:06d}", {"index": i}) for i in range(units))
    commits = GroupCommit(store)
    request = {"model": "m", "messages": [{"role": "user", "content": "unit seat 0: say something"}]}
    response = {"text": "answer-0123456789abcdef", "latency_s": 0.1, "usage": {"prompt_tokens": 12}}
    queue = list(range(units))

    async def writer() -> None:
        while queue:
            i = queue.pop()
            unit = f"u{i:06d}"
            await commits.write(put_call_statements(unit, "k#0", 1, "subject", "m", request, response))
            await commits.write(finish_unit_statements(unit, [["answer-0123456789abcdef"]]))

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(in_flight)))
    seconds = time.perf_counter() - started
    store.close()
    return units / seconds


def _sweep_series(base_url: str, root: Path, runs: int, units: int, cap: int) -> list[dict[str, Any]]:
    """(e): the same sweep locally (runs one after another) and as Ray tasks, 1 and 2 in flight."""
    planned = [
        PlannedRun(f"r{i}", _config("openai-compatible/m", base_url, units, cap, max_tokens=4 + i))
        for i in range(runs)
    ]
    rows: list[dict[str, Any]] = []
    for label, settings in [
        ("sweep-local", ExecutorSettings()),
        ("sweep-ray1", ExecutorSettings(kind="ray", actors=1)),
        ("sweep-ray2", ExecutorSettings(kind="ray", actors=2)),
    ]:
        started = time.perf_counter()
        with use(settings):
            outcomes = run_sweep(planned, root / label, progress=False)
        wall = time.perf_counter() - started
        assert all(o.summary.done == units and o.summary.failed == 0 for o in outcomes)
        row: dict[str, Any] = {
            "label": label,
            "tasks_in_flight": settings.actors if settings.kind == "ray" else 0,
            "runs": runs,
            "wall_s": round(wall, 2),
            "runs_per_s": round(runs / wall, 3),
            "mean_run_exec_s": round(sum(o.summary.seconds for o in outcomes) / runs, 3),
        }
        # what a run costs beyond executing its units: folder, manifest, analysis (and on Ray the task's
        # dispatch and its worker's start-up), per run slot
        in_flight = max(1, row["tasks_in_flight"])
        row["overhead_per_run_s"] = round(wall * in_flight / runs - row["mean_run_exec_s"], 3)
        if rows:
            row["ratio_to_local"] = round(row["runs_per_s"] / rows[0]["runs_per_s"], 2)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer units; (b) with 1 and 2 actors")
    parser.add_argument("--no-model", action="store_true", help="skip (b), the embedded model")
    parser.add_argument("--cap", type=int, default=8, help="concurrency cap per actor in (a)")
    parser.add_argument("--sweep", action="store_true", help="only (e), a sweep's runs as Ray tasks")
    args = parser.parse_args()
    if args.sweep:
        _main_sweep(args.cap)
        return
    quick = args.quick
    background = check_quiet()
    actors = [1, 2, 4]
    connect(ExecutorSettings(kind="ray", actors=max(actors)))  # one private loopback instance for all
    results: dict[str, Any] = {
        "latency_s": LATENCY_S,
        "cap_per_actor": args.cap,
        "background_cores": background,
    }
    with tempfile.TemporaryDirectory() as tmp, LoadMonitor() as load:
        root = Path(tmp)
        with ServerProcess("asyncio", LATENCY_S) as server:
            units = 160 if quick else 480
            results["http"] = _series(
                _config("openai-compatible/m", server.base_url, units, args.cap), root, "http", actors, 0
            )
            for row in results["http"]:
                row["ideal_units_per_s"] = round(max(1, row["actors"]) * args.cap / LATENCY_S, 1)
        with ServerProcess("asyncio", 0.0) as server:
            units = 300 if quick else 1000
            config = _config("openai-compatible/m", server.base_url, units, 64)
            local = _measure(config, root, "overhead-local", ExecutorSettings())
            remote = _measure(config, root, "overhead-ray1", ExecutorSettings(kind="ray", actors=1))
            results["overhead"] = {
                "local": local,
                "ray1": remote,
                "ms_per_unit": round(1000 * (remote["seconds"] - local["seconds"]) / units, 2),
            }
        if not args.no_model:
            units = 8 if quick else 16
            config = _config("local/qwen2.5-0.5b", None, units, 64, max_tokens=8)
            results["embedded"] = _series(config, root, "embedded", [1, 2] if quick else actors, 1)
        results["driver_commit_units_per_s"] = round(
            asyncio.run(_commit_ceiling(root / "ceiling.sqlite", 20_000))
        )
        with ServerProcess("asyncio", LATENCY_S) as server:
            results["sweep"] = _sweep_series(server.base_url, root, 8, 40, args.cap)
    results["other_cores_during"] = load.other_cores

    headers = ["run", "actors", "units", "exec s", "units/s", "x local", "start-up s"]

    def table(rows: list[dict[str, Any]]) -> str:
        return markdown_table(
            headers,
            [
                [
                    r["label"],
                    r["actors"],
                    r["units"],
                    r["seconds"],
                    r["units_per_s"],
                    r.get("ratio_to_local", 1.0),
                    r.get("actor_startup_s", "-"),
                ]
                for r in rows
            ],
        )

    print("(a) fixed-latency server, cap", args.cap, "per actor\n" + table(results["http"]))
    if "embedded" in results:
        print("\n(b) embedded model, one thread per actor\n" + table(results["embedded"]))
    print(f"\n(c) Ray overhead per unit: {results['overhead']['ms_per_unit']} ms")
    print(f"(d) driver commit ceiling: {results['driver_commit_units_per_s']} units/s")
    print("\n(e) a sweep of 8 runs\n" + _sweep_table(results["sweep"]))
    print(write_results("ray_scaling", results, quick))


def _sweep_table(rows: list[dict[str, Any]]) -> str:
    headers = [
        "sweep",
        "tasks in flight",
        "runs",
        "wall s",
        "runs/s",
        "x local",
        "run exec s",
        "overhead/run s",
    ]
    keys = ["label", "tasks_in_flight", "runs", "wall_s", "runs_per_s", "ratio_to_local", "mean_run_exec_s"]
    keys.append("overhead_per_run_s")
    return markdown_table(headers, [[r.get(k, 1.0) for k in keys] for r in rows])


def _main_sweep(cap: int) -> None:
    """``--sweep``: (e) alone, written to ``benchmarks/results/ray_scaling_sweep.json``."""
    background = check_quiet()
    connect(ExecutorSettings(kind="ray", actors=2))
    results: dict[str, Any] = {"latency_s": LATENCY_S, "cap_per_run": cap, "background_cores": background}
    with (
        tempfile.TemporaryDirectory() as tmp,
        LoadMonitor() as load,
        ServerProcess("asyncio", LATENCY_S) as server,
    ):
        results["sweep"] = _sweep_series(server.base_url, Path(tmp), 8, 40, cap)
    results["other_cores_during"] = load.other_cores
    print(
        "(e) a sweep of 8 runs, fixed-latency server, cap", cap, "per run\n" + _sweep_table(results["sweep"])
    )
    print(write_results("ray_scaling_sweep", results, False))


if __name__ == "__main__":
    main()
