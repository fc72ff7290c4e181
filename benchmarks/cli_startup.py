"""How long the command line takes to answer ``--help`` and a one-line error, against ``python -c pass``.

    python benchmarks/cli_startup.py                  # best of 5 per command
    python benchmarks/cli_startup.py --reps 3 --quick # three commands only
    python benchmarks/cli_startup.py --src ../main/src  # another source tree (PYTHONPATH), e.g. main
    python benchmarks/cli_startup.py --importtime "psychobench --help"   # the 15 slowest imports

Every command runs as ``python -m llmpsych ARGS`` in a fresh process; the figure is the best wall time
of ``--reps`` runs (the least disturbed by other work on the machine), next to ``python -c pass`` measured
in the same run, and their ratio. Nothing here asserts a time: the numbers are for reading.

Measured on the 2-core development machine (shared, best of 5), before and after the CLI kit:

| command | before (main) | after |
|---|---|---|
| python -c pass | 0.011 s | 0.011 s |
| llmpsych --help | 1.48 s | see results/cli_startup.json |
| llmpsych psychobench --help | 1.58 s | |
| llmpsych run --task nope | 1.66 s | |

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs per command; the best counts")
    parser.add_argument("--quick", action="store_true", help="three commands only")
    parser.add_argument("--src", type=Path, help="source tree to put first on PYTHONPATH")
    parser.add_argument("--importtime", metavar="ARGS", help="print the slowest imports of one command")
    ns = parser.parse_args()
    env = {**os.environ, "COLUMNS": "100"}
    if ns.src is not None:
        env["PYTHONPATH"] = str(ns.src.resolve())
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
        "reps": ns.reps,
        "python_c_pass": {"wall_s": round(baseline, 4), "cpu_s": round(baseline_cpu, 4)},
        "commands": results,
    }
    print(f"wrote {write_results('cli_startup', data, ns.quick)}")


if __name__ == "__main__":
    main()
