"""How long ``llmpsych reproduce`` takes: the whole command in a fresh process, and each table.

    python benchmarks/reproduce_tables.py                       # ../shared/seed-data, best of 3
    python benchmarks/reproduce_tables.py --data-dir DIR --reps 1
    python benchmarks/reproduce_tables.py --harness             # also time `reproduce mas --harness` once

The command's figure is the best wall (and CPU) time of ``--reps`` runs of ``python -m llmpsych
reproduce --data-dir DIR`` (imports included); each table's is its reproducer's time in one in-process
run (the first table of a system also pays that system's imports). Nothing here asserts a time.

Measured on the 2-core development machine (seed data, both cores busy with other work, load 14-19;
best of 2): the command 23.6 s wall, 6.9 s CPU for 2,693 printed cells in 18 tables (5.4 s CPU for the
13 tables before MAS-Resilience and PsychoBench); the slowest table LLMPersonality's Table 3.3 (its first
table: the reliability imports and the PCA/DBSCAN map), then EmotionBench's Table 5.10 (reading
crowd.xlsx); the five MAS-Resilience and PsychoBench tables together 1.2 s. ``--harness`` (11,580
released HumanEval verdicts, 9,935 distinct programs in the sandbox): 159 s wall, 11.9 s CPU counted
for the command and its waited children, one run on the same busy machine (133 s in an earlier run).

Results go to ``benchmarks/results/reproduce_tables.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import check_quiet, markdown_table, write_results

ROOT = Path(__file__).resolve().parents[1]


def _command(data_dir: Path, *extra: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "reproduce", *extra, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"llmpsych reproduce failed: {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "seed-data")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run of the command")
    parser.add_argument("--harness", action="store_true", help="also time `reproduce mas --harness` once")
    args = parser.parse_args()
    busy = check_quiet()
    runs = [_command(args.data_dir) for _ in range(1 if args.quick else args.reps)]
    wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    harness = _command(args.data_dir, "mas", "--harness") if args.harness else None

    sys.path.insert(0, str(ROOT / "src"))
    from llmpsych.reproduce.run import reproduce

    result = reproduce(data_dir=args.data_dir)
    rows = [
        [f"{t.reproducer.system} {t.reproducer.table}", t.summary.printed, f"{t.seconds:.2f} s"]
        for t in result.tables
    ]
    print(f"llmpsych reproduce: {wall:.1f} s wall, {cpu:.1f} s CPU (best of {len(runs)})")
    print(markdown_table(["table", "printed cells", "time"], rows))
    print(result.total.line())
    if harness is not None:
        print(f"llmpsych reproduce mas --harness: {harness[0]:.1f} s wall, {harness[1]:.1f} s CPU (one run)")
    path = write_results(
        "reproduce_tables",
        {
            "busy_cores_before": busy,
            "command_wall_s": wall,
            "command_cpu_s": cpu,
            "tables": {row[0]: t.seconds for row, t in zip(rows, result.tables, strict=True)},
            "total": result.total.line(),
            **({"harness_wall_s": harness[0], "harness_cpu_s": harness[1]} if harness else {}),
        },
        args.quick,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
