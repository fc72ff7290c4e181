"""Text shown to people, in their language: a :class:`Catalog` of messages per language, and numbers as
each language writes them.

English and German are shipped. A message missing in a language is shown in English (never an empty
line or a key), and :func:`language` refuses a language no catalog has, with the ones it has. A
catalog's messages are ``str.format`` templates: a value is put in by name (``{pick}``), so a
translation may order the values as its language needs.

Used by the people's texts of the games (:mod:`llmpsych.games.people_text`) and the seat pages
(:mod:`llmpsych.web.i18n`); it imports nothing of llmpsych but the errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError

#: The languages every catalog is written in (the first is the fallback).
LANGUAGES = ("en", "de")
DEFAULT = "en"


def language(lang: str | None) -> str:
    """``lang`` checked (``None``: English); a language no catalog has is a :class:`ConfigError`."""
    if lang is None:
        return DEFAULT
    code = str(lang).strip().lower().replace("_", "-").split("-", 1)[0]
    if code not in LANGUAGES:
        raise ConfigError(f"no texts in language {lang!r}", f"use one of: {', '.join(LANGUAGES)}")
    return code


def num(value: Any, lang: str = DEFAULT) -> str:
    """A number as people read it: whole numbers whole, others with at most two decimals (``24.6``; in
    German with a decimal comma, ``24,6``); anything else as its text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer():
        text = str(int(value))
    else:
        text = f"{round(float(value), 2):.2f}".rstrip("0").rstrip(".")
    return text.replace(".", ",") if lang == "de" else text


class Catalog:
    """Messages by language: ``catalog.text(lang, key, **values)``."""

    def __init__(self, messages: Mapping[str, Mapping[str, str]]) -> None:
        missing = [lang for lang in LANGUAGES if lang not in messages]
        if missing:
            raise ValueError(f"a catalog needs every shipped language; missing: {', '.join(missing)}")
        unknown = sorted({k for lang in LANGUAGES for k in messages[lang]} - set(messages[DEFAULT]))
        if unknown:  # a misspelt key in a translation would never be shown
            raise ValueError(f"keys not in the English catalog: {', '.join(unknown)}")
        self.messages = {lang: dict(table) for lang, table in messages.items()}

    def text(self, lang: str, key: str, /, **values: Any) -> str:
        """The message ``key`` in ``lang`` (English when that language lacks it), filled with ``values``."""
        template = self.messages.get(lang, {}).get(key) or self.messages[DEFAULT][key]
        return template.format(**values)

    def missing(self, lang: str) -> list[str]:
        """The keys ``lang`` has no message for (shown in English)."""
        table = self.messages.get(lang, {})
        return [key for key in self.messages[DEFAULT] if key not in table]

    def bound(self, lang: str) -> Callable[..., str]:
        """``t(key, **values)`` for one language (what a page template calls)."""

        def t(key: str, /, **values: Any) -> str:
            return self.text(lang, key, **values)

        return t


__all__ = ["DEFAULT", "LANGUAGES", "Catalog", "language", "num"]
