"""Per-run analysis of a ``mas`` run: per-item results, the score, and transcripts with the edits shown.

The transcripts are the stored calls (:mod:`llmpsych.report.transcripts`, one thread per agent); each
item's result adds who sent each reply to whom, the injected edits and the defences' interventions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..errors import DataError
from ..instruments.scale import STORED_HINT
from ..report.files import atomic_write_text
from ..report.html import fenced
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..report.transcripts import Thread, UnitNotes, transcripts_markdown
from ..runs.calls import StoredCall
from ..runs.record import RunRecord
from .runtime import digest

METRIC_LABEL: dict[str, str] = {
    "code": "Pass@1 (%), HumanEval tests run in the sandbox",
    "math": "accuracy (%), CIAR answer matching as in docs/mas-resilience.md",
    "translation": "chrF (sacrebleu, 0-100): a substitute for BLEURT-20, NOT comparable with the paper",
    "texteval": "accuracy (%) against the FairEval human labels",
}


def condition_label(options: dict[str, Any]) -> str:
    """A short name for a run's condition, e.g. ``autoinject(pm=1.0,pe=0.2,semantic)+challenger``."""
    fault: str = options.get("fault", "none")
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


def _fence(text: str, limit: int) -> str:
    return fenced(text if len(text) <= limit else text[:limit] + "\n[...]")


def message_markdown(message: dict[str, Any], show_text: bool = True, limit: int = 4000) -> str:
    """One message: who sent it to whom (and its text, unless the reply above it is that text), then
    AutoInject's edit, the Inspector's rewrite, the Challengers' verdicts and a rewritten result."""
    receivers = ", ".join(str(r) for r in message.get("receivers") or [])
    index, sender, round_no = message.get("index"), message.get("sender"), message.get("round", 0)
    head = f"**→ message [{index}] {sender} → {receivers}** (round {round_no})"
    if show_text:
        head += "\n\n" + _fence(str(message.get("content", "")), limit)
    parts = [head]
    meta = message.get("meta") or {}
    injection = meta.get("injection")
    if injection and injection.get("diff"):
        parts.append("⚠ **AutoInject edit:**\n\n" + fenced(injection["diff"], "diff"))
    elif injection and injection.get("selected"):
        chosen = len(injection.get("chosen", []))
        parts.append(
            f"⚠ **AutoInject:** {chosen} of {injection.get('n_units', 0)} units chosen; "
            "the injector returned them unchanged (message delivered as sent)."
        )
    inspector = meta.get("inspector")
    if inspector and inspector.get("decision") == "unsafe":
        parts.append("🛡 **Inspector rewrite:**\n\n" + fenced(inspector.get("diff", ""), "diff"))
    for agent, c in (meta.get("challenges") or {}).items():
        parts.append(f"🛡 Challenger `{agent}`: **{c['verdict']}**")
    fix = meta.get("result_fix")
    if fix:
        parts.append(
            f"🛡 **Challenger: `{fix['agent']}` wrote the final result instead of this message:**\n\n"
            + fenced(fix.get("diff", ""), "diff")
        )
    return "\n\n".join(parts)


def _index_line(message: dict[str, Any], seq: int | None) -> str:
    """One line of an item's message list: index, sender → receivers, round, source and interventions."""
    meta = message.get("meta") or {}
    tags = [f"reply of call {seq}" if seq is not None else "not written by a model"]
    if (meta.get("injection") or {}).get("diff"):
        tags.append("AutoInject edit")
    if (meta.get("inspector") or {}).get("decision") == "unsafe":
        tags.append("Inspector rewrite")
    if any(c.get("verdict") == "unsafe" for c in (meta.get("challenges") or {}).values()):
        tags.append("challenged")
    if meta.get("result_fix"):
        tags.append("result rewritten")
    receivers = ", ".join(str(r) for r in message.get("receivers") or [])
    return (
        f"- [{message.get('index')}] {message.get('sender')} → {receivers}, round {message.get('round', 0)}: "
        + "; ".join(tags)
    )


def written_digest(message: dict[str, Any]) -> str:
    """The digest of a message's text as its sender wrote it (older results keep the text itself)."""
    if message.get("reply_sha"):
        return str(message["reply_sha"])
    meta = message.get("meta") or {}
    return digest(str(meta.get("original", message.get("content", ""))))


def _agent_of(call: StoredCall, agents: Mapping[str, str]) -> str | None:
    """The agent whose profile opens the call's request (None: another call, or unknown)."""
    messages = call.request.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    if not isinstance(first, dict) or first.get("role") != "system":
        return None
    return agents.get(digest(str(first.get("content", ""))))


def match_calls(
    messages: list[dict[str, Any]], calls: list[StoredCall], agents: Mapping[str, str]
) -> list[int | None]:
    """For each message, the index in ``calls`` of the call whose reply it is (None: no model wrote it).

    A call matches when its reply has the message's digest and its profile is not another agent's
    (``agents``: profile digest -> name). Calls are made one after another, so the first unclaimed match
    at or after the previous message's call wins, then a claimed one (a reply sent twice), then any.
    """
    replies = [digest(str(call.response.get("text") or "")) for call in calls]
    owners = [_agent_of(call, agents) for call in calls]
    found: list[int | None] = []
    claimed: set[int] = set()
    at = 0
    for message in messages:
        key, sender = written_digest(message), message.get("sender")
        fits = [i for i, r in enumerate(replies) if r == key and owners[i] in (None, sender)]
        index = next(
            (i for i in fits if i >= at and i not in claimed),
            next((i for i in fits if i >= at), fits[0] if fits else None),
        )
        found.append(index)
        if index is not None:
            claimed.add(index)
            at = index
    return found


def unit_notes(
    result: dict[str, Any],
    calls: list[StoredCall],
    agents: Mapping[str, str] | None = None,
    limit: int = 4000,
) -> UnitNotes:
    """An item's annotations: the score and any AutoTransform rewrite; each message under the call whose
    reply it is (a text no model wrote, e.g. a defence's request, under the call before the next
    message's); the final result at the end. ``agents``: profile digest -> agent name."""
    score = result.get("score")
    intro = [f"Score {score:.1f}." if isinstance(score, int | float) else "Not scored."]
    for name, note in (result.get("agent_notes") or {}).items():
        if "transformed" in note:
            intro.append(
                f"**AutoTransform rewrote the profile of `{name}`:**\n\n> "
                + note["transformed"]["rewritten"][:1500].replace("\n", "\n> ")
            )
    messages = [m for m in result.get("transcript") or [] if isinstance(m, dict)]
    found = match_calls(messages, calls, agents or {})
    if messages:
        intro.append("Messages in the order sent (each shown in full under the call that wrote it):")
        intro.append(
            "\n".join(
                _index_line(m, calls[i].seq if i is not None else None)
                for m, i in zip(messages, found, strict=True)
            )
        )
    by_call: dict[int, list[str]] = {}
    end: list[str] = []
    for k, (message, index) in enumerate(zip(messages, found, strict=True)):
        if index is None:  # sent between the previous message's call and the next one's
            later = next((i for i in found[k + 1 :] if i is not None), None)
            index = max(0, later - 1) if later is not None else (len(calls) - 1 if calls else None)
        text = message_markdown(message, show_text=found[k] is None, limit=limit)
        if index is None:
            end.append(text)
        else:
            by_call.setdefault(calls[index].seq, []).append(text)
    end.append("**Final result:**\n\n" + _fence(str(result.get("result", "")), limit))
    return UnitNotes(
        intro="\n\n".join(intro),
        calls={seq: "\n\n".join(texts) for seq, texts in by_call.items()},
        end="\n\n".join(end),
    )


def agents_by_profile(results: list[dict[str, Any]]) -> dict[str, str]:
    """Each agent profile's digest with the agent's name, over the run's items (older results keep the
    profiles themselves)."""
    named: dict[str, str] = {}
    for result in results:
        named |= {sha: name for name, sha in (result.get("profile_sha") or {}).items()}
        named |= {digest(str(text)): name for name, text in (result.get("profiles") or {}).items()}
    return named


def transcripts_text(record: RunRecord, results: list[dict[str, Any]]) -> str:
    """``transcripts.md``: each item's calls, one thread per agent, with its messages as notes (items in
    dataset order, then the failed ones with their error)."""
    by_id = {str(r.get("item_id")): r for r in results}
    done = sorted((u for u in record.done() if u.unit_id in by_id), key=lambda u: _order(u.unit_id))
    agents = agents_by_profile(results)

    def thread_title(thread: Thread, index: int) -> str:
        first = thread.turns[0].new_messages[0] if thread.turns and thread.turns[0].new_messages else {}
        name = agents.get(digest(first.get("content", ""))) if first.get("role") == "system" else None
        return f"thread {index + 1}: " + (
            f"agent `{name}`" if name else "injector, inspector, challenger or transformer"
        )

    return transcripts_markdown(
        record,
        "MAS-Resilience transcripts",
        intro="Each agent's conversation from the stored calls; under each reply, the message it became "
        "(who sent it to whom), injected edits as diffs and the defences' interventions.",
        unit_title=lambda unit: unit.unit_id,
        thread_title=thread_title,
        units=[*done, *record.failed()],
        notes=lambda unit, calls: (
            unit_notes(by_id[unit.unit_id], calls, agents) if unit.unit_id in by_id else None
        ),
    )


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
    transcripts = transcripts_text(record, results)
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
