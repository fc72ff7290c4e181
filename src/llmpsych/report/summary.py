"""The lines every benchmark command prints at its end, read from the run stores it wrote.

A run that failed most of its units or got no valid answer still writes its files, so "wrote ..." lines
alone hide it (seen: 4 of 5 MAS items failed with exit 0; 0 of 88 PsychoBench answers valid). The
summary says per run: units done / failed, the valid-answer rate where the task records answers, the
first three distinct failure reasons, and the command that resumes it. The caller exits 1 when units
failed. Everything from the store (error texts come from servers and models) goes through
:func:`~llmpsych.errors.terminal_text`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LlmpsychError, terminal_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..runs.store import UnitRow

HEADLINE_ROWS = 12  # rows of a run's summary.csv shown; the rest are in the file
MAX_REASONS = 3  # distinct failure reasons shown; the rest are in the store (`llmpsych export`)
REASON_CHARS = 300  # one reason is one line; a server's error page can be long


@dataclass
class RunTally:
    """What one run's store holds: units by status, answers valid / asked, the first failure reasons."""

    run_dir: Path
    task: str
    total: int = 0
    done: int = 0
    failed: int = 0
    valid: int = 0
    answers: int = 0  # answers asked for; 0 when the task records none (games, MAS)
    fallbacks: int | None = None  # games: decisions taken by the fallback action
    reasons: list[str] = field(default_factory=list)
    failed_reasons: int = 0  # distinct reasons in all

    @property
    def valid_rate(self) -> float | None:
        return self.valid / self.answers if self.answers else None


def _answer_counts(result: Any) -> tuple[int, int] | None:
    """(valid, asked) of one unit's result, or None when the task records no item answers."""
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("n_valid"), int) and isinstance(result.get("n_items"), int):
        return result["n_valid"], result["n_items"]  # reliability: the kept attempt
    answers = result.get("answers")
    if not isinstance(answers, dict):
        return None
    asked: set[str] = set(answers)
    for key in ("unanswered", "duplicates", "out_of_range"):
        value = result.get(key)
        if isinstance(value, dict | list):
            asked |= {str(v) for v in value}
    items = result.get("items")
    total = max(len(asked), len(items) if isinstance(items, list) else 0)
    return len(answers), total


def reason_line(error: str) -> str:
    """The first line of a stored failure, without the unit id the engine does not store (one line)."""
    first = next((line for line in error.splitlines() if line.strip()), error).strip()
    return first[:REASON_CHARS] + ("…" if len(first) > REASON_CHARS else "")


def tally(run_dir: Path) -> RunTally:
    """Read one run directory's store (never calls a model, never writes), one unit at a time: the memory
    it takes does not grow with the run (it held every unit's row, 30 MiB for 50,000 units)."""
    from ..runs.store import RunStore

    with RunStore.in_dir(run_dir) as store:
        task = str((store.get_meta("config") or {}).get("task") or "?")
        out = RunTally(run_dir=Path(run_dir), task=task)
        distinct = _count_units(out, store.iter_units())
    out.reasons = distinct[:MAX_REASONS]
    out.failed_reasons = len(distinct)
    return out


def _count_units(out: RunTally, units: Iterable[UnitRow]) -> list[str]:
    """Count ``units`` into ``out``; the distinct failure reasons, in order."""
    distinct: list[str] = []
    for unit in units:
        out.total += 1
        if unit.status == "done":
            out.done += 1
            counts = _answer_counts(unit.result)
            if counts is not None:
                out.valid += counts[0]
                out.answers += counts[1]
            if isinstance(unit.result, dict) and isinstance(unit.result.get("fallbacks"), int):
                out.fallbacks = (out.fallbacks or 0) + unit.result["fallbacks"]
        elif unit.status == "failed":
            out.failed += 1
            reason = reason_line(unit.error or "no reason stored")
            if reason not in distinct:
                distinct.append(reason)
    return distinct


def run_dirs_under(parent: Path) -> list[Path]:
    """The run directories directly inside ``parent`` (preset folders), in name order."""
    from ..runs.store import STORE_FILE

    return sorted(p.parent for p in Path(parent).glob(f"*/{STORE_FILE}"))


def _answers_counted(task: str) -> bool:
    """Whether ``task``'s units record valid answers (its :attr:`~llmpsych.runs.task.Task.answers_counted`;
    False for a task this installation does not know)."""
    from ..runs.task import task_class

    try:
        return task_class(task).answers_counted
    except LlmpsychError:
        return False


def summary_lines(tallies: Sequence[RunTally], resume: str | None = None) -> list[tuple[str, bool]]:
    """Console lines (Rich markup; outside text escaped) for the runs' tallies, each with whether it
    reports a failure (those go to stderr)."""
    lines = [("[bold]Summary[/bold]", False)]
    for t in tallies:
        where = terminal_text(t.run_dir)
        units = f"{t.done}/{t.total} units done" + (f", [red]{t.failed} failed[/red]" if t.failed else "")
        rate = t.valid_rate
        if rate is not None:
            colour = "red" if rate == 0 else "yellow" if rate < 1 else "green"
            units += f"; valid answers [{colour}]{t.valid}/{t.answers} ({rate:.1%})[/{colour}]"
        elif t.done and _answers_counted(t.task):
            units += "; valid answers [red]none recorded[/red]"
        if t.fallbacks:
            units += f"; [yellow]{t.fallbacks} decisions by the fallback action[/yellow] (no usable answer)"
        lines.append((f"  {where} ({terminal_text(t.task)}): {units}", False))
        for reason in t.reasons:
            lines.append((f"    [red]failed[/red] {terminal_text(reason, one_line=True)}", True))
        if t.failed_reasons > len(t.reasons):
            more = t.failed_reasons - len(t.reasons)
            lines.append((f"    … {more} more distinct reasons in the run store", True))
    failed = [t for t in tallies if t.failed]
    if failed:
        n = sum(t.failed for t in failed)
        hint = resume or "llmpsych run --resume {run_dir}"
        filled = [hint.replace("{run_dir}", terminal_text(t.run_dir)) for t in failed]
        commands = "; ".join(f"`{c}`" for c in dict.fromkeys(filled))
        lines.append((f"[yellow]{n} units failed; fix the cause and resume: {commands}[/yellow]", True))
    return lines


def headline(run_dir: Path) -> Table | None:
    """The run's headline table: the first rows of its ``summary.csv`` (label columns, n, mean ± sd), or
    None when the task writes none (or no mean).

    pandas is imported only when there is a ``summary.csv``: a run whose task writes none (``echo``) ends
    without it (importing pandas and the statistics' scipy took about 1 s of CPU after the last answer)."""
    path = Path(run_dir) / "summary.csv"
    if not path.is_file():
        return None
    import pandas as pd
    from rich.table import Table

    from ..stats.descriptive import format_mean_sd

    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError):
        return None
    if "mean" not in frame or frame.empty:
        return None
    labels = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])][:3]
    table = Table(title=f"{terminal_text(Path(run_dir).name)}: summary.csv", title_justify="left")
    for column in [*labels, "n", "mean ± sd"]:
        table.add_column(column, justify="left" if column in labels else "right")
    for row in frame.head(HEADLINE_ROWS).to_dict("records"):
        mean = format_mean_sd(row["mean"], row.get("sd"), 2)
        n = row.get("n", row.get("runs"))
        count = "" if n is None or pd.isna(n) else str(int(n))
        table.add_row(*(terminal_text(row[c]) for c in labels), count, mean)
    if len(frame) > HEADLINE_ROWS:
        table.caption = f"… {len(frame) - HEADLINE_ROWS} more rows in {terminal_text(path)}"
    return table


def no_result(run_dir: Path) -> str | None:
    """Why the analysis gave no result, when its ``summary.json`` says so (``error``)."""
    path = Path(run_dir) / "summary.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except (ValueError, OSError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else None


def print_run_summary(
    console: Console,
    run_dirs: Iterable[Path] | Path,
    resume: str | None = None,
    err_console: Console | None = None,
) -> int:
    """Print the end-of-run summary of the run directories; returns the number of failed units.

    ``resume``: the resume command, ``{run_dir}`` filled in per failed run (default ``llmpsych run
    --resume {run_dir}``, which continues a run of any task). Failure reasons and the resume command go
    to ``err_console`` (default: a stderr console like ``console``).
    """
    from .terminal import InertConsole

    errors = err_console or InertConsole(stderr=True, soft_wrap=True)
    from ..runs.store import STORE_FILE

    dirs = [run_dirs] if isinstance(run_dirs, Path) else list(run_dirs)
    tallies = [tally(d) for d in dirs if (Path(d) / STORE_FILE).is_file()]  # a preset run never started
    for t in tallies:
        table = headline(t.run_dir)
        if table is not None:
            console.print(table)
        reason = no_result(t.run_dir)
        if reason:
            why = terminal_text(reason, one_line=True)
            console.print(f"[yellow]{terminal_text(t.run_dir)}: no result: {why}[/yellow]", soft_wrap=True)
    for line, is_error in summary_lines(tallies, resume):
        (errors if is_error else console).print(line, highlight=False, soft_wrap=True)
    return sum(t.failed for t in tallies)
