"""One spelling per concept on the command line, and the old spellings it still accepts.

The CLI says each concept one way: ``analyze`` re-analyses a run from its store, ``rescore`` re-scores
released data, each benchmark has one group, ``--runs`` counts repetitions, ``--scale`` names the scale
(repeat it for several), ``--out`` is always the output folder, and ``--method`` is the scoring method
(``--test`` the statistical test). Before, ``llmpsych --help`` listed two verbs for re-analysing a run and
every GAMA-Bench command twice, and the flags spelled those four concepts eleven ways.

An old spelling stays accepted for one release: hidden from ``--help``, it prints one line on stderr
naming its replacement and then does what the new spelling does. ``tests/test_cli_surface.py`` holds the
visible CLI to these tables and to the command table in ``docs/cli.md`` (:func:`command_table`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer

from .errors import LlmpsychError

T = TypeVar("T")

#: The one flag of each concept.
CONCEPTS: dict[str, str] = {
    "repetitions": "--runs",
    "the scale(s)": "--scale",
    "the output folder": "--out",
    "the scoring method": "--method",
    "a scale file": "--scale-file",
}

#: Old flag spellings: no visible flag may use one; where a command had one, it still works there, hidden.
RETIRED_FLAGS: dict[str, str] = {
    "--repeats": "--runs",
    "--scales": "--scale",
    "--scoring": "--method",
    "--dest": "--data-dir",
}

#: Flags retired on one command only (the spelling lives on with another meaning): command path ->
#: {old: new}. ``--method`` named the t-test of the reliability statistics; it now names the scoring
#: method, as everywhere, and the t-test is ``--test`` (``rescore`` tells the two apart by the value).
RETIRED_FLAGS_OF: dict[str, dict[str, str]] = {
    "reliability rescore": {"--method f-test/welch/student": "--test"},
    "reliability compare": {"--method": "--test"},
    # a subset of the preset's datasets (the option is ``dataset``; ``--task`` names a benchmark)
    "mas preset": {"--tasks": "--datasets"},
    # a scale file is --scale-file on every command that reads one
    "scales show": {"--file": "--scale-file"},
    # the option the flag sets is ``game_players`` (0: no game)
    "quickstart": {"--game-seats": "--game-players", "--no-game": "--game-players 0", "--game": ""},
    # the option the flag sets is ``source_language``; ``game_templates`` (the games whose templates)
    "scales translate": {"--from": "--source-language"},
    "emotionbench translate": {"--from": "--source-language"},
    "gamabench translate": {"--games": "--game-templates"},
}

#: Old command paths (hidden, one release) -> the command that replaced them.
RETIRED_COMMANDS: dict[str, str] = {
    "report": "analyze",
    "psychobench report": "psychobench analyze",
    "games": "gamabench",
    "gamabench score-released": "gamabench rescore",
    "gamabench score-logs": "gamabench rescore",
    "emotionbench score-results": "emotionbench rescore",
    "reliability analyze": "reliability rescore",
}


def notice(old: str, new: str) -> None:
    """The one line an old spelling prints on stderr."""
    typer.echo(f"note: `{old}` is now `{new}` (the old spelling goes in the next release)", err=True)


def retired_option(old: str, new: str, **kwargs: Any) -> Any:
    """A hidden option for the old spelling ``old`` of ``new``: given, it prints :func:`notice`. The command
    folds its value into the new one with :func:`renamed`."""

    def said(value: Any) -> Any:
        if value is not None and value is not False and value != [] and value != ():
            notice(old, new)
        return value

    return typer.Option(old, hidden=True, callback=said, help=f"Old spelling of {new}.", **kwargs)


def renamed(new: T, old: T | None, *, default: T, names: tuple[str, str]) -> T:
    """The value of a renamed flag: the old spelling's when only it was given (``new`` is still its
    ``default``); both given with different values is an error naming the one to keep."""
    if old is None or old == new:
        return new
    if new != default:
        raise LlmpsychError(f"{names[1]} is the old spelling of {names[0]}", f"give {names[0]} only")
    return old


def retired_command(app: typer.Typer, old: str, callback: Callable[..., Any]) -> None:
    """Register ``callback`` also as the hidden command ``old`` (a path of :data:`RETIRED_COMMANDS`; its
    last word is the name on ``app``), which first prints :func:`notice` naming its replacement. A
    callback of :func:`~llmpsych.clikit.field_command` keeps its command class (so its field flags)."""
    new = RETIRED_COMMANDS[old]

    @functools.wraps(callback)
    def alias(*args: Any, **kwargs: Any) -> Any:
        notice(f"llmpsych {old}", f"llmpsych {new}")
        return callback(*args, **kwargs)

    cls = getattr(callback, "command_class", None)
    app.command(old.split()[-1], cls=cls, hidden=True, help=f"Old name of `llmpsych {new}`.")(alias)


# -- the declared surface ------------------------------------------------------------------------------
def visible_commands(root: Any) -> Iterator[tuple[str, Any]]:
    """Every command ``--help`` shows under the click group ``root``, as (path, command), in its order;
    a group that runs by itself (``web``, ``analyze``) is a command too."""

    def walk(group: Any, path: str) -> Iterator[tuple[str, Any]]:
        for name, command in group.commands.items():
            if command.hidden:
                continue
            where = f"{path} {name}".strip()
            subs = getattr(command, "commands", None)
            if not subs or getattr(command, "invoke_without_command", False):
                yield where, command
            if subs:
                yield from walk(command, where)

    yield from walk(root, "")


def summary(command: Any) -> str:
    """A command's one-line summary, as ``--help`` lists it."""
    text = command.short_help or inspect.cleandoc(command.help or "").split("\n\n", 1)[0]
    return " ".join(text.split())


def command_table(root: Any) -> str:
    """The Markdown table of docs/cli.md: every visible command and its one-line summary, then the old
    spellings still accepted."""
    rows = ["| command | what it does |", "|---|---|"]
    for path, command in visible_commands(root):
        text = summary(command).replace("|", "\\|")
        rows.append(f"| `llmpsych {path}` | {text} |")
    rows += ["", "| old spelling (hidden, accepted one release) | now |", "|---|---|"]
    rows += [f"| `llmpsych {old}` | `llmpsych {new}` |" for old, new in RETIRED_COMMANDS.items()]
    rows += [f"| `{old}` | `{new}` |" for old, new in RETIRED_FLAGS.items()]
    rows += [
        f"| `llmpsych {path} {old}` | {f'`{new}`' if new else 'no flag (the default)'} |"
        for path, flags in RETIRED_FLAGS_OF.items()
        for old, new in flags.items()
    ]
    return "\n".join(rows) + "\n"


#: The markers around the generated table in docs/cli.md.
TABLE_START = "<!-- commands: generated by `python -m llmpsych.cli_docs docs/cli.md`; do not edit -->"
TABLE_END = "<!-- end commands -->"


def documented_table(page: str) -> str:
    """The generated part of docs/cli.md's text ``page`` (between :data:`TABLE_START` and
    :data:`TABLE_END`)."""
    start, end = page.index(TABLE_START) + len(TABLE_START), page.index(TABLE_END)
    return page[start:end].strip("\n") + "\n"
