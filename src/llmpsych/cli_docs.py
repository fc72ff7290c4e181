"""docs/cli.md's command table, written again from the command line itself.

``python -m llmpsych.cli_docs docs/cli.md`` rewrites the part between :data:`~llmpsych.clinames.TABLE_START`
and :data:`~llmpsych.clinames.TABLE_END`; ``tests/test_cli_surface.py`` keeps the page equal to the CLI.
(Apart from :mod:`llmpsych.clinames`, which :mod:`llmpsych.cli` imports: no import loop.)
"""

from __future__ import annotations

from typing import Any

import typer

from . import cli
from .clinames import TABLE_END, TABLE_START, command_table


def cli_root() -> Any:
    """The whole command line as a click group, every group mounted."""
    cli._mount_subcommands()
    return typer.main.get_command(cli.app)


if __name__ == "__main__":  # python -m llmpsych.cli_docs docs/cli.md: write the table again
    import sys
    from pathlib import Path

    target = Path(sys.argv[1])
    text = target.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    target.write_text(f"{text[:start]}\n\n{command_table(cli_root())}\n{text[end:]}", encoding="utf-8")
