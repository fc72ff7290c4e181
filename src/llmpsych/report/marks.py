"""Best and worst values of a table row, marked as the thesis prints them: best bold, worst underlined.

Markdown has bold (``**…**``) but no underline; ``<ins>…</ins>`` is the underline GitHub renders. The HTML
pages never pass raw HTML through (:mod:`.html`), so a page that shows marks asks for exactly these two
tags back (``markdown_to_html(..., underline=True)``); everything else stays escaped text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

Mark = Literal["best", "worst"]

#: The escaped ``<ins>``/``</ins>`` as markdown-it renders them with raw HTML off.
_ESCAPED_INS = re.compile(r"&lt;(/?)ins&gt;")


def extremes(values: Sequence[float | None], rule: str = "highest") -> dict[int, Mark]:
    """Positions of the best and the worst of ``values`` (ties: every tied position; None/NaN: skipped).

    ``rule`` ``highest``: the highest value is the best and the lowest the worst (thesis 000:1186);
    ``lowest``: the reverse. Fewer than two distinct values mark nothing.
    """
    if rule not in ("highest", "lowest"):
        raise ValueError(f"unknown marking rule {rule!r} (expected highest or lowest)")
    present = {i: v for i, v in enumerate(values) if v is not None and not math.isnan(v)}
    if len(set(present.values())) < 2:
        return {}
    top, bottom = max(present.values()), min(present.values())
    best, worst = (top, bottom) if rule == "highest" else (bottom, top)
    marks: dict[int, Mark] = {}
    for i, value in present.items():
        if value == best:
            marks[i] = "best"
        elif value == worst:
            marks[i] = "worst"
    return marks


def marked(text: str, mark: Mark | None) -> str:
    """A cell's text in Markdown with its mark: ``**best**``, ``<ins>worst</ins>``, or unchanged."""
    if mark == "best":
        return f"**{text}**"
    if mark == "worst":
        return f"<ins>{text}</ins>"
    return text


def underline_html(body: str) -> str:
    """Rendered HTML with the escaped ``<ins>``/``</ins>`` of :func:`marked` turned back into tags."""
    return _ESCAPED_INS.sub(r"<\1ins>", body)
