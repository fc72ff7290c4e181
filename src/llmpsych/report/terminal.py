"""The terminal side of the report kit: consoles whose output cannot drive the terminal.

Rich strips only BEL, BS, VT, FF and CR from printed text, so an ESC in a model's answer, a server's
error or a file name (``ESC[2J`` clears the screen, ``ESC]52;c;...`` writes the clipboard, ``ESC]8;;``
makes a hyperlink) reaches the terminal as it is. :class:`InertConsole` removes control characters
(:func:`~llmpsych.errors.terminal_text`) from every text segment it renders, tables included, while its
own styling (which Rich adds after rendering) still works. Markup in untrusted text is escaped where it
is printed (``terminal_text``), since Rich reads markup before rendering.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer
from rich.console import Console
from rich.segment import Segment

from ..errors import terminal_text


class InertConsole(Console):
    """A Rich console that prints text segments without their control characters."""

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text:
                clean = terminal_text(segment.text, markup=False)
                if clean != segment.text:
                    segment = Segment(clean, segment.style)
            yield segment


def echo(text: object, err: bool = False) -> None:
    """``typer.echo`` of text from outside (a table of model names, JSON of replies), control characters
    removed."""
    typer.echo(terminal_text(text, markup=False), err=err)
