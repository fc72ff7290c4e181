"""The reliability grid on the embedded model: a tiny English subset, end to end, with the map.

Two configurations (one label format x 2 orders, 4 calls) on every push; the nightly set runs eight (4 label
formats x 2 orders, 16 calls: about two minutes on an idle 2-core machine; docs/reliability.md, "End-to-end
test size").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmpsych.reliability.results import run_frame
from llmpsych.runs import parse_run_config, start_run


@pytest.mark.model
@pytest.mark.parametrize(
    "labels",
    [
        pytest.param(["n"], id="two"),
        pytest.param(["n", "al", "au", "ru"], id="eight", marks=pytest.mark.nightly),
    ],
)
def test_english_configurations_on_the_embedded_model(
    labels: list[str], tmp_path: Path, seed_data: Path
) -> None:
    n = 2 * len(labels)
    config = parse_run_config(
        {
            "task": "reliability",
            "data_dir": str(seed_data),
            "options": {
                "languages": ["En"],
                "templates": ["t1"],
                "versions": ["v1"],
                "labels": labels,
                "orders": ["f", "r"],
                "tokens_per_item": 8,
                "max_attempts": 1,
            },
        }
    )
    outcome = start_run(config, tmp_path / "run", show_progress=False)
    assert outcome.summary.done == n and outcome.summary.calls_sent == 2 * n
    frame = run_frame(tmp_path / "run")
    assert len(frame) == n
    assert frame["valid_rate"].max() > 0.3  # the 0.5B model labels at least part of the statements
    names = {p.name for p in outcome.outputs}
    assert {"report.md", "data_points.csv", "configurations.csv"} <= names
    maps = {"map_density.png", "map_order.png"} | ({"map_label.png"} if len(labels) > 1 else set())
    assert maps <= names or not _has_matplotlib()  # a factor with one level has no map of its own


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
