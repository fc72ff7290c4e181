"""User-facing errors: each one prints as a single clear line on the command line.

Also :func:`terminal_text`, the one filter through which text that llmpsych did not write itself (a
server's error, a model's answer, a file name, a value from a config file) reaches the terminal.
"""

import re

#: C0 controls but tab and newline (ESC starts every terminal escape: ESC[2J clears the screen, OSC 8
#: makes hyperlinks, OSC 52 writes the clipboard; BEL rings, CR overwrites the line), DEL, the C1
#: controls (U+009B is a one-character CSI), and the bidirectional overrides that reorder what is shown.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: object, *, markup: bool = True, one_line: bool = False) -> str:
    """``text`` made inert for the terminal: control characters removed and, for a Rich console that
    reads markup (``markup=True``), ``[...]`` escaped so that ``[bold red]`` or ``[link=...]`` is shown,
    not applied. ``one_line`` also turns line breaks and tabs into spaces."""
    out = _CONTROLS.sub("", str(text))
    if one_line:
        out = " ".join(out.split())
    if markup:
        from rich.markup import escape

        out = escape(out)
    return out


class LlmpsychError(Exception):
    """An error caused by the user's input or environment, reported without a traceback."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class RunInterrupted(LlmpsychError):
    """The user stopped a run (Ctrl-C); every answer received is saved and the run can be resumed."""

    exit_code = 130


class ConfigError(LlmpsychError):
    """A run configuration or the user config file is malformed."""


class ModelSpecError(LlmpsychError):
    """A model specification cannot be understood or resolved."""


class MissingKeyError(LlmpsychError):
    """An endpoint needs an API key that is not in the environment or the config file."""


class EndpointError(LlmpsychError):
    """An endpoint is unreachable or keeps failing after bounded retries."""

    exit_code = 3


class RunLockedError(LlmpsychError):
    """Another process is executing, resuming or analysing the same run."""


class DataError(LlmpsychError):
    """A data folder or data file is missing or malformed."""


class ChecksumError(DataError):
    """A file's sha256 does not match the expected value."""
