"""EmotionBench loaders: the official situations (JSON and CSV), the nine scales, and user files."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from llmpsych.emotion.released import infer_scale, read_released_runs
from llmpsych.emotion.situations import (
    EXPECTED_COUNTS,
    CountWarning,
    load_situations,
    load_situations_file,
)
from llmpsych.errors import DataError
from llmpsych.instruments.official import load_emotionbench_scales

EMOTIONBENCH_SCALES = {
    "PANAS": (20, 1, 5, "SUM"),
    "AGQ": (29, 1, 7, "SUM"),
    "DASS-21": (21, 0, 3, "SUM*2"),
    "BDI": (21, 0, 3, "SUM"),
    "FDS": (28, 1, 5, "SUM"),
    "MJS": (24, 1, 7, "SUM"),
    "GASP": (16, 1, 7, "SUM"),
    "FSS": (52, 1, 5, "SUM"),
    "BFNE": (12, 1, 5, "SUM"),
}


def test_official_situations_match_the_papers_counts_without_warnings(seed_data: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", CountWarning)
        situations = load_situations(seed_data)
    assert situations.n_situations == 428 and len(situations.factors) == 36
    assert situations.emotions == tuple(EXPECTED_COUNTS)
    for emotion, counts in EXPECTED_COUNTS.items():
        got = tuple(len(f.situations) for f in situations.factors if f.emotion == emotion)
        assert got == counts
    assert [f.id for f in situations.factors][:2] == ["Anger-1", "Anger-2"]
    assert situations.factor("Jealousy-3").situations[0].key == "Jealousy-3/s01"


def test_csv_form_holds_the_same_situations(seed_data: Path) -> None:
    from_json = load_situations(seed_data)
    from_csv = load_situations(seed_data, csv_form=True)
    assert [f.id for f in from_csv.factors] == [f.id for f in from_json.factors]
    assert [len(f.situations) for f in from_csv.factors] == [len(f.situations) for f in from_json.factors]
    assert from_csv.names() == from_json.names()


def test_selection_is_seeded_five_per_factor_and_keeps_small_factors_whole(seed_data: Path) -> None:
    situations = load_situations(seed_data)
    chosen = situations.select(5, seed=1)
    assert len(chosen) == 34 * 5 + 2 + 3 == 175
    assert chosen == situations.select(5, seed=1)
    assert chosen != situations.select(5, seed=2)
    only = situations.select(2, seed=0, emotions=["anger"])
    assert {s.factor for s in only} == {f"Anger-{k}" for k in range(1, 6)} and len(only) == 10


def test_user_file_with_other_counts_loads_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    data = {"emotions": [{"name": "Guilt", "factors": [{"name": "mine", "scenarios": ["a", "b"]}]}]}
    path.write_text(json.dumps(data))
    with pytest.warns(CountWarning, match="Guilt-1 has 2 situations, the papers 13"):
        situations = load_situations_file(path)
    assert situations.factor("Guilt-1").name == "mine" and situations.n_situations == 2
    assert situations.warnings
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"emotions": [{"name": "Fear", "factors": [{"scenarios": "x"}]}]}))
    with pytest.raises(DataError, match="Fear-1 needs a list"):
        load_situations_file(bad)


def test_the_nine_scales_load_with_the_scenario_placeholder_and_modes(seed_data: Path) -> None:
    scales = load_emotionbench_scales(seed_data)
    assert set(scales) == set(EMOTIONBENCH_SCALES)
    for name, (n_items, low, high, mode) in EMOTIONBENCH_SCALES.items():
        scale = scales[name]
        assert (scale.n_items, scale.response_min, scale.response_max, scale.scoring) == (
            n_items,
            low,
            high,
            mode,
        )
        assert "SCENARIO" in (scale.instructions or "")
    positive = scales["PANAS"].subscale("Positive Affect").item_indices
    assert positive[:3] == (1, 3, 5) and positive[3:] == (9, 10, 12, 14, 16, 17, 19)


def test_released_files_read_as_runs(seed_data: Path) -> None:
    path = seed_data / "EmotionBench/results/PANAS_Test/gpt-3.5-turbo-PANAS-testing.csv"
    runs = read_released_runs(path)
    assert infer_scale(path) == "PANAS"
    assert len(runs) == 1800 and sum(r.group == "default" for r in runs) == 50
    assert sum(r.group == "Jealousy-3" for r in runs) == 20 and all(r.valid for r in runs)
    assert {r.order for r in runs} == {0}  # the released runs kept the original item order


def test_scales_are_checked_against_the_papers_with_a_warning_only(seed_data: Path) -> None:
    from llmpsych.emotion.scales import load_scales, scale_problems

    with warnings.catch_warnings():
        warnings.simplefilter("error", CountWarning)
        scales = load_scales(seed_data)
    assert scale_problems(scales) == []
    fewer = {k: v for k, v in scales.items() if k != "BFNE"}
    assert scale_problems(fewer) == ["scale BFNE is missing"]
