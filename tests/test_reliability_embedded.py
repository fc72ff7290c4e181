"""The reliability grid on the embedded model: a tiny English subset, end to end, with the map.

Two configurations (4 calls), not the issue's 8: 8 are 16 calls of 8 s or more on a 2-core machine,
beyond one model test's budget (measured figures in docs/reliability.md, "End-to-end test size").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmpsych.reliability.results import run_frame
from llmpsych.runs import parse_run_config, start_run


@pytest.mark.model
def test_two_english_configurations_on_the_embedded_model(tmp_path: Path, seed_data: Path) -> None:
    config = parse_run_config(
        {
            "task": "reliability",
            "data_dir": str(seed_data),
            "options": {
                "languages": ["En"],
                "templates": ["t1"],
                "versions": ["v1"],
                "labels": ["n"],
                "orders": ["f", "r"],
                "tokens_per_item": 8,
                "max_attempts": 1,
            },
        }
    )
    outcome = start_run(config, tmp_path / "run", show_progress=False)
    assert outcome.summary.done == 2 and outcome.summary.calls_sent == 4
    frame = run_frame(tmp_path / "run")
    assert len(frame) == 2
    assert frame["valid_rate"].max() > 0.3  # the 0.5B model labels at least part of the statements
    names = {p.name for p in outcome.outputs}
    assert {"report.md", "data_points.csv", "configurations.csv"} <= names
    assert "map_density.png" in names or not _has_matplotlib()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
