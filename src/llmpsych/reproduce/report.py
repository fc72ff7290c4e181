"""The reproduction as a tidy table (one row per printed cell), a Markdown report and its HTML page."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..report.files import write_csv
from ..report.html import write_html
from ..report.markdown import markdown_cells, table, write_report
from .run import Reproduction

CSV = "reproduce_cells.csv"
MARKDOWN = "reproduce.md"


def cells_frame(result: Reproduction) -> pd.DataFrame:
    """Every printed cell: where it is, printed, llmpsych's value, equal at the printed precision, and
    the cause of a difference (kind, note, switch)."""
    rows = [
        {
            "system": o.cell.system,
            "table": o.cell.table,
            "row": o.cell.row,
            "column": o.cell.column,
            "printed": o.cell.printed,
            "decimals": o.cell.decimals,
            "llmpsych": o.recomputed,
            "equal": o.equal,
            "status": o.status,
            "cause": o.cause.note if o.cause else "",
            "switch": (o.cause.switch or "") if o.cause else "",
            "citation": o.cell.citation,
        }
        for o in result.outcomes
    ]
    columns = ["system", "table", "row", "column", "printed", "decimals", "llmpsych", "equal", "status"]
    return pd.DataFrame(rows, columns=[*columns, "cause", "switch", "citation"])


def summary_lines(result: Reproduction) -> list[str]:
    """One line per table (or why it was skipped), then the total."""
    lines = []
    for t in result.tables:
        if t.skipped:
            lines.append(f"{t.reproducer.system} {t.reproducer.table}: skipped, {t.skipped}")
        else:
            lines.append(t.summary.line())
    lines.append(result.total.line())
    return lines


def _differences(result: Reproduction) -> str:
    rows = [
        {
            "status": o.status,
            "system": o.cell.system,
            "table": o.cell.table,
            "row": o.cell.row,
            "column": o.cell.column,
            "printed": o.cell.printed,
            "llmpsych": "none" if o.recomputed is None else f"{o.recomputed:.{o.cell.decimals + 2}f}",
            "cause": (o.cause.note + (f" (switch: {o.cause.switch})" if o.cause.switch else ""))
            if o.cause
            else "",
            "citation": o.cell.citation,
        }
        for o in result.outcomes
        if o.status not in ("reproduced", "not-in-data-dir")
    ]
    if not rows:
        return "_(none)_"
    # printed numbers keep their printed text ("0.50" stays two decimals)
    text: str = markdown_cells(pd.DataFrame(rows)).to_markdown(index=False, disable_numparse=True)
    return text


def write(result: Reproduction, out: Path) -> list[Path]:
    """Write the tidy CSV, the Markdown report and its HTML page into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    frame = cells_frame(result)
    absent = int((frame["status"] == "not-in-data-dir").sum())
    per_table = pd.DataFrame(
        [
            {
                "system": t.reproducer.system,
                "table": t.reproducer.table,
                "printed": t.summary.printed,
                **{k: t.summary.counts[k] for k in ("reproduced", "misprint", "convention")},
                "not released": t.summary.counts["not-released"],
                "not in data folder": t.summary.counts["not-in-data-dir"],
                "unexplained": t.summary.counts["unexplained"],
                "note": t.skipped or t.reproducer.title,
            }
            for t in result.tables
        ]
    )
    uncovered = pd.DataFrame(
        [{"system": u.system, "table": u.table, "why": u.why} for u in result.not_covered]
    )
    models = pd.DataFrame(
        [
            {"system": u.system, "table": u.table, "why": u.why, "command": f"`{u.command}`"}
            for u in result.needs_models
        ]
    )
    sections = [
        ("Total", result.total.line() + "\n\nPrinted cells are compared at their printed precision."),
        ("Tables", table(per_table)),
        ("Every difference and its cause", _differences(result)),
        (
            "Cells the data folder does not hold",
            f"{absent:,} printed cells have their data in the authors' released repositories but not in "
            f"this data folder; they are counted apart, never as reproduced (`{CSV}` lists them).",
        ),
        ("HumanEval verdicts of MAS-Resilience", result.harness_line or "_(MAS-Resilience not chosen)_"),
        ("Tables that need model calls (skipped)", table(models)),
        ("Not yet covered", table(uncovered)),
    ]
    md = write_report(out / MARKDOWN, "llmpsych reproduce: published tables from released data", sections)
    return [write_csv(frame, out / CSV), md, write_html(md)]
