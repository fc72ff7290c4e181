"""Tables read from the runs' stores: the rounds analysis, the distraction-comment probe and the
injected-error taxonomy (thesis §7.4.6, Fig. 7.6b, Table 7.8).

They need each item's transcript, which only the run store holds, so they read the stored unit results
(never a model). A folder without a store contributes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..runs.store import STORE_FILE, RunStore
from .inject import DISTRACTION
from .taxonomy import CATEGORIES, NOT_CODE, PAPER_COUNTS, UNCLASSIFIED, classify, is_code_line


def unit_results(run_dir: Path) -> list[dict[str, Any]]:
    """The results of a run's finished items (empty without a store)."""
    if not (Path(run_dir) / STORE_FILE).is_file():
        return []
    with RunStore.in_dir(Path(run_dir), readonly=True) as store:
        return [u.result for u in store.units("done") if isinstance(u.result, dict)]


def edits(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The AutoInject edits of one item, in message order (malformed records are skipped)."""
    out = []
    for message in result.get("transcript") or []:
        injection = (message.get("meta") or {}).get("injection") if isinstance(message, dict) else None
        if isinstance(injection, dict):
            out += [e for e in injection.get("edits") or [] if isinstance(e, dict)]
    return out


def kept_injection(result: dict[str, Any]) -> bool | None:
    """Whether a line AutoInject wrote survives in the item's final result (None: nothing was injected).

    A line counts when its corrupted text (without any distraction comment), stripped, is a whole line of
    the result, so an agent that quietly repaired the line, or rewrote it, does not count.
    """
    injected = {str(e.get("after", "")).strip() for e in edits(result)} - {""}
    if not injected:
        return None
    text = str(result.get("result", "")).replace(DISTRACTION["code"], "")
    lines = {line.strip() for line in text.split("\n")}
    return bool(injected & lines)


def rounds(rows: pd.DataFrame, results: dict[Any, list[dict[str, Any]]]) -> pd.DataFrame:
    """Mean messages per item (both agents) of passed and failed items, one row per run with verdicts."""
    out = []
    for row in rows.itertuples():
        items = [
            r
            for r in results.get(row.Index, [])
            if isinstance(r.get("passed"), bool) and type(r.get("n_messages")) is int
        ]
        if not items:
            continue
        passed = [r["n_messages"] for r in items if r["passed"]]
        failed = [r["n_messages"] for r in items if not r["passed"]]
        out.append(
            {
                "run": row.run,
                "system": row.system,
                "task": row.task,
                "condition": row.condition,
                "n passed": len(passed),
                "messages if passed": sum(passed) / len(passed) if passed else None,
                "n failed": len(failed),
                "messages if failed": sum(failed) / len(failed) if failed else None,
            }
        )
    return pd.DataFrame(out).set_index("run") if out else pd.DataFrame()


def kept_share(results: list[dict[str, Any]]) -> tuple[float | None, int]:
    """The share (%) of items with an injected line whose result kept one, and how many such items."""
    verdicts = [k for k in (kept_injection(r) for r in results) if k is not None]
    return (100 * sum(verdicts) / len(verdicts) if verdicts else None), len(verdicts)


def error_records(rows: pd.DataFrame, results: dict[Any, list[dict[str, Any]]]) -> pd.DataFrame:
    """Every injected edit of the semantic AutoInject code runs, with its Table 7.8 category; an edit of a
    line that is not code (a fence, a review line: the injector's ``code`` verdict, or
    :func:`~.taxonomy.is_code_line` for edits stored without one) is ``not code``."""
    out = []
    picked = rows[(rows.task == "humaneval") & (rows.fault == "autoinject") & (rows.error_type == "semantic")]
    for row in picked.itertuples():
        for result in results.get(row.Index, []):
            for edit in edits(result):
                before, after = str(edit.get("before", "")), str(edit.get("after", ""))
                code = edit.get("code")
                code = is_code_line(before) if not isinstance(code, bool) else code
                out.append(
                    {
                        "run": row.run,
                        "model": row.model,
                        "system": row.system,
                        "item": result.get("item_id"),
                        "before": before,
                        "after": after,
                        "code": code,
                        "category": classify(before, after) if code else NOT_CODE,
                    }
                )
    return pd.DataFrame(out)


def taxonomy_table(records: pd.DataFrame) -> pd.DataFrame:
    """Table 7.8 layout: per category, our count and share of the code edits next to the thesis's count of
    80; the edits of lines that are not code follow the total, outside it."""
    counts = records.category.value_counts() if not records.empty else pd.Series(dtype=int)
    left_out = int(counts.pop(NOT_CODE)) if NOT_CODE in counts else 0
    total = int(counts.sum())
    paper_total = sum(PAPER_COUNTS.values())
    rows = []
    for name, description in (*CATEGORIES, (UNCLASSIFIED, "no rule fits")):
        ours = int(counts.get(name, 0))
        paper = PAPER_COUNTS.get(name)
        rows.append(
            {
                "category": name,
                "what it covers": description,
                "count": ours,
                "share (%)": 100 * ours / total if total else None,
                "thesis count": paper if paper is not None else "-",
                "thesis share (%)": 100 * paper / paper_total if paper is not None else None,
            }
        )
    rows.append(
        {
            "category": "total",
            "what it covers": "",
            "count": total,
            "share (%)": 100.0 if total else None,
            "thesis count": paper_total,
            "thesis share (%)": 100.0,
        }
    )
    rows.append(
        {
            "category": f"{NOT_CODE} (left out)",
            "what it covers": "edits of fences, review lines and prose of a code message",
            "count": left_out,
            "share (%)": None,
            "thesis count": "-",
            "thesis share (%)": None,
        }
    )
    return pd.DataFrame(rows).set_index("category")
