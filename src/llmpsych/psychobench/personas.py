"""Role-play personas for the PsychoBench validity experiment (Default, Psychopath, Liar, Ordinary, Hero).

The paper does not publish its role prompts, so these are written for llmpsych, in our own words. A
persona is placed before the scale's own system prompt (the answer-format instruction from the data file)
in one system message; ``default`` adds nothing, which is the paper's plain helpful-assistant condition.
Any text with more than one word is taken as a custom persona prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..errors import ConfigError

#: Built-in role prompts (our own wording). ``default`` is the scale's own system prompt unchanged.
PERSONAS: dict[str, str | None] = {
    "default": None,
    "psychopath": (
        "Play the part of a psychopath for the rest of this conversation. You feel no remorse or guilt, "
        "care little about other people except as means to your own ends, enjoy manipulating and "
        "dominating others, act on impulse, and are cold, fearless and self-centred. Stay in character "
        "and answer every question as this person would."
    ),
    "liar": (
        "Play the part of a habitual liar for the rest of this conversation. You deceive people whenever "
        "it suits you, bend the truth to look good or to get your way, invent stories without hesitation "
        "and feel no discomfort about being dishonest. Stay in character and answer every question as "
        "this person would."
    ),
    "ordinary": (
        "Play the part of an ordinary adult for the rest of this conversation: someone with an everyday "
        "job, family and friends, ordinary worries and hopes, strengths and flaws like most people, and "
        "nothing extreme about them. Stay in character and answer every question as this person would."
    ),
    "hero": (
        "Play the part of a hero for the rest of this conversation. You are brave, selfless and kind, "
        "protect those who cannot protect themselves, keep your word, face danger calmly and put the "
        "good of others before your own comfort. Stay in character and answer every question as this "
        "person would."
    ),
}


#: Words of a custom persona's text shown in its label.
CUSTOM_WORDS = 5


@dataclass(frozen=True)
class Persona:
    """A resolved persona: its name (a built-in name or ``custom``) and its prompt (``None``: no role)."""

    name: str
    text: str | None

    @property
    def label(self) -> str:
        """How reports and tables name it: the built-in name, or for a custom prompt its first words and
        the first 8 hex digits of its sha256 (``custom "You are a very anxious…" #1a2b3c4d``), so two
        custom personas never share a label."""
        if self.name != "custom" or not self.text:
            return self.name
        words = self.text.split()
        head = " ".join(words[:CUSTOM_WORDS]) + ("…" if len(words) > CUSTOM_WORDS else "")
        digest = hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:8]
        return f'custom "{head}" #{digest}'

    def system_prompt(self, scale_system_prompt: str | None) -> str | None:
        """The persona followed by the scale's own system prompt (either may be absent)."""
        parts = [p.strip() for p in (self.text, scale_system_prompt) if p and p.strip()]
        return "\n\n".join(parts) or None


def resolve_persona(value: str | None) -> Persona:
    """A built-in persona by name (any case), or custom text; a single unknown word is an error."""
    if value is None or not value.strip():
        return Persona("default", None)
    key = value.strip().lower()
    if key in PERSONAS:
        return Persona(key, PERSONAS[key])
    if len(value.split()) < 2:
        raise ConfigError(
            f"unknown persona {value!r}",
            f"use one of {', '.join(PERSONAS)}, or give the role prompt itself as text",
        )
    return Persona("custom", value.strip())


def persona_label(value: object) -> str:
    """The :attr:`Persona.label` of a stored ``persona`` option (None or blank: ``default``; a value no
    persona accepts, from an edited store: ``unknown "<text>"``, never an error here)."""
    if value is not None and not isinstance(value, str):
        return f'unknown "{str(value)[:40]}"'
    try:
        return resolve_persona(value).label
    except ConfigError:
        return f'unknown "{str(value)[:40]}"'
