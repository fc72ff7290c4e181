"""MAS-Resilience: does a clean system × task run finish within 1.2× its critical path?

A scripted OpenAI-compatible server (llmpsych's FaultServer with ``ScriptedCollaborator``, in its own
process so that its threads do not compete with the run for the interpreter) answers every request after
a fixed 100 ms. Items run concurrently and each item's conversation is sequential, so the critical path
is the longest item: its sequential calls × 100 ms, plus (for HumanEval) its own sandboxed test run. With
many items the sandbox pool (one worker per core) can also bound the run: the report gives that bound
(total execution seconds ÷ pool size) beside the critical path.

    python benchmarks/collab_critical_path.py            # camel, mad × ciar at 1-50 items; camel × humaneval
    python benchmarks/collab_critical_path.py --quick    # fewer items
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import busy_cores, free_port, markdown_table, write_results  # noqa: E402

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


def measure(system: str, dataset: str, items: int | None, concurrency: int = 1024) -> dict:
    """One clean run; wall time against the critical path."""
    options: dict = {"system": system, "dataset": dataset}
    if items:
        options["items"] = items
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
    wall = outcome.summary.seconds
    executions = [r.get("execution", {}).get("seconds", 0.0) for r in results]
    chains = [
        (r["llm_calls"] + r["aux_calls"]) * LATENCY + x for r, x in zip(results, executions, strict=True)
    ]
    critical = max(chains)
    return {
        "system": system,
        "dataset": dataset,
        "items": len(results),
        "concurrency": concurrency,
        "failed": outcome.summary.failed,
        "requests": outcome.summary.calls_sent,
        "score": round(sum(r["score"] for r in results) / len(results), 2),
        "wall_s": round(wall, 3),
        "critical_path_s": round(critical, 3),
        "sandbox_pool_bound_s": round(sum(executions) / SandboxPool().size, 3),
        "ratio": round(wall / critical, 3),
        "within_1_2": wall <= 1.2 * critical,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args.port)
        return
    busy = busy_cores()
    widths = (1, 5, 10) if args.quick else (1, 5, 10, 25, 50)
    rows = [measure("camel", "ciar", n) for n in widths]
    rows += [measure("mad", "ciar", n) for n in widths[-2:]]
    rows.append(measure("camel", "humaneval50", 10 if args.quick else None))
    if not args.quick:
        rows.append(measure("camel", "humaneval", None))
    headers = list(rows[0])
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    data = {"latency_s": LATENCY, "busy_cores_before": busy, "runs": rows}
    print(f"wrote {write_results('collab_critical_path', data, args.quick)}")


if __name__ == "__main__":
    main()
