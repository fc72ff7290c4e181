"""Page times of ``llmpsych web`` on a large run: 2,500 units, 50,000 calls (a synthetic store in the
real format), served by a real uvicorn server in its own process.

    PYTHONPATH=src python benchmarks/web_pages.py [--units 2500] [--calls 20] [--repeat 5]

Prints, per page, the median and the slowest of ``repeat`` requests (the first request of the runs page
reads every unit's result once; later ones only what changed, so it is reported separately).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llmpsych.web.catalog import _run_id  # noqa: E402
from test_web_large import synthetic_run  # noqa: E402
from test_web_security import WebServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=2500)
    parser.add_argument("--calls", type=int, default=20, help="calls per unit")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        synthetic_run(Path(tmp) / "big", args.units, args.calls)
        size = (Path(tmp) / "big" / "run.sqlite").stat().st_size
        print(
            f"store: {args.units} units, {args.units * args.calls} calls, {size / 2**20:.0f} MB, "
            f"written in {time.perf_counter() - started:.1f} s"
        )
        server = WebServer(Path(tmp))
        rid = _run_id(0, "big")
        try:
            pages = {
                "runs page (first: every result read)": "/",
                "runs page": "/",
                "runs JSON (live update)": "/api/runs",
                "run page (report, units page 1)": f"/run/{rid}",
                "run page, units page 50": f"/run/{rid}?page=50",
                "run page, failed units": f"/run/{rid}?status=failed",
                f"unit page ({args.calls} calls)": f"/run/{rid}/unit?id=u01234",
            }
            print("| page | median ms | max ms |\n|---|---:|---:|")
            for label, path in pages.items():
                times = []
                for _ in range(1 if "first" in label else args.repeat):
                    t0 = time.perf_counter()
                    status, _, _ = server.request(path)
                    times.append(1000 * (time.perf_counter() - t0))
                    assert status == 200, (path, status)
                print(f"| {label} | {statistics.median(times):.0f} | {max(times):.0f} |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
