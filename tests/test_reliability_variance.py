"""Variance F-tests against the human norms (§3.3.1): hand-made inputs with closed-form answers, and the
released GPT-3.5 grid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from llmpsych.reliability.analysis import variance_tests
from llmpsych.reliability.published import DIMENSIONS, HUMAN_N, HUMAN_SD
from llmpsych.reliability.reanalysis import reanalyse
from llmpsych.reliability.saves import load_save


def _frame(**columns: list[float]) -> pd.DataFrame:
    return pd.DataFrame(columns)


def test_f_is_human_over_model_variance_one_sided_closed_form() -> None:
    # model values 2, 3, 4: sample variance 1; human SD 2 with n = 3: F = 4 on (2, 2) df.
    # For F(2, 2) the upper tail is 1 / (1 + x), so p = 1 / 5.
    table = variance_tests(_frame(Openness=[2.0, 3.0, 4.0]), {"Openness": 2.0}, human_n=3, dims=["Openness"])
    (row,) = table.to_dict("records")
    assert row["model_sd"] == pytest.approx(1.0) and row["model_n"] == 3
    assert row["human_sd"] == 2.0 and row["human_n"] == 3
    assert row["f"] == pytest.approx(4.0)
    assert (row["df_num"], row["df_den"]) == (2, 2)
    assert row["p"] == pytest.approx(0.2)


def test_equal_variances_give_p_one_half_and_a_wider_model_is_not_significant() -> None:
    # equal df: the F distribution's median is 1, so F = 1 gives p = 0.5
    equal = variance_tests(_frame(Neuroticism=[2.0, 3.0, 4.0]), {"Neuroticism": 1.0}, 3, ["Neuroticism"])
    assert equal.loc[0, "f"] == pytest.approx(1.0) and equal.loc[0, "p"] == pytest.approx(0.5)
    # the model varies 4x more than the humans: F = 1/4, p = 1 - 1/(1 + 1/4) = 0.8 (H1 is "less")
    wider = variance_tests(_frame(Neuroticism=[1.0, 3.0, 5.0]), {"Neuroticism": 1.0}, 3, ["Neuroticism"])
    assert wider.loc[0, "f"] == pytest.approx(0.25) and wider.loc[0, "p"] == pytest.approx(0.8)


def test_defaults_are_the_srivastava_sds_and_n_1221_and_short_columns_are_skipped() -> None:
    values = {dim: [3.0, 3.5, 4.0, 4.5] for dim in DIMENSIONS}
    values["Agreeableness"] = [4.0, None, None, None]  # one value: no variance, no test
    table = variance_tests(pd.DataFrame(values))
    assert list(table["dimension"]) == [d for d in DIMENSIONS if d != "Agreeableness"]
    assert (table["human_n"] == HUMAN_N).all() and HUMAN_N == 1221
    assert dict(zip(table["dimension"], table["human_sd"], strict=True)) == {
        d: HUMAN_SD[d] for d in table["dimension"]
    }
    assert HUMAN_SD == {
        "Openness": 0.7,
        "Conscientiousness": 0.7,
        "Extraversion": 0.9,
        "Agreeableness": 0.7,
        "Neuroticism": 0.8,
    }
    # sample SD of 3, 3.5, 4, 4.5 is sqrt(5/12); F = human variance / that
    assert table.set_index("dimension").loc["Openness", "f"] == pytest.approx(0.49 / (5 / 12))


def test_released_grid_varies_less_than_humans_in_every_dimension(seed_data: Path) -> None:
    frame = load_save(seed_data / "LLMPersonality" / "Analysis" / "save" / "save.json").frame
    result = reanalyse(frame)
    table = result.variance.set_index("dimension")
    assert list(table.index) == list(DIMENSIONS)
    # all 2,500 points (as llmpsych reports it, docs/reliability.md): F 2.52, 3.28, 4.46, 3.47, 3.69
    assert [round(f, 2) for f in table["f"]] == [2.52, 3.28, 4.46, 3.47, 3.69]
    assert (table["p"] < 1e-80).all()  # the thesis: all p < 0.0001
    assert (table["df_num"] == 1220).all() and (table["df_den"] == 2499).all()
    # the thesis's printed LLM SDs (0.3, 0.3, 0.4, 0.3, 0.4) are the inliers' SDs, rounded
    inliers = variance_tests(result.frame[~result.outliers]).set_index("dimension")
    assert [round(s, 1) for s in inliers["model_sd"]] == [0.3, 0.3, 0.4, 0.3, 0.4]
    assert (inliers["p"] < 1e-4).all()
