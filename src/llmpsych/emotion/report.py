"""EmotionBench report pieces: the human table, model-versus-human alignment, and the shift heatmap."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..report.charts import pyplot
from ..report.files import save_figure
from ..stats import format_mean_sd, hedges_g
from .changes import ordered_factors


def human_frame(table: Mapping[str, Any], names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The human table (paired test) in the papers' layout, with n, default and evoked scores."""
    names = names or {}
    rows = []
    keyed = [*((k, names.get(k, ""), v) for k, v in table["factors"].items())]
    keyed += [(f"{k}: Average", "", v) for k, v in table["emotions"].items()]
    keyed += [("Overall: Average", "", table["overall"])]
    order = {k: i for i, k in enumerate(table["factors"])}

    def rank(entry: tuple[str, str, Any]) -> tuple[int, int]:
        key = entry[0]
        if key.endswith(": Average"):
            emotion = key.removesuffix(": Average")
            last = max((i for k, i in order.items() if k.rpartition("-")[0] == emotion), default=10_000)
            return last, 1
        return order.get(key, 10_000), 0

    for key, name, cells in sorted(keyed, key=rank):
        p, n = cells["positive"], cells["negative"]
        rows.append(
            {
                "ID": key,
                "Factor": name,
                "n": p.n,
                "default P": format_mean_sd(p.default_mean, p.default_sd),
                "default N": format_mean_sd(n.default_mean, n.default_sd),
                "evoked P": format_mean_sd(p.evoked_mean, p.evoked_sd),
                "evoked N": format_mean_sd(n.evoked_mean, n.evoked_sd),
                "ΔP (paired)": f"{p.mark} ({p.change:+.1f})",
                "ΔN (paired)": f"{n.mark} ({n.change:+.1f})",
                "ΔP F+t": p.independent_mark,
                "ΔN F+t": n.independent_mark,
            }
        )
    return pd.DataFrame(rows)


def alignment(model: Mapping[str, Any], human: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per factor and measure, the model's shift next to the human shift, with effect sizes.

    ``model`` is a score-shaped result (cells with ``change``, ``mark``, ``n``, ``mean``, ``sd``) and
    ``human`` a :func:`~llmpsych.emotion.crowd.human_table`. Effect sizes: the model's Hedges g (evoked vs
    default runs), the humans' paired d_z, and Hedges g of the model's evoked scores against the humans'.
    The summary gives the share of cells whose marks agree, the share with the same sign of change, the
    Pearson correlation of the changes across factors, and the mean absolute differences of the changes
    and of the evoked scores.
    """
    rows = []
    for fid, cells in model["factors"].items():
        if fid not in human["factors"]:
            continue
        for measure in ("positive", "negative"):
            mine, theirs = cells.get(measure), human["factors"][fid].get(measure)
            if not mine or theirs is None or mine.get("change") is None:
                continue
            rows.append(
                {
                    "factor": fid,
                    "measure": measure,
                    "model_change": mine["change"],
                    "model_mark": mine["mark"],
                    "model_g": mine.get("hedges_g"),
                    "human_change": theirs.change,
                    "human_mark": theirs.mark,
                    "human_dz": theirs.dz,
                    "model_evoked": mine.get("mean"),
                    "human_evoked": theirs.evoked_mean,
                    "evoked_g_model_vs_human": evoked_vs_human_g(mine, theirs),
                    "marks_agree": mine["mark"] == theirs.mark,
                    "same_sign": np.sign(mine["change"]) == np.sign(theirs.change),
                }
            )
    frame = pd.DataFrame(rows)
    summary: dict[str, Any] = {"cells": len(frame)}
    if not frame.empty:
        summary["marks_agree"] = float(frame["marks_agree"].mean())
        summary["same_sign"] = float(frame["same_sign"].mean())
        summary["mean_abs_difference"] = float((frame["model_change"] - frame["human_change"]).abs().mean())
        evoked_gap = (frame["model_evoked"] - frame["human_evoked"]).abs()
        summary["mean_abs_evoked_difference"] = float(evoked_gap.mean())
        for measure in ("positive", "negative"):
            part = frame[frame["measure"] == measure]
            r = math.nan
            if len(part) >= 3 and part["model_change"].std() > 0 and part["human_change"].std() > 0:
                r = float(np.corrcoef(part["model_change"], part["human_change"])[0, 1])
            summary[f"r_{measure}"] = None if math.isnan(r) else r
    return frame, summary


def evoked_vs_human_g(model_cell: Mapping[str, Any], human_cell: Any) -> float:
    """Hedges g of the model's evoked scores against the humans' evoked scores (one factor, one measure)."""
    try:
        return hedges_g(
            (model_cell["mean"], model_cell["sd"], model_cell["n"]),
            (human_cell.evoked_mean, human_cell.evoked_sd, human_cell.n),
        ).g
    except Exception:  # noqa: BLE001 - undefined for tiny or constant groups
        return math.nan


def heatmap(
    columns: Mapping[str, Mapping[str, float]], path: Path, title: str = "Change from default"
) -> Path | None:
    """Factors × (source, measure) heatmap of changes as PNG, if matplotlib is installed; else None.

    ``columns`` maps a column label (``"model P"``, ``"humans N"``) to ``{factor id: change}``.
    """
    plt = pyplot()
    if plt is None:
        return None
    labels = list(columns)
    factors = ordered_factors(f for col in columns.values() for f in col)
    data = np.array([[columns[c].get(f, math.nan) for c in labels] for f in factors], dtype=float)
    limit = float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0
    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 3, 0.28 * len(factors) + 1.5))
    image = ax.imshow(data, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(factors)), factors, fontsize=7)
    for i in range(len(factors)):
        for j in range(len(labels)):
            if math.isfinite(data[i, j]):
                ax.text(j, i, f"{data[i, j]:+.1f}", ha="center", va="center", fontsize=6)
    fig.colorbar(image, ax=ax, shrink=0.6)
    ax.set_title(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def human_as_result(table: Mapping[str, Any]) -> dict[str, Any]:
    """The human table in the shape of a model result, for a "Crowd" column next to models."""

    def cells(entry: Mapping[str, Any]) -> dict[str, Any]:
        return {m: {"change": c.change, "mark": c.mark, "n": c.n} for m, c in entry.items()}

    overall = table["overall"]
    return {
        "default": {m: {"mean": c.default_mean, "sd": c.default_sd, "n": c.n} for m, c in overall.items()},
        "factors": {k: cells(v) for k, v in table["factors"].items()},
        "emotions": {k: cells(v) for k, v in table["emotions"].items()},
        "overall": cells(overall),
    }
