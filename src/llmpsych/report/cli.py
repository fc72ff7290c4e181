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
    html: Annotated[
        bool, typer.Option("--html/--no-html", help="Also write report.html (if the task did not).")
    ] = True,
    debug: kit.DebugOpt = False,
) -> None:
    """Rebuild a run's tables and report from its store; no model is called (same as `llmpsych analyze`).

    Report settings stored in the run (e.g. PsychoBench's BSRI thresholds) are used again.
    """
    from ..runs import analyze_run
    from .html import write_html

    paths = analyze_run(run_dir)
    markdown = [p for p in paths if p.suffix == ".md" and p.name.startswith("report")]
    if html:
        for md in markdown:
            if md.with_suffix(".html") not in paths:
                paths.append(write_html(md))
    for path in paths:
        console.print(f"wrote {terminal_text(path)}")
