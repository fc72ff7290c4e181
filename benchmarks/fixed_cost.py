"""The fixed cost of ``llmpsych run`` (start to first request, last answer to exit) beside ``python -c pass``.

    python benchmarks/fixed_cost.py                       # best of 7, echo task, 10 units
    python benchmarks/fixed_cost.py --against /tmp/main/src   # this tree and another, run for run in turn
    python benchmarks/fixed_cost.py --units 500           # a larger run (the end reads more from the store)
    python benchmarks/fixed_cost.py --rss 5000,50000      # peak RSS by run size (one request per unit)
    python benchmarks/fixed_cost.py --rss 5000,50000 --fixed-units 1000   # 1,000 units, 5 or 50 seats each

Each repetition is ``llmpsych run --task echo -O units=N`` in a fresh process against a local server
(``_common.py``'s asyncio server, 10 ms latency), run through :mod:`llmpsych.testing.request_clock`,
which stamps the first request and the last answer with ``time.monotonic()`` and the CPU time spent by
then. The parent notes the clock before starting the process and after it exits, so

* **start to first request** = first request - start (wall), CPU time at the first request (CPU);
* **last answer to exit** = exit - last answer (wall), total CPU time - CPU time at the last answer (CPU);
* **fixed cost** = their sum; shown next to ``python -c pass`` measured the same way, and as a ratio;
* **import aiohttp**: the CPU time of ``import aiohttp`` (the HTTP client library; not shown for a tree
  whose HTTP layer does not import it), which the clock does first, in the same process; the fixed cost
  without it is the rest (the command line, the run engine, the end of the run). Each column is its best,
  so that one is the best of the differences, not the difference of the bests.

Figures are the best of ``--reps`` (the least disturbed by other work; CPU time moves less with load than
wall time). The heavy modules (pandas, scipy, numpy, matplotlib) loaded at the first request are listed.
Nothing here asserts a time. Results go to ``benchmarks/results/fixed_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ServerProcess, check_quiet, markdown_table, write_results

SRC = Path(__file__).resolve().parents[1] / "src"
CLOCK = SRC / "llmpsych" / "testing" / "request_clock.py"
HEAVY = ("pandas", "scipy", "numpy", "matplotlib")
#: Runs the clock file as __main__ without putting its folder on sys.path (works for any source tree).
RUNNER = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def _spawn(cmd: list[str], env: dict[str, str]) -> tuple[int, float, float, float, str]:
    """Run ``cmd``: (exit status, monotonic start, monotonic end, CPU seconds, stderr); plus peak RSS in
    :data:`LAST_RSS_MB` (``os.wait4`` gives this child's own rusage)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        t1 = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        LAST_RSS_MB[0] = usage.ru_maxrss / 1024  # KiB on Linux
        return proc.returncode, t0, t1, usage.ru_utime + usage.ru_stime, err.read().decode(errors="replace")


LAST_RSS_MB = [0.0]


def python_pass(env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``python -c pass``."""
    _, t0, t1, cpu, _ = _spawn([sys.executable, "-c", "pass"], env)
    return t1 - t0, cpu


def one_run(src: Path, base_url: str, units: int, env: dict[str, str], parallel: int = 1) -> dict[str, Any]:
    """One ``llmpsych run --task echo`` (``units`` x ``parallel`` requests) through the request clock; its
    fixed cost (wall and CPU) and its peak RSS, also as it was at the last answer."""
    with tempfile.TemporaryDirectory(prefix="llmpsych-fixed-") as tmp:
        out = Path(tmp) / "clock.json"
        args = ["run", "--task", "echo", "-m", "openai-compatible/bench", "--base-url", base_url]
        args += [
            "-O",
            f"units={units}",
            "-O",
            f"parallel={parallel}",
            "--no-cache",
            "--concurrency",
            "64",
            "--out",
            str(Path(tmp) / "run"),
        ]
        cmd = [sys.executable, "-c", RUNNER, str(CLOCK), str(out), *args]
        code, t0, t1, cpu, stderr = _spawn(cmd, {**env, "PYTHONPATH": str(src)})
        if code != 0:
            raise SystemExit(f"llmpsych run failed ({code}):\n{stderr[-2000:]}")
        clock = json.loads(out.read_text())
    if clock["requests"] != units * parallel:
        raise SystemExit(f"{clock['requests']} requests sent, {units * parallel} expected")
    before = (clock["first_request"] - t0, clock["cpu_at_first_request"])
    after = (t1 - clock["last_answer"], cpu - clock["cpu_at_last_answer"])
    return {
        "before_wall_s": before[0],
        "before_cpu_s": before[1],
        "after_wall_s": after[0],
        "after_cpu_s": after[1],
        "fixed_wall_s": before[0] + after[0],
        "fixed_cpu_s": before[1] + after[1],
        "total_wall_s": t1 - t0,
        "total_cpu_s": cpu,
        "peak_rss_mb": LAST_RSS_MB[0],
        "peak_rss_mb_at_last_answer": clock["peak_rss_mb_at_last_answer"],
        "heavy_at_first_request": [m for m in HEAVY if m in clock["modules_at_first_request"]],
        "modules_at_first_request": len(clock["modules_at_first_request"]),
        # ``import aiohttp`` (the HTTP client library), done first by the clock in the same process (NaN:
        # a tree whose HTTP layer does not import it): the fixed cost without it is the rest
        "import_aiohttp_cpu_s": clock.get("cpu_import_aiohttp", float("nan")),
        "fixed_cpu_without_aiohttp_s": before[1] + after[1] - clock.get("cpu_import_aiohttp", float("nan")),
    }


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The minimum of each figure over the repetitions (and the modules of the first)."""
    keys = [k for k in runs[0] if k.endswith("_s") or "_mb" in k]
    return {
        **{k: min(r[k] for r in runs) for k in keys},
        "heavy_at_first_request": runs[0]["heavy_at_first_request"],
        "modules_at_first_request": runs[0]["modules_at_first_request"],
    }


def rss_by_size(
    trees: dict[str, Path],
    sizes: list[int],
    reps: int,
    env: dict[str, str],
    load: float,
    busy: float | None,
    fixed_units: int | None = None,
) -> None:
    """Peak RSS of whole runs of each size (best of ``reps``), per tree, and its growth from the smallest.

    One request per unit, or with ``fixed_units`` that many units asking ``size / fixed_units`` seats each
    (the echo task's ``parallel``): the requests grow, the units do not."""
    results: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in trees}
    with ServerProcess("asyncio", 0.01) as server:
        for src in trees.values():
            one_run(src, server.base_url, 10, env)  # warm-up: writes the bytecode
        for units in sizes:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
            n, parallel = (fixed_units, units // fixed_units) if fixed_units else (units, 1)
            for _ in range(reps):
                for name, src in trees.items():
                    runs[name].append(one_run(src, server.base_url, n, env, parallel))
            for name, rs in runs.items():
                results[name][units] = best(rs)
                print(f"  {name} {units}: {results[name][units]['peak_rss_mb']:.1f} MiB", file=sys.stderr)
    headers = ["tree", "requests", "units", "peak RSS (MiB)", "vs smallest", "peak at last answer (MiB)"]
    headers += ["CPU (s)", "fixed cost CPU (s)"]
    rows = []
    for name, by_size in results.items():
        smallest = by_size[sizes[0]]["peak_rss_mb"]
        for units, r in by_size.items():
            growth = f"{100 * (r['peak_rss_mb'] / smallest - 1):+.1f} %"
            rows.append(
                [name, units, fixed_units or units, f"{r['peak_rss_mb']:.1f}", growth]
                + [
                    f"{r['peak_rss_mb_at_last_answer']:.1f}",
                    f"{r['total_cpu_s']:.2f}",
                    f"{r['fixed_cpu_s']:.3f}",
                ]
            )
    print(f"\nllmpsych run --task echo, peak RSS by run size, best of {reps}, load average {load:.2f}\n")
    print(markdown_table(headers, rows))
    path = write_results(
        "fixed_cost.rss",
        {
            "sizes": sizes,
            "fixed_units": fixed_units,
            "reps": reps,
            "load_average_1min": round(load, 2),
            "busy_cores_before": busy,
            "trees": {
                name: {"src": str(trees[name]), "runs": {str(n): r for n, r in by_size.items()}}
                for name, by_size in results.items()
            },
        },
        False,
    )
    print(f"\nresults: {path}")


def _seconds(value: float) -> str:
    """A CPU time in the table; a tree whose runs do not import aiohttp has none to show."""
    return "not imported" if value != value else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions; the best counts")
    parser.add_argument("--units", type=int, default=10, help="echo units (one request each)")
    parser.add_argument("--against", type=Path, help="another source tree, measured run for run beside this")
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument(
        "--rss",
        metavar="SIZES",
        help="comma-separated run sizes, e.g. 5000,50000: peak RSS of the whole run at each (writes "
        "fixed_cost.rss.json)",
    )
    parser.add_argument(
        "--fixed-units",
        type=int,
        metavar="N",
        help="with --rss: N units at every size, each asking size/N seats (at most 64)",
    )
    ns = parser.parse_args()
    reps = 3 if ns.quick else ns.reps
    env = {**os.environ, "LLMPSYCH_CONFIG": str(Path(tempfile.gettempdir()) / "llmpsych-no-config.toml")}
    env.pop("LLMPSYCH_CACHE_DIR", None)
    # Compiled bytecode, as an installed package has it (pip writes it): with PYTHONDONTWRITEBYTECODE set
    # every llmpsych module is compiled from source in each run (about 0.09 s). The bytecode goes to a
    # folder of its own (not into the source tree), written by a warm-up run of each tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pycache = tempfile.TemporaryDirectory(prefix="llmpsych-pycache-")
    env["PYTHONPYCACHEPREFIX"] = pycache.name
    trees = {"here": SRC} if ns.against is None else {"other": ns.against.resolve(), "here": SRC}
    busy = check_quiet()
    load = os.getloadavg()[0]
    if ns.rss:
        rss_by_size(trees, [int(n) for n in ns.rss.split(",")], reps, env, load, busy, ns.fixed_units)
        return
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    passes = []
    with ServerProcess("asyncio", 0.01) as server:
        for src in trees.values():
            one_run(src, server.base_url, ns.units, env)  # warm-up: writes the bytecode
        for _ in range(reps):
            passes.append(python_pass(env))
            for name, src in trees.items():  # one of each in turn: load falls on both alike
                runs[name].append(one_run(src, server.base_url, ns.units, env))
    base_wall, base_cpu = min(p[0] for p in passes), min(p[1] for p in passes)
    results = {name: best(rs) for name, rs in runs.items()}
    headers = ["tree", "start→first request wall / CPU (s)", "last answer→exit wall / CPU (s)"]
    headers += ["fixed cost wall / CPU (s)", "÷ python -c pass (wall)", "import aiohttp CPU (s)"]
    headers += ["fixed cost CPU without it (s)", "modules at first request", "heavy at first request"]
    rows = [
        [
            f"{name} ({trees[name]})",
            f"{r['before_wall_s']:.3f} / {r['before_cpu_s']:.3f}",
            f"{r['after_wall_s']:.3f} / {r['after_cpu_s']:.3f}",
            f"{r['fixed_wall_s']:.3f} / {r['fixed_cpu_s']:.3f}",
            f"{r['fixed_wall_s'] / base_wall:.0f}x",
            _seconds(r["import_aiohttp_cpu_s"]),
            _seconds(r["fixed_cpu_without_aiohttp_s"]),
            r["modules_at_first_request"],
            ", ".join(r["heavy_at_first_request"]) or "none",
        ]
        for name, r in results.items()
    ]
    rows.append(["python -c pass", "", "", f"{base_wall:.3f} / {base_cpu:.3f}", "1x", "", "", "", ""])
    print(f"\nllmpsych run --task echo -O units={ns.units}, best of {reps}, load average {load:.2f}\n")
    print(markdown_table(headers, rows))
    path = write_results(
        "fixed_cost",
        {
            "units": ns.units,
            "reps": reps,
            "load_average_1min": round(load, 2),
            "busy_cores_before": busy,
            "python_c_pass": {"wall_s": base_wall, "cpu_s": base_cpu},
            "trees": {name: {"src": str(trees[name]), **r} for name, r in results.items()},
        },
        ns.quick,
    )
    print(f"\nresults: {path}")


if __name__ == "__main__":
    main()
