"""Scoring of every PsychoBench scale on fixed answer sheets, against scores computed outside llmpsych.

The official ``questionnaires.json`` is read at test time (fixture ``seed_data``); nothing of it is
copied here. Each sheet is a digit string: character ``k`` is the answer to item ``k + 1``. The sheets
were drawn once at random inside each scale's range, redrawn for a reverse-keyed item whose answer was the
midpoint (so every reverse key changes the score), and are now fixed.

How the expected scores were obtained (independently of llmpsych's code): a 25-line script using only
``json``, ``re`` and ``fractions`` read the official file, took the response range from the
``inner_setting`` text, applied ``min + max - x`` to the file's reverse-keyed items, and summed (SUM) or
averaged (AVG) each category's items as exact fractions. The small scales were then checked by hand from
the sheet and the file's keys (LOT-R, GSE, ICB, Empathy, DTDD, LMS, WLEIS: every number below agreed). The
``UNKEYED`` scores (reverse keys ignored) show that each scale's keys change its score on this sheet. The
expected subscale names are the corrected ones (DTDD Narcissism, EPQ-R Psychoticism).
"""

from __future__ import annotations

import random
from fractions import Fraction as F
from pathlib import Path
from types import SimpleNamespace

import pytest

from llmpsych.instruments.administration import administer
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.instruments.parsing import DEFAULT_REASK_WORDING, parse_item_answers
from llmpsych.instruments.scale import Scale
from llmpsych.models.types import GenerationParams
from llmpsych.psychobench.analysis import run_tables

SHEETS = {
    "Empathy": "7564227515",
    "BFI": "44211141133431131452245134453544155521344214",
    "BSRI": "746575636226644566627461273616452326663375342543626514217412",
    "EPQ-R": (
        "0010110010011111011101101100101001011100001001010011010110010101101111011110010100000010100011000011"
    ),
    "LMS": "524353115",
    "DTDD": "483177375477",
    "ECR-R": "714177517365142646532553557363646371",
    "GSE": "2111433111",
    "ICB": "45411131",
    "LOT-R": "3142224312",
    "EIS": "142551515253521352533211135444151",
    "WLEIS": "1271441472241473",
    "CABIN": (
        "3532351521335125253453112121453232524521415322435134324252334511211332411235225222245131541245"
        "1255411432434341525451154434414253425411351413521212153512513154131424"
    ),
}

# CABIN's 41 vocations in file order, each the mean of its four items (sum over 4).
CABIN = [13, 14, 9, 13, 14, 10, 6, 14, 12, 12, 13, 11, 13, 11, 13, 11, 7, 10, 11, 11, 10]
CABIN += [10, 12, 12, 15, 10, 14, 12, 15, 14, 12, 14, 15, 10, 9, 10, 9, 11, 10, 13, 11]

EXPECTED: dict[str, dict[str, F] | list[F]] = {
    "Empathy": {"Overall": F(46, 10)},
    "BFI": {
        "Extraversion": F(30, 8),
        "Agreeableness": F(25, 9),
        "Conscientiousness": F(25, 9),
        "Neuroticism": F(24, 8),
        "Openness": F(26, 10),
    },
    "BSRI": {"Masculine": F(98, 20), "Feminine": F(83, 20)},
    "EPQ-R": {"Extraversion": F(13), "Psychoticism": F(18), "Neuroticism": F(16), "Lying": F(14)},
    "LMS": {"Factor rich": F(11, 3), "Factor motivator": F(11, 3), "Factor important": F(7, 3)},
    "DTDD": {"Machiavellianism": F(16, 4), "Psychopathy": F(24, 4), "Narcissism": F(23, 4)},
    "ECR-R": {"Attachment-related Anxiety": F(67, 18), "Attachment-related Avoidance": F(65, 18)},
    "GSE": {"Overall": F(18)},
    "ICB": {"Overall": F(36, 8)},
    "LOT-R": {"Overall": F(10)},  # six scored items, fillers ignored
    "EIS": {"Overall": F(98)},
    "WLEIS": {"SEA": F(11, 4), "OEA": F(13, 4), "UOE": F(15, 4), "ROE": F(15, 4)},
    "CABIN": [F(total, 4) for total in CABIN],
}

# The same sheets scored with the reverse keys ignored (only scales that have reverse-keyed items).
UNKEYED: dict[str, dict[str, F]] = {
    "Empathy": {"Overall": F(44, 10)},
    "BFI": {
        "Extraversion": F(26, 8),
        "Agreeableness": F(29, 9),
        "Conscientiousness": F(23, 9),
        "Neuroticism": F(20, 8),
        "Openness": F(32, 10),
    },
    "EPQ-R": {"Extraversion": F(10), "Psychoticism": F(17), "Neuroticism": F(16), "Lying": F(7)},
    "ECR-R": {"Attachment-related Anxiety": F(77, 18), "Attachment-related Avoidance": F(79, 18)},
    "ICB": {"Overall": F(20, 8)},
    "LOT-R": {"Overall": F(16)},
    "EIS": {"Overall": F(100)},
}


@pytest.fixture(scope="module")
def scales(seed_data: Path) -> dict[str, Scale]:
    return load_psychobench_scales(seed_data)


def sheet(scale: Scale) -> dict[int, int]:
    digits = SHEETS[scale.name]
    assert len(digits) == scale.n_items and tuple(range(1, scale.n_items + 1)) == scale.item_indices
    answers = {k + 1: int(d) for k, d in enumerate(digits)}
    assert all(scale.response_min <= v <= scale.response_max for v in answers.values())
    return answers


def approx(expected: dict[str, F] | list[F]) -> object:
    if isinstance(expected, list):
        return pytest.approx([float(v) for v in expected], abs=1e-12)
    return pytest.approx({k: float(v) for k, v in expected.items()}, abs=1e-12)


def as_expected_shape(scale: Scale, scores: dict[str, float]) -> dict[str, float] | list[float]:
    return list(scores.values()) if isinstance(EXPECTED[scale.name], list) else scores


def test_every_scored_scale_has_a_sheet(scales: dict[str, Scale]) -> None:
    scored = {name for name, scale in scales.items() if not scale.unscored}
    assert scored == set(SHEETS) == set(EXPECTED) and len(scored) == 13
    assert set(UNKEYED) == {name for name in scored if scales[name].reverse_indices}


@pytest.mark.parametrize("name", list(SHEETS))
def test_sheet_scores_match_the_independent_computation(scales: dict[str, Scale], name: str) -> None:
    scale = scales[name]
    scores = scale.score(sheet(scale))
    assert as_expected_shape(scale, scores) == approx(EXPECTED[name])
    if name == "CABIN":
        assert len(scores) == 41
    if name in UNKEYED:  # the keys matter on this sheet, and they are the ones the file gives
        unkeyed = scale.score(sheet(scale), reverse_keying=False)
        assert unkeyed == approx(UNKEYED[name])
        assert unkeyed != scores


@pytest.mark.parametrize("name", ["LOT-R", "EPQ-R", "ICB", "BFI"])
def test_a_mirrored_sheet_mirrors_every_subscale(scales: dict[str, Scale], name: str) -> None:
    """Answering ``min + max - x`` everywhere maps each subscale score ``s`` to ``k(min + max) - s``."""
    scale = scales[name]
    low, high = scale.response_min, scale.response_max
    mirrored = scale.score({i: low + high - v for i, v in sheet(scale).items()})
    for sub in scale.subscales:
        size = len(sub.item_indices) if scale.scoring == "SUM" else 1
        assert mirrored[sub.name] == pytest.approx(size * (low + high) - float(EXPECTED[name][sub.name]))


class SheetModel:
    """A scripted respondent: answers every listed statement from the sheet, in a chatty reply whose
    first answer omits one statement (so the administration must re-ask it)."""

    def __init__(self, answers: dict[int, int]) -> None:
        self.answers = answers
        self.first = True

    async def chat(self, messages, params, **_: object) -> SimpleNamespace:
        asked = [
            int(line.split(".", 1)[0]) for line in messages[-1]["content"].splitlines() if line[:1].isdigit()
        ]
        if not asked:  # a re-ask names the statements after the colon
            head = messages[-1]["content"].split(":", 1)[1].split(".", 1)[0]
            asked = [int(x) for x in head.split(",")]
        if self.first:
            self.first = False
            asked = asked[1:]
        lines = [
            f"**{i}**: {self.answers[i]}" if n % 3 == 0 else f"{i}: {self.answers[i]}"
            for n, i in enumerate(asked)
        ]
        return SimpleNamespace(text="Sure, here are my scores:\n\n" + "\n".join(lines) + "\n\nThank you!")


@pytest.mark.parametrize("name", list(SHEETS))
def test_sheet_through_administration_parsing_and_the_analysis_tables(
    scales: dict[str, Scale], name: str
) -> None:
    import asyncio

    scale = scales[name]
    answers = sheet(scale)
    order = list(scale.item_indices)
    random.Random(name).shuffle(order)
    result = asyncio.run(
        administer(
            scale,
            SheetModel(answers),
            order=order,
            params=GenerationParams(),
            reask_template=DEFAULT_REASK_WORDING,
            chunk_size=30,
        )
    )
    assert result.answers == answers and not result.unanswered and result.asks == -(-len(order) // 30) + 1
    unit = {"scale": name, "run": 1, "mode": "generate", "order": order, **result.to_json()}
    tables = run_tables(scales, [unit])
    scores = tables["scores"]
    got = dict(zip(scores["subscale"], scores["score"], strict=True))
    assert as_expected_shape(scale, got) == approx(EXPECTED[name])
    assert tables["valid"]["valid_rate"].tolist() == [1.0]


@pytest.mark.parametrize("name", list(SHEETS))
def test_parsing_a_shuffled_reply_gives_the_sheet(scales: dict[str, Scale], name: str) -> None:
    scale = scales[name]
    answers = sheet(scale)
    order = list(scale.item_indices)
    random.Random(len(name)).shuffle(order)
    reply = "\n".join(f"{i}: {answers[i]}" for i in order)
    parsed = parse_item_answers(reply, order, scale.response_min, scale.response_max)
    assert parsed.answers == answers and parsed.complete and not parsed.unexpected
