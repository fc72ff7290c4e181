"""The cost of a measurement-invariance test: 5 groups x 44 items (the BFI's shape: 8/9/9/10/8 items on
five subscales) x 500 respondents per group, configural, metric and scalar fits plus item-level DIF.

    python benchmarks/validity_invariance.py            # the full case
    python benchmarks/validity_invariance.py --quick    # 2 groups x 200 respondents

Wall and CPU time of each stage (simulation, each level's fit, the DIF of the 44 items). Nothing here
asserts a time: the numbers are for reading. The issue's budget is under a minute on the 2-core machine.

Measured on the 2-core development machine (shared with other work, load average ~6), full case:
simulation 1.6 s; the model in each group alone, then configural, metric and scalar: 23.5 s; DIF of the
44 items 3.6 s; invariance in all 27.1 s wall, 8.8 s CPU (the rest is waiting for the shared cores).
Before two fixes it took 76 s for the fits (numpy's
and scipy's OpenBLAS thread pools spinning against each other: 40 ms per 44 x 44 Cholesky factorisation,
0.03 ms with one thread; and semopy's per-parameter gradient loop, replaced by the closed form) and 90 s
for the DIF (statsmodels' numerical gradient through scipy.stats' logistic: replaced by the analytic
score of the same likelihood and scipy.special.expit).

Results go to ``benchmarks/results/validity_invariance.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_seconds, machine, write_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 groups x 200 respondents")
    args = parser.parse_args()
    from llmpsych.validity.invariance import measurement_invariance
    from llmpsych.validity.simulate import simulate_long

    groups = ["g1", "g2"] if args.quick else ["g1", "g2", "g3", "g4", "g5"]
    n = 200 if args.quick else 500
    factors: dict[str, list[int]] = {}
    start = 1
    for name, size in zip("EACNO", (8, 9, 9, 10, 8), strict=True):
        factors[name] = list(range(start, start + size))
        start += size
    stages: dict[str, float] = {}
    t0, c0 = time.perf_counter(), cpu_seconds()
    frame = simulate_long(groups=groups, n=n, factors=factors, seed=1, intercepts_shift={"g2": {3: 0.8}})
    stages["simulate"] = time.perf_counter() - t0
    marks: list[tuple[str, float]] = []

    def progress(message: str) -> None:
        marks.append((message, time.perf_counter()))
        print(f"{time.perf_counter() - t0:7.1f} s  {message}", flush=True)

    t1 = time.perf_counter()
    result = measurement_invariance(frame, "persona", progress=progress)
    total = time.perf_counter() - t1
    dif_start = next((t for m, t in marks if m.startswith("item-level DIF")), time.perf_counter())
    stages["fits"] = dif_start - t1
    stages["dif"] = time.perf_counter() - dif_start
    stages["invariance_total"] = total
    cpu = cpu_seconds() - c0
    print("\n".join(result.summary_lines()))
    print({k: round(v, 1) for k, v in stages.items()}, f"cpu {cpu:.1f} s")
    write_results(
        "validity_invariance",
        {
            "machine": machine(),
            "groups": len(groups),
            "n_per_group": n,
            "items": 44,
            "seconds": stages,
            "cpu_seconds": cpu,
            "levels": {s.level: s.holds for s in result.steps},
        },
        args.quick,
    )


if __name__ == "__main__":
    main()
