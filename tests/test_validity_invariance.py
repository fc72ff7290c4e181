"""Measurement invariance: the textbook CFA, lavaan's multi-group numbers, simulated groups built to differ
(and not), and the refusals (the data cannot support the model)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmpsych.validity import _sem
from llmpsych.validity.invariance import measurement_invariance
from llmpsych.validity.simulate import simulate_long

HS = {"visual": ["x1", "x2", "x3"], "textual": ["x4", "x5", "x6"], "speed": ["x7", "x8", "x9"]}


@pytest.fixture(scope="module")
def hs() -> pd.DataFrame:
    from semopy.examples import holzinger39

    return holzinger39.get_data()


def test_holzinger_swineford_textbook_fit(hs: pd.DataFrame) -> None:
    """lavaan's cfa(HS.model, data = HolzingerSwineford1939), estimator ML: chi2 85.306 on 24 df,
    CFI .931, RMSEA .092, SRMR .065 (to the precision lavaan prints)."""
    fit = _sem.fit_single(HS, hs)
    assert fit.converged and fit.n == 301
    assert fit.df == 24
    assert round(fit.chi2, 2) == 85.31
    assert round(fit.cfi, 3) == 0.931
    assert round(fit.rmsea, 3) == 0.092
    assert round(fit.srmr, 3) == 0.065
    assert "ML" in _sem.ESTIMATOR


def test_holzinger_swineford_by_school_matches_lavaan(hs: pd.DataFrame) -> None:
    """lavaan's measurement-invariance tutorial (group = "school"): configural chi2 115.85 on 48 df,
    metric 124.04 on 54, scalar 164.10 on 60."""
    groups = [hs[hs["school"] == s] for s in ("Grant-White", "Pasteur")]
    got = {lv: _sem.fit_level(HS, groups, lv) for lv in _sem.LEVELS}
    assert all(f.converged for f in got.values())
    assert [(round(f.chi2, 2), f.df) for f in got.values()] == [(115.85, 48), (124.04, 54), (164.10, 60)]


def test_configural_is_the_sum_of_semopys_own_group_fits(hs: pd.DataFrame) -> None:
    """Groups that share nothing: the joint chi2 is semopy's single-group chi2 summed over the groups."""
    import semopy

    groups = [hs[hs["school"] == s] for s in ("Grant-White", "Pasteur")]
    total = 0.0
    for g in groups:
        model = semopy.Model(_sem.model_description(HS))
        model.fit(g)
        total += semopy.calc_stats(model)["chi2"].iloc[0]
    assert _sem.fit_level(HS, groups, "configural").chi2 == pytest.approx(total, rel=1e-4)


def test_closed_form_gradient_equals_semopys(hs: pd.DataFrame) -> None:
    group = _sem._Group(_sem.model_description(HS), hs)
    x = group.start * 1.1
    _, aux = group.value(x, None, None)
    ours, _, _ = group.gradient(x, aux, None)
    assert np.allclose(ours, group.semopy_gradient(x), rtol=1e-6, atol=1e-8)


FACTORS = {"A": [1, 2, 3, 4, 5], "B": [6, 7, 8, 9, 10]}
GROUPS = ["p1", "p2", "p3"]


def _run(frame: pd.DataFrame, **kw: object) -> dict[str, bool | None]:
    res = measurement_invariance(frame, "persona", **kw)  # type: ignore[arg-type]
    assert not res.refused, res.refused
    return {s.level: s.holds for s in res.steps}


def test_groups_built_alike_hold_at_every_level() -> None:
    frame = simulate_long(groups=GROUPS, n=500, factors=FACTORS, seed=1, latent_mean={"p2": 0.5})
    res = measurement_invariance(frame, "persona")
    assert {s.level: s.holds for s in res.steps} == {"configural": True, "metric": True, "scalar": True}
    assert not any(d.flagged for d in res.dif)
    text = "\n".join(res.summary_lines())
    assert "metric invariance) holds" in text and "scalar invariance) holds" in text
    assert "No item functions differently" in text


def test_loadings_built_to_differ_fail_metric() -> None:
    frame = simulate_long(
        groups=GROUPS, n=300, factors=FACTORS, seed=2, loadings_shift={"p3": {2: -0.6, 3: -0.6, 7: -0.6}}
    )
    steps = _run(frame)
    assert steps["configural"] is True and steps["metric"] is False
    assert steps["scalar"] is None  # not tested once metric fails


def test_intercepts_built_to_differ_fail_scalar_and_the_item_is_named() -> None:
    frame = simulate_long(
        groups=GROUPS, n=300, factors=FACTORS, seed=3, intercepts_shift={"p2": {4: 1.0, 9: 1.0}}
    )
    res = measurement_invariance(frame, "persona")
    assert {s.level: s.holds for s in res.steps} == {"configural": True, "metric": True, "scalar": False}
    flagged = {d.item for d in res.dif if d.flagged}
    assert flagged == {"4", "9"}
    text = "\n".join(res.summary_lines())
    assert "scalar invariance) does not hold" in text and "item 4 (A, large" in text


def test_too_few_respondents_and_no_variance_are_refused_with_reasons() -> None:
    frame = simulate_long(groups=GROUPS, n=40, factors=FACTORS, seed=4)
    frame = frame[~((frame["persona"] == "p1") & (frame["respondent"].str.slice(3).astype(int) >= 20))]
    frame.loc[(frame["persona"] == "p2") & (frame["item"] == 7), "response"] = 3.0
    res = measurement_invariance(frame, "persona")
    assert res.fits == [] and res.steps == []
    assert any("group p1: 20 complete respondents, fewer than the 30 required" in r for r in res.refused)
    assert any("item 7 in group p2: every answer is 3 (no variance)" in r for r in res.refused)
    assert "Not tested: the data cannot support the model" in "\n".join(res.summary_lines())


def test_missing_answers_are_left_out_listwise_and_counted() -> None:
    frame = simulate_long(groups=GROUPS, n=200, factors=FACTORS, seed=5)
    bad = frame.index[(frame["persona"] == "p1") & (frame["item"] == 2)][:7]
    frame.loc[bad, ["response", "status"]] = [math.nan, "refused"]
    res = measurement_invariance(frame, "persona", dif=False)
    p1 = next(g for g in res.groups if g.name == "p1")
    assert (p1.respondents, p1.complete, p1.left_out) == (200, 193, 7)
    assert "7 of 200 in p1" in "\n".join(res.summary_lines())
    assert res.fits[0].n == 593


def test_one_group_and_a_two_item_single_factor_are_refused() -> None:
    frame = simulate_long(groups=["only"], n=100, factors={"A": [1, 2]}, seed=6)
    res = measurement_invariance(frame, "persona")
    assert any("1 group of persona" in r for r in res.refused)
    assert any("subscale A: 2 item(s), too few" in r for r in res.refused)


def test_a_fit_that_did_not_converge_shows_no_index(hs: pd.DataFrame) -> None:
    fit = _sem.fit_level(HS, [hs], "configural", max_iter=2)
    assert not fit.converged and "without converging" in fit.message
    assert math.isnan(fit.chi2) and math.isnan(fit.cfi) and math.isnan(fit.rmsea) and math.isnan(fit.srmr)


def test_dif_score_is_the_gradient_of_statsmodels_likelihood() -> None:
    from statsmodels.miscmodels.ordinal_model import OrderedModel
    from statsmodels.tools.numdiff import approx_fprime

    from llmpsych.validity.dif import _score

    rng = np.random.default_rng(0)
    y = pd.Categorical(rng.integers(1, 6, 400), ordered=True)
    model = OrderedModel(y, rng.normal(size=(400, 2)), distr="logit")
    params = np.array([0.3, -0.2, -1.0, 0.1, -0.3, 0.2])
    assert np.allclose(_score(model, params), approx_fprime(params, model.loglike, centered=True), rtol=1e-5)


def test_a_level_that_does_not_converge_is_reported_without_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _sem.fit_level

    def stalled(*args: object, **kw: object) -> _sem.LevelFit:
        if args[2] == "metric":
            kw["max_iter"] = 1
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_sem, "fit_level", stalled)
    frame = simulate_long(groups=GROUPS, n=200, factors=FACTORS, seed=7)
    res = measurement_invariance(frame, "persona", dif=False)
    fits = res.fits_frame().set_index("level")
    assert not fits.loc["metric", "converged"] and math.isnan(fits.loc["metric", "cfi"])
    assert "scalar" not in fits.index  # never fitted on top of a failed level
    text = "\n".join(res.summary_lines())
    assert "(metric invariance): not tested: the metric model did not converge" in text
    assert "invariance not established (the metric model did not converge" in res.headline()


def test_headline_reads_without_sem_and_one_subscale_can_be_tested_alone() -> None:
    frame = simulate_long(groups=GROUPS, n=300, factors=FACTORS, seed=3, intercepts_shift={"p2": {4: 1.0}})
    whole = measurement_invariance(frame, "persona", dif=False)
    assert whole.headline() == (
        "The SIM items measure the same construct across the 3 groups of persona (p1, p2, p3) "
        "(metric invariance holds, but not scalar: means not comparable)."
    )
    alone = measurement_invariance(frame, "persona", subscale="B", dif=False)
    assert list(alone.factors) == ["B"] and alone.headline().startswith("The SIM B items measure the same")
    assert "scalar invariance holds" in alone.headline()
