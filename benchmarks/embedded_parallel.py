"""Throughput of the embedded model with 1, 2 and 4 llama.cpp slots (continuous batching).

    python benchmarks/embedded_parallel.py            # 8 requests x 64 tokens per round, 7 rounds
    python benchmarks/embedded_parallel.py --quick    # 8 requests x 24 tokens, 4 rounds

For each ``n_parallel`` a client is opened through llmpsych
(``open_client("local/qwen2.5-0.5b", cache=None, concurrency=n, embedded=EmbeddedSettings(n_parallel=n,
n_threads=2))``) and a round sends 8 requests at once (``asyncio.gather`` of ``client.complete``); the
client's concurrency limit lets ``n`` of them into llama.cpp at a time. With ``n_parallel = 1`` the
requests are answered one at a time: that is the baseline.

Rounds run in the order 1, 2, 4, 4 one at a time, 4, 2, 1 (quick: 1, 2, 4, 4 one at a time) so that
drift in machine speed cancels. The extra round sends the 8 requests one after the other to the
4-slot model: it shows whether more slots cost anything when requests come one at a time.
Reported per setting: completion tokens/s, requests/s, mean latency of a request, speed-up over 1 slot,
and how many temperature-0 answers are identical to those of 1 slot for the same prompts (batching
changes the arithmetic, so answers can depend on which requests share a batch).
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


def describe(label: str) -> str:
    """'4' -> 'n_parallel=4', '4-seq' -> 'n_parallel=4, one at a time'."""
    n, _, seq = label.partition("-")
    return f"n_parallel={n}" + (", one at a time" if seq else "")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="24 tokens per request, one round per setting")
    parser.add_argument("--n-parallel", default="1,2,4", help="comma-separated slot counts (default 1,2,4)")
    parser.add_argument("--max-tokens", type=int, help="max_tokens per request (default 64, quick: 24)")
    parser.add_argument(
        "--sequential-at",
        type=int,
        help="also send one round one request at a time to this setting (default: the largest; 0: no)",
    )
    args = parser.parse_args()
    settings_list = [int(v) for v in args.n_parallel.split(",")]
    max_tokens = args.max_tokens or (24 if args.quick else 64)
    sequential_at = settings_list[-1] if args.sequential_at is None else args.sequential_at
    labels = [str(n) for n in settings_list]
    extra = [f"{sequential_at}-seq"] if sequential_at else []
    order = labels + extra if args.quick else labels + extra + labels[::-1]
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

    async def one(client: Any, prompt: str) -> tuple[float, int, str]:
        started = time.perf_counter()
        result = await client.complete(messages(prompt), params)
        return time.perf_counter() - started, result.usage.completion_tokens, result.text

    async def run() -> list[dict[str, Any]]:
        # Warm-up: one short request per setting (allocates llama.cpp compute buffers).
        warm = GenerationParams(max_tokens=4, temperature=0.0)
        for client in clients.values():
            await asyncio.gather(
                *(client.complete(messages("Hello"), warm) for _ in range(client.concurrency))
            )
        rounds = []
        for position, label in enumerate(order):
            n, sequential = int(label.split("-")[0]), label.endswith("-seq")
            # A pass tag in front of each prompt keeps llama.cpp's prompt cache from reusing a model's
            # earlier prompts (more slots would otherwise keep more of them cached). Within a pass all
            # settings get the same prompts, so their answers can be compared.
            tag = "S" if sequential else ("A" if position < len(labels) else "B")
            tagged = [f"(Request {tag}.{i}) {prompt}" for i, prompt in enumerate(prompts)]
            started = time.perf_counter()
            if sequential:
                results = [await one(clients[n], p) for p in tagged]
            else:
                results = await asyncio.gather(*(one(clients[n], p) for p in tagged))
            wall = time.perf_counter() - started
            tokens = sum(t for _, t, _ in results)
            rounds.append(
                {
                    "setting": label,
                    "n_parallel": n,
                    "one_at_a_time": sequential,
                    "position": position,
                    "pass": tag,
                    "wall_s": wall,
                    "completion_tokens": tokens,
                    "latency_s": [lat for lat, _, _ in results],
                    "texts": [text for _, _, text in results],
                }
            )
            print(f"  {describe(label)}: {tokens / wall:6.2f} tokens/s", file=sys.stderr, flush=True)
        return rounds

    with LoadMonitor() as load:
        rounds = asyncio.run(run())
    summary: dict[str, dict[str, Any]] = {}
    for label in labels + extra:
        mine = [r for r in rounds if r["setting"] == label]
        wall = sum(r["wall_s"] for r in mine)
        tokens = sum(r["completion_tokens"] for r in mine)
        latencies = [lat for r in mine for lat in r["latency_s"]]
        summary[label] = {
            "n_parallel": int(label.split("-")[0]),
            "one_at_a_time": label.endswith("-seq"),
            "rounds": len(mine),
            "requests": REQUESTS * len(mine),
            "completion_tokens": tokens,
            "wall_s": wall,
            "tokens_per_s": tokens / wall,
            "requests_per_s": REQUESTS * len(mine) / wall,
            "mean_latency_s": sum(latencies) / len(latencies),
        }
    # Reproducibility: at temperature 0, are the answers those of the first setting (same pass)?
    reference = {r["pass"]: r["texts"] for r in rounds if r["setting"] == labels[0]}
    for label in labels:
        same = total = 0
        for r in rounds:
            if r["setting"] == label and r["pass"] in reference:
                same += sum(a == b for a, b in zip(r["texts"], reference[r["pass"]], strict=True))
                total += len(r["texts"])
        summary[label]["identical_answers"] = [same, total]
    if extra:
        summary[extra[0]]["identical_answers"] = None
    for r in rounds:
        del r["texts"]
    base = summary[labels[0]]["tokens_per_s"]
    for s in summary.values():
        s["speedup"] = s["tokens_per_s"] / base
    best = max(labels, key=lambda label: summary[label]["tokens_per_s"])

    rows = [
        [
            describe(label),
            s["completion_tokens"],
            f"{s['wall_s']:.2f}",
            f"{s['tokens_per_s']:.2f}",
            f"{s['requests_per_s']:.3f}",
            f"{s['mean_latency_s']:.2f}",
            f"{s['speedup']:.2f}x",
            f"{s['identical_answers'][0]}/{s['identical_answers'][1]}" if s["identical_answers"] else "-",
        ]
        for label, s in summary.items()
    ]
    print(
        f"\n{MODEL}, {THREADS} threads, rounds of {REQUESTS} requests sent at once (unless one at a time) x "
        f"max_tokens {max_tokens}, concurrency = n_parallel, round order {order}\n"
    )
    headers = ["setting", "completion tokens", "seconds", "tokens/s", "requests/s", "mean latency s"]
    headers += [f"vs {describe(labels[0])}", f"answers identical to {describe(labels[0])}"]
    print(markdown_table(headers, rows))
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
            "best_n_parallel": int(best),
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
