"""The reliability analysis of an instrument's grid run: the BFI analysis with the scale's own subscales.

One data point per configuration (× repeat): the subscale scores. Per subscale: mean ± SD; a 2-D PCA map
of the points (fitted on them) with DBSCAN outliers; per factor (template, version, language, framing,
persona) each level against the rest (t-tests, on the inliers, Holm) and a one-way ANOVA F-test of all
its levels (Holm); valid-answer rates per level; psychometric quality per subscale over all points and per
factor level (:mod:`.quality`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import LlmpsychError
from ..instruments.numbers import finite_number
from ..instruments.parsing import order_independent_replies
from ..instruments.scale import STORED_HINT, Scale
from ..report.charts import pyplot
from ..report.files import atomic_write_text, output_dir, save_figure
from ..report.html import html_beside
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.record import RunRecord
from ..runs.store import UnitRow
from .analysis import (
    METHOD_NOTES,
    PUBLISHED_NOTES,
    describe,
    factor_comparisons,
    factor_f_tests,
    validity_by_level,
    variance_tests,
)
from .grid import GRID_FACTORS
from .outliers import outlier_mask
from .projection import fit_pca
from .quality import grid_quality, grid_quality_section
from .reanalysis import _clean
from .results import GridResult


def grid_frame(units: list[UnitRow], dims: tuple[str, ...]) -> pd.DataFrame:
    """One row per finished unit: factor levels, repeat, valid-answer rate, subscale scores."""
    rows = []
    for unit in units:
        result = unit.result or {}
        scores = result.get("scores") or {}
        rows.append(
            {
                "unit_id": unit.unit_id,
                **{f: (result.get("config") or {}).get(f) for f in GRID_FACTORS},
                "repeat": result.get("repeat", 0),
                "n_valid": result.get("n_valid"),
                "n_items": result.get("n_items"),
                "valid_rate": result.get("valid_rate"),
                **{d: _score(scores.get(d), unit.unit_id, d) for d in dims},
            }
        )
    return pd.DataFrame(
        rows, columns=["unit_id", *GRID_FACTORS, "repeat", "n_valid", "n_items", "valid_rate", *dims]
    )


def _score(value: object, unit_id: str, dim: str) -> float:
    if value is None:
        return math.nan
    number = finite_number(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None:
        raise LlmpsychError(
            f"run store unit {unit_id}: {dim} score {str(value)[:20]!r} is not a number", STORED_HINT
        )
    return number


@dataclass
class GridAnalysis:
    """Every table of an instrument's grid analysis, plus the map."""

    frame: pd.DataFrame
    dims: tuple[str, ...]
    coords: np.ndarray
    outliers: np.ndarray
    explained: list[float]
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    f_tests: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN and infinities become None)."""
        n = len(self.frame)
        cleaned: dict[str, Any] = _clean(
            {
                "n": n,
                "dimensions": list(self.dims),
                "settings": self.settings,
                "summary": self.summary.to_dict("records"),
                "outliers": {
                    "count": int(self.outliers.sum()),
                    "rate": float(self.outliers.mean()) if n else None,
                },
                "explained_variance_ratio": self.explained,
                "factor_comparisons": self.comparisons.to_dict("records"),
                "factor_f_tests": self.f_tests.to_dict("records"),
            }
        )
        return cleaned


def analyse_grid(
    frame: pd.DataFrame,
    dims: tuple[str, ...],
    *,
    eps: float,
    min_pts: int,
    method: str = "f-test",
    published: bool = False,
    keep_outliers: bool = False,
) -> GridAnalysis:
    """All statistics of a grid's data points (rows with a missing subscale are left out and counted)."""
    complete = frame.dropna(subset=list(dims)).reset_index(drop=True)
    points = complete[list(dims)].to_numpy(dtype=float)
    if len(points) >= 2 and len(dims) >= 2:
        projection = fit_pca(points, n_components=2)
        coords, explained = projection.transform(points), projection.explained_variance_ratio.tolist()
    elif len(points):
        centred = points[:, :1] - points[:, :1].mean()
        coords, explained = np.hstack([centred, np.zeros_like(centred)]), [1.0]
    else:
        coords, explained = np.zeros((0, 2)), []
    mask = outlier_mask(coords, eps, min_pts) if len(coords) else np.zeros(0, dtype=bool)
    tested = complete if keep_outliers else complete[~mask]
    factors = [f for f in GRID_FACTORS if complete[f].nunique() > 1]
    return GridAnalysis(
        frame=complete,
        dims=dims,
        coords=coords,
        outliers=mask,
        explained=explained,
        summary=describe(complete, dims) if len(complete) else pd.DataFrame(),
        comparisons=factor_comparisons(tested, factors, dims, method, published=published),
        f_tests=factor_f_tests(tested, factors, dims),
        settings={
            "eps": eps,
            "min_pts": min_pts,
            "method": method,
            "published": published,
            "tests_on": "all points" if keep_outliers else "inliers",
            "left_out_missing": len(frame) - len(complete),
        },
    )


def norm_variance_tests(frame: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """Per subscale with norms: one-sided F-test of a lower variance across configurations than the
    first norm group's (the thesis's test against the human SDs); empty when the file gives no norms."""
    parts = []
    for sub in scale.subscales:
        if not sub.norms or frame[sub.name].notna().sum() < 2 or sub.norms[0].n < 2:
            continue
        norm = sub.norms[0]
        tests = variance_tests(frame, {sub.name: norm.sd}, norm.n, dims=[sub.name])
        parts.append(tests.assign(norm=norm.label))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def factor_maps(result: GridAnalysis, out: Path) -> list[Path]:
    """The PCA map coloured by each factor with more than one level (PNG; none without matplotlib)."""
    plt = pyplot()
    if plt is None or len(result.coords) == 0:
        return []
    written = []
    for factor in GRID_FACTORS:
        levels = list(result.frame[factor].unique())
        if len(levels) < 2:
            continue
        fig, ax = plt.subplots(figsize=(6, 5))
        colours = plt.get_cmap("tab10")
        for i, level in enumerate(levels):
            mask = (result.frame[factor] == level).to_numpy()
            ax.scatter(*result.coords[mask].T, s=10, color=colours(i % 10), label=str(level), alpha=0.7)
        ax.scatter(*result.coords[result.outliers].T, s=30, color="#d62728", marker="x", label="outliers")
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
        ax.set_title(f"{len(result.frame)} data points by {factor}", fontsize=10)
        ax.legend(loc="best", fontsize=7)
        written.append(save_figure(fig, out / f"map_{factor}.png", dpi=110))
        plt.close(fig)
    return written


def write_grid_report(
    result: GridAnalysis,
    out: Path,
    every: pd.DataFrame,
    scale: Scale,
    quality: dict[str, pd.DataFrame] | None = None,
    seed: int = 0,
) -> list[Path]:
    """Tables (CSV), maps (PNG), ``report.md`` and ``summary.json`` into ``out`` (``quality``: the tables
    of :func:`.quality.grid_quality`, computed with ``seed``)."""
    output_dir(out)
    points = result.frame.assign(pc1=result.coords[:, 0], pc2=result.coords[:, 1], outlier=result.outliers)
    validity = validity_by_level(every, GRID_FACTORS)
    variance = norm_variance_tests(result.frame, scale)
    maps = factor_maps(result, out)
    n, count = len(result.frame), int(result.outliers.sum())
    rates = every["valid_rate"].astype(float)
    settings = result.settings
    sections = [
        (
            "What was measured",
            f"Scale {scale.name}: {n} data points (one per configuration and repeat: the subscale scores "
            f"{', '.join(result.dims)} on the scale's {scale.response_min}-{scale.response_max} range, "
            "reverse keys applied; answers on another framing's points mapped linearly onto that range). "
            "SD is the sample SD (ddof = 1)."
            + (
                f" {settings['left_out_missing']} with a subscale without a valid answer are left out."
                if settings["left_out_missing"]
                else ""
            ),
        ),
        ("Mean ± SD per subscale", table(result.summary) if not result.summary.empty else "_(no data)_"),
        (
            "Outliers",
            f"{count} of {n} are DBSCAN noise (eps {settings['eps']}, minPts {settings['min_pts']}) on the "
            "2-D PCA map fitted on these points (explained variance "
            f"{', '.join(f'{v:.2f}' for v in result.explained)}).",
        ),
        (
            "Valid answers",
            f"mean valid-answer rate {rates.mean():.3f} over {len(every)} units; "
            f"{int((rates < 1).sum())} kept at least one item without a valid answer after the retries. "
            + _order_independent_text(settings.get("order_independent") or [])
            + "\n\n"
            + table(validity, ".3f"),
        ),
        (
            f"Does a factor matter? One-way ANOVA per factor and subscale, {settings['tests_on']}",
            "`p_holm`: Holm over every row. `eta_squared`: share of the variance between the factor's "
            "levels.\n\n" + table(result.f_tests, ".3g"),
        ),
        (
            f"Level minus the rest, {settings['tests_on']}",
            f"t-test `{settings['method']}`: {METHOD_NOTES[settings['method']]}; "
            f"{PUBLISHED_NOTES[bool(settings['published'])]}.\n\n" + table(result.comparisons, ".3g"),
        ),
    ]
    if not variance.empty:
        sections.append(
            (
                "Variance against the norms (one-sided F-tests)",
                "H1: the scores vary less across configurations than the norm group's between people "
                "(`F = sd_norm² / sd²`).\n\n" + table(variance, ".3g"),
            )
        )
    if quality is not None:
        sections.append(("Psychometric quality", grid_quality_section(quality, seed)))
    if maps:
        sections.append(("Maps", "\n".join(f"![{p.stem}]({p.name})" for p in maps)))
    tables = [
        ("data_points", points),
        ("summary", result.summary),
        ("factor_f_tests", result.f_tests),
        ("factor_comparisons", result.comparisons),
        ("validity", validity),
        ("variance_tests", variance),
        *(quality or {}).items(),
    ]
    tables = [(name, frame) for name, frame in tables if not frame.empty]
    written = write_run_report(
        out,
        f"llmpsych scale reliability grid: {scale.name}",
        sections,
        tables=tables,
        figures=maps,
        html=False,
    )
    written.append(atomic_write_text(out / "summary.json", json.dumps(result.to_json(), indent=1)))
    return html_beside(written)


def order_independent_units(units: list[UnitRow]) -> list[str]:
    """The units whose kept reply is identical to another unit's reply to a different item order
    (:func:`~llmpsych.instruments.parsing.order_independent_replies`): their scores are not the items'."""
    replies: list[tuple[list[int], str]] = []
    for unit in units:
        result = unit.result or {}
        transcript = result.get("transcript") or [{}]
        last = transcript[-1] if isinstance(transcript[-1], dict) else {}
        text = last.get("content") if last.get("role") == "assistant" else ""
        replies.append((list(result.get("order") or []), text if isinstance(text, str) else ""))
    return [units[p].unit_id for p in order_independent_replies(replies)]


def _order_independent_text(flagged: list[str]) -> str:
    if not flagged:
        return "No unit gave the same reply to two different item orders."
    shown = ", ".join(flagged[:10]) + (f" and {len(flagged) - 10} more" if len(flagged) > 10 else "")
    return (
        f"{len(flagged)} unit(s) gave the same reply as a unit shown another item order, so their numbers "
        "follow the positions, not the statements; they are left out of every statistic here "
        f"(docs/scales.md, 'Positional replies'): {shown}."
    )


def analyze_custom_record(record: RunRecord, options: Any, scale: Scale) -> list[Path]:
    """The grid task's analysis: its data points, statistics and report, written into the run folder.

    Units whose reply does not follow the statements (the same reply to another item order) are left
    out of every statistic and named in the report (``docs/scales.md``, "Positional replies")."""
    record.results(GridResult)  # every stored result fits, or one error naming the unit
    dims = scale.subscale_names
    done = record.done()
    flagged = order_independent_units(done)
    kept = [unit for unit in done if unit.unit_id not in set(flagged)]
    frame = grid_frame(kept, dims)
    if frame[list(dims)].dropna().shape[0] < 2:
        return []
    min_pts = min(options.min_pts, max(2, len(frame) // 4))
    result = analyse_grid(
        frame, dims, eps=options.eps, min_pts=min_pts, method=options.test, published=options.published
    )
    result.settings["order_independent"] = flagged
    seed = record.config.seed
    quality = grid_quality(kept, scale, seed)
    return write_grid_report(result, record.run_dir, frame, scale, quality, seed)
