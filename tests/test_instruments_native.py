"""The native scale format: round trips, format detection, and one test per malformation."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from llmpsych.errors import DataError
from llmpsych.instruments.native import (
    detect_format,
    load_scale_file,
    scale_to_native,
    scales_from_native,
    write_scale_file,
)
from llmpsych.instruments.official import load_psychobench_scales

SEED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"

EXAMPLE = textwrap.dedent(
    """\
    llmpsych_scale: 1
    name: SUNNY2
    title: Two-item weather mood check (a made-up example)
    language: en
    source: written for the llmpsych test suite
    license: CC0-1.0
    citation: none (illustration only)
    response:
      min: 1
      max: 5
      labels:
        1: not at all
        5: completely
    scoring: AVG
    system_prompt: 'Answer with one number per line, as "index: score".'
    instructions: Rate how well each sentence describes you today.
    items:
      - index: 1
        text: Sunshine lifts my mood.
      - index: 2
        text: Grey skies leave me cheerful anyway.
        reverse: true
    subscales:
      - name: Weather mood
        items: [1, 2]
        norms:
          - group: Pilot volunteers
            mean: 3.4
            sd: 0.9
            n: 25
            citation: invented for this example
    """
)


def write(tmp_path: Path, text: str, name: str = "scale.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def example_data() -> dict:
    return yaml.safe_load(EXAMPLE)


def test_example_loads(tmp_path: Path) -> None:
    [scale] = load_scale_file(write(tmp_path, EXAMPLE))
    assert scale.name == "SUNNY2"
    assert (scale.response_min, scale.response_max, scale.scoring) == (1, 5, "AVG")
    assert scale.reverse_indices == (2,)
    assert scale.level_labels == {1: "not at all", 5: "completely"}
    norm = scale.subscale("Weather mood").norm("Pilot volunteers")
    assert (norm.mean, norm.sd, norm.n, norm.citation) == (3.4, 0.9, 25, "invented for this example")
    assert scale.score({1: 4, 2: 2}) == {"Weather mood": 4.0}
    assert scale.origin == str(tmp_path / "scale.yaml")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    [scale] = load_scale_file(write(tmp_path, EXAMPLE))
    path = write_scale_file([scale], tmp_path / f"copy{suffix}")
    [again] = load_scale_file(path)
    assert replace(again, origin=None) == replace(scale, origin=None)
    assert scale_to_native(again) == scale_to_native(scale)


def test_round_trip_of_every_official_scale(tmp_path: Path) -> None:
    if not (SEED_DATA / "PsychoBench").is_dir():
        pytest.fail(f"the official seed data is missing: {SEED_DATA}")
    scales = list(load_psychobench_scales(SEED_DATA).values())
    path = write_scale_file(scales, tmp_path / "all.yaml")  # written to a temporary folder only
    again = load_scale_file(path)
    assert [replace(s, origin=None) for s in again] == [replace(s, origin=None) for s in scales]


def test_top_level_reverse_list_is_accepted(tmp_path: Path) -> None:
    data = example_data()
    del data["items"][1]["reverse"]
    data["reverse"] = [2]
    [scale] = load_scale_file(write(tmp_path, yaml.safe_dump(data)))
    assert scale.reverse_indices == (2,)


def test_several_scales_under_scales_key(tmp_path: Path) -> None:
    first, second = example_data(), example_data()
    second["name"] = "SUNNY2B"
    loaded = load_scale_file(write(tmp_path, yaml.safe_dump({"scales": [first, second]})))
    assert [s.name for s in loaded] == ["SUNNY2", "SUNNY2B"]


def test_official_format_user_file_is_accepted(tmp_path: Path) -> None:
    entry = dict(
        name="TOY",
        questions={"1": "Toy statement one.", "2": "Toy statement two."},
        inner_setting="Reply with numbers from 0 to 3.",
        prompt="Score each line from 0 to 3.",
        reverse=[1],
        scale=3,
        compute_mode="SUM",
        categories=[dict(cat_name="Bahavioral", cat_questions=[1, 2])],
    )
    path = write(tmp_path, json.dumps([entry]), "toy.json")
    assert detect_format([entry]) == "official"
    [scale] = load_scale_file(path)
    assert (scale.response_min, scale.response_max) == (0, 3)
    assert scale.score({1: 0, 2: 1}) == {"Bahavioral": 4.0}


def test_unscored_native_scale(tmp_path: Path) -> None:
    data = example_data()
    del data["subscales"]
    data["unscored"] = True
    data["unscored_reason"] = "scored by hand"
    [scale] = load_scale_file(write(tmp_path, yaml.safe_dump(data)))
    assert scale.unscored and scale.unscored_reason == "scored by hand"


def _mutate(change) -> dict:
    data = example_data()
    change(data)
    return data


MALFORMATIONS = [
    ("missing name", lambda d: d.pop("name"), "scale: missing field 'name'"),
    ("missing response", lambda d: d.pop("response"), "scale 'SUNNY2': missing field 'response'"),
    ("missing items", lambda d: d.pop("items"), "missing field 'items'"),
    ("missing scoring", lambda d: d.pop("scoring"), "missing field 'scoring'"),
    ("missing max", lambda d: d["response"].pop("max"), "response: missing field 'max'"),
    ("unknown field", lambda d: d.update(itmes=[]), "unknown field 'itmes'"),
    ("min equals max", lambda d: d["response"].update(min=5), r"response min \(5\) must be below max \(5\)"),
    ("min above max", lambda d: d["response"].update(min=7), r"response min \(7\) must be below max \(5\)"),
    ("non-integer min", lambda d: d["response"].update(min=1.5), "response 'min' must be a whole number"),
    ("bad scoring", lambda d: d.update(scoring="MEDIAN"), "unknown scoring mode 'MEDIAN'"),
    ("empty items", lambda d: d.update(items=[]), "field 'items' must be a non-empty list"),
    ("duplicate index", lambda d: d["items"][1].update(index=1), "duplicate item index 1"),
    ("zero index", lambda d: d["items"][0].update(index=0), "item #1: 'index' must be a positive"),
    ("item without text", lambda d: d["items"][0].pop("text"), "item #1: missing field 'text'"),
    ("empty item text", lambda d: d["items"][0].update(text=" "), "item #1: 'text' must be non-empty"),
    (
        "reverse not bool",
        lambda d: d["items"][1].update(reverse="yes"),
        "item #2: 'reverse' must be true or false",
    ),
    (
        "reverse key out of range",
        lambda d: d.update(reverse=[3]),
        r"reverse key 3 is out of the item range \(items",
    ),
    ("unknown subscale item", lambda d: d["subscales"][0].update(items=[1, 9]), "refers to unknown item 9"),
    ("subscale item twice", lambda d: d["subscales"][0].update(items=[1, 1]), "lists item 1 twice"),
    ("empty subscale", lambda d: d["subscales"][0].update(items=[]), "'items' is empty"),
    ("duplicate subscale", lambda d: d["subscales"].append(dict(d["subscales"][0])), "is defined twice"),
    ("no subscales", lambda d: d.pop("subscales"), "it has no subscales"),
    ("negative sd", lambda d: d["subscales"][0]["norms"][0].update(sd=-0.2), "'sd' must not be negative"),
    ("zero n", lambda d: d["subscales"][0]["norms"][0].update(n=0), "'n' must be at least 1"),
    ("fractional n", lambda d: d["subscales"][0]["norms"][0].update(n=2.5), "'n' must be a whole number"),
    ("missing mean", lambda d: d["subscales"][0]["norms"][0].pop("mean"), "missing field 'mean'"),
    ("text mean", lambda d: d["subscales"][0]["norms"][0].update(mean="high"), "'mean' must be a number"),
    ("label out of range", lambda d: d["response"]["labels"].update({6: "x"}), "label for 6 is outside"),
    ("unscored no reason", lambda d: d.update(unscored=True), "unscored scale needs a reason"),
    ("bad version", lambda d: d.update(llmpsych_scale=2), "unsupported llmpsych_scale version 2"),
    ("name not text", lambda d: d.update(name=12), "field 'name' must be text"),
]


@pytest.mark.parametrize(
    ("change", "message"), [m[1:] for m in MALFORMATIONS], ids=[m[0] for m in MALFORMATIONS]
)
def test_malformation(tmp_path: Path, change, message: str) -> None:
    path = write(tmp_path, yaml.safe_dump(_mutate(change)))
    with pytest.raises(DataError, match=message) as caught:
        load_scale_file(path)
    text = str(caught.value)
    assert text.startswith(str(path)), text
    assert "\n" not in text


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"scale.yaml: invalid YAML at line 3, column 1: expected"):
        load_scale_file(write(tmp_path, "name: X\nitems: [1, 2\n"))


def test_invalid_json_syntax(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"scale.json: invalid JSON at line 1"):
        load_scale_file(write(tmp_path, "{", "scale.json"))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="absent.yaml: scale file not found"):
        load_scale_file(tmp_path / "absent.yaml")


def test_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="a scale must be a mapping of fields, got str"):
        load_scale_file(write(tmp_path, "just words\n"))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="a scale must be a mapping of fields"):
        load_scale_file(write(tmp_path, ""))


def test_duplicate_scale_names(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="scale 'SUNNY2' is defined more than once"):
        scales_from_native([example_data(), example_data()], origin="two.yaml")


def test_empty_scales_list(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="the file defines no scale"):
        load_scale_file(write(tmp_path, "scales: []\n"))
