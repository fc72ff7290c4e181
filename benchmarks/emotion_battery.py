"""The full EmotionBench battery against an OpenAI-compatible server with a fixed 100 ms latency.

    python benchmarks/emotion_battery.py          # 50 default runs + 175 situations x 10 runs (1,800)
    python benchmarks/emotion_battery.py --quick  # 1 situation per factor (36 x 10 + 50 = 410)

The server (in its own process, asyncio, HTTP/1.1 keep-alive) answers every request after 100 ms with a
valid PANAS reply (``index: score`` for each listed statement), so every run is one query. The client is
the full run engine in a fresh Python process per size: task ``emotionbench`` (PANAS, items shuffled,
official data from ``../shared/seed-data``), model ``openai-compatible/bench``, cache off,
concurrency = workers = 64. Each size runs with llmpsych as it is (``stock``: aiohttp, the one HTTP stack
since the hand-written HTTP/1.1 client was dropped); a bare ``aiohttp`` client sending 1,800 requests to the
same server shows what that HTTP stack alone allows. Measured: wall time of the
execution (``ideal`` = queries x 0.1 s / 64, ``ratio`` = wall / ideal, target <= 1.2), the time of the
analysis that follows (tables, human data, heatmap), and the client's peak RSS at two battery sizes
(memory must not grow with the number of situations).
Results go to ``benchmarks/results/emotion_battery.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    ServerProcess,
    busy_cores,
    completion_response,
    machine,
    markdown_table,
    peak_rss_mb,
    serve_asyncio,
    write_results,
)

LATENCY_S = 0.1
CONCURRENCY = 64
SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"
_ITEM = re.compile(rb"(?:^|\\n)(\d+)\. ")


# -- server ---------------------------------------------------------------------------------------------
def _reply(body: bytes) -> bytes:
    """A chat completion answering ``index: score`` for every numbered statement in the request."""
    items = _ITEM.findall(body)
    content = "\n".join(f"{int(i)}: {1 + (int(i) * 7 + len(body)) % 5}" for i in items)
    return completion_response(content, usage=(300, 60))


async def _serve(port: int, latency: float) -> None:
    await serve_asyncio(port, latency, _reply)


# -- client ---------------------------------------------------------------------------------------------
def measure(base_url: str, per_factor: int, transport: str = "stock") -> dict[str, Any]:
    """One battery in this process; returns timings, counts and peak RSS."""
    from llmpsych.emotion.task import EmotionBenchTask
    from llmpsych.runs import parse_run_config, start_run

    execution_rss: list[float] = []
    analyze = EmotionBenchTask.analyze

    def analyze_after_noting_rss(self: EmotionBenchTask, run_dir: Path) -> list[Path]:
        execution_rss.append(peak_rss_mb())  # the peak of the execution phase, before the analysis
        return analyze(self, run_dir)

    EmotionBenchTask.analyze = analyze_after_noting_rss  # type: ignore[method-assign]

    options = {"scale": "PANAS", "situations_per_factor": per_factor, "runs": 10, "default_runs": 50}
    config = parse_run_config(
        {
            "task": "emotionbench",
            "model": "openai-compatible/bench",
            "base_url": base_url,
            "cache": False,
            "concurrency": CONCURRENCY,
            "workers": CONCURRENCY,
            "data_dir": str(SEED_DATA),
            "options": options,
        }
    )
    with tempfile.TemporaryDirectory(prefix="llmpsych-emotion-bench-") as tmp:
        started = time.perf_counter()
        outcome = start_run(config, Path(tmp) / "run", show_progress=False)
        total = time.perf_counter() - started
        summary = json.loads((Path(tmp) / "run" / "summary.json").read_text())
    queries = outcome.summary.calls_sent
    ideal = outcome.summary.total * LATENCY_S / CONCURRENCY
    return {
        "transport": transport,
        "situations_per_factor": per_factor,
        "units": outcome.summary.total,
        "queries": queries,
        "failed": outcome.summary.failed,
        "valid_runs": summary.get("valid_runs"),
        "execute_s": outcome.summary.seconds,
        "total_s": total,
        "analysis_s": total - outcome.summary.seconds,
        "ideal_s": ideal,
        "ratio": outcome.summary.seconds / ideal,
        "ratio_with_analysis": total / ideal,
        "peak_rss_execution_mb": execution_rss[0] if execution_rss else None,
        "peak_rss_mb": peak_rss_mb(),
    }


def measure_bare(base_url: str, requests: int) -> dict[str, Any]:
    """The HTTP stack alone: a bare aiohttp session sending ``requests`` PANAS-sized bodies at c = 64."""
    import aiohttp

    items = "\n".join(f"{i}. statement {i}" for i in range(1, 21))
    body = {"model": "bench", "messages": [{"role": "user", "content": f"rate these\n\n{items}"}]}
    url = base_url.rstrip("/") + "/chat/completions"

    async def run() -> None:
        remaining = iter(range(requests))
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        async with aiohttp.ClientSession(connector=connector) as client:

            async def worker() -> None:
                for _ in remaining:
                    async with client.post(url, json=body) as response:
                        json.loads(await response.read())

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    started = time.perf_counter()
    asyncio.run(run())
    wall = time.perf_counter() - started
    ideal = requests * LATENCY_S / CONCURRENCY
    return {
        "transport": "bare aiohttp",
        "queries": requests,
        "execute_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "peak_rss_mb": peak_rss_mb(),
    }


def _child(base_url: str, per_factor: int, transport: str) -> dict[str, Any]:
    if transport.startswith("bare"):
        cmd = [sys.executable, __file__, "bare", "--base-url", base_url]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900)
        return json.loads(done.stdout.strip().splitlines()[-1])
    cmd = [sys.executable, __file__, "measure", "--base-url", base_url, "--per-factor", str(per_factor)]
    cmd += ["--transport", transport]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _wait_for_quiet(limit_s: float = 180.0) -> float | None:
    """Busy cores (other processes) before starting; waits up to ``limit_s`` for them to fall below 0.3."""
    deadline = time.monotonic() + limit_s
    busy = busy_cores()
    while busy is not None and busy > 0.3 and time.monotonic() < deadline:
        busy = busy_cores(2.0)
    if busy is not None and busy > 0.3:
        print(f"warning: {busy:.2f} cores busy before the benchmark; the ratio will be high", file=sys.stderr)
    return busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve", "measure", "bare"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--latency", type=float, default=LATENCY_S)
    parser.add_argument("--base-url")
    parser.add_argument("--per-factor", type=int, default=5)
    parser.add_argument("--transport", default="stock", choices=["stock"])
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for an idle machine")
    args = parser.parse_args()
    if args.mode == "serve":
        asyncio.run(_serve(args.port, args.latency))
        return
    if args.mode == "bare":
        print(json.dumps(measure_bare(args.base_url, 1800)))
        return
    if args.mode == "measure":
        print(json.dumps(measure(args.base_url, args.per_factor, args.transport)))
        return
    with ServerProcess("emotion", LATENCY_S, __file__, ["serve"]) as server:
        load = _wait_for_quiet(args.wait)
        sizes = [1] if args.quick else [1, 5]
        runs = [_child(server.base_url, k, t) for t in ("stock",) for k in sizes]
        runs.append(_child(server.base_url, 0, "bare"))
    data = {
        "benchmark": "emotion_battery",
        "quick": args.quick,
        "machine": machine(),
        "busy_cores_before": load,
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        "runs": runs,
    }
    path = write_results("emotion_battery", data, args.quick)
    headers = [
        "HTTP module",
        "per factor",
        "queries",
        "execute s",
        "ideal s",
        "ratio",
        "+analysis s",
        "RSS execution MB",
        "peak RSS MB",
    ]
    rows = [
        [
            r["transport"],
            r.get("situations_per_factor", "-"),
            r["queries"],
            f"{r['execute_s']:.2f}",
            f"{r['ideal_s']:.2f}",
            f"{r['ratio']:.3f}",
            f"{r['analysis_s']:.2f}" if "analysis_s" in r else "-",
            f"{r['peak_rss_execution_mb']:.0f}" if "peak_rss_execution_mb" in r else "-",
            f"{r['peak_rss_mb']:.0f}",
        ]
        for r in runs
    ]
    print(markdown_table(headers, rows))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
