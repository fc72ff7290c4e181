"""A run's language: the language its texts (situations, scales, game templates) are in.

EmotionBench and GAMA-Bench runs carry it as the option ``language``, resolved when the options are read
(:func:`resolve_language`): the language the run's own files name, ``en`` for the official (English) data,
and a given value that contradicts a file (or official texts only) is refused; own files that name no
language are whatever ``language`` says. Reports, ``compare``, the leaderboard and
:func:`~llmpsych.runs.frames.load_runs` read it back from a stored config with :func:`config_language`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, LlmpsychError

#: The language of the official data sets (PsychoBench, EmotionBench, GAMA-Bench) and built-in templates.
OFFICIAL_LANGUAGE = "en"

#: Names the prompts use for common ISO 639-1 codes; any other ``--to`` value is used as written.
LANGUAGE_NAMES = {
    "ar": "Arabic", "bn": "Bengali", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "fa": "Persian", "fi": "Finnish", "fr": "French", "he": "Hebrew",
    "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese",
    "ko": "Korean", "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "sv": "Swedish", "sw": "Swahili", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


def language_name(code: str) -> str:
    """``de`` -> ``German``; anything else as written."""
    return LANGUAGE_NAMES.get(code.strip().lower(), code.strip())


def language_key(value: str) -> str:
    """How two spellings of one language compare equal: ``de``, ``DE`` and ``German`` give one key."""
    return language_name(value).casefold()


def resolve_language(
    given: str | None, named: Mapping[str, str | None], default: str = OFFICIAL_LANGUAGE
) -> str:
    """The run's language: ``given``, else the language ``named`` by the run's files (what -> language;
    ``None``: the file names none), else ``default``. Files naming different languages, or a ``given`` one
    that differs from a file's, are refused in one line (``ConfigError``)."""
    said = {what: lang.strip() for what, lang in named.items() if isinstance(lang, str) and lang.strip()}
    keys = {language_key(lang) for lang in said.values()}
    if len(keys) > 1:
        listed = ", ".join(f"{what} is in {lang}" for what, lang in said.items())
        raise ConfigError(
            f"the run's files name different languages ({listed}); a run has one language",
            "translate the other file too, or use files in one language",
        )
    if given is not None and given.strip():
        for what, lang in said.items():
            if language_key(lang) != language_key(given):
                raise ConfigError(
                    f"language {given.strip()!r} contradicts the {what} ({lang})",
                    "leave out -O language (the texts say which), or run texts in that language",
                )
        return given.strip()
    if said:
        return next(iter(said.values()))
    return default


def config_language(config: Mapping[str, Any]) -> str | None:
    """The language of a stored run config, as its task says (:meth:`Task.language
    <llmpsych.runs.task.Task.language>`) from the options read as the task reads them, so a run stored
    before an option existed gets the value it would get now: EmotionBench's and GAMA-Bench's ``language``
    option, PsychoBench's distinct scale languages comma-joined; None when not known (a task without
    languages, or options the task no longer reads)."""
    from .task import task_class

    task = config.get("task")
    raw = config.get("options")
    if not isinstance(task, str) or not isinstance(raw, Mapping):
        return None
    try:
        options = task_class(task).validate_options(dict(raw))
    except LlmpsychError:
        return None
    try:
        return task_class(task).language(options)
    except LlmpsychError:
        return None
