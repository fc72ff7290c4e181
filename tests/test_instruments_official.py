"""The official PsychoBench / EmotionBench questionnaires.json files, read unchanged from the seed data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.errors import DataError
from llmpsych.instruments.official import (
    CORRECTION_RULES,
    derive_response_range,
    load_dataset_scales,
    load_emotionbench_scales,
    load_official_file,
    load_psychobench_scales,
    scale_from_official,
)
from llmpsych.instruments.scale import ScoringError
from llmpsych.stats.descriptive import summarize

SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"


@pytest.fixture(scope="module")
def seed_dir() -> Path:
    if not (SEED_DATA / "PsychoBench").is_dir() or not (SEED_DATA / "EmotionBench").is_dir():
        pytest.fail(f"the official seed data is missing: {SEED_DATA}")
    return SEED_DATA


@pytest.fixture(scope="module")
def psychobench(seed_dir: Path):
    return load_psychobench_scales(seed_dir)


@pytest.fixture(scope="module")
def emotionbench(seed_dir: Path):
    return load_emotionbench_scales(seed_dir)


# name: (items, min, max, scoring, reverse keys, {subscale: size})
PSYCHOBENCH = {
    "Empathy": (10, 1, 7, "AVG", [1, 6, 8, 9], {"Overall": 10}),
    "BFI": (
        44,
        1,
        5,
        "AVG",
        [2, 6, 8, 9, 12, 18, 21, 23, 24, 27, 31, 34, 35, 37, 41, 43],
        {"Extraversion": 8, "Agreeableness": 9, "Conscientiousness": 9, "Neuroticism": 8, "Openness": 10},
    ),
    "BSRI": (60, 1, 7, "AVG", [], {"Masculine": 20, "Feminine": 20}),
    "EPQ-R": (
        100,
        0,
        1,
        "SUM",
        [2, 4, 5, 7, 9, 10, 12, 14, 18, 19, 21, 24, 27, 32, 33, 41, 44, 47, 49, 53, 54, 57, 59, 64, 66, 68]
        + [71, 77, 79, 81, 82, 85, 88, 89, 93, 96, 99],
        {"Extraversion": 23, "Psychoticism": 32, "Neuroticism": 24, "Lying": 21},
    ),
    "LMS": (9, 1, 5, "AVG", [], {"Factor rich": 3, "Factor motivator": 3, "Factor important": 3}),
    "DTDD": (12, 1, 9, "AVG", [], {"Machiavellianism": 4, "Psychopathy": 4, "Narcissism": 4}),
    "ECR-R": (
        36,
        1,
        7,
        "AVG",
        [9, 11, 20, 22, 26, 27, 28, 29, 30, 31, 33, 34, 35, 36],
        {"Attachment-related Anxiety": 18, "Attachment-related Avoidance": 18},
    ),
    "GSE": (10, 1, 4, "SUM", [], {"Overall": 10}),
    "ICB": (8, 1, 6, "AVG", [5, 6, 7, 8], {"Overall": 8}),
    "LOT-R": (10, 0, 4, "SUM", [3, 7, 9], {"Overall": 6}),
    "EIS": (33, 1, 5, "SUM", [5, 28, 33], {"Overall": 33}),
    "WLEIS": (16, 1, 7, "AVG", [], {"SEA": 4, "OEA": 4, "UOE": 4, "ROE": 4}),
    "CABIN": (164, 1, 5, "AVG", [], None),  # 41 vocations x 4 items, checked separately
    "16P": (60, 1, 7, "SUM", [], {}),
}

EMOTIONBENCH = {
    "PANAS": (20, 1, 5, "SUM", [], {"Positive Affect": 10, "Negative Affect": 10}),
    "BFNE": (12, 1, 5, "SUM", [2, 4, 7, 10], {"Overall": 12}),
    "FSS": (52, 1, 5, "SUM", [], None),  # Overall + 5 fear subscales (13, 13, 12, 8, 6)
    "AGQ": (
        29,
        1,
        7,
        "SUM",
        [7, 18],
        {
            "Overall": 29,
            "Physical Aggression Scale": 9,
            "Verbal Aggression Scale": 5,
            "Anger Scale": 7,
            "Hostility Scale": 8,
        },
    ),
    "FDS": (
        28,
        1,
        5,
        "SUM",
        [],
        {
            "Overall": 28,
            "Discomfort intolerance": 7,
            "Entitlement": 7,
            "Emotional intolerance": 7,
            "Achievement": 7,
        },
    ),
    "BDI": (21, 0, 3, "SUM", [], {"Overall": 21}),
    "DASS-21": (
        21,
        0,
        3,
        "SUM*2",
        [],
        {"Anxiety score": 7, "Depression score": 7, "Stress score": 7, "Overall": 21},
    ),
    "GASP": (16, 1, 7, "SUM", [], None),  # four 4-item subscales
    "MJS": (
        24,
        1,
        7,
        "SUM",
        [],
        {"Cognitive Jealousy": 8, "Emotional Jealousy": 8, "Behavioral Jealousy": 8},
    ),
}


def _check(scale, expected) -> None:
    n_items, low, high, mode, reverse, subscales = expected
    assert scale.n_items == n_items
    assert scale.item_indices == tuple(range(1, n_items + 1))
    assert (scale.response_min, scale.response_max) == (low, high)
    assert scale.scoring == mode
    assert list(scale.reverse_indices) == sorted(reverse)
    if subscales is not None:
        assert {s.name: len(s.item_indices) for s in scale.subscales} == subscales
    for sub in scale.subscales:
        assert set(sub.item_indices) <= set(scale.item_indices)
    assert all(item.text.strip() for item in scale.items)
    assert scale.system_prompt and scale.instructions


def test_psychobench_has_13_scales_plus_16p(psychobench) -> None:
    assert list(psychobench) == list(PSYCHOBENCH)


@pytest.mark.parametrize("name", list(PSYCHOBENCH))
def test_psychobench_scale_structure(psychobench, name: str) -> None:
    _check(psychobench[name], PSYCHOBENCH[name])


def test_emotionbench_has_9_scales(emotionbench) -> None:
    assert list(emotionbench) == list(EMOTIONBENCH)


@pytest.mark.parametrize("name", list(EMOTIONBENCH))
def test_emotionbench_scale_structure(emotionbench, name: str) -> None:
    _check(emotionbench[name], EMOTIONBENCH[name])


def test_subscale_membership_details(psychobench, emotionbench) -> None:
    bfi = psychobench["BFI"]
    assert bfi.subscale("Extraversion").item_indices == (1, 6, 11, 16, 21, 26, 31, 36)
    assert sorted(i for s in bfi.subscales for i in s.item_indices) == list(range(1, 45))
    assert psychobench["LOT-R"].filler_indices == (2, 5, 6, 8)
    assert psychobench["BSRI"].filler_indices == tuple(range(41, 61))
    epq = psychobench["EPQ-R"]
    assert sorted(i for s in epq.subscales for i in s.item_indices) == list(range(1, 101))
    cabin = psychobench["CABIN"]
    assert len(cabin.subscales) == 41
    assert all(len(s.item_indices) == 4 for s in cabin.subscales)
    assert sorted(i for s in cabin.subscales for i in s.item_indices) == list(range(1, 165))
    panas = emotionbench["PANAS"]
    positive = (1, 3, 5, 9, 10, 12) + (14, 16, 17, 19)
    assert panas.subscale("Positive Affect").item_indices == positive
    negative = tuple(i for i in range(1, 21) if i not in positive)
    assert panas.subscale("Negative Affect").item_indices == negative
    dass = emotionbench["DASS-21"]
    assert dass.subscale("Anxiety score").item_indices == (2, 4, 7, 9, 15, 19, 20)
    fss = emotionbench["FSS"]
    assert sorted(len(s.item_indices) for s in fss.subscales) == [6, 8, 12, 13, 13, 52]
    gasp = emotionbench["GASP"]
    assert [len(s.item_indices) for s in gasp.subscales] == [4, 4, 4, 4]
    assert sorted(i for s in gasp.subscales for i in s.item_indices) == list(range(1, 17))
    agq = emotionbench["AGQ"]
    assert agq.subscale("Verbal Aggression Scale").item_indices == (10, 11, 12, 13, 14)


def test_norms_are_read_with_n(psychobench) -> None:
    dtdd = psychobench["DTDD"].subscale("Narcissism").norm("Crowd")
    assert (dtdd.mean, dtdd.sd, dtdd.n) == (4.88, 1.8, 577)
    epq = psychobench["EPQ-R"].subscale("Extraversion")
    assert [(g.label, g.mean, g.sd, g.n) for g in epq.norms] == [
        ("Male", 12.51, 6, 693),
        ("Female", 14.14, 5.06, 878),
    ]
    assert psychobench["BSRI"].norm_labels == (
        "Students (Women)",
        "Students (Men)",
        "Workers (Women)",
        "Workers (Men)",
    )
    assert psychobench["GSE"].subscale("Overall").norm("Crowd").n == 19120
    assert "PsychoBench" in (dtdd.citation or "")


def test_emotionbench_scales_have_no_norms(emotionbench) -> None:
    assert all(not sub.norms for scale in emotionbench.values() for sub in scale.subscales)


def test_corrections_applied_and_listed(psychobench, emotionbench) -> None:
    applied = [c for s in [*psychobench.values(), *emotionbench.values()] for c in s.corrections]
    assert [(c.scale, c.field, c.old, c.new) for c in applied] == [
        ("EPQ-R", "subscale name", "Pschoticism", "Psychoticism"),
        ("DTDD", "subscale name", "Neuroticism", "Narcissism"),
        ("CABIN", "subscale name", "Business Iniatives", "Business Initiatives"),
        ("MJS", "subscale name", "Bahavioral Jealousy", "Behavioral Jealousy"),
    ]
    assert all(c.reason for c in applied)
    assert len(CORRECTION_RULES) == len(applied)  # every rule matches the published data once
    assert "Narcissism" in psychobench["DTDD"].subscale_names
    assert "Neuroticism" not in psychobench["DTDD"].subscale_names


def test_corrections_off_loads_as_published(seed_dir: Path) -> None:
    raw = load_psychobench_scales(seed_dir, corrections=False)
    assert raw["DTDD"].subscale_names == ("Machiavellianism", "Psychopathy", "Neuroticism")
    assert "Pschoticism" in raw["EPQ-R"].subscale_names
    assert all(not s.corrections for s in raw.values())
    raw_eb = load_emotionbench_scales(seed_dir, corrections=False)
    assert "Bahavioral Jealousy" in raw_eb["MJS"].subscale_names


def test_16p_is_loaded_but_unscored(psychobench) -> None:
    p16 = psychobench["16P"]
    assert p16.unscored and "16personalities" in (p16.unscored_reason or "")
    assert p16.subscales == ()
    with pytest.raises(ScoringError, match="16P.*not scored"):
        p16.score(dict.fromkeys(range(1, 61), 4))


def test_metadata(psychobench) -> None:
    bfi = psychobench["BFI"]
    assert bfi.title == "Big Five Inventory"
    assert bfi.source == "CUHK-ARISE/PsychoBench questionnaires.json"
    assert "GPL-3.0" in (bfi.license or "")


def test_scoring_official_scales_by_hand(psychobench, emotionbench) -> None:
    lot = psychobench["LOT-R"]
    answers = {i: 4 for i in range(1, 11)}  # reverse items 3, 7, 9 become 0; fillers ignored
    assert lot.score(answers) == {"Overall": 12.0}
    epq = psychobench["EPQ-R"]
    yes = epq.score(dict.fromkeys(range(1, 101), 1))
    # reverse-keyed "yes" answers score 0: E has 3 reverse items, P 19, N 0, L 15
    assert yes == {"Extraversion": 20.0, "Psychoticism": 13.0, "Neuroticism": 24.0, "Lying": 6.0}
    dass = emotionbench["DASS-21"]
    scores = dass.score(dict.fromkeys(range(1, 22), 1))
    assert scores["Anxiety score"] == 14.0 and scores["Overall"] == 42.0
    assert dass.score(dict.fromkeys(range(1, 22), 1), scoring="SUM")["Overall"] == 21.0


def released(seed_dir: Path, folder: str, scale: str) -> Path:
    """A released GPT-3.5-Turbo answer table of EmotionBench."""
    return seed_dir / "EmotionBench" / "results" / folder / f"gpt-3.5-turbo-{scale}-testing.csv"


def _released_default_runs(csv: Path) -> list[dict[int, int]]:
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    order = [int(x) for x in frame["order-0"].iloc[1:]]
    runs = []
    for column in [c for c in frame.columns if c.startswith("General_")]:
        values = frame[column].iloc[1:].str.strip()
        if (values == "").any():
            continue
        runs.append(dict(zip(order, map(int, values), strict=True)))
    return runs


def test_panas_default_reproduces_published_gpt35(seed_dir: Path, emotionbench) -> None:
    """EmotionBench Table 5.4: GPT-3.5-Turbo default PA 39.2 ± 2.3, NA 26.3 ± 2.0 over 50 runs."""
    runs = _released_default_runs(released(seed_dir, "PANAS_Test", "PANAS"))
    panas = emotionbench["PANAS"]
    scored = [panas.score(run) for run in runs]
    positive = summarize(s["Positive Affect"] for s in scored)
    negative = summarize(s["Negative Affect"] for s in scored)
    assert positive.n == 50
    assert positive.format() == "39.2 ± 2.3"
    assert negative.format() == "26.3 ± 2.0"


# EmotionBench Table 5.7 defaults (plain sums) and the spec's recomputation with keys / x2 (§8.5).
CHALLENGING_PUBLISHED = {
    "AGQ": "128.3 ± 8.9",
    "DASS-21": "32.5 ± 10.0",
    "BDI": "0.2 ± 0.6",
    "FDS": "91.6 ± 8.1",
    "MJS": "83.7 ± 20.3",
    "GASP": "81.3 ± 9.7",
    "FSS": "140.6 ± 16.9",
    "BFNE": "39.0 ± 1.9",
}


@pytest.mark.parametrize("name", list(CHALLENGING_PUBLISHED))
def test_challenging_defaults_match_published_plain_sums(seed_dir: Path, emotionbench, name: str) -> None:
    runs = _released_default_runs(released(seed_dir, "Challenging_Bench", name))
    scale = emotionbench[name]
    totals = [scale.total(run, reverse_keying=False, scoring="SUM") for run in runs]
    assert summarize(totals).n == 10
    assert summarize(totals).format() == CHALLENGING_PUBLISHED[name]


def test_challenging_defaults_with_keys_differ_as_documented(seed_dir: Path, emotionbench) -> None:
    agq = emotionbench["AGQ"]
    keyed = [agq.total(r) for r in _released_default_runs(released(seed_dir, "Challenging_Bench", "AGQ"))]
    assert summarize(keyed).format() == "117.3 ± 9.6"
    bfne = emotionbench["BFNE"]
    keyed = [bfne.total(r) for r in _released_default_runs(released(seed_dir, "Challenging_Bench", "BFNE"))]
    assert summarize(keyed).format() == "42.2 ± 2.6"
    dass = emotionbench["DASS-21"]
    runs = _released_default_runs(released(seed_dir, "Challenging_Bench", "DASS-21"))
    doubled = [dass.score(r)["Overall"] for r in runs]
    assert summarize(doubled).format() == "65.0 ± 20.0"


# -- range derivation and malformed official entries (our own made-up texts) ---------------------
def _entry(**changes):
    entry = dict(
        name="TOY",
        questions={"1": "I enjoy toy examples.", "2": "Toy examples bore me."},
        inner_setting="Reply with numbers from 1 to 5 only.",
        prompt="Rate each line on a scale of 1 to 5.",
        reverse=[2],
        scale=6,
        compute_mode="AVG",
        categories=[dict(cat_name="Toy", cat_questions=[1, 2], crowd=[])],
    )
    entry.update(changes)
    return entry


def test_derive_response_range_variants() -> None:
    assert derive_response_range(["numbers from 0 to 3"], where="x") == (0, 3)
    assert derive_response_range(["on a scale of 1 to 7."], where="x") == (1, 7)
    assert derive_response_range(["numbers from 1-7"], where="x") == (1, 7)
    assert derive_response_range([None, "answer between 1 and 9"], where="x") == (1, 9)
    assert derive_response_range(["from 1 to 5", "a scale of 1 to 5"], where="x") == (1, 5)


def test_underivable_range_is_an_error() -> None:
    with pytest.raises(DataError, match="toy.json: scale 'TOY': cannot derive the response range"):
        scale_from_official(
            _entry(inner_setting="Reply briefly.", prompt="Rate each line."), origin="toy.json"
        )


def test_conflicting_ranges_are_an_error() -> None:
    with pytest.raises(DataError, match=r"different response ranges \(1-5, 1-7\)"):
        scale_from_official(_entry(prompt="Rate each line from 1 to 7."), origin="toy.json")


def test_scale_field_must_equal_min_plus_max() -> None:
    with pytest.raises(DataError, match=r"field 'scale' is 5 but the prompts give the range 1-5 \(expected"):
        scale_from_official(_entry(scale=5), origin="toy.json")


def test_official_entry_errors() -> None:
    with pytest.raises(DataError, match="missing field 'questions'"):
        scale_from_official({k: v for k, v in _entry().items() if k != "questions"}, origin="toy.json")
    with pytest.raises(DataError, match="unknown compute_mode 'MEDIAN'"):
        scale_from_official(_entry(compute_mode="MEDIAN"), origin="toy.json")
    with pytest.raises(DataError, match=r"reverse key 9 is not an item \(items are 1-2\)"):
        scale_from_official(_entry(reverse=[9]), origin="toy.json")
    with pytest.raises(DataError, match="refers to item 3, which the scale does not have"):
        scale_from_official(_entry(categories=[{"cat_name": "Toy", "cat_questions": [1, 3]}]), origin="t")
    with pytest.raises(DataError, match="item key 'a' is not a positive item number"):
        scale_from_official(_entry(questions={"a": "text"}), origin="toy.json")
    with pytest.raises(DataError, match="a crowd entry is missing 'std'"):
        bad = [{"cat_name": "Toy", "cat_questions": [1], "crowd": [{"crowd_name": "C", "mean": 1, "n": 3}]}]
        scale_from_official(_entry(categories=bad), origin="toy.json")


def test_load_official_file_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        load_official_file(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.json: invalid JSON at line 1"):
        load_official_file(broken)
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps([_entry(), _entry()]), encoding="utf-8")
    with pytest.raises(DataError, match="scale 'TOY' is defined more than once"):
        load_official_file(twice)


def test_toy_official_scale_scores() -> None:
    toy = scale_from_official(_entry(), origin="toy.json")
    assert toy.source == "toy.json" and toy.license is None
    assert toy.score({1: 5, 2: 1}) == {"Toy": 5.0}
    assert math.isnan(toy.score({1: 5})["Toy"])


def test_missing_dataset_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="dataset PsychoBench not found"):
        load_dataset_scales("PsychoBench", tmp_path)
    with pytest.raises(DataError, match="unknown dataset"):
        load_dataset_scales("Nope", tmp_path)
