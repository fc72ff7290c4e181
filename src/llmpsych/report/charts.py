"""Grouped bar charts (mean ± sd) shared by the reports; PNG via matplotlib (the ``plots`` extra)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .files import save_figure

Bar = tuple[float, float] | None  # (mean, sd); None: no value for this category

_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def matplotlib_available() -> bool:
    """Whether charts can be drawn (``pip install 'llmpsych[plots]'``)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def pyplot():  # noqa: ANN201 - matplotlib is optional, so no annotation that needs it
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or None without the ``plots`` extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def value_axis(limits: tuple[float, float], bars: Sequence[Bar]) -> tuple[float, float]:
    """The value axis for bars drawn from zero on a scale of ``limits``: it holds zero (every bar keeps
    its whole length: a mean equal to the scale's minimum, say 1 on a 1-5 scale, is a bar one unit long,
    not an empty slot), the whole scale, and every bar with its error bar, with 3% to spare at the top (a
    bar at the scale's maximum does not merge into the frame) and below a negative end."""
    low, high = limits
    ends = [
        m + sign * (0.0 if sd is None or math.isnan(sd) else sd) for m, sd in _drawn(bars) for sign in (-1, 1)
    ]
    low, high = min([0.0, low, *ends]), max([0.0, high, *ends])
    pad = 0.03 * (high - low)
    return (low - pad if low < 0 else low, high + pad)


def _drawn(bars: Sequence[Bar]) -> list[tuple[float, float]]:
    return [b for b in bars if b is not None and not math.isnan(b[0])]


def grouped_bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[Bar]],
    path: Path,
    title: str,
    ylim: tuple[float, float] | None = None,
    *,
    horizontal: bool | None = None,
) -> Path | None:
    """One group of bars per category, one bar per series (e.g. the model and each human group), saved as
    PNG; ``None`` without matplotlib. See :func:`grouped_bar_figure`."""
    plt = pyplot()
    if plt is None:
        return None
    fig = grouped_bar_figure(categories, series, title, ylim, horizontal=horizontal)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def grouped_bar_figure(
    categories: Sequence[str],
    series: Mapping[str, Sequence[Bar]],
    title: str,
    ylim: tuple[float, float] | None = None,
    *,
    horizontal: bool | None = None,
) -> Any:  # noqa: ANN401 - a matplotlib Figure; matplotlib is optional
    """The figure of :func:`grouped_bar_chart` (needs matplotlib).

    Bars start at zero; ``ylim`` is the scale's range, widened by :func:`value_axis` so that no bar or
    error bar is cut. Error bars are ± sd (a missing or ``NaN`` sd draws no bar end). Many categories
    (> 12) are drawn horizontally.
    """
    plt = pyplot()
    names = list(series)
    n_cat, n_ser = len(categories), max(1, len(names))
    horizontal = n_cat > 12 if horizontal is None else horizontal
    width = 0.8 / n_ser
    if horizontal:
        fig, ax = plt.subplots(figsize=(8, 0.28 * n_cat * max(1, n_ser / 2) + 1.5))
    else:
        fig, ax = plt.subplots(
            figsize=(max(4.0, 0.45 * n_cat * n_ser + 2.5) + (2.5 if n_ser > 1 else 0), 3.6)
        )
    for k, name in enumerate(names):
        values = list(series[name])
        positions = [i - 0.4 + width * (k + 0.5) for i in range(n_cat)]
        means = [math.nan if v is None else v[0] for v in values]
        errors = [0.0 if v is None or v[1] is None or math.isnan(v[1]) else v[1] for v in values]
        colour = _COLOURS[k % len(_COLOURS)]
        if horizontal:
            ax.barh(positions, means, height=width, xerr=errors, capsize=2, label=name, color=colour)
        else:
            ax.bar(positions, means, width=width, yerr=errors, capsize=3, label=name, color=colour)
    ticks = list(range(n_cat))
    if ylim:
        ylim = value_axis(ylim, [bar for bars in series.values() for bar in bars])
    if horizontal:
        ax.set_yticks(ticks, list(categories), fontsize=8)
        ax.invert_yaxis()
        if ylim:
            ax.set_xlim(*ylim)
    else:
        rotate = n_cat > 4 or any(len(c) > 14 for c in categories)
        ax.set_xticks(
            ticks, list(categories), rotation=30 if rotate else 0, ha="right" if rotate else "center"
        )
        if ylim:
            ax.set_ylim(*ylim)
    ax.set_title(title)
    if len(names) > 1 and horizontal:
        ax.legend(fontsize=8, loc="best")
    elif len(names) > 1:  # beside the axes, so it never hides a bar
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig
