"""The ``translate`` task as runs and commands find it (:data:`~llmpsych.runs.task.TASKS`): the translation
kit of :mod:`llmpsych.instruments.translate` with every benchmark's texts registered.

The kit names no benchmark; each benchmark registers its texts with it in its own package, when that
module is imported. This module imports them, so a run, a resume (in a new process, or on a Ray actor)
and each of the three translate commands see the same sources and the same options: a scale file (the
kit's own), EmotionBench's situations files and GAMA-Bench's built-in templates.
"""

from __future__ import annotations

from .emotion import translation as _situations  # noqa: F401 - registers ``situations_file``
from .games import translation as _templates  # noqa: F401 - registers ``game_templates``
from .instruments.translate import TranslateTask

__all__ = ["TranslateTask"]
