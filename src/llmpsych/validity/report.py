"""Reports of the validity analyses: Markdown a researcher reads, CSV tables beside it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..report.files import atomic_write_text, output_dir, write_csv
from ..report.markdown import table
from .dif import METHOD as DIF_METHOD
from .invariance import InvarianceResult


def _blank_nan(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(object).where(frame.notna(), "")


def invariance_markdown(result: InvarianceResult) -> str:
    parts = [
        f"# Measurement invariance: {result.scale} across {result.by}",
        "",
        f"**{result.headline()}**",
        "",
    ]
    parts += [*result.summary_lines(), ""]
    parts += ["## Groups", "", table(result.groups_frame()), ""]
    if result.fits:
        fits = result.fits_frame()
        shown = fits[
            [
                "level",
                "converged",
                "chi2",
                "df",
                "cfi",
                "rmsea",
                "srmr",
                "n",
                "delta_cfi",
                "delta_rmsea",
                "delta_srmr",
                "delta_chi2",
                "delta_df",
                "p_delta_chi2",
                "holds",
                "note",
            ]
        ]
        parts += ["## Fit by level", "", table(_blank_nan(shown), floatfmt=".3f"), ""]
        parts += [
            f"Estimator: {result.estimator}. Decision rule: {result.rule}. A level that did not converge "
            "shows no fit index.",
            "",
        ]
    if result.dif:
        dif = result.dif_frame()[
            ["item", "subscale", "n", "lr", "df", "p", "p_holm", "delta_r2", "grade", "flagged", "note"]
        ]
        parts += [
            "## Item-level differential functioning",
            "",
            f"Method: {DIF_METHOD}.",
            "",
            table(_blank_nan(dif), floatfmt=".3f"),
            "",
        ]
    return "\n".join(parts)


def write_invariance(result: InvarianceResult, out: Path) -> list[Path]:
    folder = output_dir(out)
    sub = (
        next(iter(result.factors)) if len(result.factors) == 1 and result.scale not in result.factors else ""
    )
    stem = f"invariance-{_slug(result.scale)}{'-' + _slug(sub) if sub else ''}-{_slug(result.by)}"
    paths = [atomic_write_text(folder / f"{stem}.md", invariance_markdown(result))]
    paths.append(write_csv(result.groups_frame(), folder / f"{stem}-groups.csv"))
    if result.fits:
        paths.append(write_csv(result.fits_frame(), folder / f"{stem}-fit.csv"))
        loads = [
            f.loadings.assign(level=f.level) for f in result.fits if f.converged and f.loadings is not None
        ]
        if loads:
            paths.append(write_csv(pd.concat(loads, ignore_index=True), folder / f"{stem}-loadings.csv"))
    if result.dif:
        paths.append(write_csv(result.dif_frame(), folder / f"{stem}-dif.csv"))
    return paths


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-") or "x"


def fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"
