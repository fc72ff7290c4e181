"""Role-play personas: built-ins, custom text, and how they combine with the scale's system prompt."""

from __future__ import annotations

import pytest

from llmpsych.errors import ConfigError
from llmpsych.psychobench.personas import PERSONAS, resolve_persona


def test_the_paper_roles_are_built_in_and_default_adds_nothing() -> None:
    assert set(PERSONAS) == {"default", "psychopath", "liar", "ordinary", "hero"}
    default = resolve_persona("default")
    assert default.text is None and default.system_prompt("Reply numbers.") == "Reply numbers."
    assert resolve_persona(None).name == "default" and resolve_persona("  ").name == "default"


@pytest.mark.parametrize("name", ["Psychopath", "LIAR", "ordinary", "hero"])
def test_built_in_persona_goes_before_the_scale_prompt(name: str) -> None:
    persona = resolve_persona(name)
    assert persona.name == name.lower() and persona.text
    combined = persona.system_prompt("Reply numbers.")
    assert combined.startswith(persona.text) and combined.endswith("\n\nReply numbers.")
    assert persona.system_prompt(None) == persona.text


def test_custom_text_and_typos() -> None:
    custom = resolve_persona("You are a retired sailor who loves storms.")
    assert custom.name == "custom" and custom.text == "You are a retired sailor who loves storms."
    with pytest.raises(ConfigError, match="unknown persona 'heroo'"):
        resolve_persona("heroo")
