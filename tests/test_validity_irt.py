"""Item response models (``llmpsych validity irt``) checked against data simulated with known parameters:
the graded response model and the 2PL recover them within stated tolerances at n = 1,000, and data that
cannot support a model (too few respondents, an item without variance, an estimate on the search bound)
are refused with the reason and the n, never fitted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import DataError
from llmpsych.runs.items import ITEM_COLUMNS
from llmpsych.validity._likelihood import ItemParameters, simulate
from llmpsych.validity.irt import fit_items, fit_scale

#: Tolerances: the largest error over all items, at n = 1,000 (GRM) and 2,000 (2PL: a binary answer says
#: less); the standard errors there are ~0.07-0.12 for a and ~0.06-0.15 for b, so about 2-3 of them.
TOLERANCE_A = 0.25
TOLERANCE_B = 0.30


def long_frame(
    data: np.ndarray,
    *,
    scale: str = "SIM",
    low: int = 1,
    reverse: tuple[int, ...] = (),
    subscales: dict[int, str] | None = None,
    high: int | None = None,
) -> pd.DataFrame:
    """Simulated answers (respondents x items, categories from 0) as the item-level long format; a
    reverse-keyed item gets the answer turned back, as a respondent would have written it."""
    n, k = data.shape
    top = int(high if high is not None else low + data.max())
    rows = []
    for i in range(n):
        for j in range(k):
            value = low + int(data[i, j])
            written = low + top - value if j + 1 in reverse else value
            rows.append(
                {
                    "respondent": f"p{i}",
                    "source": "person",
                    "model": "",
                    "persona": "",
                    "language": "",
                    "template": "",
                    "run": "simulated",
                    "scale": scale,
                    "item": j + 1,
                    "subscale": (subscales or {}).get(j + 1, ""),
                    "reverse": j + 1 in reverse,
                    "response": float(written),
                    "status": "answered",
                    "min": low,
                    "max": top,
                }
            )
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def graded_items(count: int, seed: int) -> list[ItemParameters]:
    rng = np.random.default_rng(seed)
    return [
        ItemParameters(
            float(a), tuple(float(b) for b in np.sort(rng.uniform(-2, 2, 4)) + [-0.3, -0.1, 0.1, 0.3])
        )
        for a in rng.uniform(0.8, 2.0, count)
    ]


def test_graded_response_model_recovers_known_parameters(tmp_path: Path) -> None:
    true = graded_items(8, seed=11)
    data, theta = simulate(true, 1000, seed=12)
    frame = long_frame(data, reverse=(3,))  # item 3 written reversed: turned back before fitting
    fit = fit_scale(frame)
    assert fit.summary["status"] == "fitted", fit.summary
    assert fit.summary["model_type"] == "GRM" and fit.summary["respondents"] == 1000
    items = fit.items
    a = items[items["parameter"] == "a"].set_index("item")
    b = items[items["parameter"] != "a"].pivot(index="item", columns="parameter", values="estimate")
    for j, params in enumerate(true, start=1):
        assert abs(a.loc[j, "estimate"] - params.a) <= TOLERANCE_A, (j, a.loc[j, "estimate"], params.a)
        assert np.abs(b.loc[j].to_numpy() - np.array(params.b)).max() <= TOLERANCE_B, (j, b.loc[j], params.b)
    assert bool(a.loc[3, "reverse"]) and (items["se"] > 0).all() and (items["se"] < 0.3).all()
    # every error is within 4 of its own standard error (the SEs are not too small to be honest)
    merged = items.assign(true=[v for p in true for v in (p.a, *p.b)])
    assert ((merged["estimate"] - merged["true"]).abs() <= 4 * merged["se"]).all()
    # the respondents' EAP tracks the simulated theta; information and item fit are there and sane
    assert (
        np.corrcoef(
            fit.respondents.set_index("respondent").loc[[f"p{i}" for i in range(1000)], "theta"], theta
        )[0, 1]
        > 0.85
    )
    assert (fit.information["information"] > 0).all() and len(fit.information) == 33
    assert fit.item_fit["infit"].between(0.6, 1.4).all() and fit.item_fit["outfit"].between(0.6, 1.4).all()
    assert fit.summary["max_step_se"] <= 1.0


def test_two_parameter_logistic_model_recovers_known_parameters() -> None:
    rng = np.random.default_rng(21)
    true = [
        ItemParameters(float(a), (float(b),))
        for a, b in zip(rng.uniform(0.8, 2.0, 10), rng.uniform(-1.5, 1.5, 10), strict=True)
    ]
    data, _ = simulate(true, 2000, seed=22)
    fit = fit_scale(long_frame(data, low=0, high=1))
    assert fit.summary["status"] == "fitted" and fit.summary["model_type"] == "2PL", fit.summary
    a = fit.items[fit.items["parameter"] == "a"]["estimate"].to_numpy()
    b = fit.items[fit.items["parameter"] == "b1"]["estimate"].to_numpy()
    assert np.abs(a - [p.a for p in true]).max() <= TOLERANCE_A
    assert np.abs(b - [p.b[0] for p in true]).max() <= TOLERANCE_B


def test_data_that_cannot_support_a_model_are_refused_with_the_reason_and_n() -> None:
    true = graded_items(5, seed=31)
    data, _ = simulate(true, 300, seed=32)

    few = fit_scale(long_frame(data[:20]))
    assert few.refused and few.items.empty
    assert few.summary["reason"].startswith("too few respondents: n=20")

    flat = data.copy()
    flat[:, 3] = 2  # item 4: everyone answered 3
    still = fit_scale(long_frame(flat, high=5))
    assert (
        still.refused
        and "item 4 has no variance: every one of its 300 answers is 3 (n=300)" in still.summary["reason"]
    )

    noise = data.copy()
    noise[:, 1] = np.random.default_rng(33).integers(0, 5, 300)  # item 2 unrelated to the others
    unrelated = fit_scale(long_frame(noise))
    assert unrelated.refused and unrelated.items.empty and unrelated.respondents.empty
    assert unrelated.summary["reason"].startswith("did not converge: "), unrelated.summary["reason"]

    refused_only = long_frame(data[:60]).assign(status="refused", response=np.nan)
    nobody = fit_scale(refused_only)
    assert (
        nobody.refused and "n=0" in nobody.summary["reason"] and nobody.summary["excluded_respondents"] == 60
    )


def test_each_subscale_is_its_own_dimension_and_groups_are_fitted_apart() -> None:
    data, _ = simulate(graded_items(6, seed=41), 200, seed=42)
    frame = long_frame(data, subscales={1: "A", 2: "A", 3: "A", 4: "B", 5: "B", 6: "A+B"})
    frame["model"] = np.where(frame["respondent"].str[1:].astype(int) < 150, "m1", "m2")
    tables = fit_items(frame, group="model", min_respondents=60)
    summary = tables.summary.set_index(["dimension", "group"])
    assert list(summary.index) == [("A", "model=m1"), ("A", "model=m2"), ("B", "model=m1"), ("B", "model=m2")]
    assert summary.loc[("A", "model=m1"), "items"] == 4 and summary.loc[("B", "model=m1"), "items"] == 3
    assert summary.loc[("A", "model=m2"), "status"] == "refused"  # 50 respondents
    assert "n=50" in summary.loc[("A", "model=m2"), "reason"]
    whole = fit_items(frame, whole_scale=True)
    assert list(whole.summary["dimension"]) == ["all items"] and whole.summary["items"].iloc[0] == 6
    assert whole.summary["pooled_over"].iloc[0] == "model (2)"  # a pooled fit says what it pooled

    other = frame.copy()
    other.loc[other["respondent"] == "p0", "reverse"] = other["item"] == 2  # another key for item 2
    with pytest.raises(DataError, match="'SIM' is defined differently in these answers: item 2"):
        fit_items(other)


def test_the_command_writes_tables_and_a_report_and_never_shows_a_refused_fit(tmp_path: Path) -> None:
    cli._mount_subcommands()
    data, _ = simulate(graded_items(4, seed=51), 120, seed=52)
    wide = pd.DataFrame(data + 1, columns=["1", "2", "3", "4"])
    wide["2"] = 6 - wide["2"]  # KNOT's item 2 is reverse-keyed: people wrote it the other way round
    wide.insert(0, "run", range(1, 121))
    people = tmp_path / "people.csv"
    wide.to_csv(people, index=False)
    scale = tmp_path / "knot.yaml"
    from test_validity_items import SCALE

    scale.write_text(SCALE, encoding="utf-8")
    out = tmp_path / "irt"
    result = CliRunner().invoke(
        cli.app,
        [
            "validity",
            "irt",
            "--human",
            str(people),
            "--scale-file",
            str(scale),
            "--whole-scale",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "fitting KNOT all items, all: 4 items, 120 respondents" in result.output
    assert "KNOT: all items (all): GRM fitted, n=120" in result.output
    for name in ("summary", "items", "respondents", "information", "item_fit"):
        assert (out / f"irt_{name}.csv").is_file()
    report = (out / "irt.md").read_text(encoding="utf-8")
    assert "## KNOT: all items (all)" in report and "cross-product" in report

    per_subscale = tmp_path / "sub"
    result = CliRunner().invoke(
        cli.app,
        [
            "validity",
            "irt",
            "--human",
            str(people),
            "--scale-file",
            str(scale),
            "--min-respondents",
            "200",
            "--out",
            str(per_subscale),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "KNOT: Care (all): not fitted: too few respondents: n=120" in result.output
    report = (per_subscale / "irt.md").read_text(encoding="utf-8")
    assert "**Not fitted**: too few respondents: n=120" in report and "a (se)" not in report
    assert pd.read_csv(per_subscale / "irt_items.csv").empty
