"""Maps in the manner of the thesis (Fig. 3.1, 3.6-3.8); PNG files when matplotlib is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..report.charts import pyplot
from ..report.files import save_figure
from .published import DIMENSIONS, LEVEL_NAMES, PROFILE_TARGET, profile_short
from .reanalysis import Reanalysis, map_region


def _base(plt: Any, result: Reanalysis, title: str) -> tuple[Any, Any]:  # matplotlib is optional
    fig, ax = plt.subplots(figsize=(6, 5))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.1, top=0.93)
    hull = map_region(result)
    ax.fill(hull[:, 0], hull[:, 1], color="#eeeeee", zorder=0, label="possible BFI results")
    ax.plot(hull[:, 0], hull[:, 1], color="#bbbbbb", lw=0.8, zorder=0)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title(title, fontsize=10)
    return fig, ax


def _save(plt: Any, fig: Any, path: Path) -> Path:
    # fixed margins set with the axes: tight_layout measured every tick label again (~15 % of a map)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def density_map(result: Reanalysis, path: Path) -> Path | None:
    """Density of the data points, outliers marked (Fig. 3.1a)."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = _base(plt, result, f"{len(result.frame)} data points, {int(result.outliers.sum())} outliers")
    xy, out = result.coords, result.outliers
    ax.hexbin(xy[~out, 0], xy[~out, 1], gridsize=40, cmap="Blues", mincnt=1, zorder=1)
    ax.scatter(xy[out, 0], xy[out, 1], s=10, color="#d62728", marker="x", label="outliers", zorder=2)
    ax.legend(loc="upper right", fontsize=8)
    return _save(plt, fig, path)


def factor_map(result: Reanalysis, factor: str, path: Path) -> Path | None:
    """Points coloured by the level of one factor (Fig. 3.1b-f)."""
    plt = pyplot()
    if plt is None or factor not in result.frame:
        return None
    fig, ax = _base(plt, result, f"by {factor}")
    colours = plt.get_cmap("tab10")
    for i, level in enumerate(result.frame[factor].unique()):
        mask = (result.frame[factor] == level).to_numpy()
        ax.scatter(
            *result.coords[mask].T, s=6, color=colours(i % 10), label=LEVEL_NAMES.get(level, level), alpha=0.6
        )
    ax.legend(loc="upper right", fontsize=7, markerscale=2)
    return _save(plt, fig, path)


def steering_map(
    result: Reanalysis, default: pd.DataFrame, path: Path, by: str = "append_label"
) -> Path | None:
    """Steered points by target over the default cloud drawn as grey triangles (Fig. 3.6-3.8)."""
    plt = pyplot()
    if plt is None or by not in result.frame:
        return None
    fig, ax = _base(plt, result, "steering against the default distribution")
    base = result.projection.transform(default[list(DIMENSIONS)].dropna().to_numpy(dtype=float))
    ax.scatter(*base.T, s=8, marker="^", color="#c8c8c8", label="default", zorder=1)
    colours = plt.get_cmap("tab20")
    for i, target in enumerate(result.frame[by].unique()):
        mask = (result.frame[by] == target).to_numpy()
        ax.scatter(
            *result.coords[mask].T, s=6, color=colours(i % 20), label=profile_short(str(target)), zorder=2
        )
    ax.legend(loc="upper right", fontsize=6, markerscale=2, ncol=2)
    return _save(plt, fig, path)


def extremes_panel(
    result: Reanalysis, default: pd.DataFrame, path: Path, by: str = "append_label"
) -> Path | None:
    """One panel per dimension: default cloud, its minimum and its maximum profile (Fig. 3.7)."""
    plt = pyplot()
    if plt is None or by not in result.frame:
        return None
    shorts = result.frame[by].map(lambda s: profile_short(str(s)))
    base = result.projection.transform(default[list(DIMENSIONS)].dropna().to_numpy(dtype=float))
    hull = map_region(result)
    fig, axes = plt.subplots(1, 5, figsize=(17, 3.6), sharex=True, sharey=True)
    fig.subplots_adjust(left=0.04, right=0.99, bottom=0.14, top=0.91, wspace=0.08)
    for ax, dim in zip(axes, DIMENSIONS, strict=True):
        ax.fill(hull[:, 0], hull[:, 1], color="#eeeeee", zorder=0)
        ax.scatter(*base.T, s=5, marker="^", color="#c8c8c8", zorder=1)
        for side, colour in (("min", "#1f77b4"), ("max", "#d62728")):
            names = [p for p, (d, s) in PROFILE_TARGET.items() if d == dim and s == side]
            mask = shorts.isin(names).to_numpy()
            if mask.any():
                ax.scatter(*result.coords[mask].T, s=5, color=colour, label=f"{side}: {names[0]}", zorder=2)
        ax.set_title(dim, fontsize=10)
        if ax.get_legend_handles_labels()[0]:  # a dimension whose profiles were not run has no legend
            ax.legend(loc="upper right", fontsize=6)
    return _save(plt, fig, path)


def all_maps(result: Reanalysis, out: Path, default: pd.DataFrame | None = None) -> list[Path]:
    """Every map that applies to this result."""
    from .saves import FACTORS

    written = [density_map(result, out / "map_density.png")]
    for factor in FACTORS:
        if factor in result.frame and result.frame[factor].nunique() > 1:
            written.append(factor_map(result, factor, out / f"map_{factor}.png"))
    if default is not None and "append_label" in result.frame:
        written.append(steering_map(result, default, out / "map_steering.png"))
        shorts = set(result.frame["append_label"].map(lambda s: profile_short(str(s))))
        if shorts & set(PROFILE_TARGET):
            written.append(extremes_panel(result, default, out / "map_extremes.png"))
    return [p for p in written if p is not None]


__all__ = ["all_maps", "density_map", "extremes_panel", "factor_map", "steering_map"]
