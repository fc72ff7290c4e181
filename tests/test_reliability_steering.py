"""Steering plans (our wording around the official texts) and the maps of steered runs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from llmpsych.reliability.published import profile_short
from llmpsych.reliability.reanalysis import reanalyse
from llmpsych.reliability.report import write_reanalysis
from llmpsych.reliability.saves import load_save
from llmpsych.reliability.steering import (
    character_plan,
    environment_plan,
    persona_plan,
    personality_plan,
    qa_options,
)


def test_qa_puts_the_target_first_with_four_seeded_others() -> None:
    others = [f"profile {i}" for i in range(10)]
    text = qa_options("profile 3", others, random.Random(1))
    lines = text.splitlines()
    assert lines[0] == "A. profile 3" and [line[:2] for line in lines] == ["A.", "B.", "C.", "D.", "E."]
    assert len(set(lines)) == 5 and text == qa_options("profile 3", others, random.Random(1))
    plan = personality_plan("profile 3", "QA", others, random.Random(1))
    assert plan.turns == () and plan.prefix.endswith("Answer: A")


def test_plans_with_and_without_cot() -> None:
    bio = personality_plan("a calm person", "BIO", [], random.Random(0), cot=True, description="Calm text.")
    assert [t.role for t in bio.turns] == ["user", "assistant"] and bio.turns[1].content == "Calm text."
    generated = personality_plan("a calm person", "POR", [], random.Random(0), cot=True)
    assert generated.turns[1].generate and generated.details["description"] == "generated"
    assert environment_plan("fear", None).turns[1].generate
    assert environment_plan("fear", "A story.").turns[1].content == "A story."
    assert "life of Zorro" in character_plan("Zorro", cot=True, biography="Born in...").prefix
    assert character_plan("Zorro", cot=True).turns[1].generate
    assert persona_plan("  a sailor ").prefix.endswith("a sailor")
    with pytest.raises(ValueError):
        personality_plan("x", "XYZ", [], random.Random(0))  # type: ignore[arg-type]


def test_profile_short_names(seed_data: Path) -> None:
    from llmpsych.reliability.official import load_steering

    shorts = [profile_short(p) for p in load_steering("personality", seed_data)]
    assert shorts == [
        "Routine", "Spontaneous", "Reserved", "Competitive", "Stability",
        "Adventurous", "Organized", "Energy", "Compassionate", "Instability",
    ]  # fmt: skip


def test_steering_report_has_maps_and_extremes(tmp_path: Path, seed_data: Path) -> None:
    pytest.importorskip("matplotlib")
    saves = seed_data / "LLMPersonality" / "Analysis" / "save"
    default = load_save(saves / "save.json").frame
    steered = load_save(saves / "personality_portray.json").frame
    result = reanalyse(steered, default=default)
    names = {p.name for p in write_reanalysis(result, tmp_path, default)}
    assert {"map_density.png", "map_steering.png", "map_extremes.png", "extremes.csv", "report.md"} <= names
    report = (tmp_path / "report.md").read_text()
    assert "Table 3.10" in report and "t-test `f-test`: the authors' procedure" in report
