"""Per-run analysis of a ``mas`` run: per-item results, the score, and transcripts with the edits shown."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..errors import DataError
from ..instruments.scale import STORED_HINT
from ..report.files import atomic_write_text
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.record import RunRecord

METRIC_LABEL: dict[str, str] = {
    "code": "Pass@1 (%), HumanEval tests run in the sandbox",
    "math": "accuracy (%), CIAR answer matching as in docs/mas-resilience.md",
    "translation": "chrF (sacrebleu, 0-100): a substitute for BLEURT-20, NOT comparable with the paper",
    "texteval": "accuracy (%) against the FairEval human labels",
}


def condition_label(options: dict[str, Any]) -> str:
    """A short name for a run's condition, e.g. ``autoinject(pm=1.0,pe=0.2,semantic)+challenger``."""
    fault = options.get("fault", "none")
    if fault == "autoinject":
        fault = (
            f"autoinject(pm={options.get('p_m', 1.0)},pe={options.get('p_e', 0.2)},"
            f"{options.get('error_type', 'semantic')},{options.get('unit_mode', 'exact')})"
        )
    defence = "+".join(options.get("defence") or [])
    return fault + (f"+{defence}" if defence else "")


def item_rows(results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per item."""
    rows = []
    for r in results:
        transcript = r.get("transcript", [])
        injected = [m["meta"].get("injection", {}) for m in transcript if "injection" in m["meta"]]
        challenges = [c for m in transcript for c in m["meta"].get("challenges", {}).values()]
        rows.append(
            {
                "item": r["item_id"],
                "score": r.get("score"),
                "passed": r.get("passed"),
                "messages": r.get("n_messages"),
                "agent_calls": r.get("llm_calls"),
                "aux_calls": r.get("aux_calls"),
                "messages_injected": sum(1 for i in injected if i.get("edits")),
                "lines_edited": sum(len(i.get("edits", [])) for i in injected),
                "lines_left_unchanged": sum(i.get("unchanged", 0) for i in injected),
                "inspector_rewrites": sum(
                    1 for m in transcript if m["meta"].get("inspector", {}).get("decision") == "unsafe"
                ),
                "challenges_unsafe": sum(1 for c in challenges if c["verdict"] == "unsafe"),
                "results_rewritten": sum(1 for m in transcript if "result_fix" in m["meta"]),
            }
        )
    return pd.DataFrame(rows)


def transcript_markdown(result: dict[str, Any], limit: int = 4000) -> str:
    """A transcript with injected edits, Inspector rewrites and Challenger verdicts highlighted."""
    parts = [f"### {result['item_id']} — score {result.get('score', 0):.1f}"]
    for name, note in (result.get("agent_notes") or {}).items():
        if "transformed" in note:
            parts.append(
                f"**AutoTransform rewrote the profile of `{name}`:**\n\n> "
                + note["transformed"]["rewritten"][:1500].replace("\n", "\n> ")
            )
    for m in result.get("transcript", []):
        head = f"**[{m['index']}] {m['sender']} → {', '.join(m['receivers'])}** (round {m['round']})"
        body = m["content"] if len(m["content"]) <= limit else m["content"][:limit] + "\n[...]"
        parts.append(head + "\n\n```text\n" + body.replace("```", "ʼʼʼ") + "\n```")
        injection = m["meta"].get("injection")
        if injection and injection.get("diff"):
            parts.append("⚠ **AutoInject edit:**\n\n```diff\n" + injection["diff"] + "\n```")
        elif injection and injection.get("selected"):
            chosen = len(injection.get("chosen", []))
            parts.append(
                f"⚠ **AutoInject:** {chosen} of {injection.get('n_units', 0)} units chosen; "
                "the injector returned them unchanged (message delivered as sent)."
            )
        inspector = m["meta"].get("inspector")
        if inspector and inspector.get("decision") == "unsafe":
            parts.append("🛡 **Inspector rewrite:**\n\n```diff\n" + inspector.get("diff", "") + "\n```")
        for agent, c in (m["meta"].get("challenges") or {}).items():
            parts.append(f"🛡 Challenger `{agent}`: **{c['verdict']}**")
        fix = m["meta"].get("result_fix")
        if fix:
            parts.append(
                f"🛡 **Challenger: `{fix['agent']}` wrote the final result instead of this message:**\n\n"
                "```diff\n" + fix.get("diff", "") + "\n```"
            )
    parts.append(
        "**Final result:**\n\n```text\n"
        + str(result.get("result", ""))[:limit].replace("```", "ʼʼʼ")
        + "\n```"
    )
    return "\n\n".join(parts)


class MasResult(BaseModel):
    """One unit's stored result: one item run through the system. The score is checked where it is
    read (an error naming the item); the rest is read by the tables and transcripts."""

    model_config = ConfigDict(extra="allow")

    item_id: str
    score: Any = None
    passed: Any = None


def analyze_record(record: RunRecord, task: Any) -> list[Path]:
    """Write results.csv, summary.json, transcripts.md and report.md from the run record (``task``: the
    task that ran, never a second one: no second sandbox pool)."""
    run_dir, units, manifest = record.run_dir, record.units, record.manifest
    record.results(MasResult)  # every stored result fits, or one error naming the unit
    results = [u.result for u in units if u.status == "done"]
    for r in results:
        _check_score(r)
    results.sort(key=lambda r: _order(r["item_id"]))
    frame = item_rows(results)
    options = task.options.model_dump()
    summary = {
        "system": task.options.system,
        "structure": task.system_cls.structure,
        "dataset": task.options.dataset,
        "kind": task.kind,
        "metric": task.metric_label,
        "condition": condition_label(options),
        "options": options,
        "faulty_agent": task.faulty,
        "final_agent": task.system_cls.final_agent,
        "model": manifest.get("config", {}).get("model", task.config.model),
        "n_items": len(results),
        "n_failed_units": sum(1 for u in units if u.status == "failed"),
        "n_scored": int(frame["score"].notna().sum()) if len(frame) else 0,  # the score's n
        "score": float(frame["score"].mean()) if len(frame) else None,
        "mean_messages": float(frame["messages"].mean()) if len(frame) else None,
    }
    if len(frame) and frame["passed"].notna().any():  # the rounds analysis of the thesis (section 8.10)
        for label, rows in (
            ("passed", frame[frame["passed"].eq(True)]),
            ("failed", frame[frame["passed"].eq(False)]),
        ):
            summary[f"mean_messages_{label}"] = float(rows["messages"].mean()) if len(rows) else None
    if task.kind == "code" and results:  # both figures: llmpsych's verdicts and OpenAI's harness's
        reference = [r.get("passed_reference", r.get("passed")) for r in results]
        summary["score_openai_harness"] = 100 * sum(bool(x) for x in reference) / len(reference)
    if task.kind == "translation" and results:
        summary["closer_to_correct"] = (
            100 * sum(r.get("closer_to_correct", 0) for r in results) / len(results)
        )
    # the transcripts come from the stored results, not the calls: they hold who sent what to whom,
    # injected edits and the defences' interventions, which the calls do not
    transcripts = "\n\n".join(transcript_markdown(r) for r in results) + "\n"
    files = [
        atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n"),
        atomic_write_text(run_dir / "transcripts.md", transcripts),
    ]
    overview = pd.DataFrame(
        [
            {
                "system": summary["system"],
                "structure": summary["structure"],
                "task": summary["dataset"],
                "condition": summary["condition"],
                "faulty agent": summary["faulty_agent"],
                "n": summary["n_items"],
                "score": summary["score"],
                "mean messages": summary["mean_messages"],
                "messages if passed": summary.get("mean_messages_passed"),
                "messages if failed": summary.get("mean_messages_failed"),
            }
        ]
    )
    sections = [
        (
            "What was measured",
            f"System `{summary['system']}` ({summary['structure']}) on `{summary['dataset']}` with model "
            f"`{summary['model']}`, condition `{summary['condition']}`. Metric: {summary['metric']}. "
            f"n = {summary['n_items']} items (one collaboration each)"
            + (f"; {summary['n_failed_units']} items failed to run." if summary["n_failed_units"] else "."),
        ),
        ("Score", table(overview)),
        ("Per item", table(frame)),
        (
            "Transcripts",
            "See transcripts.md: injected edits are shown as diffs, defences' interventions are marked.",
        ),
    ]
    if "closer_to_correct" in summary:
        sections.insert(
            2,
            (
                "CommonMT contrast",
                f"{summary['closer_to_correct']:.1f}% of translations are closer "
                f"({'BLEURT' if task.metric == 'bleurt' else 'chrF'}) to the correct "
                "reference than to the wrong one.",
            ),
        )
    title = "MAS-Resilience run report"
    return write_run_report(run_dir, title, sections, tables=[("results", frame)], files=files)


def _check_score(result: dict[str, Any]) -> None:
    """A stored item score is None (not scored) or a finite number (a pass rate or chrF in 0-100, BLEURT
    x 100 unbounded); NaN, an infinity or text is an error naming the item, never part of a mean."""
    value = result.get("score")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        item = str(result.get("item_id"))[:60]
        shown = str(value)[:20]
        raise DataError(f"run store item {item}: score {shown!r} is not a finite number", STORED_HINT)


def _order(item_id: str) -> tuple[str, int]:
    prefix, _, number = item_id.rpartition("/")
    return (prefix, int(number)) if number.isdigit() else (item_id, 0)
