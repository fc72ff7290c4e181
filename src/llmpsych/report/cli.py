"""``llmpsych report RUN_DIR``: the old name of ``llmpsych analyze`` (hidden, accepted one release)."""

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
    """Old name of `llmpsych analyze`: rebuild a run's tables and report from its store, no model called."""
    from ..clinames import notice
    from ..runs import analyze_run

    notice("llmpsych report", "llmpsych analyze")
    for path in analyze_run(run_dir):  # HTML beside every Markdown report, as after a run
        console.print(f"wrote {terminal_text(path)}")
