"""Tables in the layout of the papers: a Default ``M ± SD`` row, then per factor and per emotion
``↓ (-15.2)`` cells, and an Overall row; one column per measure (and per model when comparing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..report.markdown import markdown_cells
from ..stats import NOT_AVAILABLE, format_mean_sd

MEASURE_LABELS = {"positive": "P", "negative": "N", "total": "Total"}


def _cell(cell: Mapping[str, Any] | None) -> str:
    if not cell or cell.get("change") is None:
        return "n/a"
    return f"{cell['mark']} ({cell['change']:+.1f})"


def _default(summary: Mapping[str, Any] | None) -> str:
    return format_mean_sd(summary.get("mean"), summary.get("sd")) if summary else NOT_AVAILABLE


def paper_table(
    results: Mapping[str, Mapping[str, Any]],
    names: Mapping[str, str] | None = None,
    with_n: bool = True,
) -> pd.DataFrame:
    """One paper-layout table from one or more ``score``-shaped results keyed by a column label.

    Each result is ``{"default": {m: {mean, sd, n}}, "factors": {...}, "emotions": {...}, "overall":
    {...}}`` (what :func:`~llmpsych.emotion.rescore.score_released` and the task analysis produce).
    """
    labels = list(results)
    first = results[labels[0]]
    measures = list(first.get("default") or {}) or list(next(iter(first["factors"].values())))
    columns = [
        f"{label} {MEASURE_LABELS.get(m, m)}" if len(labels) > 1 else MEASURE_LABELS.get(m, m)
        for label in labels
        for m in measures
    ]
    rows: list[dict[str, Any]] = []

    def add(row_id: str, factor: str, getter: Any, n: Any = "") -> None:
        row: dict[str, Any] = {"ID": row_id, "Factor": factor}
        values = [getter(results[label], m) for label in labels for m in measures]
        row.update(dict(zip(columns, values, strict=True)))
        if with_n:
            row["n"] = n
        rows.append(row)

    names = names or {}
    default_n = first["default"][measures[0]].get("n", "") if first["default"] else ""
    if first.get("default"):
        add("Default", "", lambda r, m: _default(r.get("default", {}).get(m)), default_n)
    factor_ids = list(dict.fromkeys(f for r in results.values() for f in r["factors"]))
    emotions = list(dict.fromkeys(f.rpartition("-")[0] for f in factor_ids))
    for emotion in emotions:
        for fid in (f for f in factor_ids if f.rpartition("-")[0] == emotion):
            n = (first["factors"].get(fid, {}).get(measures[0]) or {}).get("n", "")
            add(fid, names.get(fid, ""), lambda r, m, fid=fid: _cell(r["factors"].get(fid, {}).get(m)), n)
        n = (first["emotions"].get(emotion, {}).get(measures[0]) or {}).get("n", "")
        add(f"{emotion}: Average", "", lambda r, m, e=emotion: _cell(r["emotions"].get(e, {}).get(m)), n)
    n = (first["overall"].get(measures[0]) or {}).get("n", "")
    add("Overall: Average", "", lambda r, m: _cell(r["overall"].get(m)), n)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown of a table of strings."""
    return markdown_cells(frame).to_markdown(index=False) if not frame.empty else "_(no rows)_"


def parity_rows(
    recomputed: Mapping[str, Mapping[str, Any]],
    published: Mapping[str, Sequence[tuple[str, float]]],
    measure_names: Sequence[str],
) -> pd.DataFrame:
    """Published vs recomputed per row and measure: ``published`` maps row -> [(mark, change), ...]."""
    out = []
    for row, cells in published.items():
        for measure, (mark, change) in zip(measure_names, cells, strict=True):
            got = recomputed.get(row, {}).get(measure) or {}
            value = got.get("change")
            agree = value is not None and got.get("mark") == mark and abs(value - change) <= 0.05 + 1e-9
            out.append(
                {
                    "row": row,
                    "measure": measure,
                    "published": f"{mark} ({change:+.1f})",
                    "recomputed": _cell(got),
                    "agrees": agree,
                }
            )
    return pd.DataFrame(out)
