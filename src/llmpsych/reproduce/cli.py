"""``llmpsych reproduce``: recompute the published tables from the authors' released data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..clikit import DataDirOpt, console
from ..errors import terminal_text


def reproduce(
    systems: Annotated[
        list[str] | None,
        typer.Argument(
            help="Systems to reproduce (default: all covered): GAMA-Bench, LLMPersonality, EmotionBench."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write reproduce.md/.html and reproduce_cells.csv here."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list every difference.")] = False,
) -> None:
    """Recompute every published table the released data can give and compare each printed cell.

    One line per table and a total; exit 1 when a difference has no documented cause."""
    from .registry import system_named
    from .report import summary_lines, write
    from .run import reproduce as run_reproduce

    result = run_reproduce([system_named(s) for s in systems or []], data_dir)
    for line in summary_lines(result):
        console.print(terminal_text(line), highlight=False, soft_wrap=True)
    for outcome in result.outcomes:
        if outcome.status == "unexplained" or (verbose and outcome.status != "reproduced"):
            console.print("  " + terminal_text(outcome.describe()), highlight=False, soft_wrap=True)
    for item in result.needs_models:
        console.print(
            f"needs model calls (skipped): {item.system} {item.table}: `{item.command}`", highlight=False
        )
    for item in result.not_covered:
        console.print(f"not yet covered: {item.system} {item.table}", highlight=False, soft_wrap=True)
    if out is not None:
        for path in write(result, out):
            console.print(f"wrote {terminal_text(path)}", highlight=False)
    if result.unexplained:
        console.print(f"{len(result.unexplained)} unexplained difference(s)", highlight=False)
        raise typer.Exit(1)
