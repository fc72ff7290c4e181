"""Reports of a re-analysis: tidy CSV tables, maps, and a Markdown report in the thesis's layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..instruments.scale import Scale
from ..report.files import atomic_write_text, output_dir
from ..report.html import html_beside
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.record import RunRecord
from ..stats import format_mean_sd
from .analysis import METHOD_NOTES, PUBLISHED_NOTES, validity_by_level
from .plots import all_maps
from .published import DIMENSIONS, LEVEL_NAMES
from .quality import grid_quality, grid_quality_section
from .reanalysis import Reanalysis, missing_lines, reanalyse
from .results import ReliabilityResult, detail_frame, load_points, run_frame
from .saves import FACTORS


def comparison_grid(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Table 3.3's layout: one row per level, ``difference (p)`` per dimension."""
    rows = []
    for (factor, level), part in comparisons.groupby(["factor", "level"], sort=False):
        cells = part.set_index("dimension")
        row: dict[str, Any] = {"factor": factor, "level": LEVEL_NAMES.get(str(level), str(level))}
        for dim in DIMENSIONS:
            row[dim[0]] = f"{cells['difference'][dim]:+.2f} ({cells['p'][dim]:.2f})"
        rows.append(row)
    return pd.DataFrame(rows)


def mean_sd_grid(groups: pd.DataFrame, key: str) -> pd.DataFrame:
    """Tables 3.13-3.15's layout: ``mean±sd`` per dimension."""
    rows = []
    for rec in groups.to_dict("records"):
        row: dict[str, Any] = {key: rec.get("short") or rec[key], "n": rec["n"]}
        for dim in DIMENSIONS:
            row[dim[0]] = format_mean_sd(rec[f"{dim}_mean"], rec[f"{dim}_sd"], 2, sep="±")
        rows.append(row)
    return pd.DataFrame(rows)


def write_reanalysis(
    result: Reanalysis,
    out: Path,
    default: pd.DataFrame | None = None,
    detail: pd.DataFrame | None = None,
    points: pd.DataFrame | None = None,
    quality: dict[str, pd.DataFrame] | str | None = None,
    seed: int = 0,
) -> list[Path]:
    """Write the tables (CSV), the maps (PNG) and ``report.md`` into ``out``.

    ``quality``: the tables of :func:`.quality.grid_quality` (computed with ``seed``) of a run's item-level
    answers, or why there are none (released results hold no item-level answers: no section).

    ``points``: every data point before the re-analysis left out those with a missing dimension; the
    valid-answer rates are computed over them, so a configuration with no valid answer (all dimensions
    missing) counts as 0 instead of vanishing from the mean (seen: 0 of 44 valid, "mean 1.000").
    """
    every = result.frame if points is None else points
    output_dir(out)
    points = result.frame.drop(columns=["answers"], errors="ignore").assign(
        pc1=result.coords[:, 0], pc2=result.coords[:, 1], outlier=result.outliers
    )
    validity = validity_by_level(every)
    frames = [
        ("data_points", points),
        ("summary", result.summary),
        ("factor_comparisons", result.comparisons),
        ("variance_tests", result.variance),
        ("groups", result.groups),
        ("extremes", result.extremes),
        ("configurations", detail),
        ("validity", validity),
        *(quality.items() if isinstance(quality, dict) else []),
    ]
    tables = [(name, frame) for name, frame in frames if frame is not None and not frame.empty]
    maps = all_maps(result, out, default)
    n = len(result.frame)
    count = int(result.outliers.sum())
    summary = result.summary.copy()
    explained = ", ".join(f"{v:.2f}" for v in result.projection.explained_variance_ratio)
    sections = [
        (
            "What was measured",
            f"{n} data points (one per configuration: the five BFI dimension means, reverse keying applied). "
            "SD is the sample SD (ddof = 1)."
            + "".join(f"\n\n{line.strip()}" for line in missing_lines(result)),
        ),
        ("Mean ± SD per dimension (Table 3.6)", table(summary)),
        (
            "Outliers",
            f"{count} of {n} ({count / n:.2%}) are DBSCAN noise (eps {result.settings['eps']}, minPts "
            f"{result.settings['min_pts']}) on the 2-D PCA map fitted on {result.projection.fitted_on} "
            f"(explained variance {explained}).",
        ),
    ]
    if "valid_rate" in every:
        rates = every["valid_rate"].astype(float)
        left_out = len(every) - n
        sections.append(
            (
                "Valid answers",
                f"mean valid-answer rate {rates.mean():.3f} over all {len(every)} configurations; "
                f"{int((rates < 1).sum())} of {len(every)} kept at least one item without a valid label "
                "after the retries"
                + (
                    f"; {left_out} with a dimension that has no valid answer are left out of the "
                    "statistics above"
                    if left_out
                    else ""
                )
                + ".\n\n"
                + table(validity, ".3f"),
            )
        )
    if not result.comparisons.empty:
        sections.append(
            (
                f"Level minus the rest, difference (p), {result.settings['comparisons_on']} (Table 3.3)",
                table(comparison_grid(result.comparisons)),
            )
        )
    sections.append(("Variance against human SDs (one-sided F-tests)", table(result.variance, ".3g")))
    if result.groups is not None:
        sections.append(
            ("Per steering target", table(mean_sd_grid(result.groups, result.settings["group_by"])))
        )
    if result.extremes is not None:
        method = result.settings["method"]
        sections.append(
            (
                "Minimum and maximum profiles against the default (Table 3.10)",
                f"t-test `{method}`: {METHOD_NOTES[method]}; "
                f"{PUBLISHED_NOTES[bool(result.settings['published'])]}; "
                "column `test` names each row's test.\n\n" + table(result.extremes),
            )
        )
    if isinstance(quality, dict):
        sections.append(("Psychometric quality", grid_quality_section(quality, seed)))
    elif quality:
        sections.append(("Psychometric quality", quality))
    if maps:
        sections.append(("Maps", "\n".join(f"![{p.stem}]({p.name})" for p in maps)))
    sections.append(
        (
            "Files",
            "data_points.csv (one row per data point, map coordinates, outlier flag), summary.csv, "
            "factor_comparisons.csv, variance_tests.csv"
            + (", groups.csv" if result.groups is not None else "")
            + (", configurations.csv (prompts, raw replies, parsed vector)" if detail is not None else "")
            + (", quality.csv, quality_items.csv, quality_scales.csv" if isinstance(quality, dict) else "")
            + (", quality_levels.csv" if isinstance(quality, dict) and "quality_levels" in quality else ""),
        )
    )
    title = "llmpsych scale reliability report"
    written = write_run_report(out, title, sections, tables=tables, figures=maps, html=False)
    written.append(atomic_write_text(out / "summary.json", json.dumps(result.to_json(), indent=1)))
    return html_beside(written)


def analyze_record(record: RunRecord, options: Any, scale: Scale | str | None = None) -> list[Path]:
    """The task's analysis: re-analyse the run's data points and write the report into the run folder.
    ``scale``: the BFI (its keys and dimensions) for the psychometric quality of the item-level answers,
    or why it could not be read."""
    record.results(ReliabilityResult)  # every stored result fits, or one error naming the unit
    run_dir, units = record.run_dir, record.done()
    frame = run_frame(run_dir, units=units)
    if frame.empty or frame[list(DIMENSIONS)].dropna().shape[0] < 2:
        return []
    default = load_points([Path(p) for p in options.default_data]) if options.default_data else None
    min_pts = min(options.min_pts, max(2, len(frame) // 4))
    result = reanalyse(
        frame,
        fit_on=options.fit_on,
        eps=options.eps,
        min_pts=min_pts,
        method=options.test,
        published=options.published,
        default=default,
    )
    seed = record.config.seed
    quality = grid_quality(units, scale, seed, FACTORS) if isinstance(scale, Scale) else scale
    return write_reanalysis(
        result,
        run_dir,
        default,
        detail_frame(run_dir, units, record.calls),
        points=frame,
        quality=quality,
        seed=seed,
    )
