"""``llmpsych data ...``: list the official datasets and fetch them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .. import clikit as kit
from ..clinames import renamed, retired_option
from ..report.terminal import InertConsole

app = typer.Typer(
    help="Official datasets of the research systems: where they are, and fetching them.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def data(debug: kit.DebugOpt = False) -> None:
    """Official datasets of the research systems: where they are, and fetching them."""


def _console() -> Console:
    """A console made per command, so it sees the current terminal width and output stream."""
    return InertConsole()


DataDirOpt = kit.DataDirOpt


def _origin(explicit: Path | None) -> str:
    from .sources import ENV_DATA_DIR

    if explicit is not None:
        return "--data-dir"
    if os.environ.get(ENV_DATA_DIR, "").strip():
        return f"${ENV_DATA_DIR}"
    return "user cache"


@app.command("list")
def list_cmd(data_dir: DataDirOpt = None) -> None:
    """Show each dataset's pinned source, how many of its files are present, and whether they verify."""
    from rich.table import Table

    from .registry import QUESTION_SETS
    from .sources import data_status, dataset_status, resolve_data_dir

    console = _console()
    root = resolve_data_dir(data_dir)
    statuses = data_status(data_dir) + [dataset_status(name, data_dir) for name in QUESTION_SETS]
    console.print(f"data directory: {escape(str(root))} ({_origin(data_dir)})", highlight=False)
    table = Table()
    table.add_column("dataset", style="bold")
    table.add_column("repository@commit", overflow="fold")
    table.add_column("files", justify="right")
    table.add_column("checksums")
    table.add_column("location", overflow="fold")
    for s in statuses:
        if not s.manifest.pinned:
            check = "[yellow]unpinned[/yellow]"
        elif s.checksums_ok is None:
            check = "-"
        elif s.checksums_ok:
            check = "[green]ok[/green]"
        else:
            check = f"[red]{len(s.mismatched)} differ[/red]"
        files = f"{s.present}/{s.total}"
        table.add_row(
            s.dataset,
            escape(s.manifest.source),
            files if s.complete else f"[yellow]{files}[/yellow]",
            check,
            escape(str(s.location)) if s.location else "[dim]not found[/dim]",
        )
    console.print(table)
    if not all(s.complete and s.checksums_ok for s in statuses):
        console.print(
            "fetch missing or changed files with `llmpsych data fetch DATASET` (or `all`)", highlight=False
        )


@app.command("path")
def path_cmd(
    dataset: Annotated[str, typer.Argument(help="A dataset (`llmpsych data list` names them).")],
    data_dir: DataDirOpt = None,
) -> None:
    """Print the folder of one dataset, for scripts (`D=$(llmpsych data path LLMPersonality)`); when it is
    absent, one line saying to fetch it or to pass --data-dir / set LLMPSYCH_DATA_DIR (exit 2)."""
    from .sources import dataset_path

    typer.echo(str(dataset_path(dataset, data_dir)))


@app.command("fetch")
def fetch_cmd(
    dataset: Annotated[str, typer.Argument(help="A dataset (`llmpsych data list` names them), or 'all'.")],
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Mirror serving {repository}/{commit}/{path} (default: $LLMPSYCH_DATA_BASE_URL, "
            "else https://raw.githubusercontent.com).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data directory to fetch into (default: the user cache)."),
    ] = None,
    trust_unpinned: Annotated[
        bool,
        typer.Option(
            "--trust-unpinned",
            help="Also fetch a dataset whose commit and sha256 are not pinned (unchecked; its sha256 is "
            "printed).",
        ),
    ] = False,
    dest: Annotated[Path | None, retired_option("--dest", "--data-dir")] = None,
) -> None:
    """Download a dataset at its pinned commit, verify every file's sha256, and resume if interrupted."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from .fetch import fetch_datasets
    from .registry import resolve_names
    from .sources import ENV_DATA_DIR, default_data_dir

    console = _console()
    dest = renamed(data_dir, dest, default=None, names=("--data-dir", "--dest"))
    names = resolve_names(dataset)
    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description:<15}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as bar:

        def progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        reports = fetch_datasets(
            names, base_url=base_url, dest=dest, progress=progress, trust_unpinned=trust_unpinned
        )
    for r in reports:
        checked = "not verified (unpinned)" if r.unpinned else "all verified"
        console.print(
            f"[bold]{r.dataset}[/bold]: {r.downloaded} downloaded, {r.skipped} already present, "
            f"{checked} -> {escape(str(r.folder))}",
            highlight=False,
            soft_wrap=True,
        )
        for path, sha in r.unpinned.items():
            console.print(f"  {escape(path)}: sha256 {sha}", highlight=False, soft_wrap=True)
    target = reports[0].folder.parent
    if dest is None and os.environ.get(ENV_DATA_DIR, "").strip():
        console.print(
            f"note: ${ENV_DATA_DIR} is set, so llmpsych reads data from there, "
            f"not from {escape(str(target))}",
            highlight=False,
        )
    elif dest is not None and Path(dest).expanduser().resolve() != default_data_dir().resolve():
        console.print(
            f"use it with --data-dir {escape(str(target))} or {ENV_DATA_DIR}={escape(str(target))}",
            highlight=False,
        )
