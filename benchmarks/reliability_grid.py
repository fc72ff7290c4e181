"""The full 2,500-configuration reliability grid against a server with a fixed 100 ms latency.

    python benchmarks/reliability_grid.py            # 2,500 configurations, 5,000 requests, concurrency 64
    python benchmarks/reliability_grid.py --quick    # English only: 250 configurations, 500 requests

The server (llmpsych's FaultServer, no faults, listen backlog 1024, TCP_NODELAY) runs in its own process
and answers every chunk with valid JSON in the label format the prompt defines, so every configuration
is scored. The client is the real task through ``start_run`` (run store, manifest, execution and the
analysis with its map and report), response cache off, ``concurrency`` = ``workers`` = 64. Each unit
asks its two chunks one after the other, as one conversation.

Transport: ``llmpsych`` (the HTTP backend as it is: aiohttp, the one HTTP stack since the hand-written
HTTP/1.1 client was dropped).

Reported: wall time of ``start_run``, its execution part, its analysis part (statistics, maps, CSV
tables and report), the rest (setup: grid, store, manifest), the ideal time (requests x latency /
concurrency), wall/ideal and execution/ideal, client CPU per request, peak RSS.
Results: ``results/reliability_grid.json``.
The official data is read from ``$LLMPSYCH_DATA_DIR`` or ``../shared/seed-data`` beside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    LoadMonitor,
    check_quiet,
    cpu_seconds,
    free_port,
    markdown_table,
    peak_rss_mb,
    write_results,
)

LATENCY_S = 0.1
CONCURRENCY = 64
REPO = Path(__file__).resolve().parents[1]
_LABEL = r"([0-9]+|[a-eA-E]|[ivxIVX]+)"


def data_dir() -> Path:
    """The folder holding LLMPersonality/."""
    return Path(os.environ.get("LLMPSYCH_DATA_DIR") or REPO.parent / "shared" / "seed-data")


def make_responder(root: Path):  # noqa: ANN201
    """A responder that answers any language, label format and order with valid JSON."""
    from llmpsych.reliability.labels import label
    from llmpsych.reliability.official import load_bfi

    bfi = load_bfi(root)
    denotes = "|".join(re.escape(p.denotes) for p in bfi.languages.values())
    first_label = re.compile(rf"{_LABEL} (?:{denotes}) ")
    statement = re.compile(r"^(\d+)\. ", re.MULTILINE)

    def respond(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        match = first_label.search(prompt)
        first = match.group(1) if match else "1"
        fmt = (
            "n"
            if first.isdigit()
            else ("rl" if first == "i" else "ru" if first == "I" else "al" if first == "a" else "au")
        )
        numbers = statement.findall(prompt)
        return json.dumps({n: label(fmt, 1 + int(n) % 5) for n in numbers})

    return respond


def serve(port: int, latency: float) -> None:
    """Serve the grid responder (child process)."""
    from http.server import ThreadingHTTPServer
    from socketserver import StreamRequestHandler

    from llmpsych.testing.fault_server import FaultRates, FaultServer

    ThreadingHTTPServer.request_queue_size = 1024
    StreamRequestHandler.disable_nagle_algorithm = True
    server = FaultServer(FaultRates(latency_s=latency), responder=make_responder(data_dir()), port=port)
    server._httpd.serve_forever()


def measure(quick: bool, transport: str = "llmpsych") -> dict:
    """Run the grid once through the run engine and time it (in a fresh process)."""
    from llmpsych.runs import parse_run_config, start_run

    if transport != "llmpsych":
        raise ValueError(f"unknown transport {transport!r}")

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, __file__, "serve", "--port", str(port), "--latency", str(LATENCY_S)],
        stdout=subprocess.DEVNULL,
    )
    try:
        import socket

        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("grid server did not start") from None
                time.sleep(0.05)
        options = {"languages": ["En"]} if quick else {}
        config = parse_run_config(
            {
                "task": "reliability",
                "model": "openai-compatible/bench",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "cache": False,
                "concurrency": CONCURRENCY,
                "workers": CONCURRENCY,
                "data_dir": str(data_dir()),
                "options": options,
            }
        )
        from llmpsych.reliability.task import ReliabilityTask

        analyze, timed = ReliabilityTask.analyze, {}

        def timed_analyze(self: ReliabilityTask, run_dir: Path) -> list[Path]:
            t = time.perf_counter()
            try:
                return analyze(self, run_dir)
            finally:
                timed["analysis_s"] = time.perf_counter() - t

        ReliabilityTask.analyze = timed_analyze
        with tempfile.TemporaryDirectory() as tmp, LoadMonitor() as load:
            cpu0, t0 = cpu_seconds(), time.perf_counter()
            outcome = start_run(config, Path(tmp) / "run", show_progress=False)
            wall = time.perf_counter() - t0
            cpu = cpu_seconds() - cpu0
            from llmpsych.reliability.results import run_frame

            frame = run_frame(Path(tmp) / "run")
    finally:
        server.terminate()
        server.wait(10)
    s = outcome.summary
    requests = s.calls_sent
    ideal = requests * LATENCY_S / CONCURRENCY
    return {
        "transport": transport,
        "configurations": s.total,
        "done": s.done,
        "failed": s.failed,
        "requests": requests,
        "valid_rate_mean": float(frame["valid_rate"].mean()),
        "wall_s": round(wall, 3),
        "execution_s": round(s.seconds, 3),
        "analysis_s": round(timed["analysis_s"], 3),
        "setup_s": round(wall - s.seconds - timed["analysis_s"], 3),
        "ideal_s": round(ideal, 3),
        "ideal_over_wall": round(ideal / wall, 3),
        "wall_over_ideal": round(wall / ideal, 3),
        "execution_over_ideal": round(s.seconds / ideal, 3),
        "client_cpu_ms_per_request": round(1000 * cpu / max(1, requests), 3),
        "client_peak_rss_mb": round(peak_rss_mb(), 1),
        "other_cores_busy": load.other_cores,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve", "child"])
    parser.add_argument("--transport", default="llmpsych", choices=["llmpsych"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=LATENCY_S)
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args.port, args.latency)
        return
    if args.mode == "child":
        print(json.dumps(measure(args.quick, args.transport)))
        return
    runs = []
    for transport in ("llmpsych",):
        idle = check_quiet()
        cmd = [sys.executable, __file__, "child", "--transport", transport] + (
            ["--quick"] if args.quick else []
        )
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["busy_cores_before"] = idle
        runs.append(result)
    path = write_results(
        "reliability_grid", {"latency_s": LATENCY_S, "concurrency": CONCURRENCY, "runs": runs}, args.quick
    )
    keys = [k for k in runs[0] if k != "other_cores_busy"]
    print(markdown_table(keys, [[r[k] for k in keys] for r in runs]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
