"""MAS-Resilience: does a clean system × task run finish within 1.2× its critical path?

A scripted OpenAI-compatible server (llmpsych's FaultServer with ``ScriptedCollaborator``, in its own
process so that its threads do not compete with the run for the interpreter) answers every request after
a fixed 100 ms. Items run concurrently and each item's conversation is sequential, so the critical path
is the longest item: its sequential calls × 100 ms, plus (for HumanEval) its own sandboxed test run.

Two ideals measured in the same run sit beside it:

* ``replay_floor_s``: the run's own request chains (read back from its store) replayed by a bare asyncio
  HTTP/1.1 client, every chain at once, each sequential: what this server and this machine allow with
  no framework at all (server CPU, loopback, scheduling under the load of the moment);
* ``pool_bound_s``: HumanEval items all finish talking at about the same time, so their test runs queue
  for the sandbox pool: the shortest chain × 100 ms + total execution seconds ÷ pool size.

``bound_s`` is the largest of the critical path, the replay floor plus the longest execution, and the
pool bound; ``ratio_vs_bound`` compares the run with it. Each row is the fastest of ``--repeat`` runs
(the machine is shared with other work; ``wall_s_all`` lists every run and ``load_1min`` the load).

    python benchmarks/collab_critical_path.py            # camel, mad × ciar at 1-50 items; camel × humaneval
    python benchmarks/collab_critical_path.py --quick    # fewer items
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    busy_cores,
    free_port,
    markdown_table,
    replay_chains,
    stored_chains,
    write_results,
)

from llmpsych.collab.datasets import load_items  # noqa: E402
from llmpsych.collab.sandbox import SandboxPool  # noqa: E402
from llmpsych.collab.scripted import ScriptedCollaborator  # noqa: E402
from llmpsych.runs import RunStore, parse_run_config, start_run  # noqa: E402
from llmpsych.testing.fault_server import FaultRates, FaultServer  # noqa: E402

LATENCY = 0.1
SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"


def _responder() -> ScriptedCollaborator:
    problems = load_items("humaneval", SEED_DATA)
    return ScriptedCollaborator(
        {p.reference["prompt"]: p.reference["prompt"] + p.reference["canonical_solution"] for p in problems}
    )


def serve(port: int) -> None:
    """Serve the scripted collaborator with a fixed latency until killed.

    As in ``_common.serve_fault``: a listen backlog of 1024 (a burst of connections must not overflow
    socketserver's 5) and TCP_NODELAY on accepted sockets (the handler writes headers and body in two
    sends; without it Nagle's algorithm and the client's delayed ACK add up to 40 ms per answer).
    """
    from http.server import ThreadingHTTPServer
    from socketserver import StreamRequestHandler

    ThreadingHTTPServer.request_queue_size = 1024
    StreamRequestHandler.disable_nagle_algorithm = True
    server = FaultServer(FaultRates(latency_s=LATENCY), responder=_responder(), port=port)
    server._httpd.serve_forever()


class Server:
    """The scripted server in a child process."""

    def __enter__(self) -> Server:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.proc = subprocess.Popen([sys.executable, __file__, "serve", "--port", str(self.port)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("scripted server did not start")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def measure(
    system: str, dataset: str, items: int | None, concurrency: int = 1024, sandbox_workers: int | None = None
) -> dict:
    """One clean run; wall time against the critical path and the ideals measured beside it."""
    options: dict = {"system": system, "dataset": dataset}
    if items:
        options["items"] = items
    if sandbox_workers:
        options["sandbox_workers"] = sandbox_workers
    with Server() as server, tempfile.TemporaryDirectory() as tmp:
        config = parse_run_config(
            {
                "task": "mas",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "concurrency": concurrency,
                "workers": 1024,
                "data_dir": str(SEED_DATA),
                "options": options,
            }
        )
        outcome = start_run(config, Path(tmp) / "run", False)
        store = RunStore.in_dir(outcome.run_dir)
        results = [u.result for u in store.units("done")]
        store.close()
        replay = asyncio.run(replay_chains(server.port, stored_chains(outcome.run_dir)))
    wall = outcome.summary.seconds
    executions = [r.get("execution", {}).get("seconds", 0.0) for r in results]
    calls = [(r["llm_calls"] + r["aux_calls"]) * LATENCY for r in results]
    critical = max(c + x for c, x in zip(calls, executions, strict=True))
    pool = SandboxPool(sandbox_workers).size  # the size the run used (default: two per core)
    pool_bound = min(calls) + sum(executions) / pool if any(executions) else 0.0
    bound = max(critical, replay + max(executions), pool_bound)
    return {
        "system": system,
        "dataset": dataset,
        "items": len(results),
        "sandbox_workers": pool if any(executions) else None,
        "failed": outcome.summary.failed,
        "requests": outcome.summary.calls_sent,
        "score": round(sum(r["score"] for r in results) / len(results), 2),
        "wall_s": round(wall, 3),
        "critical_path_s": round(critical, 3),
        "replay_floor_s": round(replay, 3),
        "exec_mean_s": round(sum(executions) / len(executions), 4),
        "pool_bound_s": round(pool_bound, 3),
        "bound_s": round(bound, 3),
        "ratio": round(wall / critical, 3),
        "ratio_vs_bound": round(wall / bound, 3),
        "within_1_2": wall <= 1.2 * critical,
        "load_1min": round(os.getloadavg()[0], 2),
    }


def repeated(times: int, *args: object, **kwargs: object) -> dict:
    """The run with the shortest wall time out of ``times`` (the machine is shared), with every wall time."""
    runs = [measure(*args, **kwargs) for _ in range(times)]  # type: ignore[arg-type]
    best = min(runs, key=lambda r: r["wall_s"])
    walls = sorted(r["wall_s"] for r in runs)
    return {
        **best,
        "wall_s_all": walls,
        "ratio_median": round(walls[len(walls) // 2] / best["critical_path_s"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the fastest is reported")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args.port)
        return
    busy = busy_cores()
    widths = (1, 5, 10) if args.quick else (1, 5, 10, 25, 50)
    n = args.repeat
    rows = [repeated(n, "camel", "ciar", w) for w in widths]
    rows += [repeated(n, "mad", "ciar", w) for w in widths[-2:]]
    rows.append(repeated(n, "camel", "humaneval50", 10 if args.quick else None))
    if not args.quick:
        for workers in (2, 4, 8):
            rows.append(repeated(n, "camel", "humaneval", None, sandbox_workers=workers))
    headers = list(rows[0])
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    data = {"latency_s": LATENCY, "busy_cores_before": busy, "repeat": n, "runs": rows}
    print(f"wrote {write_results('collab_critical_path', data, args.quick)}")


if __name__ == "__main__":
    main()
