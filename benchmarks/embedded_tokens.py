"""Completion tokens per second of the embedded model through llmpsych versus xllamacpp called directly.

    python benchmarks/embedded_tokens.py            # 8 prompts x 128 tokens per side (about 1.5 minutes)
    python benchmarks/embedded_tokens.py --quick    # 4 prompts x 64 tokens

Both sides load qwen2.5-0.5b (Q4_K_M) with 2 threads and one slot, in the same process:

* ``llmpsych`` - ``open_client("local/qwen2.5-0.5b", cache=None, embedded=EmbeddedSettings(n_threads=2))``
  and ``await client.complete(...)`` (request body, concurrency limit, retries, ``asyncio.to_thread``,
  response parsing);
* ``direct`` - ``xllamacpp.Server(params).handle_chat_completions(body)`` with ``params`` built exactly
  as ``EmbeddedModel.__init__`` builds them and the very body llmpsych sends.

The two sides are interleaved prompt by prompt (llmpsych then direct, direct then llmpsych, ...) so
that drift in machine speed cancels. Tokens/s is completion tokens divided by the wall time of the
requests, sent one at a time. ``--reps N`` makes N passes over the prompts.
Results go to ``benchmarks/results/embedded_tokens.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import sys
import time
from typing import Any

from _common import LoadMonitor, check_quiet, markdown_table, peak_rss_mb, write_results
from _prompts import PROMPTS, messages

MODEL = "qwen2.5-0.5b"
THREADS = 2


def direct_server(path: str, n_ctx_per_slot: int) -> Any:
    """An xllamacpp server with the parameters ``EmbeddedModel.__init__`` uses."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_parallel = 1
    params.n_ctx = n_ctx_per_slot
    params.cpuparams.n_threads = THREADS
    params.cpuparams_batch.n_threads = THREADS
    params.verbosity = 0
    params.hostnames = ["127.0.0.1"]
    return xllamacpp.Server(params)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="4 prompts, 64 tokens")
    parser.add_argument("--reps", type=int, default=1, help="passes over the prompts (default 1)")
    parser.add_argument("--max-tokens", type=int, help="max_tokens per request (default 128, quick: 64)")
    args = parser.parse_args()
    prompts = PROMPTS[:4] if args.quick else PROMPTS
    max_tokens = args.max_tokens or (64 if args.quick else 128)

    busy_before = check_quiet()
    from llmpsych.models import GenerationParams, open_client
    from llmpsych.models.catalog import model_file
    from llmpsych.models.embedded import DEFAULT_CONTEXT_PER_SLOT, EmbeddedSettings

    path = model_file(MODEL)
    t0 = time.perf_counter()
    client = open_client(f"local/{MODEL}", cache=None, embedded=EmbeddedSettings(n_threads=THREADS))
    load_llmpsych = time.perf_counter() - t0
    t0 = time.perf_counter()
    server = direct_server(str(path), DEFAULT_CONTEXT_PER_SLOT)
    load_direct = time.perf_counter() - t0
    params = GenerationParams(max_tokens=max_tokens, temperature=0.0)
    bodies = [client.body(messages(p), params) for p in prompts]

    def run_direct() -> tuple[float, int, list[str]]:
        tokens, texts, seconds = 0, [], 0.0
        for body in bodies:
            request = copy.deepcopy(body)
            started = time.perf_counter()
            response = server.handle_chat_completions(request)
            seconds += time.perf_counter() - started
            tokens += response["usage"]["completion_tokens"]
            texts.append(response["choices"][0]["message"]["content"])
        return seconds, tokens, texts

    def run_llmpsych() -> tuple[float, int, list[str]]:
        async def go() -> tuple[float, int, list[str]]:
            tokens, texts, seconds = 0, [], 0.0
            for prompt in prompts:
                started = time.perf_counter()
                result = await client.complete(messages(prompt), params)
                seconds += time.perf_counter() - started
                tokens += result.usage.completion_tokens
                texts.append(result.text)
            return seconds, tokens, texts

        return asyncio.run(go())

    # Warm up both (first requests allocate compute buffers).
    warm = GenerationParams(max_tokens=8, temperature=0.0)
    asyncio.run(client.complete(messages("Hello"), warm))
    server.handle_chat_completions(client.body(messages("Hello"), warm))

    async def via_llmpsych(prompt: str) -> tuple[float, int, str]:
        started = time.perf_counter()
        result = await client.complete(messages(prompt), params)
        return time.perf_counter() - started, result.usage.completion_tokens, result.text

    def via_direct(body: dict[str, Any]) -> tuple[float, int, str]:
        request = copy.deepcopy(body)
        started = time.perf_counter()
        response = server.handle_chat_completions(request)
        seconds = time.perf_counter() - started
        return seconds, response["usage"]["completion_tokens"], response["choices"][0]["message"]["content"]

    async def measure_all() -> list[dict[str, Any]]:
        # The event loop stays up for the whole run, as in a real run; the direct calls block it briefly.
        runs = []
        for rep in range(args.reps):
            for i, (prompt, body) in enumerate(zip(prompts, bodies, strict=True)):
                order = (
                    ["llmpsych", "direct"] if (rep * len(prompts) + i) % 2 == 0 else ["direct", "llmpsych"]
                )
                for side in order:
                    seconds, tokens, text = (
                        await via_llmpsych(prompt) if side == "llmpsych" else via_direct(body)
                    )
                    runs.append(
                        {
                            "side": side,
                            "repetition": rep,
                            "prompt": i,
                            "seconds": seconds,
                            "completion_tokens": tokens,
                            "text": text,
                        }
                    )
            print(f"  repetition {rep + 1}/{args.reps} done", file=sys.stderr, flush=True)
        return runs

    with LoadMonitor() as load:
        runs = asyncio.run(measure_all())
    sides = ("llmpsych", "direct")
    summary: dict[str, dict[str, Any]] = {}
    for side in sides:
        mine = [r for r in runs if r["side"] == side]
        seconds = sum(r["seconds"] for r in mine)
        tokens = sum(r["completion_tokens"] for r in mine)
        summary[side] = {"completion_tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}
    ratio = summary["llmpsych"]["tokens_per_s"] / summary["direct"]["tokens_per_s"]
    pairs = {}
    for r in runs:
        pairs.setdefault((r["repetition"], r["prompt"]), {})[r["side"]] = r
    pair_ratios = [
        (p["llmpsych"]["completion_tokens"] / p["llmpsych"]["seconds"])
        / (p["direct"]["completion_tokens"] / p["direct"]["seconds"])
        for p in pairs.values()
    ]
    same = all(p["llmpsych"]["text"] == p["direct"]["text"] for p in pairs.values())
    for r in runs:
        del r["text"]

    rows = [
        [side, s["completion_tokens"], f"{s['seconds']:.2f}", f"{s['tokens_per_s']:.2f}"]
        for side, s in summary.items()
    ]
    print(
        f"\n{MODEL}, {THREADS} threads, {len(prompts)} prompts x max_tokens {max_tokens}, "
        f"{args.reps} repetition(s), sides interleaved per prompt\n"
    )
    print(markdown_table(["side", "completion tokens", "seconds", "tokens/s"], rows))
    print(
        f"\nllmpsych / direct: {ratio:.3f} (per prompt: median {statistics.median(pair_ratios):.3f}, "
        f"min {min(pair_ratios):.3f}, max {max(pair_ratios):.3f}); identical answers: {same}"
    )
    path_out = write_results(
        "embedded_tokens",
        {
            "model": MODEL,
            "threads": THREADS,
            "prompts": len(prompts),
            "max_tokens": max_tokens,
            "repetitions": args.reps,
            "load_s": {"llmpsych": load_llmpsych, "direct": load_direct},
            "runs": runs,
            "summary": summary,
            "ratio": ratio,
            "ratio_per_prompt": pair_ratios,
            "busy_cores_before": busy_before,
            "other_cores_busy_during": load.other_cores,
            "identical_answers": same,
            "peak_rss_mb": peak_rss_mb(),
        },
        args.quick,
    )
    if load.other_cores is not None:
        print(f"other processes kept {load.other_cores:.2f} cores busy meanwhile")
    print(f"results: {path_out}")


if __name__ == "__main__":
    main()
