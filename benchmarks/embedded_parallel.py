"""Throughput of the embedded model with 1, 2 and 4 llama.cpp slots (continuous batching).

    python benchmarks/embedded_parallel.py            # 8 requests x 64 tokens per round, 6 rounds
    python benchmarks/embedded_parallel.py --quick    # 8 requests x 24 tokens, 3 rounds

For each ``n_parallel`` a client is opened through llmpsych
(``open_client("local/qwen2.5-0.5b", cache=None, concurrency=n, embedded=EmbeddedSettings(n_parallel=n,
n_threads=2))``) and a round sends 8 requests at once (``asyncio.gather`` of ``client.complete``); the
client's concurrency limit lets ``n`` of them into llama.cpp at a time. With ``n_parallel = 1`` the
requests are answered one at a time: that is the baseline.

Rounds run in the order 1, 2, 4, 4, 2, 1 (quick: 1, 2, 4) so that drift in machine speed cancels.
Reported per setting: completion tokens/s, requests/s, mean latency of a request, speed-up over 1 slot.
Results go to ``benchmarks/results/embedded_parallel.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from _common import LoadMonitor, check_quiet, markdown_table, peak_rss_mb, write_results
from _prompts import PROMPTS, messages

MODEL = "qwen2.5-0.5b"
THREADS = 2
REQUESTS = 8


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="24 tokens per request, one round per setting")
    parser.add_argument("--n-parallel", default="1,2,4", help="comma-separated slot counts (default 1,2,4)")
    parser.add_argument("--max-tokens", type=int, help="max_tokens per request (default 64, quick: 24)")
    args = parser.parse_args()
    settings_list = [int(v) for v in args.n_parallel.split(",")]
    max_tokens = args.max_tokens or (24 if args.quick else 64)
    order = settings_list if args.quick else settings_list + settings_list[::-1]
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(REQUESTS)]

    busy_before = check_quiet()
    from llmpsych.models import GenerationParams, open_client
    from llmpsych.models.embedded import EmbeddedSettings

    params = GenerationParams(max_tokens=max_tokens, temperature=0.0)
    clients = {}
    load_s = {}
    for n in settings_list:
        t0 = time.perf_counter()
        clients[n] = open_client(
            f"local/{MODEL}",
            cache=None,
            concurrency=n,
            embedded=EmbeddedSettings(n_parallel=n, n_threads=THREADS),
        )
        load_s[n] = time.perf_counter() - t0

    async def one(client: Any, prompt: str) -> tuple[float, int]:
        started = time.perf_counter()
        result = await client.complete(messages(prompt), params)
        return time.perf_counter() - started, result.usage.completion_tokens

    async def run() -> list[dict[str, Any]]:
        # Warm-up: one short request per setting (allocates llama.cpp compute buffers).
        warm = GenerationParams(max_tokens=4, temperature=0.0)
        for client in clients.values():
            await asyncio.gather(
                *(client.complete(messages("Hello"), warm) for _ in range(client.concurrency))
            )
        rounds = []
        for position, n in enumerate(order):
            started = time.perf_counter()
            results = await asyncio.gather(*(one(clients[n], p) for p in prompts))
            wall = time.perf_counter() - started
            tokens = sum(t for _, t in results)
            rounds.append(
                {
                    "n_parallel": n,
                    "position": position,
                    "wall_s": wall,
                    "completion_tokens": tokens,
                    "latency_s": [lat for lat, _ in results],
                }
            )
            print(f"  n_parallel={n}: {tokens / wall:6.2f} tokens/s", file=sys.stderr, flush=True)
        return rounds

    with LoadMonitor() as load:
        rounds = asyncio.run(run())
    summary: dict[int, dict[str, Any]] = {}
    for n in settings_list:
        mine = [r for r in rounds if r["n_parallel"] == n]
        wall = sum(r["wall_s"] for r in mine)
        tokens = sum(r["completion_tokens"] for r in mine)
        latencies = [lat for r in mine for lat in r["latency_s"]]
        summary[n] = {
            "rounds": len(mine),
            "requests": REQUESTS * len(mine),
            "completion_tokens": tokens,
            "wall_s": wall,
            "tokens_per_s": tokens / wall,
            "requests_per_s": REQUESTS * len(mine) / wall,
            "mean_latency_s": sum(latencies) / len(latencies),
        }
    base = summary[settings_list[0]]["tokens_per_s"]
    for s in summary.values():
        s["speedup"] = s["tokens_per_s"] / base
    best = max(summary, key=lambda n: summary[n]["tokens_per_s"])

    rows = [
        [
            n,
            s["completion_tokens"],
            f"{s['wall_s']:.2f}",
            f"{s['tokens_per_s']:.2f}",
            f"{s['requests_per_s']:.3f}",
            f"{s['mean_latency_s']:.2f}",
            f"{s['speedup']:.2f}x",
        ]
        for n, s in summary.items()
    ]
    print(
        f"\n{MODEL}, {THREADS} threads, rounds of {REQUESTS} concurrent requests x max_tokens {max_tokens}, "
        f"concurrency = n_parallel, round order {order}\n"
    )
    headers = ["n_parallel", "completion tokens", "seconds", "tokens/s", "requests/s", "mean latency s"]
    print(markdown_table([*headers, f"vs n_parallel={settings_list[0]}"], rows))
    print(f"\nhighest throughput: n_parallel={best}")
    path = write_results(
        "embedded_parallel",
        {
            "model": MODEL,
            "threads": THREADS,
            "requests_per_round": REQUESTS,
            "max_tokens": max_tokens,
            "order": order,
            "load_s": load_s,
            "rounds": rounds,
            "summary": summary,
            "best_n_parallel": best,
            "busy_cores_before": busy_before,
            "other_cores_busy_during": load.other_cores,
            "peak_rss_mb": peak_rss_mb(),
        },
        args.quick,
    )
    if load.other_cores is not None:
        print(f"other processes kept {load.other_cores:.2f} cores busy meanwhile")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
