"""GAMA-Bench's built-in prompt templates, as ``translate`` reads and writes them (registered in
:mod:`llmpsych.instruments.translate` under ``game templates``): the registered games' templates, their
turn separator, the rephrasing checks a run applies, and the template set a run reads back."""

from __future__ import annotations

from . import registry
from .prompts import (
    PART,
    TEMPLATE_SET_FILE,
    TEMPLATE_SET_FORMAT,
    check_rephrased,
    check_template,
)
from .template_sets import builtin_templates


class _TemplateTexts:
    part = PART
    set_file = TEMPLATE_SET_FILE
    set_format = TEMPLATE_SET_FORMAT

    def names(self) -> list[str]:
        return registry.names()

    def builtin(self, name: str) -> dict[str, str]:
        return builtin_templates(name)

    def check_turn(self, original: str, candidate: str) -> str | None:
        return check_rephrased(original, candidate)

    def check_template(self, original: str, candidate: str) -> str | None:
        return check_template(original, candidate)


TEMPLATE_TEXTS = _TemplateTexts()
