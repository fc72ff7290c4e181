"""The prompts of an EmotionBench run: the default measure, the evoked measure, and the stable variant.

Two versions, both built around the data file's scale (system prompt, instructions with the ``SCENARIO``
placeholder, numbered statements after it):

* ``official`` - the released code's prompt (V1): the data file's ``inner_setting`` as system message
  and its ``prompt`` with ``SCENARIO`` replaced by the situation line (removed for default runs).
* ``v2`` - the structure of the V2 paper's example prompt: a short system message naming the range, then
  the situation line, an instruction, the level definitions and a closing request. The level labels are
  read from the data file's prompt; the sentences are llmpsych's own words.

The situation line and the stability sentence are llmpsych's own words too (llmpsych ships no text from
the papers or their data). Users who need the papers' exact sentences pass their own templates
(``situation_template``, ``system_template``, ``instructions_template``; placeholders ``{situation}``,
``{min}``, ``{max}``, ``{levels}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..instruments.scale import Scale

PromptVersion = Literal["official", "v2"]
PLACEHOLDER = "SCENARIO"

SITUATION_LINE = "Put yourself in the shoes of the person in this situation: {situation}"
STABLE_SENTENCE = "While you answer, try to keep your emotions steady and balanced."
V2_SYSTEM = "Answer only with whole numbers between {min} and {max}."
V2_INSTRUCTIONS = (
    "Rate how strongly each statement below applies to you right now. {levels} "
    "Give every statement a score between {min} and {max}, one per line as 'number: score'."
)

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


def situation_line(situation: str | None, settings: PromptSettings) -> str:
    """The sentence asking the model to imagine the situation (empty for default runs)."""
    if not situation:
        return ""
    return (settings.situation_template or SITUATION_LINE).format(situation=situation)


def build_prompt(scale: Scale, situation: str | None, settings: PromptSettings) -> tuple[str, str]:
    """``(system prompt, instructions)``; the numbered statements follow the instructions."""
    fields = {"min": scale.response_min, "max": scale.response_max, "levels": levels_text(scale)}
    line = situation_line(situation, settings)
    if settings.stable:
        line = f"{line} {STABLE_SENTENCE}".strip()
    if settings.version == "official" and settings.instructions_template is None:
        system = settings.system_template or scale.system_prompt or V2_SYSTEM
        text = scale.instructions or ""
        text = text.replace(PLACEHOLDER, line) if PLACEHOLDER in text else f"{line} {text}"
        return system.format(**fields) if settings.system_template else system, " ".join(text.split())
    system = (settings.system_template or V2_SYSTEM).format(**fields)
    body = (settings.instructions_template or V2_INSTRUCTIONS).format(**fields, situation=situation or "")
    return system, f"{line}\n{body}".strip()
