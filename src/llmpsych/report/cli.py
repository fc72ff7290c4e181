"""``llmpsych report RUN_DIR``: rebuild a run's tables and report from its store (alias of ``analyze``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import clikit as kit
from ..errors import terminal_text
from .terminal import InertConsole

app = typer.Typer(add_completion=False)
console = InertConsole(soft_wrap=True)


@app.callback(invoke_without_command=True)
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    debug: kit.DebugOpt = False,
) -> None:
    """Rebuild a run's tables and report from its store; no model is called (same as `llmpsych analyze`).

    Every Markdown report gets its HTML page beside it. Report settings stored in the run (e.g.
    PsychoBench's BSRI thresholds) are used again.
    """
    from ..runs import analyze_run

    for path in analyze_run(run_dir):  # HTML beside every Markdown report, as after a run
        console.print(f"wrote {terminal_text(path)}")
