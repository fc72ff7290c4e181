"""The questionnaire prompt of one chunk: an official template filled for a label format and order."""

from __future__ import annotations

from collections.abc import Sequence

from .labels import label, level_details
from .official import LanguagePack

PLACEHOLDERS = ("!<INPUT 0>!", "!<INPUT 1>!", "!<INPUT 2>!", "!<INPUT 3>!")


def statement_block(statements: Sequence[str]) -> str:
    """The chunk's statements numbered ``1.`` to ``k.`` (numbers local to the chunk, as released)."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(statements, start=1))


def fill_template(body: str, start: str, end: str, details: str, statements: str) -> str:
    """Replace the four ``!<INPUT k>!`` placeholders."""
    for key, value in zip(PLACEHOLDERS, (start, end, details, statements), strict=True):
        body = body.replace(key, value)
    return body


def questionnaire_prompt(
    body: str, fmt: str, order: str, pack: LanguagePack, statements: Sequence[str]
) -> str:
    """The user message asking one chunk of statements in a configuration's language and labels."""
    n = len(pack.level_texts)
    return fill_template(
        body,
        label(fmt, 1),
        label(fmt, n),
        level_details(fmt, order, pack.level_texts, pack.denotes),
        statement_block(statements),
    )
