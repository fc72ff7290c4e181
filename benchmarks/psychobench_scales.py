"""PsychoBench: all 13 scales x 10 runs against a server with a fixed 100 ms latency vs the critical path.

    python benchmarks/psychobench_scales.py          # 13 scales x 10 runs, three administrations, 3 repeats
    python benchmarks/psychobench_scales.py --quick  # 13 scales x 2 runs, one repeat

The server (its own process, asyncio, HTTP/1.1 keep-alive) answers every request after 100 ms with a valid
reply: ``index: score`` for each statement listed in the last user message, inside the range the system
prompt states. With ``--omit-first`` behaviour (the ``reask`` administration) it leaves the last statement
of every first answer out, so each chunk needs exactly one re-ask. The client is the full run engine in a
fresh Python process per measurement: task ``psychobench`` (official data from ``../shared/seed-data``,
items shuffled per run), model ``openai-compatible/bench``, cache off, concurrency = workers = 256 (more
than the 130 units, so every unit starts at once).

Units run concurrently and each unit's requests are sequential, so the ideal wall time is the critical
path: the longest chain of sequential requests in any unit (its ``asks``) x 100 ms. Administrations:

* ``whole``: the whole scale in one prompt (the default): 1 request per unit, ideal 0.1 s;
* ``chunks30``: 30 statements a turn, as the official code did: CABIN (164 items) needs 6 turns, ideal 0.6 s;
* ``reask``: whole scale, one re-ask per unit: ideal 0.2 s.

Measured: ``execute_s`` (the engine's execution, from the first unit to the last result stored),
``ratio`` = execute / ideal (target <= 1.2), ``overhead_s`` = execute - ideal, the client's CPU time during
the execution, how many cores other processes kept busy, and the analysis time that follows (tables,
tests, report). Beside it, in the same process, the replay floor: the run's own requests (read back from
its store) sent again to the same server by a bare asyncio client, one new connection per unit as the run
opens them, each unit's requests in sequence (``_common.replay_chains``); ``execute / floor`` is what the
framework adds to what this server and machine allow. Each administration is measured ``--repeats``
times (fresh process each); the best and the median ratio are kept.
Results go to ``benchmarks/results/psychobench_scales.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _common import (
    LoadMonitor,
    ServerProcess,
    busy_cores,
    completion_response,
    cpu_seconds,
    markdown_table,
    replay_chains,
    serve_asyncio,
    stored_chains,
    write_results,
)

LATENCY_S = 0.1
CONCURRENCY = 256
SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"
ADMINISTRATIONS = {"whole": {}, "chunks30": {"chunk_size": 30}, "reask": {}}
_RANGE = re.compile(r"from (-?\d+) to (-?\d+)")
_ITEM = re.compile(r"^(\d+)\. ", re.MULTILINE)


# -- server ---------------------------------------------------------------------------------------------
def _reply(body: bytes, omit_first: bool) -> bytes:
    """A chat completion scoring every statement of the last user message within the stated range."""
    request = json.loads(body)
    messages = request["messages"]
    low, high = (int(v) for v in _RANGE.search(messages[0]["content"]).groups())
    last = messages[-1]["content"]
    items = [int(i) for i in _ITEM.findall(last)]
    if not items:  # a re-ask: "These statements still need a valid score: 3, 7. ..."
        items = [int(i) for i in re.findall(r"\d+", last.split(":", 1)[1].split(".", 1)[0])]
    elif omit_first and len(items) > 1:
        items = items[:-1]
    width = high - low + 1
    content = "\n".join(f"{i}: {low + (i * 7 + len(messages)) % width}" for i in items)
    return completion_response(content, usage=(300, 60))


async def _serve(port: int, latency: float, omit_first: bool) -> None:
    await serve_asyncio(port, latency, functools.partial(_reply, omit_first=omit_first))


# -- client ---------------------------------------------------------------------------------------------
def measure(base_url: str, administration: str, runs: int) -> dict[str, Any]:
    """One PsychoBench run (all scored scales) through the run engine in this process."""
    from llmpsych.psychobench.task import PsychoBenchTask
    from llmpsych.runs import RunStore, parse_run_config, runner, start_run

    marks: dict[str, float] = {}
    analyze = PsychoBenchTask.analyze

    def analyze_after_noting_cpu(self: PsychoBenchTask, run_dir: Path) -> list[Path]:
        marks["cpu_at_analysis"] = cpu_seconds()
        return analyze(self, run_dir)

    PsychoBenchTask.analyze = analyze_after_noting_cpu  # type: ignore[method-assign]
    execute = runner.execute

    async def execute_noting_cpu(*args: Any, **kwargs: Any) -> Any:
        marks["cpu_at_execute"] = cpu_seconds()
        try:
            return await execute(*args, **kwargs)
        finally:
            marks["cpu_after_execute"] = cpu_seconds()

    runner.execute = execute_noting_cpu  # type: ignore[assignment]
    options = {"runs": runs, **ADMINISTRATIONS[administration]}
    config = parse_run_config(
        {
            "task": "psychobench",
            "model": "openai-compatible/bench",
            "base_url": base_url,
            "cache": False,
            "concurrency": CONCURRENCY,
            "workers": CONCURRENCY,
            "data_dir": str(SEED_DATA),
            "options": options,
        }
    )
    with tempfile.TemporaryDirectory(prefix="llmpsych-psychobench-bench-") as tmp:
        cpu0 = cpu_seconds()
        with LoadMonitor() as load:
            started = time.perf_counter()
            outcome = start_run(config, Path(tmp) / "run", show_progress=False)
            total = time.perf_counter() - started
        store = RunStore.in_dir(Path(tmp) / "run")
        try:
            units = store.units()
        finally:
            store.close()
        port = int(urlsplit(base_url).port or 80)
        floor = asyncio.run(replay_chains(port, stored_chains(Path(tmp) / "run")))
        valid = [len(u.result["answers"]) / max(1, len(u.result["order"])) for u in units if u.result]
    chain = max(int(u.result["asks"]) for u in units if u.result)
    ideal = chain * LATENCY_S
    return {
        "administration": administration,
        "units": outcome.summary.total,
        "failed": outcome.summary.failed,
        "requests": outcome.summary.calls_sent,
        "longest_chain": chain,
        "min_valid_rate": min(valid) if valid else None,
        "execute_s": outcome.summary.seconds,
        "ideal_s": ideal,
        "ratio": outcome.summary.seconds / ideal,
        "overhead_s": outcome.summary.seconds - ideal,
        "replay_floor_s": floor,
        "floor_ratio": floor / ideal,
        "execute_over_floor": outcome.summary.seconds / floor,
        "client_cpu_execute_s": marks["cpu_after_execute"] - marks["cpu_at_execute"],
        "client_cpu_until_analysis_s": marks["cpu_at_analysis"] - cpu0,
        "other_cores_busy": load.other_cores,
        "analysis_s": total - outcome.summary.seconds,
        "total_s": total,
    }


def _child(base_url: str, administration: str, runs: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "measure", "--base-url", base_url, "--administration", administration]
    cmd += ["--runs", str(runs)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve", "measure"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--omit-first", action="store_true")
    parser.add_argument("--latency", type=float, default=LATENCY_S)
    parser.add_argument("--base-url")
    parser.add_argument("--administration", default="whole", choices=list(ADMINISTRATIONS))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="measurements per administration")
    args = parser.parse_args()
    if args.mode == "serve":
        asyncio.run(_serve(args.port, args.latency, args.omit_first))
        return
    if args.mode == "measure":
        print(json.dumps(measure(args.base_url, args.administration, args.runs)))
        return
    runs = 2 if args.quick else args.runs
    repeats = 1 if args.quick else args.repeats
    load = busy_cores()
    results = []
    for administration in ADMINISTRATIONS:
        flags = ["serve", "--omit-first"] if administration == "reask" else ["serve"]
        with ServerProcess("psychobench", LATENCY_S, __file__, flags) as server:
            measured = [_child(server.base_url, administration, runs) for _ in range(repeats)]
        best = min(measured, key=lambda r: r["ratio"])
        results.append(
            {
                **best,
                "ratio_median": statistics.median(r["ratio"] for r in measured),
                "ratios": [round(r["ratio"], 3) for r in measured],
                "within_1_2": best["ratio"] <= 1.2,
            }
        )
    data = {
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        "runs_per_scale": runs,
        "repeats": repeats,
        "busy_cores_before": load,
        "results": results,
    }
    path = write_results("psychobench_scales", data, args.quick)
    headers = [
        "administration",
        "units",
        "requests",
        "chain",
        "execute s",
        "ideal s",
        "ratio",
        "median",
        "replay floor / ideal",
        "execute / floor",
        "overhead s",
        "client CPU in execution s",
        "other busy cores",
        "analysis s",
    ]
    rows = [
        [
            r["administration"],
            r["units"],
            r["requests"],
            r["longest_chain"],
            f"{r['execute_s']:.3f}",
            f"{r['ideal_s']:.1f}",
            f"{r['ratio']:.3f}",
            f"{r['ratio_median']:.3f}",
            f"{r['floor_ratio']:.3f}",
            f"{r['execute_over_floor']:.3f}",
            f"{r['overhead_s']:.3f}",
            f"{r['client_cpu_execute_s']:.3f}",
            f"{r['other_cores_busy']:.2f}" if r["other_cores_busy"] is not None else "-",
            f"{r['analysis_s']:.2f}",
        ]
        for r in results
    ]
    print(markdown_table(headers, rows))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
