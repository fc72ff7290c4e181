"""``llmpsych web [RUNS_DIR...]``: browse runs in a browser (needs the ``web`` extra).

The web libraries are imported only when the command runs, so the CLI works without the extra and the
command says how to install it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError
from ..paths import runs_dir

app = typer.Typer(
    help="Browse runs in a browser: progress, reports, transcripts, comparisons.",
    subcommand_metavar="",
    context_settings={"allow_interspersed_args": True},  # `llmpsych web RUNS --port 8080` as well
)

INSTALL_HINT = 'pip install "llmpsych[web]"'


def serve_runs(
    runs: list[Path] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the runs under ``runs`` (default: the runs folder) on ``host:port`` until interrupted;
    ``announce`` gets the lines for the user (default: printed)."""
    try:
        from .server import serve
    except ModuleNotFoundError as exc:
        raise ConfigError(f"llmpsych web needs {exc.name}, which is not installed", INSTALL_HINT) from None
    roots = list(runs) if runs else [runs_dir()]
    serve(roots, host=host, port=port, announce=announce or typer.echo)


@app.callback(invoke_without_command=True)
def web(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(help="Folders holding run folders (default: the runs folder, $LLMPSYCH_RUNS_DIR)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. Default loopback (this machine only); another address "
            "lets others on the network connect.",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (default: a free one).", min=0, max=65535)] = 0,
) -> None:
    """Serve the runs on 127.0.0.1 and print the URL to open (it carries this session's token)."""
    serve_runs(runs, host, port)
