"""No test from data that cannot support it: runs with an SD near 0, or that are not independent samples,
are flagged in the comparison table itself, left out of Holm's family, and given the valid comparison (the
model's z and percentile in the human norm); the significance mark renders as ``**↓`` in Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from llmpsych.psychobench.analysis import _comparison_view
from llmpsych.report.html import markdown_to_html
from llmpsych.report.markdown import table
from llmpsych.runs import parse_run_config, start_run
from llmpsych.stats import GroupStats, apply_holm, compare_with_norm, comparisons_frame
from llmpsych.stats.compare import degenerate_reason
from llmpsych.testing.fault_server import FaultServer

HUMANS = GroupStats(3.0, 0.8, 6000, "people")


def test_nearly_identical_runs_are_degenerate_and_left_out_of_holm() -> None:
    """The issue's shape: runs that nearly coincide give |t| in the tens and p <= 1e-184 against a large
    norm, while Hedges' g's interval spans 0."""
    runs = GroupStats(2.6, 0.001, 10, "model")
    result = compare_with_norm(runs, HUMANS, published=False)
    assert abs(result.t_statistic) > 30 and result.t_p_value < 1e-100  # the test alone says "lower"
    assert result.g_ci_low < 0 < result.g_ci_high
    assert result.degenerate.startswith("model SD 0.001 is near 0")
    assert result.glass_delta == pytest.approx(-0.5) and result.human_percentile == pytest.approx(
        30.85, abs=0.01
    )
    healthy = compare_with_norm(GroupStats(2.0, 0.3, 10, "model"), HUMANS, published=False)
    assert healthy.degenerate == ""
    held = apply_holm([result, healthy])
    assert held[0].p_holm is None and held[0].significant_holm is None
    assert held[1].p_holm == pytest.approx(healthy.t_p_value)  # a family of one test, not two


@pytest.mark.parametrize(
    ("sd", "dependence", "reason"),
    [
        (0.0, "", "model SD is 0"),
        (0.3, "logprob mode at temperature 0", "runs are not independent samples (logprob mode"),
        (0.03, "", "near 0"),  # 0.03² / 10 < 0.8² / 6000
        (0.04, "", ""),  # 0.04² / 10 > 0.8² / 6000
    ],
)
def test_degenerate_rule(sd: float, dependence: str, reason: str) -> None:
    got = degenerate_reason(GroupStats(2.0, sd, 10), HUMANS, dependence=dependence)
    assert reason in got if reason else got == ""


def test_the_significance_mark_renders_as_asterisks_in_markdown_and_html(tmp_path: Path) -> None:
    lower = compare_with_norm(GroupStats(2.0, 0.3, 10, "m"), HUMANS, published=False, scale="S", subscale="A")
    flat = compare_with_norm(GroupStats(2.0, 0.0, 10, "m"), HUMANS, published=False, scale="S", subscale="B")
    view = _comparison_view(comparisons_frame(apply_holm([lower, flat])))
    markdown = table(view, floatfmt=".3g")
    row_a, row_b = (line for line in markdown.splitlines() if line.startswith("| S "))
    assert "| **↓ " in row_a and "\\*" not in markdown  # before: \\*\\*↓ in the .md source
    page = markdown_to_html(markdown, title="t", base_dir=tmp_path)
    assert ">**↓</td>" in page and "<em>" not in page and "\\" not in page  # before: \\<em>\\</em>↓
    # the degenerate row: no t, p or mark; the valid comparison instead
    assert "degenerate: model SD is 0" in row_b and "not a test" in row_b and "**" not in row_b
    assert "z = -1.25 (percentile 10.6)" in row_b


def test_logprob_runs_at_temperature_0_are_flagged_in_the_report(tmp_path: Path, seed_data: Path) -> None:
    with FaultServer(responder=lambda body: "3") as server:
        config = parse_run_config(
            {
                "task": "psychobench",
                "model": "openai-compatible/scripted",
                "base_url": server.base_url,
                "cache": False,
                "data_dir": str(seed_data),
                "options": {"scale": ["GSE"], "runs": 3, "method": "logprob"},
            }
        )
        start_run(config, tmp_path / "r", False)
    comparisons = pd.read_csv(tmp_path / "r" / "comparisons.csv")
    assert len(comparisons) and comparisons["degenerate"].str.startswith("runs are not independent").all()
    assert comparisons["p_holm"].isna().all() and comparisons["human_percentile"].between(0, 100).all()
    report = (tmp_path / "r" / "report.md").read_text()
    assert "## Caution: degenerate tests" in report and "model in human norm" in report
    comparison = report.split("## Comparison with human norms")[1].split("\n## ")[0]
    assert "degenerate: runs are not independent samples (logprob mode at temperature 0" in comparison
