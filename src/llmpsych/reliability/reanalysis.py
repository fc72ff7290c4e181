"""Re-analysis of data points: released saves or our own runs, into one JSON-ready result.

What it computes: per-dimension mean ± SD (Table 3.6), the 2-D map and DBSCAN outliers, the factor-level
comparisons (Table 3.3) on the inliers, the variance F-tests against the human SDs, per-target tables
for steering runs (Tables 3.13-3.15) and, given default data, the min/max tests (Table 3.10).

Table 3.3 is computed **without the outliers**: on the released GPT-3.5 grid every one of the 135
printed differences lies within 0.02 of ours only after removing them (with all 2,500 points the
largest deviation is 0.17), so the thesis evidently tested the inliers. ``keep_outliers=True`` tests all.

``method`` chooses the t-test of both Table 3.3 and Table 3.10: ``"f-test"`` (the default, the authors'
procedure; ``"paper"`` is its old name), ``"welch"`` or ``"student"``. ``published`` (default ``True`` here:
this re-analyses released data) adds the original code's details; with both defaults all ten printed t
values of Table 3.10 are reproduced (:mod:`.analysis`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..stats.compare import METHOD_ALIASES, METHODS, Method
from .analysis import (
    describe,
    extreme_tests,
    factor_comparisons,
    group_table,
    method_name,
    variance_tests,
)
from .outliers import EPS, MIN_PTS, outlier_mask
from .projection import FitOn, Projection, fit_projection, region
from .published import DIMENSIONS, profile_short
from .saves import FACTORS


@dataclass
class Reanalysis:
    """Every table of one re-analysis, plus what the map needs."""

    frame: pd.DataFrame
    projection: Projection
    coords: np.ndarray
    outliers: np.ndarray
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    variance: pd.DataFrame
    groups: pd.DataFrame | None = None
    extremes: pd.DataFrame | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes None)."""
        n = len(self.frame)
        out: dict[str, Any] = {
            "n": n,
            "settings": self.settings,
            "dimensions": {
                r["dimension"]: {"mean": r["mean"], "sd": r["sd"], "n": r["n"]}
                for r in self.summary.to_dict("records")
            },
            "outliers": {
                "count": int(self.outliers.sum()),
                "rate": float(self.outliers.sum() / n) if n else math.nan,
                "eps": self.settings["eps"],
                "min_pts": self.settings["min_pts"],
                "projection": self.projection.fitted_on,
                "components": self.projection.components.tolist(),
                "explained_variance_ratio": self.projection.explained_variance_ratio.tolist(),
            },
            "factor_comparisons": self.comparisons.to_dict("records"),
            "variance_tests": self.variance.to_dict("records"),
        }
        if self.groups is not None:
            out["groups"] = self.groups.to_dict("records")
        if self.extremes is not None:
            out["extremes"] = self.extremes.to_dict("records")
        cleaned: dict[str, Any] = _clean(out)
        return cleaned


def reanalyse(
    frame: pd.DataFrame,
    *,
    fit_on: FitOn | np.ndarray = "data",
    eps: float = EPS,
    min_pts: int = MIN_PTS,
    method: Method | str = "f-test",
    published: bool = True,
    keep_outliers: bool = False,
    default: pd.DataFrame | None = None,
    group_by: str | None = None,
    missing: Sequence[str] = (),
) -> Reanalysis:
    """All statistics of one set of data points (rows with a missing dimension are left out and counted
    in ``settings["left_out_missing"]``; an infinite score is a DataError). ``missing``: what of the
    released design the data lack (:meth:`~llmpsych.reliability.saves.ReleasedSave.missing`), kept in
    ``settings["missing"]`` and shown wherever the n is (:func:`missing_lines`)."""
    if METHOD_ALIASES.get(method, method) not in METHODS:
        raise DataError(f"unknown t-test method {method!r}", f"use one of {', '.join(METHODS)}")
    method = method_name(method)
    values = frame[list(DIMENSIONS)].to_numpy(dtype=float)
    if np.isinf(values).any():
        row = int(np.isinf(values).any(axis=1).nonzero()[0][0])
        raise DataError(
            f"data point {row} has an infinite dimension score", "scores are means of 1-5 answers"
        )
    complete = frame.dropna(subset=list(DIMENSIONS)).reset_index(drop=True)
    left_out = len(frame) - len(complete)
    frame = complete
    points = frame[list(DIMENSIONS)].to_numpy(dtype=float)
    if default is not None and isinstance(fit_on, str) and fit_on == "data":
        # steering maps share the default cloud's projection, as the thesis kept one matrix fixed
        projection = fit_projection(default[list(DIMENSIONS)].dropna().to_numpy(dtype=float), "data")
    else:
        projection = fit_projection(points, fit_on)
    coords = projection.transform(points)
    mask = outlier_mask(coords, eps, min_pts)
    tested = frame if keep_outliers else frame[~mask]
    factors = [f for f in FACTORS if f in frame and frame[f].nunique() > 1]
    if group_by is not None and group_by not in frame:
        raise DataError(f"cannot group by {group_by!r}", f"columns: {', '.join(map(str, frame.columns))}")
    if group_by is None and "append_label" in frame:
        group_by = "append_label"
    groups = group_table(frame, group_by) if group_by else None
    if groups is not None and group_by == "append_label":
        groups.insert(1, "short", groups[group_by].map(lambda s: profile_short(str(s))))
    extremes = (
        extreme_tests(default, frame, method=method, published=published)
        if default is not None and group_by == "append_label"
        else None
    )
    return Reanalysis(
        frame=frame,
        projection=projection,
        coords=coords,
        outliers=mask,
        summary=describe(frame),
        comparisons=factor_comparisons(tested, factors, method=method, published=published),
        variance=variance_tests(frame),
        groups=groups,
        extremes=extremes if extremes is not None and not extremes.empty else None,
        settings={
            "eps": eps,
            "min_pts": min_pts,
            "method": method,
            "published": published,
            "comparisons_on": "all points" if keep_outliers else "inliers",
            "group_by": group_by,
            "left_out_missing": left_out,
            "missing": list(missing),
        },
    )


def missing_lines(result: Reanalysis) -> list[str]:
    """What the n of a re-analysis lack: points left out for a missing dimension score, and the parts
    of the released design the files do not have (empty when nothing is missing)."""
    lines = []
    left_out = int(result.settings.get("left_out_missing") or 0)
    if left_out:
        lines.append(
            f"{left_out} data point(s) without a score for every dimension are left out: the n above are "
            f"{len(result.frame)}"
        )
    gaps = list(result.settings.get("missing") or [])
    if gaps:
        lines.append(
            f"missing from the released design ({len(gaps) - 1} part(s)); the n shown are what is there:"
        )
        lines += [f"  {gap}" for gap in gaps]
    return lines


def map_region(result: Reanalysis) -> np.ndarray:
    """The projected region of all possible results (hull of the 32 corners)."""
    return region(result.projection)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
