"""How long the command line takes to answer ``--help`` and a one-line error, against ``python -c pass``.

    python benchmarks/cli_startup.py                  # best of 5 per command
    python benchmarks/cli_startup.py --reps 3 --quick # three commands only
    python benchmarks/cli_startup.py --src ../main/src  # another source tree (PYTHONPATH), e.g. main
    python benchmarks/cli_startup.py --against /tmp/main/src  # this tree and another, interleaved
    python benchmarks/cli_startup.py --importtime "psychobench --help"   # the 15 slowest imports
    python benchmarks/cli_startup.py --importtime=--help                 # (= when ARGS start with -)

Every command runs as ``python -m llmpsych ARGS`` in a fresh process; the figure is the best wall time
of ``--reps`` runs (the least disturbed by other work on the machine), next to ``python -c pass`` measured
in the same run, and their ratio. Nothing here asserts a time: the numbers are for reading.

Measured on the 2-core development machine with ``--against`` (main before the CLI kit, this tree after;
best of 5, one run of each in turn, load average about 7 from other work, so wall times are inflated and
CPU time is the steadier figure):

| command | CPU before | CPU after | wall before | wall after |
|---|---|---|---|---|
| llmpsych --help | 1.97 s | 0.22 s | 4.83 s | 0.53 s |
| llmpsych psychobench --help | 1.96 s | 0.27 s | 3.74 s | 0.51 s |
| llmpsych emotionbench, mas, reliability, report --help | 1.8-2.0 s | 0.27-0.28 s | 3.4-3.8 s | 0.5-0.6 s |
| llmpsych run / quickstart / analyze / models / cache --help | 2.0 s | 0.26-0.32 s | 8-10 s | 0.58-1.5 s |
| llmpsych data / scales / gamabench --help | 1.9-2.0 s | 0.52-0.57 s | 3.1-3.7 s | 0.74-0.98 s |
| llmpsych run --task nope | 2.02 s | 0.52 s | 4.07 s | 0.98 s |
| python -c pass | 0.011 s | | 0.040 s | |

On the same machine when quiet (load below 1), main took 1.48 s (``--help``), 1.58 s (``psychobench
--help``) and 1.66 s (``run --task nope``) of wall time. ``data``, ``scales`` and ``gamabench`` still load
the model client through their packages' ``__init__`` (which re-export every module), and ``run --task
nope`` through ``llmpsych.runs``; both are the next step.

Results go to ``benchmarks/results/cli_startup.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

from _common import markdown_table, write_results

GROUPS = (
    "run",
    "quickstart",
    "analyze",
    "models",
    "cache",
    "data",
    "scales",
    "gamabench",
    "mas",
    "emotionbench",
    "psychobench",
    "reliability",
    "report",
)
COMMANDS = [["--help"], *([group, "--help"] for group in GROUPS), ["run", "--task", "nope"]]
QUICK = [["--help"], ["psychobench", "--help"], ["run", "--task", "nope"]]


def best_times(argv: list[str], reps: int, env: dict[str, str]) -> tuple[float, float]:
    """The shortest wall time and the shortest CPU time (user + system) of ``reps`` runs of ``argv``
    (output discarded). CPU time hardly moves when other work shares the machine; wall time does."""
    walls, cpus = [], []
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def slowest_imports(args: list[str], env: dict[str, str], top: int = 15) -> list[tuple[int, str]]:
    """The ``top`` imports with the largest cumulative time (microseconds) of one command."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "llmpsych", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def compare(other: Path, env: dict[str, str], reps: int, commands: list[list[str]]) -> None:
    """Each command in this tree and in ``other``, one run of each in turn (so that load on a shared
    machine falls on both alike): best wall and CPU time per tree, and the ratio."""
    here = {**env, "PYTHONPATH": env.get("PYTHONPATH") or str(Path(__file__).resolve().parents[1] / "src")}
    there = {**env, "PYTHONPATH": str(other.resolve())}
    base = best_times([sys.executable, "-c", "pass"], reps, env)
    rows = []
    for args in commands:
        argv = [sys.executable, "-m", "llmpsych", *args]
        pairs = [(best_times(argv, 1, there), best_times(argv, 1, here)) for _ in range(reps)]
        before = (min(p[0][0] for p in pairs), min(p[0][1] for p in pairs))
        after = (min(p[1][0] for p in pairs), min(p[1][1] for p in pairs))
        rows.append(
            ["llmpsych " + " ".join(args)]
            + [f"{before[0]:.3f}", f"{after[0]:.3f}", f"{before[1]:.3f}", f"{after[1]:.3f}"]
            + [f"{after[0] / base[0]:.0f}x"]
        )
        print(" | ".join(rows[-1]), flush=True)
    print(f"python -c pass: {base[0]:.3f} s wall, {base[1]:.3f} s CPU (best of {reps})")
    headers = ["command", "wall other (s)", "wall here (s)", "CPU other (s)", "CPU here (s)", "here / pass"]
    print(markdown_table(headers, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs per command; the best counts")
    parser.add_argument("--quick", action="store_true", help="three commands only")
    parser.add_argument("--src", type=Path, help="source tree to put first on PYTHONPATH")
    parser.add_argument("--importtime", metavar="ARGS", help="print the slowest imports of one command")
    parser.add_argument(
        "--against", type=Path, help="another source tree, measured run for run beside this one"
    )
    ns = parser.parse_args()
    env = {**os.environ, "COLUMNS": "100"}
    if ns.src is not None:
        env["PYTHONPATH"] = str(ns.src.resolve())
    if ns.against is not None:
        compare(ns.against, env, ns.reps, QUICK if ns.quick else COMMANDS)
        return
    if ns.importtime:
        for micros, name in slowest_imports(shlex.split(ns.importtime), env):
            print(f"{micros / 1e6:7.3f} s  {name}")
        return
    baseline, baseline_cpu = best_times([sys.executable, "-c", "pass"], ns.reps, env)
    rows = []
    results = []
    for args in QUICK if ns.quick else COMMANDS:
        wall, cpu = best_times([sys.executable, "-m", "llmpsych", *args], ns.reps, env)
        label = "llmpsych " + " ".join(args)
        ratio = wall / baseline
        rows.append([label, f"{wall:.3f}", f"{ratio:.0f}x", f"{cpu:.3f}"])
        results.append(
            {"command": label, "wall_s": round(wall, 4), "ratio": round(ratio, 1), "cpu_s": round(cpu, 4)}
        )
        print(f"{label:40} {wall:6.3f} s wall ({ratio:3.0f}x python -c pass), {cpu:6.3f} s CPU", flush=True)
    print()
    print(f"python -c pass: {baseline:.3f} s wall, {baseline_cpu:.3f} s CPU (best of {ns.reps})")
    headers = ["command", f"wall, best of {ns.reps} (s)", "/ python -c pass", "CPU (s)"]
    print(markdown_table(headers, rows))
    data = {
        "load_average_1min": round(os.getloadavg()[0], 2),  # other work on the machine inflates wall time
        "reps": ns.reps,
        "python_c_pass": {"wall_s": round(baseline, 4), "cpu_s": round(baseline_cpu, 4)},
        "commands": results,
    }
    print(f"wrote {write_results('cli_startup', data, ns.quick)}")


if __name__ == "__main__":
    main()
