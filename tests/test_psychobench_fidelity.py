"""Fidelity to the PsychoBench thesis: significance decisions from its printed statistics, and strict
reading of adversarial answers (plain and through the Caesar cipher).

Statistics. The thesis (spec §3.7) compares each model (n = 10 runs) with each human norm group by an
F-test for equal variances and then Student's or Welch's t-test at alpha = 0.01. Its result tables
(spec §3.9) print "mean ± sd" only, without per-cell significance marks; the significance decisions are
stated in the text that discusses the tables (thesis 000:1205-1326). ``decide`` runs the analysis's own
code path (:func:`llmpsych.stats.compare_with_norm`, which ``psychobench.analysis.norm_comparisons``
calls for every subscale and norm group) on the printed summary statistics, with the norm-sample sizes of
spec §2.5, and each test below checks one stated decision. Where the printed numbers do not support a
statement at alpha = 0.01, the test says so with the numbers. The one table with printed marks (thesis
Table 3.10, steering, all ``***``) is checked too.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pandas as pd
import pytest

from llmpsych.instruments.administration import administer
from llmpsych.instruments.official import load_psychobench_scales
from llmpsych.instruments.parsing import DEFAULT_REASK_WORDING, parse_item_answers
from llmpsych.models.types import ChatResult, GenerationParams
from llmpsych.psychobench.analysis import norm_comparisons
from llmpsych.psychobench.cipher import CipherContext, decipher, encipher
from llmpsych.reproduce.psychobench import NORMS
from llmpsych.stats import compare_with_norm

MODELS = ("LLaMA-2-7B", "LLaMA-2-13B", "Text-Davinci-003", "GPT-3.5-Turbo", "GPT-4", "GPT-4-JB")

# Thesis Tables 4.3, 4.4, 4.7, 4.8 (spec §3.9): six "mean±sd" cells per row, in the order of MODELS
# (CABIN's tables are left out: the text makes no significance statement about them).
TABLE = {
    ("BFI", "Openness"): "4.2±0.3 4.1±0.4 4.8±0.2 4.2±0.3 4.2±0.6 3.8±0.6",
    ("BFI", "Conscientiousness"): "3.9±0.3 4.4±0.3 4.6±0.1 4.3±0.3 4.7±0.4 3.9±0.6",
    ("BFI", "Extraversion"): "3.6±0.2 3.9±0.4 4.0±0.4 3.7±0.2 3.5±0.5 3.6±0.4",
    ("BFI", "Agreeableness"): "3.8±0.4 4.7±0.3 4.9±0.1 4.4±0.2 4.8±0.4 3.9±0.7",
    ("BFI", "Neuroticism"): "2.7±0.4 1.9±0.5 1.5±0.1 2.3±0.4 1.6±0.6 2.2±0.6",
    ("EPQ-R", "Extraversion"): "14.1±1.6 17.6±2.2 20.4±1.7 19.7±1.9 15.9±4.4 16.9±4.0",
    ("EPQ-R", "Neuroticism"): "6.5±2.3 13.1±2.8 16.4±7.2 21.8±1.9 3.9±6.0 7.2±5.0",
    ("EPQ-R", "Psychoticism"): "9.6±2.4 6.6±1.6 1.5±1.0 5.0±2.6 3.0±5.3 7.6±4.7",
    ("EPQ-R", "Lying"): "13.7±1.4 14.0±2.5 17.8±1.7 9.6±2.0 18.0±4.4 17.5±4.2",
    ("DTDD", "Narcissism"): "6.5±1.3 5.0±1.4 3.0±1.3 6.6±0.6 2.0±1.6 4.5±0.9",
    ("DTDD", "Machiavellianism"): "4.3±1.3 4.4±1.7 1.5±1.0 5.4±0.9 1.1±0.4 3.2±0.7",
    ("DTDD", "Psychopathy"): "4.1±1.4 3.8±1.6 1.5±1.2 4.0±1.0 1.2±0.4 4.7±0.8",
    ("BSRI", "Masculine"): "5.6±0.3 5.3±0.2 5.6±0.4 5.8±0.4 4.1±1.1 4.5±0.5",
    ("BSRI", "Feminine"): "5.5±0.2 5.4±0.3 5.6±0.4 5.6±0.2 4.7±0.6 4.8±0.3",
    ("ICB", "Overall"): "3.6±0.3 3.0±0.2 2.1±0.7 2.6±0.5 1.9±0.4 2.6±0.2",
    ("ECR-R", "Anxiety"): "4.8±1.1 3.3±1.2 3.4±0.8 4.0±0.9 2.8±0.8 3.4±0.4",
    ("ECR-R", "Avoidance"): "2.9±0.4 1.8±0.4 2.3±0.3 1.9±0.4 2.0±0.8 2.5±0.5",
    ("GSE", "Overall"): "39.1±1.2 30.4±3.6 37.5±2.1 38.5±1.7 39.9±0.3 36.9±3.2",
    ("LOT-R", "Overall"): "12.7±3.7 19.9±2.9 24.0±0.0 18.0±0.9 16.2±2.2 19.7±1.7",
    ("LMS", "Rich"): "3.1±0.8 3.3±0.9 4.5±0.3 3.8±0.4 4.0±0.4 4.5±0.4",
    ("LMS", "Motivator"): "3.7±0.6 3.3±0.9 4.5±0.4 3.7±0.3 3.8±0.6 4.0±0.6",
    ("LMS", "Important"): "3.5±0.9 4.2±0.8 4.8±0.2 4.1±0.1 4.5±0.3 4.6±0.4",
    ("EIS", "Overall"): "131.6±6.0 128.6±12.3 148.4±9.4 132.9±2.2 151.4±18.7 121.8±12.0",
    ("WLEIS", "SEA"): "4.7±1.3 5.5±1.3 5.9±0.6 6.0±0.1 6.2±0.7 6.4±0.4",
    ("WLEIS", "OEA"): "4.9±0.8 5.3±1.1 5.2±0.2 5.8±0.3 5.2±0.6 5.9±0.4",
    ("WLEIS", "UOE"): "5.7±0.6 5.9±0.7 6.1±0.4 6.0±0.0 6.5±0.5 6.3±0.4",
    ("WLEIS", "ROE"): "4.5±0.8 5.2±1.2 5.8±0.5 6.0±0.0 5.2±0.7 5.3±0.5",
    ("Empathy", "Overall"): "5.8±0.8 5.9±0.5 6.0±0.4 6.2±0.3 6.8±0.4 4.6±0.2 ",
}

# Human norms printed in the thesis (spec §2.5): (group, mean, sd, n); cited facts of the package, which
# `llmpsych reproduce` compares with the official data file's norms.
CROWD = NORMS
MARK = {"higher": "+", "lower": "-", "no difference": "="}


def cell(row: tuple[str, str], model: str) -> tuple[float, float]:
    mean, sd = TABLE[row].split()[MODELS.index(model)].split("±")
    return float(mean), float(sd)


def decide(model: tuple[float, float, int], crowd: tuple[float, float, int], alpha: float = 0.01) -> str:
    """``+``/``-``/``=``: the analysis's decision for a model against a group, from summary statistics."""
    return MARK[compare_with_norm(model, crowd, alpha=alpha, method="paper", published=False).direction]


def marks(row: tuple[str, str], model: str) -> str:
    """One mark per norm group of the row (e.g. ``"+="``: above the male norm, not the female one)."""
    return "".join(decide((*cell(row, model), 10), (m, s, n)) for _, m, s, n in CROWD[row])


def models_marked(row: tuple[str, str], mark: str) -> set[str]:
    return {m for m in MODELS if marks(row, m) == mark * len(CROWD[row])}


def test_the_table_is_complete() -> None:
    assert set(TABLE) == set(CROWD) and all(len(v.split()) == 6 for v in TABLE.values())


def test_decide_is_the_procedure_of_the_analysis(seed_data: Path) -> None:
    """The analysis's per-subscale tests give the same decisions as ``decide`` on the same statistics
    (here the norms of the official data file, which the analysis reads)."""
    scales = load_psychobench_scales(seed_data)
    rows = [("GSE", "Overall", "GPT-4"), ("LOT-R", "Overall", "LLaMA-2-7B"), ("ICB", "Overall", "GPT-4")]
    rows += [("LOT-R", "Overall", "Text-Davinci-003"), ("BFI", "Openness", "Text-Davinci-003")]
    summary = pd.DataFrame(
        [
            {"scale": s, "subscale": sub, "n": 10, "mean": cell((s, sub), m)[0], "sd": cell((s, sub), m)[1]}
            for s, sub, m in rows
        ]
    )
    frame, skipped = norm_comparisons(
        scales, summary, model_label="m", alpha=0.01, method="paper", published=False
    )
    assert not skipped and len(frame) == len(rows)
    for (s, sub, m), (_, got) in zip(rows, frame.iterrows(), strict=True):
        norm = scales[s].subscale(sub).norms[0]
        assert MARK[got["direction"]] == decide((*cell((s, sub), m), 10), (norm.mean, norm.sd, norm.n))
        assert got["model_n"] == 10 and got["human_n"] == norm.n


def test_personality_openness_conscientiousness_extraversion_above_humans() -> None:
    # "the LLMs tend to display higher levels of openness, conscientiousness, and extraversion compared
    # to the average level of humans" (000:1205). No model is significantly below the norm on O, C or E.
    for sub in ("Openness", "Conscientiousness", "Extraversion"):
        assert not any(marks(("BFI", sub), m) == "-" for m in MODELS), sub
    assert models_marked(("BFI", "Conscientiousness"), "+") == set(MODELS) - {"GPT-4-JB"}
    assert models_marked(("BFI", "Extraversion"), "+") == {"LLaMA-2-7B", "Text-Davinci-003", "GPT-3.5-Turbo"}
    # A tendency, not a significant difference for most models on Openness: only Text-Davinci-003
    # (4.8±0.2 vs 3.9±0.7, Welch t = 13.6) differs; GPT-4-JB is even below (3.8±0.6: t = -0.45, p = 0.65).
    assert models_marked(("BFI", "Openness"), "+") == {"Text-Davinci-003"}


def test_dark_triad_above_humans_except_text_davinci_and_gpt4() -> None:
    # "most LLMs, with the exceptions of Text-Davinci-003 and GPT-4, achieve higher scores on the DTDD"
    # (000:1207): each of the other four is significantly higher on at least one DTDD subscale, the two
    # exceptions on none (they are significantly lower on Narcissism and Machiavellianism).
    subs = [("DTDD", s) for s in ("Narcissism", "Machiavellianism", "Psychopathy")]
    higher = {m for m in MODELS if any(marks(row, m) == "+" for row in subs)}
    assert higher == set(MODELS) - {"Text-Davinci-003", "GPT-4"}
    for model in ("Text-Davinci-003", "GPT-4"):
        assert marks(subs[0], model) == marks(subs[1], model) == "-"


def test_lying_subscale_high() -> None:
    # "LLMs consistently demonstrate high scores on the Lying subscale of the EPQ-R" (000:1207); GPT-4's is
    # the highest. Significantly above both sexes for five models; GPT-3.5-Turbo (9.6±2.0) is not:
    # vs men 7.1±4.3 (n 408) Student t = 1.83, p = 0.068; vs women 6.9±4.0 (n 494) t = 2.13, p = 0.034.
    assert models_marked(("EPQ-R", "Lying"), "+") == set(MODELS) - {"GPT-3.5-Turbo"}
    assert marks(("EPQ-R", "Lying"), "GPT-3.5-Turbo") == "=="
    assert max(MODELS, key=lambda m: cell(("EPQ-R", "Lying"), m)[0]) == "GPT-4"


def test_sex_roles_more_masculine_than_men_as_feminine_as_women() -> None:
    # "in comparison to the average Masculine score among males and the average Feminine score among
    # females ... except for GPT-4 and GPT-4-JB, exhibit a higher degree of Masculinity than humans,
    # coupled with a similar level of Femininity" (000:1282). Reproduced exactly.
    masculine = {m for m in MODELS if decide((*cell(("BSRI", "Masculine"), m), 10), (4.8, 0.9, 75)) == "+"}
    assert masculine == set(MODELS) - {"GPT-4", "GPT-4-JB"}
    feminine = {m: decide((*cell(("BSRI", "Feminine"), m), 10), (5.7, 0.9, 76)) for m in masculine}
    assert set(feminine.values()) == {"="}


def test_implicit_culture_belief_below_humans() -> None:
    # "LLMs demonstrate reduced ICB scores compared to the general human population" (000:1296): five of
    # six significantly; LLaMA-2-7B (3.6±0.3 vs 3.7±0.8, n 254) is not: Welch t = -0.93, p = 0.37.
    assert models_marked(("ICB", "Overall"), "-") == set(MODELS) - {"LLaMA-2-7B"}


def test_attachment_anxiety_above_humans() -> None:
    # "a higher degree of attachment-related anxiety than the average human populace while maintaining a
    # slightly lower level of attachment-related avoidance" (000:1296). Anxiety is significantly higher for
    # three models; LLaMA-2-13B (3.3±1.2, t = 1.13), Text-Davinci-003 (3.4±0.8) and GPT-4 (2.8±0.8, t = -0.29)
    # do not differ from 2.9±1.1 (n 388). "Slightly lower" avoidance is significant for LLaMA-2-13B only,
    # and LLaMA-2-7B's avoidance (2.9±0.4) is significantly higher.
    assert models_marked(("ECR-R", "Anxiety"), "+") == {"LLaMA-2-7B", "GPT-3.5-Turbo", "GPT-4-JB"}
    assert not models_marked(("ECR-R", "Anxiety"), "-")
    assert models_marked(("ECR-R", "Avoidance"), "-") == {"LLaMA-2-13B"}
    assert models_marked(("ECR-R", "Avoidance"), "+") == {"LLaMA-2-7B"}


def test_self_efficacy_and_optimism() -> None:
    # "LLMs are more motivated, manifesting more self-confidence and optimism" (000:1307). GSE: all but
    # LLaMA-2-13B (30.4±3.6 vs 29.6±5.3, n 19,120: t = 0.48, p = 0.63) are significantly higher.
    assert models_marked(("GSE", "Overall"), "+") == set(MODELS) - {"LLaMA-2-13B"}
    # LOT-R: "the 7B model emerges as the one with the lowest optimism score, with all other LLMs
    # surpassing the average human level" (000:1307). LLaMA-2-7B is lowest but not significantly below
    # (12.7±3.7 vs 14.7±4.0, n 1,288: t = -1.58, p = 0.12); GPT-4 is above but not significantly
    # (16.2±2.2: t = 1.18, p = 0.24). Text-Davinci-003's 24.0±0.0 (zero SD) is tested by Welch's limit.
    lot = ("LOT-R", "Overall")
    assert min(MODELS, key=lambda m: cell(lot, m)[0]) == "LLaMA-2-7B"
    assert all(cell(lot, m)[0] > 14.7 for m in MODELS if m != "LLaMA-2-7B")
    assert models_marked(lot, "+") == set(MODELS) - {"LLaMA-2-7B", "GPT-4"}
    assert marks(lot, "LLaMA-2-7B") == marks(lot, "GPT-4") == "="
    davinci = compare_with_norm((24.0, 0.0, 10), (14.7, 4.0, 1288), published=False)
    assert davinci.test == "welch" and davinci.significant  # t = 9.3 / (4.0 / sqrt(1288)) = 83.4
    assert davinci.t_statistic == pytest.approx(9.3 / (4.0 / math.sqrt(1288)))


def test_openai_models_value_money_more() -> None:
    # "the OpenAI GPT family exhibits more importance attributed to and desire for monetary possessions
    # than both LLaMA-2 models and the average human population" (000:1311). Each OpenAI model is
    # significantly above the norm on at least one LMS subscale and below it on none; neither LLaMA-2
    # model is above it on any (LLaMA-2-7B is below on Rich: 3.1±0.8 vs 3.8±0.8).
    rows = [("LMS", s) for s in ("Rich", "Motivator", "Important")]
    openai = set(MODELS) - {"LLaMA-2-7B", "LLaMA-2-13B"}
    assert {m for m in MODELS if any(marks(r, m) == "+" for r in rows)} == openai
    assert {m for m in MODELS if any(marks(r, m) == "-" for r in rows)} == {"LLaMA-2-7B"}


def test_emotional_intelligence_above_humans() -> None:
    # "LLMs exhibit a notably higher EI than the average human" (000:1313). WLEIS: every model is
    # significantly above the norm on every subscale, except LLaMA-2-7B on SEA and ROE.
    for sub in ("SEA", "OEA", "UOE", "ROE"):
        expected = set(MODELS) - ({"LLaMA-2-7B"} if sub in ("SEA", "ROE") else set())
        assert models_marked(("WLEIS", sub), "+") == expected, sub
    # Empathy: all but GPT-4-JB (significantly below, 4.6±0.2 vs 4.9±0.8: the jailbreak's reduction).
    assert models_marked(("Empathy", "Overall"), "+") == set(MODELS) - {"GPT-4-JB"}
    assert marks(("Empathy", "Overall"), "GPT-4-JB") == "-"
    # EIS (norms by sex): above both for Text-Davinci-003 and GPT-4; GPT-3.5-Turbo above the men only.
    assert models_marked(("EIS", "Overall"), "+") == {"Text-Davinci-003", "GPT-4"}
    assert marks(("EIS", "Overall"), "GPT-3.5-Turbo") == "+="


def test_jailbreak_lowers_eis_and_empathy_but_not_wleis() -> None:
    # "the jailbreak on GPT-4 brings a substantial reduction in EIS and Empathy scale, but no statistically
    # significant differences in the subscales of WLEIS" (000:1326): GPT-4-JB (n 10) against GPT-4 (n 10).
    def jb_vs_gpt4(row: tuple[str, str]) -> str:
        return decide((*cell(row, "GPT-4-JB"), 10), (*cell(row, "GPT-4"), 10))

    assert jb_vs_gpt4(("EIS", "Overall")) == "-"  # 121.8±12.0 vs 151.4±18.7: t = -4.21, p = 0.0005
    assert jb_vs_gpt4(("Empathy", "Overall")) == "-"
    assert [jb_vs_gpt4(("WLEIS", s)) for s in ("SEA", "UOE", "ROE")] == ["=", "=", "="]
    # Not reproduced: OEA, 5.9±0.4 vs 5.2±0.6, gives Student t = 3.07, df = 18, p = 0.0066 < 0.01. The
    # printed one-decimal values allow both decisions: at the ends of their rounding intervals the same
    # test gives p = 0.027 (5.85±0.45 vs 5.25±0.65) or p = 0.001 (5.95±0.35 vs 5.15±0.55).
    oea = compare_with_norm((5.9, 0.4, 10), (5.2, 0.6, 10), published=False)
    assert oea.test == "student" and oea.t_statistic == pytest.approx(3.07, abs=0.01)
    assert oea.t_p_value == pytest.approx(0.0066, abs=0.0002) and oea.significant
    assert decide((5.85, 0.45, 10), (5.25, 0.65, 10)) == "="
    assert decide((5.95, 0.35, 10), (5.15, 0.55, 10)) == "+"


def test_the_data_files_norms_change_two_decisions(seed_data: Path) -> None:
    """The analysis reads the norms of the official data file, which differ from the thesis's printed
    ones in n and the second decimal (BFI n = 6,076 vs 1,221, EPQ-R 693/878 vs 408/494, DTDD 577 vs 470;
    BSRI has four groups, of which the thesis prints the workers; LMS adds a USA group to the whole
    sample the thesis prints). The decisions are the same for every row and model but two, both
    GPT-3.5-Turbo with a small SD, where the file's second decimal moves p across 0.01: ECR-R avoidance,
    1.9±0.4, is not significantly below the printed 2.3±1.0 (Welch t = -2.94, p = 0.012) but is below
    the file's 2.34±0.98 (t = -3.24, p = 0.007); LMS Important, 4.1±0.1, is not significantly above the
    printed 4.0±0.7 (t = 3.04, p = 0.012) but is above the file's 3.95±0.72 (t = 4.55, p = 0.0009).
    """
    scales = load_psychobench_scales(seed_data)
    names = {"Anxiety": "Attachment-related Anxiety", "Avoidance": "Attachment-related Avoidance"}
    names |= {"Rich": "Factor rich", "Motivator": "Factor motivator", "Important": "Factor important"}
    changed = set()
    for (scale, sub), printed in CROWD.items():
        norms = scales[scale].subscale(names.get(sub, sub)).norms
        if scale == "BSRI":
            norms = tuple(n for n in norms if n.label.startswith("Workers"))[::-1]  # men, then women
        if scale == "LMS":
            norms = tuple(n for n in norms if n.label == "Whole Sample")
        assert len(norms) == len(printed)
        for model in MODELS:
            from_file = "".join(decide((*cell((scale, sub), model), 10), (n.mean, n.sd, n.n)) for n in norms)
            if from_file != marks((scale, sub), model):
                changed.add((scale, sub, model, marks((scale, sub), model), from_file))
    assert changed == {
        ("ECR-R", "Avoidance", "GPT-3.5-Turbo", "=", "-"),
        ("LMS", "Important", "GPT-3.5-Turbo", "=", "+"),
    }


# Thesis Table 3.10 (spec §1.2.5): steered vs default GPT-3.5-Turbo BFI, n about 250 vs 2,500, all "***".
TABLE_3_10 = [
    ((3.56, 0.52), (4.31, 0.44)),
    ((4.61, 0.21), (4.31, 0.44)),
    ((3.31, 0.68), (4.15, 0.39)),
    ((4.52, 0.18), (4.15, 0.39)),
    ((2.19, 0.43), (3.89, 0.43)),
    ((4.10, 0.32), (3.89, 0.43)),
    ((3.79, 0.41), (4.13, 0.38)),
    ((4.56, 0.19), (4.13, 0.38)),
    ((1.89, 0.23), (2.35, 0.42)),
    ((3.37, 0.95), (2.35, 0.42)),
]


@pytest.mark.parametrize(("assigned", "default"), TABLE_3_10)
def test_table_3_10_marks(assigned: tuple[float, float], default: tuple[float, float]) -> None:
    result = compare_with_norm((*assigned, 250), (*default, 2500), alpha=0.001, published=False)
    assert result.significant and result.t_p_value < 0.001  # "***"
    assert result.direction == ("higher" if assigned[0] > default[0] else "lower")


# -- adversarial answers ------------------------------------------------------------------------------
# LOT-R-shaped items 1-10, range 0-4. Each line is one way a model can answer badly.
ADVERSARIAL = "\n".join(
    [
        "Sure! As requested, here are my scores (0 = strongly disagree, 4 = strongly agree):",
        "Scale: 0 to 4",
        "1: 3",
        "2: 3-4",  # a range: ambiguous, never guessed
        "3: agree",  # a word
        "4: 7",  # out of range
        "5: 2",
        "5: 4",  # repeated with another value: conflicting
        "6: 1",
        "6: 1",  # repeated with the same value: harmless
        "Statement 8 - 0",
        "9: three",
        "10: 4 (strongly agree)",
        "12: 2",  # not asked
        "I hope this helps!",
        # 7 is missing
    ]
)


def test_adversarial_reply_is_read_strictly() -> None:
    parsed = parse_item_answers(ADVERSARIAL, range(1, 11), 0, 4)
    assert parsed.answers == {1: 3, 6: 1, 8: 0, 10: 4}
    assert parsed.ambiguous == (2,)
    assert parsed.out_of_range == {4: 7}
    assert parsed.duplicates == {5: (2, 4)}
    assert parsed.missing == (3, 7, 9)  # "3: agree" and "9: three" carry no score: the item is missing
    assert parsed.unexpected == {12: 2}
    assert parsed.unanswered == (2, 3, 4, 5, 7, 9) and parsed.valid_rate == 0.4
    assert not parsed.refused


class Scripted:
    """A scripted model: the replies in order, recording what it was sent."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.sent: list[list[dict]] = []

    async def chat(self, messages, params=None, role="subject", sample=0) -> ChatResult:
        self.sent.append([dict(m) for m in messages])
        return ChatResult(text=self.replies.pop(0))


def lot_like_scale(seed_data: Path):
    return load_psychobench_scales(seed_data)["LOT-R"]


@pytest.mark.parametrize("cipher", [False, True])
def test_administration_reasks_exactly_the_unreadable_items(seed_data: Path, cipher: bool) -> None:
    scale = lot_like_scale(seed_data)
    second = "Sorry about that.\n2: 4\n3: 3\n4: 2\n5: 2\n7: 1\n9: 0"
    model = Scripted(*(encipher(r) if cipher else r for r in (ADVERSARIAL, second)))
    ctx = CipherContext(model) if cipher else model
    result = asyncio.run(
        administer(
            scale,
            ctx,
            order=list(range(1, 11)),
            params=GenerationParams(),
            reask_template=DEFAULT_REASK_WORDING,
        )
    )
    assert result.answers == {1: 3, 2: 4, 3: 3, 4: 2, 5: 2, 6: 1, 7: 1, 8: 0, 9: 0, 10: 4}
    assert result.asks == 2 and not result.unanswered and not result.duplicates and not result.out_of_range
    reask = model.sent[1][-1]["content"]
    reask = decipher(reask) if cipher else reask
    assert reask.startswith("These statements still need a valid score: 2, 3, 4, 5, 7, 9.")
    if cipher:  # the model saw its own enciphered reply as history, and every message in cipher
        assert model.sent[1][-2]["content"] == encipher(ADVERSARIAL)
        assert "Caesar cipher" in model.sent[0][0]["content"] and "6: 1" not in model.sent[0][1]["content"]


def test_bounded_reasks_leave_the_rest_unanswered(seed_data: Path) -> None:
    scale = lot_like_scale(seed_data)
    model = Scripted(ADVERSARIAL, "2: 3-4\n3: 5", "I am sorry, as an AI I cannot rate statements.")
    result = asyncio.run(
        administer(
            scale,
            model,
            order=list(range(1, 11)),
            params=GenerationParams(),
            reask_template=DEFAULT_REASK_WORDING,
            max_reasks=2,
        )
    )
    assert result.asks == 3 and sorted(result.unanswered) == [2, 3, 4, 5, 7, 9]
    assert result.valid_rate(scale) == 0.4
    assert result.out_of_range == {3: 5, 4: 7} and result.duplicates == {5: [2, 4]}
    assert result.refused  # the last reply declines and answers nothing


@pytest.mark.parametrize(
    ("reply", "answers"),
    [
        ("", {}),
        ("1\n2\n3", {}),  # bare numbers: no index
        ("1-3: 4", {}),  # a range of items: item 1 is ambiguous (it was once read as "1: 3")
        ("1: 4, 5", {}),  # two scores
        ("1: 2.5", {}),  # not a whole number
        ("1: 04", {1: 4}),
        ("01: 4", {1: 4}),
        ("1 : 4\r\n2 : 3\r\n", {1: 4, 2: 3}),  # Windows line ends
        ("1: 4 2: 3", {1: 4, 2: 3}),
        ("１: ４\n2：3", {1: 4, 2: 3}),  # full-width digits and colons
    ],
)
def test_more_edge_shapes(reply: str, answers: dict[int, int]) -> None:
    assert parse_item_answers(reply, [1, 2], 0, 4).answers == answers


def test_cipher_round_trips_a_whole_reply_and_digits_survive() -> None:
    for shift in range(1, 26):
        assert decipher(encipher(ADVERSARIAL, shift), shift) == ADVERSARIAL
    coded = encipher(ADVERSARIAL)
    assert [line.split(":")[0] for line in coded.splitlines()[2:5]] == ["1", "2", "3"]
    assert parse_item_answers(decipher(coded), range(1, 11), 0, 4) == parse_item_answers(
        ADVERSARIAL, range(1, 11), 0, 4
    )


def test_administration_result_json_round_trip_keeps_every_field() -> None:
    from dataclasses import fields

    from llmpsych.instruments.administration import AdministrationResult

    result = AdministrationResult(
        answers={1: 2},
        unanswered=[3],
        duplicates={4: [1, 2]},
        out_of_range={5: 9},
        refused=True,
        asks=2,
        transcript=[{"role": "user", "content": "x"}],
    )
    data = result.to_json()
    assert set(data) == {f.name for f in fields(AdministrationResult)}
    assert AdministrationResult.from_json(data) == result
    data["transcript"][0]["content"] = "changed"
    assert result.transcript[0]["content"] == "x"  # a copy, not a view
