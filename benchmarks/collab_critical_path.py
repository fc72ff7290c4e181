"""MAS-Resilience: does a clean system × task run finish within 1.2× its critical path?

A scripted OpenAI-compatible server (``ScriptedCollaborator`` behind the asyncio server the other
benchmarks use, ``_common.serve_asyncio``, in its own process) answers every request 100 ms after it
arrived. Items run concurrently and each item's conversation is sequential, so the critical path
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

The sandbox itself is measured beside it (``sandbox`` rows): HumanEval's 164 canonical solutions judged
through the bubblewrap sandbox (``llmpsych.sandbox``) and through the in-process-hook sandbox it replaced
(``collab/sandbox.py`` as of commit ``OLD_SANDBOX_REF``, read from git into a temporary folder), in the
same run, at the same pool size: executions per second, the overhead of one trivial execution run one at
a time, and the peak resident memory of all the processes the sandbox started (sampled every 10 ms).

    python benchmarks/collab_critical_path.py            # camel, mad × ciar at 1-50 items; camel × humaneval
    python benchmarks/collab_critical_path.py --quick    # fewer items
    python benchmarks/collab_critical_path.py sandbox    # only the sandbox rows
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ServerProcess,
    busy_cores,
    completion_response,
    markdown_table,
    replay_chains,
    serve_asyncio,
    stored_chains,
    write_results,
)

from llmpsych.collab.datasets import load_items  # noqa: E402
from llmpsych.collab.scoring import check_humaneval, official_digests  # noqa: E402
from llmpsych.collab.scripted import ScriptedCollaborator  # noqa: E402
from llmpsych.runs import RunStore, parse_run_config, start_run  # noqa: E402
from llmpsych.sandbox import Limits, Program, open_sandbox  # noqa: E402

LATENCY = 0.1
ROOT = Path(__file__).resolve().parents[1]
SEED_DATA = ROOT.parent / "shared" / "seed-data"
#: The last commit with the in-process-hook sandbox (``src/llmpsych/collab/sandbox.py``): the baseline.
OLD_SANDBOX_REF = "a678487"


def _responder() -> ScriptedCollaborator:
    problems = load_items("humaneval", SEED_DATA)
    return ScriptedCollaborator(
        {p.reference["prompt"]: p.reference["prompt"] + p.reference["canonical_solution"] for p in problems}
    )


def serve(port: int, latency: float) -> None:
    """Serve the scripted collaborator until killed: the asyncio server of the other benchmarks.

    Each request is answered ``latency`` seconds after it arrived, whatever the number of connections
    (the threaded FaultServer used before added its own thread hand-offs under 50 connections).
    """
    responder = _responder()

    def respond(raw: bytes) -> bytes:
        return completion_response(responder(json.loads(raw)), usage=(100, 20))

    asyncio.run(serve_asyncio(port, latency, respond))


def measure(
    system: str, dataset: str, items: int | None, concurrency: int = 1024, sandbox_workers: int | None = None
) -> dict:
    """One clean run; wall time against the critical path and the ideals measured beside it."""
    options: dict = {"system": system, "dataset": dataset}
    if items:
        options["items"] = items
    if sandbox_workers:
        options["sandbox_workers"] = sandbox_workers
    with (
        ServerProcess("scripted", LATENCY, __file__, ["serve"]) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
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
    pool = sandbox_workers or 2 * max(1, os.cpu_count() or 1)  # the size the run used (default: two per core)
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


def old_sandbox() -> ModuleType:
    """The replaced sandbox module, read from git at ``OLD_SANDBOX_REF`` (standard library only)."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{OLD_SANDBOX_REF}:src/llmpsych/collab/sandbox.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="llmpsych-old-sandbox-")) / "old_sandbox.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_sandbox", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_sandbox"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class PeakMemory:
    """The largest sum of resident memory of this process's descendants, sampled every 10 ms."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            parents: dict[int, int] = {}
            rss: dict[int, int] = {}
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                parents[int(name)] = int(fields[1])
                rss[int(name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
            tree, frontier = set(), {me}
            while frontier:
                frontier = {pid for pid, parent in parents.items() if parent in frontier} - tree
                tree |= frontier
            self.peak_kib = max(self.peak_kib, sum(rss[pid] for pid in tree))
            self._stop.wait(0.01)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure_sandboxes(workers: int, repeat: int) -> list[dict]:
    """HumanEval's 164 canonical solutions through the new and the old sandbox, in the same run."""
    problems = [item.reference for item in load_items("humaneval", SEED_DATA)]
    old = old_sandbox()

    def old_program(p: dict) -> str:  # what the old scoring ran: prompt, completion, tests, check
        return f"{p['prompt']}{p['canonical_solution']}\n\n{p['test']}\n\ncheck({p['entry_point']})\n"

    async def batch_old() -> tuple[float, int, float]:
        pool = old.SandboxPool(workers, old.Limits(timeout_s=10, cpu_s=10))
        await pool.run("x = 1")  # the warm worker starts
        started = time.monotonic()
        for _ in range(50):
            await pool.run("x = 1")
        single = (time.monotonic() - started) / 50
        started = time.monotonic()
        results = await asyncio.gather(*(pool.run(old_program(p)) for p in problems))
        wall = time.monotonic() - started
        pool.close()
        return wall, sum(r.passed for r in results), single

    async def batch_new() -> tuple[float, int, float]:
        box = open_sandbox(workers, Limits(timeout_s=10, cpu_s=10))
        await asyncio.gather(*(box.run(Program("x = 1")) for _ in range(workers)))  # the workers start
        started = time.monotonic()
        for _ in range(50):
            await box.run(Program("x = 1"))
        single = (time.monotonic() - started) / 50
        started = time.monotonic()
        official = official_digests(SEED_DATA)
        results = await asyncio.gather(
            *(check_humaneval(p, p["canonical_solution"], box, official=official) for p in problems)
        )
        wall = time.monotonic() - started
        box.close()
        return wall, sum(r.passed for r in results), single

    rows = []
    for name, batch in (("in-process hooks (old)", batch_old), ("bubblewrap (new)", batch_new)):
        runs = []
        for _ in range(repeat):
            with PeakMemory() as memory:
                wall, passed, single = asyncio.run(batch())
            runs.append((wall, passed, single, memory.peak_kib))
        wall, passed, single, peak = min(runs)
        rows.append(
            {
                "sandbox": name,
                "workers": workers,
                "executions": len(problems),
                "passed": passed,
                "wall_s": round(wall, 3),
                "wall_s_all": sorted(round(r[0], 3) for r in runs),
                "executions_per_s": round(len(problems) / wall, 1),
                "single_execution_ms": round(1000 * min(r[2] for r in runs), 2),
                "peak_rss_mib": round(max(r[3] for r in runs) / 1024, 1),
                "load_1min": round(os.getloadavg()[0], 2),
            }
        )
    rows[1]["speed_vs_old"] = round(rows[1]["executions_per_s"] / rows[0]["executions_per_s"], 3)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve", "sandbox"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=LATENCY)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the fastest is reported")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args.port, args.latency)
        return
    busy = busy_cores()
    n = args.repeat
    sandbox_rows = measure_sandboxes(4, n)
    sandbox_headers = list(sandbox_rows[1])
    print(markdown_table(sandbox_headers, [[r.get(h, "") for h in sandbox_headers] for r in sandbox_rows]))
    if args.mode == "sandbox":
        data = {"busy_cores_before": busy, "repeat": n, "sandbox": sandbox_rows}
        print(f"wrote {write_results('collab_sandbox', data, args.quick)}")
        return
    widths = (1, 5, 10) if args.quick else (1, 5, 10, 25, 50)
    rows = [repeated(n, "camel", "ciar", w) for w in widths]
    rows += [repeated(n, "mad", "ciar", w) for w in widths[-2:]]
    rows.append(repeated(n, "camel", "humaneval50", 10 if args.quick else None))
    if not args.quick:
        for workers in (2, 4, 8):
            rows.append(repeated(n, "camel", "humaneval", None, sandbox_workers=workers))
    headers = list(rows[0])
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    data = {
        "latency_s": LATENCY,
        "busy_cores_before": busy,
        "repeat": n,
        "runs": rows,
        "sandbox": sandbox_rows,
    }
    print(f"wrote {write_results('collab_critical_path', data, args.quick)}")


if __name__ == "__main__":
    main()
