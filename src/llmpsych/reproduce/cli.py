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
            help="Systems to reproduce (default: all covered): GAMA-Bench, LLMPersonality, EmotionBench, "
            "MAS-Resilience, PsychoBench."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write reproduce.md/.html and reproduce_cells.csv here."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list every difference.")] = False,
    harness: Annotated[
        bool,
        typer.Option(
            "--harness",
            help="Also run every released MAS-Resilience HumanEval completion again in the sandbox and "
            "compare its verdict with the released one (11,580 rows: a minute or two; needs bubblewrap).",
        ),
    ] = False,
) -> None:
    """Recompute every published table the released data can give and compare each printed cell.

    One line per table and a total; exit 1 when a difference has no documented cause."""
    from .registry import system_named
    from .report import summary_lines, write
    from .run import reproduce as run_reproduce

    result = run_reproduce([system_named(s) for s in systems or []], data_dir, harness=harness)
    for line in summary_lines(result):
        console.print(terminal_text(line), highlight=False, soft_wrap=True)
    for outcome in result.outcomes:
        if outcome.status == "unexplained" or (verbose and outcome.status != "reproduced"):
            console.print("  " + terminal_text(outcome.describe()), highlight=False, soft_wrap=True)
    if result.harness_line is not None:
        console.print(terminal_text(result.harness_line), highlight=False, soft_wrap=True)
    if result.harness is not None:
        for difference in result.harness.differences:
            console.print("  " + terminal_text(difference), highlight=False, soft_wrap=True)
    for item in result.needs_models:
        console.print(
            f"needs model calls (skipped): {item.system} {item.table}: `{item.command}`", highlight=False
        )
    for item in result.not_covered:
        console.print(f"not yet covered: {item.system} {item.table}", highlight=False, soft_wrap=True)
    if out is not None:
        for path in write(result, out):
            console.print(f"wrote {terminal_text(path)}", highlight=False)
    unexplained = len(result.unexplained) + (len(result.harness.differences) if result.harness else 0)
    if unexplained:
        console.print(f"{unexplained} unexplained difference(s)", highlight=False)
        raise typer.Exit(1)
