"""``llmpsych reliability ...``: re-analyse released or own results; run the perturbation grid."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..errors import LlmpsychError
from .outliers import EPS, MIN_PTS
from .published import DIMENSIONS, LEVEL_NAMES
from .reanalysis import Reanalysis, reanalyse
from .results import load_points

app = typer.Typer(
    help="Scale reliability: the 2,500-configuration BFI grid, steering, maps and statistics.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(width=120)


@app.callback()
def reliability() -> None:
    """Scale reliability: the 2,500-configuration BFI grid, steering, maps and statistics."""


@app.command()
def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Save files or run directories.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    default: Annotated[
        list[Path] | None,
        typer.Option("--default", help="Default (unsteered) data for the min/max tests of Table 3.10."),
    ] = None,
    fit_on: Annotated[
        str, typer.Option(help="PCA fit: data (default) or full-grid (all 5^5 vectors, the released code).")
    ] = "data",
    eps: Annotated[float, typer.Option(help="DBSCAN radius on the 2-D map.")] = EPS,
    min_pts: Annotated[int, typer.Option(help="DBSCAN minPts (self included).")] = MIN_PTS,
    method: Annotated[str, typer.Option(help="t-test: paper (F-test chooses), welch or student.")] = "paper",
    keep_outliers: Annotated[
        bool, typer.Option("--keep-outliers", help="Test factor levels on all points, not the inliers.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write tables, map and report.md into this folder.")
    ] = None,
) -> None:
    """Per-dimension mean ± sd, outliers, factor-level table, variance tests, steering tables."""
    if fit_on not in ("data", "full-grid"):
        raise LlmpsychError(f"--fit-on must be data or full-grid, got {fit_on!r}")
    if method not in ("paper", "welch", "student"):
        raise LlmpsychError(f"--method must be paper, welch or student, got {method!r}")
    frame = load_points(paths)
    default_frame = load_points(default) if default else None
    result = reanalyse(
        frame,
        fit_on=fit_on,  # type: ignore[arg-type]
        eps=eps,
        min_pts=min_pts,
        method=method,  # type: ignore[arg-type]
        keep_outliers=keep_outliers,
        default=default_frame,
    )
    written: list[Path] = []
    if out is not None:
        from .report import write_reanalysis

        written = write_reanalysis(result, out, default_frame)
    if as_json:
        payload = result.to_json()
        payload["sources"] = [str(p) for p in paths]
        payload["written"] = [str(p) for p in written]
        typer.echo(json.dumps(payload, indent=1))
        return
    _print(result)
    for path in written:
        console.print(f"  wrote {path}")


def _fmt(mean: float, sd: float) -> str:
    return "-" if math.isnan(mean) else f"{mean:.2f}±{sd:.2f}"


def _print(result: Reanalysis) -> None:
    n = len(result.frame)
    summary = Table(title=f"{n} data points: mean ± sd (ddof 1)")
    for dim in DIMENSIONS:
        summary.add_column(dim[0], justify="right")
    row = result.summary.set_index("dimension")
    summary.add_row(*(_fmt(row.loc[d, "mean"], row.loc[d, "sd"]) for d in DIMENSIONS))
    console.print(summary)
    count = int(result.outliers.sum())
    console.print(
        f"outliers: {count} ({count / n:.2%}) — DBSCAN eps {result.settings['eps']}, "
        f"minPts {result.settings['min_pts']} on the PCA map fitted on {result.projection.fitted_on}"
    )
    if not result.comparisons.empty:
        table = Table(title=f"level minus rest, difference (p), {result.settings['comparisons_on']}")
        table.add_column("level")
        for dim in DIMENSIONS:
            table.add_column(dim[0], justify="right")
        for (_factor, level), part in result.comparisons.groupby(["factor", "level"], sort=False):
            cells = part.set_index("dimension")
            table.add_row(
                LEVEL_NAMES.get(str(level), str(level)),
                *(f"{cells.loc[d, 'difference']:+.2f} ({cells.loc[d, 'p']:.2f})" for d in DIMENSIONS),
            )
        console.print(table)
    if result.groups is not None:
        table = Table(title=f"per {result.settings['group_by']}: mean ± sd")
        table.add_column("group")
        table.add_column("n", justify="right")
        for dim in DIMENSIONS:
            table.add_column(dim[0], justify="right")
        for rec in result.groups.to_dict("records"):
            name = rec.get("short") or rec[result.settings["group_by"]]
            table.add_row(
                str(name), str(rec["n"]), *(_fmt(rec[f"{d}_mean"], rec[f"{d}_sd"]) for d in DIMENSIONS)
            )
        console.print(table)
    if result.extremes is not None:
        table = Table(title="steering extremes vs default (Welch)")
        for col in ("dimension", "side", "profile", "assigned", "difference", "t", "p"):
            table.add_column(col)
        for rec in result.extremes.to_dict("records"):
            table.add_row(
                rec["dimension"],
                rec["side"],
                rec["profile"],
                _fmt(rec["assigned_mean"], rec["assigned_sd"]),
                f"{rec['difference']:+.2f}",
                f"{rec['t']:.2f}",
                f"{rec['p']:.3g}",
            )
        console.print(table)
    variance = Table(title="variance F-tests against human SDs (one-sided, H1: LLM varies less)")
    for col in ("dimension", "LLM sd", "human sd", "F", "p"):
        variance.add_column(col)
    for rec in result.variance.to_dict("records"):
        variance.add_row(
            rec["dimension"],
            f"{rec['model_sd']:.2f}",
            f"{rec['human_sd']:.2f}",
            f"{rec['f']:.2f}",
            f"{rec['p']:.2g}",
        )
    console.print(variance)
