"""``python -m llmpsych`` and the ``llmpsych`` script: the command line, with the cyclic garbage collector
kept off what a command-line process keeps until it exits.

A command imports about 550 modules before it does anything; their objects live until the process ends.
Collecting while they were imported looked at them again and again (130 collections, about 0.05 s CPU
of the 0.36 s before ``llmpsych run --task echo`` sent its first request), and the interpreter's
collections at exit walked every object left (about 0.07 s after the last answer). :func:`main` imports
the command line (and what the invoked command needs anyway, :func:`llmpsych.cli.prepare`) with the
collector off, then freezes what exists (:func:`gc.freeze`: never collected, never walked) and turns the
collector back on; at exit it freezes again, so the collections of the interpreter's shutdown find only
what was made since. Garbage made while a command runs is collected as before.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def kept_for_good() -> Iterator[None]:
    """Run the block with the cyclic collector off, then freeze what exists (it is kept until exit) and
    turn the collector back on (as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> None:
    """Start the command line for ``argv`` (default ``sys.argv[1:]``), as the ``llmpsych`` script."""
    args = sys.argv[1:] if argv is None else argv
    with kept_for_good():
        from . import cli

        cli.prepare(args)
    # Before the command runs: handlers it registers (a Ray cluster's shutdown) run before this one.
    atexit.register(gc.freeze)
    cli.main()


if __name__ == "__main__":
    main()
