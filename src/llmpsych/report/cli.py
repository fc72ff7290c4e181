"""``llmpsych report RUN_DIR``: rebuild a run's tables and report from its store (alias of ``analyze``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(add_completion=False)
console = Console(soft_wrap=True)


@app.callback(invoke_without_command=True)
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Rebuild a run's tables and report from its store; no model is called (same as `llmpsych analyze`)."""
    from ..runs import analyze_run

    for path in analyze_run(run_dir):
        console.print(f"wrote {path}")
