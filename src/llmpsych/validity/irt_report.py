"""The item response models' tables and Markdown report (``llmpsych validity irt``)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..report.files import output_dir, write_csv
from ..report.markdown import table, write_report
from .irt import MAX_STEP_SE, IrtTables

TABLES = ("summary", "items", "respondents", "information", "item_fit")


def write_irt(tables: IrtTables, out: Path, sources: str) -> list[Path]:
    """``irt_<table>.csv`` for each table and ``irt.md``; returns the files written."""
    folder = output_dir(out)
    written = [write_csv(getattr(tables, name), folder / f"irt_{name}.csv") for name in TABLES]
    written.append(write_report(folder / "irt.md", "Item response models", sections(tables, sources)))
    return written


def sections(tables: IrtTables, sources: str) -> list[tuple[str, str]]:
    """The report: what was fitted and how, then one section per scale and group."""
    head = (
        f"Answers: {sources}.\n\n"
        "Graded response model (GRM) for Likert items, 2PL for binary items, estimated by "
        f"{_estimators(tables.summary)}. Standard errors from the cross-product of the respondents' score "
        "vectors; a fit whose estimate is more than "
        f"{MAX_STEP_SE:g} standard error from the likelihood's maximum (one Newton step), whose "
        "discrimination sits on the search bound, or whose information is singular is refused, and no "
        "parameter of it is shown. Each subscale is fitted as its own dimension (fillers in none). "
        "Reverse-keyed items are turned (min + max - answer) before fitting. `a` is an item's "
        "discrimination; `≥k: b` the theta at which answering category k or higher (keyed) has "
        "probability 1/2 (a category nobody used has no threshold). theta: EAP with "
        "a standard normal prior. Infit/outfit: mean squares at the EAP (1 is ideal; above 1.3 the "
        "answers are noisier than the model expects). Every number in the irt_*.csv tables."
    )
    parts = [("How these were fitted", head)]
    for _, row in tables.summary.iterrows():
        parts.append((f"{row['scale']}: {row['dimension']} ({row['group']})", _scale_section(tables, row)))
    return parts


def _estimators(summary: pd.DataFrame) -> str:
    names = [str(n) for n in dict.fromkeys(summary["estimator"].dropna())]
    return ", ".join(names) or "no estimator (nothing fitted)"


def _scale_section(tables: IrtTables, row: pd.Series) -> str:
    counts = (
        f"n = {row['respondents']} respondent(s) with a valid answer, {row['items']} items, "
        f"{row['answers']} answers used; {row['not_answered']} item(s) without a valid answer "
        f"(invalid, refused or missing) left out"
    )
    if row["pooled_over"]:
        counts += f"; pooled over respondents who differ in {row['pooled_over']}"
    if row["excluded_respondents"]:
        counts += f"; {row['excluded_respondents']} respondent(s) without any valid answer excluded"
    if row["status"] != "fitted":
        return f"**Not fitted**: {row['reason']}\n\n{counts}."
    items = _of(tables.items, row)
    fit = _of(tables.item_fit, row)
    shown = []
    for number, rows in items.groupby("item", sort=True):
        a = rows[rows["parameter"] == "a"].iloc[0]
        thresholds = rows[rows["parameter"] != "a"]
        item_fit = fit[fit["item"] == number]
        shown.append(
            {
                "item": number,
                "reversed": "yes" if a["reverse"] else "",
                "a (se)": _with_se(a["estimate"], a["se"]),
                "thresholds (se)": "; ".join(
                    f"≥{int(t['category'])}: {_with_se(t['estimate'], t['se'])}"
                    for _, t in thresholds.iterrows()
                ),
                "infit": float(item_fit["infit"].iloc[0]) if len(item_fit) else math.nan,
                "outfit": float(item_fit["outfit"].iloc[0]) if len(item_fit) else math.nan,
            }
        )
    info = _of(tables.information, row)
    peak = info.iloc[int(info["information"].to_numpy().argmax())]
    precise = info[info["se"] <= 0.5]["theta"]
    span = f"theta from {precise.min():g} to {precise.max():g}" if len(precise) else "no theta on the grid"
    return (
        f"{row['model_type']}, {counts}. Log-likelihood {row['loglik']:.1f}; the estimate is "
        f"{row['max_step_se']:.2f} standard errors from the maximum at most; {row['seconds']:.1f} s.\n\n"
        + table(pd.DataFrame(shown))
        + f"\n\nTest information peaks at {peak['information']:.1f} (theta {peak['theta']:g}); the "
        f"standard error of theta is at most 0.5 for {span} (irt_information.csv)."
    )


def _of(frame: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
    """The rows of one fit (scale, dimension, group)."""
    key = (frame["scale"] == row["scale"]) & (frame["dimension"] == row["dimension"])
    chosen: pd.DataFrame = frame[key & (frame["group"] == row["group"])]
    return chosen


def _with_se(estimate: float, se: float) -> str:
    return f"{estimate:.2f} ({se:.2f})"
