"""Steering before the test (thesis §3.4): environments, assigned personalities, characters, personas.

The official data supplies what it has: the stories per emotion (``environment.json``), the trait
descriptions per profile (``personality.json``) and the biographies per character (``character.json``).
Every instruction around them is written for llmpsych, in our own words. A :class:`SteeringPlan` says
which turns come before the questionnaire; turns marked ``generate`` are answered by the model under
test (a story it writes, or its own description of a personality).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["environment", "personality", "character", "persona"]
Style = Literal["QA", "BIO", "POR"]

KINDS: tuple[str, ...] = ("environment", "personality", "character", "persona")
STYLES: tuple[str, ...] = ("QA", "BIO", "POR")

# -- our own wording ------------------------------------------------------------------------------
STORY_REQUEST = "Write a short story of about 100 words that evokes {emotion}."
QA_BLOCK = "Question: Which of these personalities do you consider yourself to be?\n{options}\nAnswer: A"
BIO_BLOCK = (
    "First, here is a short description of your personality; then you will answer some questions.\n"
    "Description: I see myself as {target}."
)
POR_BLOCK = "Answer the questions below as if you saw yourself as {target}."
DESCRIBE_REQUEST = (
    "Before the questions, describe in about 100 words the traits, habits and feelings of {target}."
)
CHARACTER_BLOCK = "You are {target}. Think, behave and answer according to {target}'s personality."
CHARACTER_STORY = "This is the life of {target}:\n{biography}"
PERSONA_BLOCK = "You are the following person. Answer every question as this person would.\n{target}"


@dataclass(frozen=True)
class Turn:
    """One turn before the questionnaire; ``generate`` assistant turns are asked of the model."""

    role: Literal["user", "assistant"]
    content: str | None
    generate: bool = False


@dataclass(frozen=True)
class SteeringPlan:
    """Turns before the questionnaire, and text to put in front of the first questionnaire prompt."""

    turns: tuple[Turn, ...] = ()
    prefix: str = ""
    details: dict[str, str] = field(default_factory=dict)


def qa_options(target: str, others: list[str], rng: random.Random) -> str:
    """``A. target`` followed by four other profiles in a seeded order (the target is always A)."""
    pool = [o for o in others if o != target]
    rng.shuffle(pool)
    choices = [target, *pool[:4]]
    return "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(choices))


def environment_plan(emotion: str, story: str | None) -> SteeringPlan:
    """Ask for a story evoking ``emotion``; the answer is the official ``story`` or the model's own."""
    turns = (
        Turn("user", STORY_REQUEST.format(emotion=emotion)),
        Turn("assistant", story, generate=story is None),
    )
    return SteeringPlan(turns, "", {"emotion": emotion, "story": "dataset" if story else "generated"})


def personality_plan(
    target: str,
    style: Style,
    others: list[str],
    rng: random.Random,
    cot: bool = False,
    description: str | None = None,
) -> SteeringPlan:
    """QA, BIO or POR assignment of ``target``; with ``cot`` a description of it stays in context."""
    if style == "QA":
        block = QA_BLOCK.format(options=qa_options(target, others, rng))
    elif style == "BIO":
        block = BIO_BLOCK.format(target=target)
    elif style == "POR":
        block = POR_BLOCK.format(target=target)
    else:
        raise ValueError(f"unknown personality style {style!r} (QA, BIO or POR)")
    details = {"target": target, "style": style, "cot": str(cot)}
    if not cot:
        return SteeringPlan((), block, details)
    turns = (
        Turn("user", f"{block}\n\n{DESCRIBE_REQUEST.format(target=target)}"),
        Turn("assistant", description, generate=description is None),
    )
    details["description"] = "dataset" if description else "generated"
    return SteeringPlan(turns, "", details)


def character_plan(target: str, cot: bool = False, biography: str | None = None) -> SteeringPlan:
    """Embody ``target``; with ``cot`` its official biography (or the model's account) comes first."""
    block = CHARACTER_BLOCK.format(target=target)
    details = {"target": target, "cot": str(cot)}
    if not cot:
        return SteeringPlan((), block, details)
    if biography is not None:
        details["biography"] = "dataset"
        return SteeringPlan(
            (), f"{block}\n\n{CHARACTER_STORY.format(target=target, biography=biography)}", details
        )
    turns = (
        Turn("user", f"{block}\n\n{DESCRIBE_REQUEST.format(target=target)}"),
        Turn("assistant", None, generate=True),
    )
    details["biography"] = "generated"
    return SteeringPlan(turns, "", details)


def persona_plan(text: str) -> SteeringPlan:
    """A custom persona description, in front of the questionnaire."""
    return SteeringPlan((), PERSONA_BLOCK.format(target=text.strip()), {"target": text.strip()})
