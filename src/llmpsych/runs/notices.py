"""One line on stderr the user must see, for every module of a run (the runner, the executors)."""

from __future__ import annotations

import sys


def notice(text: str) -> None:
    """One line on stderr that the user must see (control characters shown escaped, never interpreted)."""
    safe = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    print(safe, file=sys.stderr, flush=True)
