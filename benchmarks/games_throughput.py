"""GAMA-Bench games against an OpenAI-compatible server with a fixed 100 ms latency.

    python benchmarks/games_throughput.py            # (a) one default game, (b) 8 games x 5 runs (~1 min)
    python benchmarks/games_throughput.py --profile out   # cProfile of (b) -> out.txt

The server (``serve`` mode of this script, its own process) is a minimal asyncio HTTP/1.1 keep-alive
server that answers every chat completion after ``latency`` seconds with a valid JSON answer for the
game the request comes from (it reads the JSON format asked for in the last user turn, as
tests/test_games_engine_runs.py does). Each measurement runs the full run engine (``start_run``: store,
manifest, execution, analysis) in a fresh interpreter, response cache off, builtin prompts.

(a) one default game: Guess 2/3 of the Average, 10 seats x 20 rounds, 1 run. A round's ten requests go out
    at once, so the ideal is rounds x latency = 2.0 s; target: execution time <= 1.2 x ideal.
(b) the eight games x 5 runs (40 work units, all in flight at once, concurrency 512): target: execution
    time <= 1.2 x the longest single game, measured alone in the same invocation (each game alone, 1 run).
    (b) is measured ``--repeats`` times (default 3, fresh interpreters) and the median is reported.
    The ideal of a game is its number of sequential request steps x latency: one step per round in the
    simultaneous games, one per shot in Battle Royale, two per proposal (plan, then all votes) in the
    Pirate Game (plus re-asks, which this server never causes).

Reported: execution seconds (the run engine's own clock, ``RunSummary.seconds``), wall seconds around
``start_run`` (including the analysis: tables, plots, transcripts), requests, ideal, ratios.
Results go to ``benchmarks/results/games_throughput.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    LoadMonitor,
    ServerProcess,
    check_quiet,
    completion_response,
    cpu_seconds,
    markdown_table,
    profiled,
    serve_asyncio,
    write_results,
)

from llmpsych.testing.game_player import game_answer

LATENCY_S = 0.1
GAMES = ["guessing", "bar", "divide_dollar", "public_goods", "diner", "auction", "battle_royale", "pirate"]


# -- the server -----------------------------------------------------------------------------------------
def game_response(body: bytes) -> bytes:
    """The HTTP response to one game request: a valid answer for the game it comes from."""
    return completion_response(game_answer(json.loads(body)), usage=(100, 10))


async def serve(port: int, latency: float) -> None:
    """Serve forever."""
    await serve_asyncio(port, latency, game_response)


def game_server(latency: float) -> ServerProcess:
    """This script's game server in a child process (``--serve``); context manager."""
    return ServerProcess("game", latency, __file__, ["--serve"])


# -- one measurement, in a child process ----------------------------------------------------------------
def sequential_steps(result: dict[str, Any]) -> int:
    """Request steps a game cannot overlap: one per round, two per pirate proposal, plus re-asks."""
    steps = 0
    for record in result["rounds"]:
        if result["game"] == "pirate":
            steps += record["proposal"]["asks"] + max((v["asks"] for v in record["votes"]), default=0)
        elif result["game"] == "battle_royale":
            steps += record["shot"]["asks"]
        else:
            steps += max(d["asks"] for d in record["decisions"])
    return steps


def measure(
    base_url: str, games: list[str], runs: int, profile: str | None, nohttp: bool = False
) -> dict[str, Any]:
    """Play ``games`` x ``runs`` through ``start_run``; timings, requests and each game's sequential steps.

    ``nohttp`` (diagnostic) replaces ``HttpBackend.send`` by a 100 ms sleep and the server's answer, which
    leaves the CPU cost of the run engine and the game engine alone.
    """
    from llmpsych.runs import RunStore, parse_run_config, start_run

    if nohttp:
        import llmpsych.models.http_backend as http_backend

        async def send(self: Any, body: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(LATENCY_S)
            message = {"role": "assistant", "content": game_answer(body)}
            return {
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            }

        http_backend.HttpBackend.send = send  # type: ignore[method-assign]

    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/bench",
            "base_url": base_url,
            "cache": False,
            "concurrency": 512,
            "workers": 64,
            "options": {"game": games, "runs": runs},
        }
    )
    with tempfile.TemporaryDirectory(prefix="llmpsych-games-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        with profiled(profile):
            outcome = start_run(config, run_dir, show_progress=False)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        from llmpsych.runs.runner import analyze_run

        cpu1, t1 = cpu_seconds(), time.perf_counter()
        analyze_run(run_dir)  # again, to tell the analysis's share from the execution's
        analysis_wall, analysis_cpu = time.perf_counter() - t1, cpu_seconds() - cpu1
        store = RunStore.in_dir(run_dir)
        try:
            results = [u.result for u in store.units("done")]
        finally:
            store.close()
    summary = outcome.summary
    return {
        "games": games,
        "runs": runs,
        "done": summary.done,
        "failed": summary.failed,
        "errors": summary.errors[:3],
        "requests": summary.calls_sent,
        "fallbacks": sum(r["fallbacks"] for r in results),
        "execute_s": summary.seconds,
        "wall_s": wall,
        "cpu_s": cpu,
        "analysis_s": analysis_wall,
        "analysis_cpu_s": analysis_cpu,
        "execute_cpu_ms_per_request": 1000 * max(0.0, cpu - analysis_cpu) / max(1, summary.calls_sent),
        "steps": max((sequential_steps(r) for r in results), default=0),
    }


def child(
    server: ServerProcess, games: list[str], runs: int, profile: str | None = None, nohttp: bool = False
) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; adds the server's CPU seconds meanwhile."""
    base_url = server.base_url
    server_cpu0 = server.cpu_seconds()
    cmd = [sys.executable, __file__, "--child", ",".join(games), "--runs", str(runs), "--base-url", base_url]
    if profile:
        cmd += ["--profile", profile]
    if nohttp:
        cmd += ["--nohttp"]
    env = {**os.environ, "LLMPSYCH_CONFIG": os.devnull}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result = json.loads(out.strip().splitlines()[-1])
    server_cpu1 = server.cpu_seconds()
    if server_cpu0 is not None and server_cpu1 is not None:
        result["server_cpu_s"] = server_cpu1 - server_cpu0
    return result


# -- orchestration --------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per game in (b)")
    parser.add_argument("--repeats", type=int, default=3, help="measurements of (b); the median is reported")
    parser.add_argument("--profile", help="profile (b) with cProfile; write FILE")
    parser.add_argument(
        "--nohttp",
        action="store_true",
        help="also run (b) with HttpBackend.send replaced by a 100 ms sleep (diagnostic: engine CPU alone)",
    )
    parser.add_argument(
        "--sweep",
        type=lambda text: [int(v) for v in text.split(",")],
        default=[],
        help="also run (b) with these runs per game, e.g. 1,2,3 (where the ratio starts to grow)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.port, args.latency))
        return
    if args.child:
        games = args.child.split(",")
        print(json.dumps(measure(args.base_url, games, args.runs, args.profile, args.nohttp)))
        return

    busy_before = check_quiet()
    with LoadMonitor() as load, game_server(LATENCY_S) as server:
        alone = {game: child(server, [game], 1) for game in GAMES}
        repeats = [
            child(server, GAMES, args.runs, args.profile if i == 0 else None) for i in range(args.repeats)
        ]
        together = sorted(repeats, key=lambda r: r["execute_s"])[len(repeats) // 2]  # the median
        nohttp = child(server, GAMES, args.runs, nohttp=True) if args.nohttp else None
        sweep = {runs: child(server, GAMES, runs) for runs in args.sweep}

    single = alone["guessing"]
    single_ideal = 20 * LATENCY_S
    longest_game = max(alone, key=lambda g: alone[g]["execute_s"])
    longest = alone[longest_game]["execute_s"]
    longest_ideal = max(a["steps"] for a in alone.values()) * LATENCY_S
    rows = [
        [
            game,
            a["requests"],
            a["steps"],
            f"{a['steps'] * LATENCY_S:.2f}",
            f"{a['execute_s']:.2f}",
            f"{a['execute_s'] / (a['steps'] * LATENCY_S):.3f}",
            f"{a['wall_s']:.2f}",
            f"{a['execute_cpu_ms_per_request']:.2f}",
            f"{1000 * a.get('server_cpu_s', float('nan')) / max(1, a['requests']):.2f}",
        ]
        for game, a in alone.items()
    ]
    rows.append(
        [
            f"all 8 x {args.runs} runs (median of {len(repeats)})",
            together["requests"],
            together["steps"],
            f"{longest:.2f} (longest alone)",
            f"{together['execute_s']:.2f}",
            f"{together['execute_s'] / longest:.3f}",
            f"{together['wall_s']:.2f}",
            f"{together['execute_cpu_ms_per_request']:.2f}",
            f"{1000 * together.get('server_cpu_s', float('nan')) / max(1, together['requests']):.2f}",
        ]
    )
    if nohttp is not None:
        rows.append(
            [
                f"all 8 x {args.runs} runs, no HTTP (diagnostic)",
                nohttp["requests"],
                nohttp["steps"],
                f"{longest:.2f} (longest alone)",
                f"{nohttp['execute_s']:.2f}",
                f"{nohttp['execute_s'] / longest:.3f}",
                f"{nohttp['wall_s']:.2f}",
                f"{nohttp['execute_cpu_ms_per_request']:.2f}",
                "-",
            ]
        )
    for runs, m in sweep.items():
        rows.append(
            [
                f"all 8 x {runs} runs",
                m["requests"],
                m["steps"],
                f"{longest:.2f} (longest alone)",
                f"{m['execute_s']:.2f}",
                f"{m['execute_s'] / longest:.3f}",
                f"{m['wall_s']:.2f}",
                f"{m['execute_cpu_ms_per_request']:.2f}",
                f"{1000 * m.get('server_cpu_s', float('nan')) / max(1, m['requests']):.2f}",
            ]
        )
    headers = ["games", "requests", "sequential steps", "ideal s", "execute s", "execute/ideal", "wall s"]
    headers += ["client CPU ms/req (execution)", "server CPU ms/req"]
    print(f"\nserver latency {LATENCY_S * 1000:.0f} ms, 10 players, 20 rounds, builtin prompts\n")
    print(markdown_table(headers, rows))
    ratio_a = single["execute_s"] / single_ideal
    ratio_b = together["execute_s"] / longest
    print(f"\n(a) default 10 x 20 game: {single['execute_s']:.2f} s / {single_ideal:.2f} s = {ratio_a:.3f}")
    ratios_b = [round(r["execute_s"] / longest, 3) for r in repeats]
    print(
        f"(b) 8 games x {args.runs} runs together: {together['execute_s']:.2f} s / {longest:.2f} s "
        f"= {ratio_b:.3f} (median of {len(repeats)}: {ratios_b})"
    )
    failures = [a for a in [*alone.values(), together] if a["failed"] or a["fallbacks"]]
    if failures:
        print(f"warning: failed units or fallbacks: {failures}", file=sys.stderr)
    path = write_results(
        "games_throughput",
        {
            "latency_s": LATENCY_S,
            "single_game": {
                **single,
                "ideal_s": single_ideal,
                "ratio": ratio_a,
                "target": 1.2,
                "ok": ratio_a <= 1.2,
            },
            "all_games": {
                **together,
                "longest_game": longest_game,
                "longest_alone_s": longest,
                "longest_ideal_s": longest_ideal,
                "ratio": ratio_b,
                "ratios_of_repeats": ratios_b,
                "ratio_to_ideal": together["execute_s"] / longest_ideal,
                "target": 1.2,
                "ok": ratio_b <= 1.2,
            },
            "alone": alone,
            "all_games_nohttp": nohttp,
            "sweep": {str(runs): {**m, "ratio": m["execute_s"] / longest} for runs, m in sweep.items()},
            "busy_cores_before": busy_before,
            "other_cores_busy_during": load.other_cores,
            "load_average": os.getloadavg(),
        },
        False,
    )
    if load.other_cores is not None:
        print(f"other processes kept {load.other_cores:.2f} cores busy meanwhile")
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
