"""Every report a run or a comparison writes in Markdown gets its HTML page beside it, without asking."""

from __future__ import annotations

from pathlib import Path

from llmpsych.report.html import html_beside
from llmpsych.runs import analyze_run, parse_run_config, start_run


def test_a_run_writes_html_beside_its_markdown_report(tmp_path: Path) -> None:
    config = parse_run_config(
        {
            "task": "gamabench",
            "model": "openai-compatible/unused",
            "options": {
                "game": "guessing",
                "runs": 1,
                "players": 3,
                "rounds": 2,
                "seats": ["strategy:ne"] * 3,
            },
        }
    )
    outcome = start_run(config, tmp_path / "run", False)
    assert tmp_path / "run" / "report.html" in outcome.outputs
    assert "<h1" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    (tmp_path / "run" / "report.html").unlink()
    assert tmp_path / "run" / "report.html" in analyze_run(tmp_path / "run")  # re-analysis: again


def test_only_reports_get_a_page(tmp_path: Path) -> None:
    notes, report = tmp_path / "notes.md", tmp_path / "comparison.md"
    notes.write_text("# notes\n", encoding="utf-8")
    report.write_text("# A comparison\n\n| a |\n|---|\n| 1 |\n", encoding="utf-8")
    out = html_beside([notes, report, tmp_path / "gone.md"])
    assert out == [notes, report, tmp_path / "gone.md", tmp_path / "comparison.html"]
    assert not (tmp_path / "notes.html").exists()
