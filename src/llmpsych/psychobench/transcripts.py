"""``transcripts.md``: every PsychoBench run's conversation, one anchor per (scale, run).

Rendered by :mod:`llmpsych.report.transcripts` from the stored calls (the requests exactly as sent; in
cipher mode, enciphered). The unit results add what the calls do not say: the item order, how many items
were answered, the logprob scoring per item, and in cipher mode the deciphered reply the scoring read.
Results of runs made before the calls were the only copy still hold a ``transcript``; it is not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..report.files import atomic_write_text
from ..report.html import fenced, slug
from ..report.transcripts import UnitNotes, deciphered_notes, transcripts_markdown

if TYPE_CHECKING:
    from ..runs.calls import StoredCall
    from ..runs.record import RunRecord
    from ..runs.store import UnitRow

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


def _where(unit: UnitRow) -> tuple[str, int] | None:
    """The (scale, run) of a unit, from its result or else its payload (None: neither says)."""
    for source in (unit.result, unit.payload):
        if isinstance(source, dict) and "scale" in source and str(source.get("run", "")).isdigit():
            return str(source["scale"]), int(source["run"])
    return None


def _logprob_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for item in result.get("items") or []:
        value = item.get("value")
        shown = "none" if not isinstance(value, int | float) else f"{value:.3f}"
        lines.append(f"item {item.get('item')}: value {shown} ({item.get('status', '?')})")
    return [
        "One statement per request; each line: statement, weighted value (source).",
        "",
        fenced("\n".join(lines)),
    ]


def unit_notes(unit: UnitRow, calls: list[StoredCall], cipher_shift: int | None) -> UnitNotes:
    """What a (scale, run) adds to its calls: its item order and counts, the logprob values, and with the
    cipher (``cipher_shift`` set) each reply as deciphered for scoring."""
    result = unit.result if isinstance(unit.result, dict) else {}
    intro = []
    if unit.status == "done":
        answered = len(result.get("answers") or {})
        intro = [
            f"Item order: {', '.join(map(str, result.get('order') or []))}. Valid answers: {answered}; "
            f"requests: {result.get('asks', 0)}; refused: {'yes' if result.get('refused') else 'no'}."
        ]
        if result.get("mode") == "logprob":
            intro += ["", *_logprob_lines(result)]
    notes = deciphered_notes(calls, cipher_shift) if cipher_shift is not None else {}
    return UnitNotes(intro="\n".join(intro), calls=notes)


def write_transcripts(record: RunRecord, model: str, cipher_shift: int | None, note: str = "") -> Path:
    """Write the transcripts file: finished runs in scale order (as first finished) then run number,
    then the failed ones with their error; ``cipher_shift``: the run's shift when the cipher was on."""
    placed = [(unit, where) for unit in record.units if (where := _where(unit)) is not None]
    done = [(u, w) for u, w in placed if u.status == "done"]
    scales = list(dict.fromkeys(scale for _, (scale, _) in done))
    ordered = sorted(done, key=lambda p: (scales.index(p[1][0]), p[1][1]))
    failed = [(u, w) for u, w in placed if u.status == "failed"]
    index = [
        f"- {scale}: " + " ".join(run_link(scale, run) for _, (s, run) in ordered if s == scale)
        for scale in scales
    ]
    titles = {u.unit_id: run_heading(*w) for u, w in placed}
    text = transcripts_markdown(
        record,
        "PsychoBench transcripts",
        intro="\n".join([f"Model `{model}`. {note}".strip(), "", *index]),
        unit_title=lambda unit: titles.get(unit.unit_id),
        thread_title=lambda thread, i: f"conversation {i + 1}",
        units=[u for u, _ in ordered + failed],
        notes=lambda unit, calls: unit_notes(unit, calls, cipher_shift),
    )
    return atomic_write_text(record.run_dir / TRANSCRIPTS, text)
