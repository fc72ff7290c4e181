"""The perturbation grid: official files, configurations, label formats, chunks, answer mapping, scoring."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from llmpsych.reliability.answers import chunk_levels, parse_chunk
from llmpsych.reliability.grid import build_grid, chunk_sizes, shuffled_chunks
from llmpsych.reliability.labels import LABEL_FORMATS, label, level_details, level_of, position_of
from llmpsych.reliability.official import LANGUAGES, TEMPLATES, load_bfi, load_template
from llmpsych.reliability.prompts import PLACEHOLDERS, questionnaire_prompt


def test_full_grid_is_2500_configurations_and_subsets_work() -> None:
    grid = build_grid()
    assert len(grid) == 2500 and len({c.config_id for c in grid}) == 2500
    assert len(build_grid(languages=["en"])) == 250
    assert len(build_grid(languages=["En", "Zh"], templates=["T1"])) == 100
    assert (
        build_grid(templates=["t2"], versions=["v3"], languages=["Ko"], labels=["ru"], orders=["r"])[
            0
        ].config_id
        == "t2-v3-Ko-ru-r"
    )
    with pytest.raises(ValueError, match="unknown language"):
        build_grid(languages=["Xx"])


def test_chunks_are_17_to_27_and_seeded() -> None:
    firsts = set()
    for seed in range(400):
        sizes = chunk_sizes(44, random.Random(seed))
        assert len(sizes) == 2 and sum(sizes) == 44 and all(17 <= s <= 27 for s in sizes)
        firsts.add(sizes[0])
    assert firsts == set(range(17, 28))
    a = shuffled_chunks(range(1, 45), random.Random(7))
    assert a == shuffled_chunks(range(1, 45), random.Random(7))
    assert sorted(a[0] + a[1]) == list(range(1, 45))
    assert chunk_sizes(10, random.Random(0)) == [10]
    assert all(17 <= s <= 27 for s in chunk_sizes(60, random.Random(1)))


def test_label_formats_round_trip_and_are_strict() -> None:
    expected = {"n": "12345", "al": "abcde", "au": "ABCDE", "rl": "i ii iii iv v", "ru": "I II III IV V"}
    for fmt in LABEL_FORMATS:
        shown = [label(fmt, p) for p in range(1, 6)]
        assert (" " if " " in expected[fmt] else "").join(shown) == expected[fmt]
        assert [position_of(fmt, s, 5) for s in shown] == [1, 2, 3, 4, 5]
    assert position_of("n", 4, 5) == 4 and position_of("n", "６", 5) is None  # out of range
    assert position_of("n", "4", 5) == 4 and position_of("n", "０", 5) is None
    assert position_of("au", "a", 5) is None and position_of("ru", "A", 5) is None
    assert position_of("rl", "vi", 5) is None and position_of("al", "f", 5) is None
    assert position_of("ru", "IV.", 5) == 4
    assert [level_of(p, "r", 5) for p in (1, 2, 3, 4, 5)] == [5, 4, 3, 2, 1]
    assert [level_of(p, "f", 5) for p in (1, 5)] == [1, 5]


def test_level_details_follow_the_order() -> None:
    texts = {1: "low", 2: "l2", 3: "mid", 4: "h4", 5: "high"}
    assert (
        level_details("au", "f", texts, "means")
        == "A means low, B means l2, C means mid, D means h4, E means high"
    )
    assert level_details("rl", "r", texts, "=").startswith("i = high, ii = h4")


def test_every_official_template_fills(seed_data: Path) -> None:
    bfi = load_bfi(seed_data)
    assert set(bfi.languages) == set(LANGUAGES)
    for language in LANGUAGES:
        pack = bfi.pack(language)
        assert set(pack.versions) == {"v1", "v2", "v3", "v4", "v5"}
        assert all(len(v) == 44 for v in pack.versions.values())
        for template in TEMPLATES:
            body = load_template(language, template, seed_data)
            text = questionnaire_prompt(body, "al", "r", pack, [pack.versions["v2"][i] for i in (1, 2, 3)])
            assert not any(p in text for p in PLACEHOLDERS)
            assert pack.versions["v2"][3] in text and "e " + pack.denotes in text


def test_answers_map_back_through_format_and_order_and_score(seed_data: Path) -> None:
    bfi = load_bfi(seed_data)
    scale = bfi.scale("En", "v1")
    chunks = shuffled_chunks(scale.item_indices, random.Random(3))
    truth = {i: 1 + (i % 5) for i in scale.item_indices}  # canonical levels
    answers: dict[int, int] = {}
    for chunk in chunks:
        # descending upper Roman: level L is shown as label position 6 - L
        reply = json.dumps({str(k): label("ru", 6 - truth[item]) for k, item in enumerate(chunk, start=1)})
        parsed = parse_chunk("Here you go:\n" + reply, len(chunk), "ru")
        assert parsed.complete and parsed.json_ok
        answers.update(chunk_levels(parsed, chunk, "r"))
    assert answers == truth
    scores = scale.score(answers)
    assert set(scores) == {"Openness", "Conscientiousness", "Extraversion", "Agreeableness", "Neuroticism"}
    assert all(1 <= v <= 5 for v in scores.values())
    partial = parse_chunk("1: b\n2: z\n3: c\n3: d", 4, "al")
    assert partial.positions == {1: 2} and set(partial.invalid) == {2, 3} and partial.missing == [2, 3, 4]
