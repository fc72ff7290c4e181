"""How long an item response model takes: a 44-item 5-point scale (the BFI's size) at 2,500 respondents.

``python benchmarks/irt_fit.py [--items 44] [--respondents 2500] [--quick]`` simulates graded answers with
known parameters (discriminations 0.8-2.0, thresholds spread over -2..2), builds the item-level long
format, and times :func:`llmpsych.validity.irt.fit_scale` (girth's estimation, then the standard errors,
convergence check, EAP, information and item fit computed here), best of ``--repeats``. It also prints the
largest recovery error, so a faster but wrong fit cannot pass unnoticed. ``--quick``: 10 items at 500
respondents.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import LoadMonitor, check_quiet, markdown_table, write_results

from llmpsych.runs.items import ITEM_COLUMNS
from llmpsych.validity._likelihood import ItemParameters, simulate
from llmpsych.validity.irt import GirthEstimator, fit_scale


def long_frame(data: np.ndarray) -> pd.DataFrame:
    n, k = data.shape
    respondent = np.repeat([f"p{i}" for i in range(n)], k)
    frame = pd.DataFrame(
        {
            "respondent": respondent,
            "source": "person",
            "model": "",
            "persona": "",
            "language": "",
            "template": "",
            "run": "simulated",
            "scale": "SIM",
            "item": np.tile(np.arange(1, k + 1), n),
            "subscale": "",
            "reverse": False,
            "response": (data + 1).reshape(-1).astype(float),
            "status": "answered",
            "min": 1,
            "max": 5,
        }
    )
    return frame[ITEM_COLUMNS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=44)
    parser.add_argument("--respondents", type=int, default=2500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    items, n = (10, 500) if args.quick else (args.items, args.respondents)
    rng = np.random.default_rng(7)
    spread = np.array([-0.3, -0.1, 0.1, 0.3])  # keeps neighbouring thresholds apart: every category used
    true = [
        ItemParameters(float(a), tuple(float(b) for b in np.sort(rng.uniform(-2, 2, 4)) + spread))
        for a in rng.uniform(0.8, 2.0, items)
    ]
    data, _ = simulate(true, n, seed=8)
    frame = long_frame(data)
    busy = check_quiet()
    timings, estimation = [], []
    estimator = GirthEstimator()
    coded = data.astype(np.int64)
    with LoadMonitor() as load:
        for _ in range(args.repeats):
            started = time.perf_counter()
            fit = fit_scale(frame, estimator=estimator)
            timings.append(time.perf_counter() - started)
            started = time.perf_counter()
            estimator.fit(coded, binary=False)
            estimation.append(time.perf_counter() - started)
    if fit.refused:
        raise SystemExit(f"the fit was refused: {fit.summary['reason']}")
    a = fit.items[fit.items["parameter"] == "a"]["estimate"].to_numpy()
    b = fit.items[fit.items["parameter"] != "a"]["estimate"].to_numpy().reshape(items, 4)
    error_a = float(np.abs(a - [p.a for p in true]).max())
    error_b = float(np.abs(b - np.array([p.b for p in true])).max())
    row = [
        items,
        n,
        f"{min(timings):.2f}",
        f"{min(estimation):.2f}",
        f"{min(timings) - min(estimation):.2f}",
        f"{error_a:.3f}",
        f"{error_b:.3f}",
        f"{fit.summary['max_step_se']:.2f}",
    ]
    headers = ["items", "respondents", "fit s", "girth s", "SEs+checks s", "max |Δa|", "max |Δb|", "step/SE"]
    print(markdown_table(headers, [row]))
    data_out = {
        "items": items,
        "respondents": n,
        "fit_seconds": min(timings),
        "girth_seconds": min(estimation),
        "max_error_a": error_a,
        "max_error_b": error_b,
        "max_step_se": fit.summary["max_step_se"],
        "busy_cores_before": busy,
        "other_cores_during": load.other_cores,
    }
    print(f"wrote {write_results('irt_fit', data_out, args.quick)}")


if __name__ == "__main__":
    main()
