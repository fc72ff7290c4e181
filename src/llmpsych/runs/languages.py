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


def language_key(value: str) -> str:
    """How two spellings of one language compare equal: ``de``, ``DE`` and ``German`` give one key."""
    from ..instruments.translate import language_name

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
    """The language of a stored run config: its ``language`` option (EmotionBench, GAMA-Bench, read as the
    task reads it, so a run stored before the option existed gets the value it would get now); for
    PsychoBench the distinct languages of its scales, comma-joined (official scales are English); None when
    not known (another task, or options the task no longer reads)."""
    from .task import task_class

    task = config.get("task")
    raw = config.get("options")
    if not isinstance(task, str) or not isinstance(raw, Mapping):
        return None
    try:
        options = task_class(task).validate_options(dict(raw))
    except LlmpsychError:
        return None
    language = getattr(options, "language", None)
    if isinstance(language, str) and task != "psychobench":
        return language
    if task == "psychobench":
        return _scale_languages(options)
    return None


def _scale_languages(options: Any) -> str | None:
    """The distinct languages of the scales a PsychoBench run administers (files naming none are left out)."""
    try:
        in_files = {s.name: s.language for f in options.scale_files for s in f.scales()}
    except LlmpsychError:
        return None
    chosen = options.scales
    if chosen is None:
        names = list(in_files) if in_files else ["official"]
    elif [c.lower() for c in chosen] == ["all"]:
        names = ["official", *in_files]
    else:
        names = list(chosen)
    languages = [in_files.get(n, OFFICIAL_LANGUAGE) for n in names]
    known = sorted({lang for lang in languages if lang})
    return ", ".join(known) or None
