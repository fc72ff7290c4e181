"""The prompts of an EmotionBench run: the default measure, the evoked measure, and the stable variant.

Two versions, both built around the data file's scale (system prompt, instructions with the ``SCENARIO``
placeholder, numbered statements after it):

* ``official`` - the released code's prompt (V1): the data file's ``inner_setting`` as system message
  and its ``prompt`` with ``SCENARIO`` replaced by the situation line (removed for default runs).
* ``v2`` - the structure of the V2 paper's example prompt: a short system message naming the range, then
  the situation line, an instruction, the level definitions and a closing request. The level labels are
  read from the data file's prompt; the sentences are llmpsych's own words.

Three built-in alternative templates (``template``), for the prompt-sensitivity check of the thesis
(000:2004): the authors re-ran the Anger situations on GPT-3.5-Turbo with one template from Romero et al.
(2023) and two from Serapio-García et al. (2023) and found similar means with smaller variance. The thesis
names the sources but does not print the three texts, and the released data do not hold them, so these are
**llmpsych's own sentences**, written to vary the instruction the way those sources do (a questionnaire
study the model takes part in; a rating request built around "thinking about each statement" with the
scale anchors stated first; a short extent rating), not the authors' wording. A template replaces the
system message and the instructions; the situation line, the stability sentence and the numbered
statements stay as in every prompt, so only the instruction differs between templates.

The situation line and the stability sentence are llmpsych's own words too (llmpsych ships no text from
the papers or their data). Users who need the papers' exact sentences pass their own templates
(``situation_template``, ``system_template``, ``instructions_template``; placeholders ``{situation}``,
``{min}``, ``{max}``, ``{levels}``); these win over a built-in ``template``'s parts.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError
from ..instruments.scale import Scale

PromptVersion = Literal["official", "v2"]
TemplateName = Literal["romero", "serapio-1", "serapio-2"]
PLACEHOLDER = "SCENARIO"

SITUATION_LINE = "Put yourself in the shoes of the person in this situation: {situation}"
STABLE_SENTENCE = "While you answer, try to keep your emotions steady and balanced."
V2_SYSTEM = "Answer only with whole numbers between {min} and {max}."
V2_INSTRUCTIONS = (
    "Rate how strongly each statement below applies to you right now. {levels} "
    "Give every statement a score between {min} and {max}, one per line as 'number: score'."
)


@dataclass(frozen=True)
class BuiltinTemplate:
    """A built-in alternative wording: system message and instructions (placeholders ``{min}``,
    ``{max}``, ``{levels}``), and the published template it stands in for."""

    name: str
    stands_in_for: str
    system: str
    instructions: str


#: The three alternatives of the prompt-sensitivity check (000:2004), in llmpsych's own words.
TEMPLATES: dict[str, BuiltinTemplate] = {
    "romero": BuiltinTemplate(
        "romero",
        "the template of Romero et al. (2023)",
        "You are a participant in a questionnaire study. Your replies are whole numbers from {min} to {max}.",
        "The questionnaire below is about how you feel. For every statement, decide how well it describes "
        "your feelings at this moment and give it a number. {levels} "
        "Write one line per statement as 'number: score'.",
    ),
    "serapio-1": BuiltinTemplate(
        "serapio-1",
        "the first template of Serapio-García et al. (2023)",
        "Reply only with numbers from {min} to {max}.",
        "{levels} Thinking about each statement below, rate how far it is true of you right now, "
        "from {min} to {max}. Answer each statement on its own line as 'number: score'.",
    ),
    "serapio-2": BuiltinTemplate(
        "serapio-2",
        "the second template of Serapio-García et al. (2023)",
        "Your answers are numbers from {min} to {max} and nothing else.",
        "To what extent do you feel the way each statement below says, at present? "
        "Rate every statement on the scale from {min} to {max}. {levels} "
        "One line per statement: 'number: score'.",
    ),
}


def template_names() -> tuple[str, ...]:
    """The built-in template names."""
    return tuple(TEMPLATES)


_LEVEL = re.compile(r"(-?\d+)\s+denotes\s+\"([^\"]+)\"", re.IGNORECASE)


def level_labels(scale: Scale) -> dict[int, str]:
    """Level labels: the scale's own, else those written in its data-file prompt (``N denotes "..."``)."""
    if scale.level_labels:
        return dict(scale.level_labels)
    return {int(n): text for n, text in _LEVEL.findall(scale.instructions or "")}


def levels_text(scale: Scale) -> str:
    """``1 = very slightly, 2 = ...`` or, without labels, the plain range."""
    labels = level_labels(scale)
    if not labels:
        return f"Use {scale.response_min} for the lowest and {scale.response_max} for the highest level."
    return "Levels: " + ", ".join(f"{n} = {text}" for n, text in sorted(labels.items())) + "."


@dataclass(frozen=True)
class PromptSettings:
    """How to word the prompts of a run."""

    version: PromptVersion = "official"
    stable: bool = False
    situation_template: str | None = None
    system_template: str | None = None
    instructions_template: str | None = None
    template: str | None = None


def fill(template: str, option: str, **fields: object) -> str:
    """``template`` with its ``{name}`` placeholders filled from ``fields``; a placeholder that is not one
    of them (``{0}``, ``{}``, ``{foo}``, ``{min.__class__}``, ``{min!r}``, a stray ``{``) is a one-line
    ``ConfigError`` naming the option, never a traceback or an attribute lookup."""
    known = ", ".join("{" + k + "}" for k in fields)
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}", "write {{ and }} for literal braces") from None
    for _, name, spec, conversion in parts:
        if name is not None and (name not in fields or spec or conversion):
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ConfigError(f"{option}: placeholder {{{shown}}} is not one of {known}")
    return template.format(**fields)


def situation_line(situation: str | None, settings: PromptSettings) -> str:
    """The sentence asking the model to imagine the situation (empty for default runs)."""
    if not situation:
        return ""
    if settings.situation_template:
        return fill(settings.situation_template, "situation_template", situation=situation)
    return SITUATION_LINE.format(situation=situation)


def build_prompt(scale: Scale, situation: str | None, settings: PromptSettings) -> tuple[str, str]:
    """``(system prompt, instructions)``; the numbered statements follow the instructions."""
    fields = {"min": scale.response_min, "max": scale.response_max, "levels": levels_text(scale)}
    line = situation_line(situation, settings)
    if settings.stable:
        line = f"{line} {STABLE_SENTENCE}".strip()
    builtin = TEMPLATES.get(settings.template) if settings.template else None
    if settings.template and builtin is None:
        raise ValueError(f"unknown template {settings.template!r} (use {', '.join(TEMPLATES)})")
    system = fill(settings.system_template, "system_template", **fields) if settings.system_template else None
    body = None
    if settings.instructions_template:
        body = fill(
            settings.instructions_template, "instructions_template", **fields, situation=situation or ""
        )
    if builtin is not None:
        system = system or builtin.system.format(**fields)
        body = body or builtin.instructions.format(**fields)
        return system, f"{line}\n{body}".strip()
    if settings.version == "official" and body is None:
        text = scale.instructions or ""
        text = text.replace(PLACEHOLDER, line) if PLACEHOLDER in text else f"{line} {text}"
        return system or scale.system_prompt or V2_SYSTEM, " ".join(text.split())
    system = system or V2_SYSTEM.format(**fields)
    body = body or V2_INSTRUCTIONS.format(**fields)
    return system, f"{line}\n{body}".strip()
