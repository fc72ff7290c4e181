"""Markdown building blocks shared by every benchmark's report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .charts import pyplot


def table(frame: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A GitHub-flavoured Markdown table."""
    if frame.empty:
        return "_(no rows)_"
    return frame.to_markdown(index=False, floatfmt=floatfmt)


def write_report(path: Path, title: str, sections: list[tuple[str, str]]) -> Path:
    """Write ``# title`` followed by ``## heading`` / body sections."""
    parts = [f"# {title}", ""]
    for heading, body in sections:
        parts += [f"## {heading}", "", body.rstrip(), ""]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def bar_chart(
    values: dict[str, tuple[float, float]], path: Path, title: str, ylim: tuple[float, float]
) -> Path | None:
    """Mean ± sd bars as PNG if matplotlib is installed (``pip install 'llmpsych[plots]'``), else None."""
    plt = pyplot()
    if plt is None:
        return None
    names = list(values)
    fig, ax = plt.subplots(figsize=(1.4 * len(names) + 2, 3.2))
    ax.bar(
        names, [values[n][0] for n in names], yerr=[values[n][1] for n in names], capsize=4, color="#4c72b0"
    )
    ax.set_ylim(*ylim)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
