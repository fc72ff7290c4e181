"""Markdown building blocks shared by every benchmark's report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .charts import pyplot, value_axis
from .files import atomic_write_text, save_figure


def cell_text(value: object) -> object:
    """A text cell that stays inside its table cell: ``|`` escaped as ``\\|``, line breaks as spaces.

    A model's answer, a file name or a label can hold either; unescaped, a ``|`` opens a new column
    and a newline ends the table. Other values are returned as they are.
    """
    if not isinstance(value, str):
        return value
    return " ".join(value.replace("\\", "\\\\").replace("|", "\\|").splitlines())


def markdown_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell passed through :func:`cell_text` (numeric columns untouched)."""
    out = frame
    for column in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[column].dtype):
            continue
        if out is frame:
            out = frame.copy()
        out[column] = frame[column].astype(object).map(cell_text)
    if any(isinstance(name, str) and ("|" in name or "\n" in name) for name in frame.columns):
        out = out.rename(columns=lambda name: cell_text(name))
    return out


def table(frame: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A GitHub-flavoured Markdown table; text cells cannot break out of their cell (:func:`cell_text`)."""
    if frame.empty:
        return "_(no rows)_"
    text: str = markdown_cells(frame).to_markdown(index=False, floatfmt=floatfmt)
    return text


def write_report(path: Path, title: str, sections: list[tuple[str, str]]) -> Path:
    """Write ``# title`` followed by ``## heading`` / body sections (atomically)."""
    parts = [f"# {title}", ""]
    for heading, body in sections:
        parts += [f"## {heading}", "", body.rstrip(), ""]
    return atomic_write_text(path, "\n".join(parts))


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
    ax.set_ylim(*value_axis(ylim, list(values.values())))  # no bar hidden below the axis
    ax.set_title(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
