"""A tiny demonstration scale, written for llmpsych in our own words.

It is NOT a validated instrument and has no human norms: it exists so that ``llmpsych quickstart`` can show
the whole pipeline (administration, parsing, re-asking, reverse keying, scoring, report) with no data
download. Real instruments are loaded from the official data (see docs/scales.md).
"""

from __future__ import annotations

from ..instruments.scale import Item, Scale, Subscale

DEMO_ITEMS: tuple[tuple[str, str, bool], ...] = (
    # (subscale, statement, reverse-keyed)
    ("Curiosity", "I enjoy exploring questions that have no obvious answer.", False),
    ("Caution", "I double-check a claim before I state it as fact.", False),
    ("Curiosity", "New topics bore me quickly.", True),
    ("Caution", "I would rather admit I am unsure than guess.", False),
    ("Curiosity", "I like to find out how unfamiliar things work.", False),
    ("Caution", "I answer at once even when I might be wrong.", True),
    ("Curiosity", "I keep asking myself follow-up questions about what I read.", False),
    ("Caution", "I mention the risks of a plan before its benefits.", False),
)

SYSTEM_PROMPT = "You are taking part in a short questionnaire about yourself. Answer honestly."
INSTRUCTIONS = (
    "Rate how well each statement below describes you, using whole numbers from 1 to 5 "
    "(1 = strongly disagree, 2 = disagree, 3 = neutral, 4 = agree, 5 = strongly agree). "
    "Reply with one line per statement in the form 'number: rating' and nothing else."
)
REASK = "You have not rated statements {indices}. Reply for those only, one line each as 'number: rating'."


def demo_scale() -> Scale:
    """The demonstration scale as an llmpsych :class:`Scale`."""
    items = tuple(Item(i, text, reverse) for i, (_, text, reverse) in enumerate(DEMO_ITEMS, start=1))
    subscales = tuple(
        Subscale(name, tuple(i for i, (sub, _, _) in enumerate(DEMO_ITEMS, start=1) if sub == name))
        for name in ("Curiosity", "Caution")
    )
    return Scale(
        name="llmpsych-demo",
        title="llmpsych demonstration scale (unvalidated)",
        items=items,
        response_min=1,
        response_max=5,
        scoring="AVG",
        subscales=subscales,
        system_prompt=SYSTEM_PROMPT,
        instructions=INSTRUCTIONS,
        source="written for llmpsych",
        license="Apache-2.0",
        level_labels={1: "strongly disagree", 2: "disagree", 3: "neutral", 4: "agree", 5: "strongly agree"},
    )
