"""``transcripts.md``: every PsychoBench run's conversation, one anchor per (scale, run).

Built from the unit results in the store (what the scoring read: in cipher mode, the deciphered side of
the conversation; the enciphered requests and replies are in ``run.sqlite``, ``llmpsych export``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..report.files import atomic_write_text
from ..report.html import fenced, slug

TRANSCRIPTS = "transcripts.md"


def run_heading(scale: str, run: int) -> str:
    """The heading of one run's section."""
    return f"{scale} run {run}"


def run_anchor(scale: str, run: int) -> str:
    """The anchor (GitHub slug) of one run's section."""
    return slug(run_heading(scale, run))


def run_link(scale: str, run: int, text: str | None = None) -> str:
    """A Markdown link from the report to one run's transcript."""
    return f"[{text or run}]({TRANSCRIPTS}#{run_anchor(scale, run)})"


def _generate_section(result: dict[str, Any]) -> list[str]:
    parts = []
    for message in result.get("transcript") or []:
        parts += [f"**{message.get('role', '?')}**", "", fenced(str(message.get("content", ""))), ""]
    if not parts:
        parts = ["_(no transcript stored for this run)_", ""]
    return parts


def _logprob_section(result: dict[str, Any]) -> list[str]:
    items = result.get("items") or []
    texts = result.get("texts") or []
    lines = []
    for k, item in enumerate(items):
        reply = texts[k] if k < len(texts) else ""
        value = item.get("value")
        shown = "none" if value is None else f"{value:.3f}"
        lines.append(f"{item.get('item')}: {reply!r} -> value {shown} ({item.get('status', '?')})")
    return [
        "One statement per request; each line: statement, reply, weighted value (source).",
        "",
        fenced("\n".join(lines)),
        "",
    ]


def write_transcripts(path: Path, model: str, results: list[dict[str, Any]], note: str = "") -> Path:
    """Write the transcripts file for the finished units (sorted by scale order as given, then run)."""
    lines = ["# PsychoBench transcripts", "", f"Model `{model}`. {note}".strip(), ""]
    scales = list(dict.fromkeys(r["scale"] for r in results))
    for scale in scales:
        runs = sorted(int(r["run"]) for r in results if r["scale"] == scale)
        lines.append(f"- {scale}: " + " ".join(run_link(scale, run) for run in runs))
    lines.append("")
    for scale in scales:
        for result in sorted((r for r in results if r["scale"] == scale), key=lambda r: int(r["run"])):
            run = int(result["run"])
            answered = len(result.get("answers") or {})
            lines += [
                f"## {run_heading(scale, run)}",
                "",
                f"Item order: {', '.join(map(str, result.get('order') or []))}. Valid answers: {answered}; "
                f"requests: {result.get('asks', 0)}; refused: {'yes' if result.get('refused') else 'no'}.",
                "",
            ]
            if result.get("mode") == "logprob":
                lines += _logprob_section(result)
            else:
                lines += _generate_section(result)
    return atomic_write_text(path, "\n".join(lines))
