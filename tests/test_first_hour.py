"""The first hour on llmpsych: what a user sees when a run's output is a pipe, the embedded model's
context (``?ctx=``) and its refusals, and the documented first PsychoBench command on the default model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmpsych.errors import ModelSpecError
from llmpsych.models.embedded import (
    DEFAULT_CONTEXT_PER_SLOT,
    DEFAULT_CONTEXT_TOTAL,
    MIN_DEFAULT_CONTEXT,
    EmbeddedSettings,
)
from llmpsych.models.spec import parse_model_spec
from llmpsych.testing.fault_server import FaultRates, FaultServer
from llmpsych.testing.runs import run_cli

LINE = re.compile(r"^echo: (\d+)/(\d+) units \((\d+)%\), [\d.]+ units/(?:s|min|h), ETA \d+:\d\d:\d\d$")


def test_a_run_piped_to_a_file_prints_progress_lines(tmp_path: Path) -> None:
    """stdout and stderr are pipes (no terminal): the run prints done/total, rate and ETA every interval
    (here 0.5 s; ``LLMPSYCH_PROGRESS_INTERVAL``), and one line at the end. 30 calls of 0.1 s, one at a time,
    last at least 3 s, so at least four intervals and the final line."""
    with FaultServer(FaultRates(latency_s=0.1)) as server:
        result = run_cli(
            "run", "--task", "echo", "-O", "units=30", "--model", "openai-compatible/m",
            "--base-url", server.base_url, "--concurrency", "1", "--no-cache", "--out", tmp_path / "r",
            env={"LLMPSYCH_PROGRESS_INTERVAL": "0.5"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [m for m in map(LINE.match, result.stderr.splitlines()) if m]
    assert len(lines) >= 3, result.stderr
    done = [int(m.group(1)) for m in lines]
    assert done == sorted(done) and done[-1] == 30 and done[0] < 30
    assert all(m.group(2) == "30" for m in lines)
    assert lines[-1].group(0).endswith("ETA 0:00:00")
    assert "━" not in result.stdout + result.stderr  # no bar drawn for a terminal that is not there


def test_a_short_piped_run_prints_its_last_line_only(tmp_path: Path) -> None:
    """A run of a few units still ends with one line saying it is done."""
    with FaultServer() as server:
        result = run_cli(
            "run", "--task", "echo", "-O", "units=3", "--model", "openai-compatible/m",
            "--base-url", server.base_url, "--no-cache", "--out", tmp_path / "r",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [m.group(0) for m in map(LINE.match, result.stderr.splitlines()) if m] == [
        next(line for line in result.stderr.splitlines() if line.startswith("echo: 3/3"))
    ]


def test_ctx_in_an_embedded_spec() -> None:
    spec = parse_model_spec("local/qwen2.5-0.5b?ctx=8192")
    assert (spec.kind, spec.model, spec.ctx, spec.text) == ("embedded", "qwen2.5-0.5b", 8192, spec.text)
    assert parse_model_spec("gguf:/models/x.gguf?ctx=2048").model == "/models/x.gguf"
    assert parse_model_spec("local/qwen2.5-0.5b").ctx is None
    assert EmbeddedSettings().with_context(None).context == DEFAULT_CONTEXT_PER_SLOT
    assert EmbeddedSettings(n_parallel=4).with_context(2048).context == 2048


def test_many_slots_share_the_default_context() -> None:
    """The default is the model's 32k per slot, within 64k tokens for all slots together."""
    assert EmbeddedSettings(n_parallel=2).context == DEFAULT_CONTEXT_PER_SLOT
    assert EmbeddedSettings(n_parallel=8).context == DEFAULT_CONTEXT_TOTAL // 8
    assert EmbeddedSettings(n_parallel=64).context == MIN_DEFAULT_CONTEXT


BAD_CTX = ["local/q?ctx=", "local/q?ctx=big", "local/q?ctx=10", "local/?ctx=512", "gguf:/m.gguf?ctx=-1"]


@pytest.mark.parametrize("text", BAD_CTX)
def test_a_bad_ctx_is_one_line(text: str) -> None:
    with pytest.raises(ModelSpecError) as caught:
        parse_model_spec(text)
    assert "\n" not in str(caught.value)


def test_ctx_on_an_http_endpoint_is_refused() -> None:
    with pytest.raises(ModelSpecError, match="embedded models"):
        parse_model_spec("vllm/qwen?ctx=8192")


def _visible_lengths(ax: object) -> list[float]:
    """How much of each bar lies inside the value axis."""
    from matplotlib.patches import Rectangle

    low, high = ax.get_ylim()  # type: ignore[attr-defined]
    out = []
    for patch in ax.patches:  # type: ignore[attr-defined]
        if isinstance(patch, Rectangle):
            ends = sorted((patch.get_y(), patch.get_y() + patch.get_height()))
            out.append(max(0.0, min(ends[1], high) - max(ends[0], low)))
    return out


def test_a_bar_at_the_scales_minimum_is_visible() -> None:
    """On a 1-5 scale a mean of 1.00 (and one of 5.00 with its error bar) is drawn whole."""
    import matplotlib.pyplot as plt

    from llmpsych.report.charts import grouped_bar_figure

    series = {"model": [(1.0, 0.0), (5.0, 0.4)], "people": [(3.0, 1.2), (1.0, 0.5)]}
    fig = grouped_bar_figure(["A", "B"], series, "BFI", (1, 5))
    try:
        ax = fig.axes[0]
        low, high = ax.get_ylim()
        assert low < 1.0 and low <= 0.0 and high > 5.4
        assert [round(v, 6) for v in _visible_lengths(ax)] == [1.0, 5.0, 3.0, 1.0]
    finally:
        plt.close(fig)


def test_the_value_axis_keeps_every_bar() -> None:
    from llmpsych.report.charts import value_axis

    assert value_axis((1, 5), [(1.0, 0.0)])[0] == 0.0
    low, high = value_axis((1, 5), [(1.0, 1.5), None, (4.8, 0.5)])
    assert low < -0.5 and high > 5.3
    assert value_axis((-3, 3), [(-3.0, 0.0)])[0] < -3.0


def test_a_slow_rate_is_per_minute_or_hour() -> None:
    from llmpsych.runs.engine import rate_text

    assert rate_text(5, 2.0) == "2.50 units/s"
    assert rate_text(1, 60.0) == "1.00 units/min"
    assert rate_text(1, 7200.0) == "0.50 units/h"


def _first_psychobench_command(page: Path) -> list[str]:
    """The first ``llmpsych run`` of the page's first shell block that runs PsychoBench."""
    from test_docs_commands import commands, shell_blocks

    for block in shell_blocks(page):
        for words in commands(block.text):
            if words[:2] == ["llmpsych", "run"] and "psychobench" in words:
                return words
    raise AssertionError(f"{page} shows no PsychoBench run")


@pytest.mark.model
@pytest.mark.parametrize("page", ["README.md", "docs/psychobench.md"])
def test_the_documented_first_psychobench_run_scores_on_the_default_model(page: str, tmp_path: Path) -> None:
    """The first PsychoBench command of README and docs/psychobench.md, as written, on the embedded model
    (the data from the seed folder, where the pages fetch it or name it): most answers are valid and the
    report is written in Markdown and HTML."""
    root = Path(__file__).resolve().parents[1]
    seed = root.parent / "shared" / "seed-data"
    words = _first_psychobench_command(root / page)
    assert "method=logprob" in words and "--model" not in words  # the default model
    words = [str(seed) if w == "../shared/seed-data" else w for w in words]
    result = run_cli(*words[1:], "--out", tmp_path / "pb", env={"LLMPSYCH_DATA_DIR": str(seed)}, timeout=1800)
    assert result.returncode == 0, result.stderr
    valid = re.search(r"valid answers (\d+)/(\d+)", result.stdout)
    assert valid is not None, result.stdout
    assert int(valid.group(1)) > 0 and valid.group(2) == "88", valid.group(0)
    assert (tmp_path / "pb" / "report.md").is_file() and (tmp_path / "pb" / "report.html").is_file()


@pytest.mark.model
def test_a_request_larger_than_the_context_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    """A whole-scale BFI prompt (about 530 tokens + 480 to answer) on a 300-token context: the unit fails
    with one line naming both sizes and the fix, nothing reaches llama.cpp and nothing is retried."""
    seed = Path(__file__).resolve().parents[2] / "shared" / "seed-data"
    result = run_cli(
        "run", "--task", "psychobench", "-O", "scale=[BFI]", "-O", "runs=1",
        "--model", "local/qwen2.5-0.5b?ctx=300", "--data-dir", seed, "--no-cache", "--out", tmp_path / "r",
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output
    refused = [line for line in output.splitlines() if "request refused" in line]
    assert len(refused) == 1, output
    fit = r"\d+ prompt tokens \+ max_tokens \d+ do not fit the model's context of 300 tokens"
    assert re.search(fit, refused[0]) and "?ctx=" in refused[0]
    assert "0 requests sent" in result.stdout
