"""write_run_report: tables, figures, Markdown report and its HTML page, written one way for every task."""

from __future__ import annotations

import base64
from pathlib import Path

import pandas as pd

from llmpsych.report.run_report import write_run_report
from llmpsych.report.tables import PARQUET_MISSING, parquet_available

# a 1x1 PNG, as a figure the analysis drew
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_tables_report_page_and_figures_in_one_call(tmp_path: Path) -> None:
    figure = tmp_path / "scores.png"
    figure.write_bytes(PNG)
    extra = tmp_path / "summary.json"
    extra.write_text("{}")
    frame = pd.DataFrame({"scale": ["BFI", "=cmd()"], "mean": [3.5, 4.0]})
    notes: list[str | None] = []

    def sections(parquet_note: str | None) -> list[tuple[str, str]]:
        notes.append(parquet_note)
        return [("Scores", "![scores](scores.png)"), ("Files", parquet_note or "CSV and Parquet")]

    paths = write_run_report(
        tmp_path,
        "A run",
        sections,
        tables=[("scores", frame)],
        parquet=True,
        figures=[figure, None],
        files=[extra],
    )
    parquet = [tmp_path / "scores.parquet"] if parquet_available() else []
    assert paths == [
        extra,
        tmp_path / "scores.csv",
        *parquet,
        figure,
        tmp_path / "report.md",
        tmp_path / "report.html",
    ]
    assert notes == [None if parquet_available() else PARQUET_MISSING]
    assert (tmp_path / "scores.csv").read_text().splitlines()[2] == "'=cmd(),4.0"  # neutralised formula
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# A run\n\n## Scores\n\n![scores](scores.png)\n\n## Files\n")
    page = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in page and "<title>A run</title>" in page


def test_plain_sections_no_tables_no_page(tmp_path: Path) -> None:
    paths = write_run_report(tmp_path, "Empty", [("Nothing", "_(no rows)_")], name="report-x.md", html=False)
    assert paths == [tmp_path / "report-x.md"] and not (tmp_path / "report-x.html").exists()
    assert not list(tmp_path.glob("*.csv"))
