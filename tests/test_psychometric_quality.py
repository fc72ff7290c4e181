"""Psychometric quality in reports: alpha and omega with intervals, item-total correlations,
acquiescence and valid-answer rates, checked against pingouin, scikit-learn and hand computations."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin
import pytest
from sklearn.decomposition import FactorAnalysis
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import DataError
from llmpsych.instruments import load_scale_file
from llmpsych.instruments.quality import NOT_MEANINGFUL, quality_tables
from llmpsych.psychobench.compare import write_comparison
from llmpsych.psychobench.imports import import_answers
from llmpsych.stats.descriptive import StatsError
from llmpsych.stats.reliability import (
    bootstrap_omega_interval,
    corrected_item_total,
    cronbach_alpha,
    feldt_alpha_interval,
    mcdonald_omega,
    omega_batch,
    omega_from_correlation,
)
from llmpsych.testing.fault_server import FaultServer
from test_own_instruments import TIDY_YAML, scripted

SMALL = np.array([[4, 5, 4], [2, 3, 3], [5, 5, 4], [3, 2, 2], [4, 4, 5]], dtype=float)


def people(n: int, seed: int) -> np.ndarray:
    """n respondents × 6 TIDY items (1-5) driven by two traits; items 2 and 6 are worded in reverse."""
    rng = np.random.default_rng(seed)
    order, plan = rng.normal(size=(2, n, 1))
    raw = np.hstack(
        [3 + order + rng.normal(scale=0.7, size=(n, 3)), 3 + plan + rng.normal(scale=0.7, size=(n, 3))]
    )
    raw = np.clip(np.round(raw), 1, 5)
    raw[:, [1, 5]] = 6 - raw[:, [1, 5]]
    return raw


def keyed(raw: np.ndarray) -> np.ndarray:
    out = raw.copy()
    out[:, [1, 5]] = 6 - out[:, [1, 5]]
    return out


# -- the statistics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_and_feldt_interval_match_pingouin(seed: int) -> None:
    data = np.random.default_rng(seed).normal(size=(25, 1)) + np.random.default_rng(seed + 9).normal(
        size=(25, 5)
    )
    value, (low, high) = pingouin.cronbach_alpha(pd.DataFrame(data))
    assert cronbach_alpha(data) == pytest.approx(value, abs=1e-12)
    interval = feldt_alpha_interval(cronbach_alpha(data), 25, 5)
    assert (interval.low, interval.high) == pytest.approx(
        (low, high), abs=5e-4
    )  # pingouin rounds to 3 places
    assert interval.method == "Feldt" and interval.low < cronbach_alpha(data) < interval.high


def test_feldt_interval_by_hand_and_its_edges() -> None:
    from scipy.stats import f

    alpha = cronbach_alpha(SMALL)  # 0.8857..., n = 5, k = 3: F(4, 8)
    interval = feldt_alpha_interval(alpha, 5, 3, level=0.9)
    assert interval.low == pytest.approx(1 - (1 - alpha) * f.ppf(0.95, 4, 8))
    assert interval.high == pytest.approx(1 - (1 - alpha) * f.ppf(0.05, 4, 8))
    assert math.isnan(feldt_alpha_interval(math.nan, 5, 3).low)
    with pytest.raises(StatsError, match="level"):
        feldt_alpha_interval(alpha, 5, 3, level=1.5)


def test_omega_matches_the_population_value_and_scikit_learns_factor_analysis() -> None:
    loadings = np.array([0.8, 0.7, 0.6, 0.5, 0.4])
    rng = np.random.default_rng(11)
    data = rng.normal(size=(20000, 1)) * loadings + rng.normal(size=(20000, 5)) * np.sqrt(1 - loadings**2)
    population = loadings.sum() ** 2 / (loadings.sum() ** 2 + (1 - loadings**2).sum())
    ours = mcdonald_omega(data).omega
    assert ours == pytest.approx(population, abs=0.01)
    # an independent estimator: maximum-likelihood factor analysis on standardised items
    fitted = FactorAnalysis(n_components=1, random_state=0).fit((data - data.mean(0)) / data.std(0))
    lam = np.abs(fitted.components_[0])
    assert ours == pytest.approx(lam.sum() ** 2 / (lam.sum() ** 2 + fitted.noise_variance_.sum()), abs=0.005)


def test_bootstrap_omega_interval_is_seeded_bounded_and_honest_about_constant_items() -> None:
    data = keyed(people(40, 4))[:, :3]
    first, used = bootstrap_omega_interval(data, seed=7)
    again, _ = bootstrap_omega_interval(data, seed=7)
    other, _ = bootstrap_omega_interval(data, seed=8)
    assert first == again and first != other and 500 <= used <= 1000
    assert first.low < mcdonald_omega(data).omega < first.high and first.method == "bootstrap"
    few, used = bootstrap_omega_interval(data, seed=7, resamples=20)
    assert used <= 20 and not math.isnan(few.low)
    constant = np.column_stack([data, np.full(40, 3.0)])
    none, used = bootstrap_omega_interval(constant, seed=7, resamples=50)
    assert used == 0 and math.isnan(none.low) and math.isnan(none.high)
    with pytest.raises(StatsError, match="resamples"):
        bootstrap_omega_interval(data, resamples=0)


def test_batched_omega_fits_each_matrix_exactly_as_one_at_a_time() -> None:
    rng = np.random.default_rng(12)
    data = keyed(people(30, 12))
    stack = [np.corrcoef(data[rng.integers(0, 30, 30)][:, :4], rowvar=False) for _ in range(60)]
    stack.append(np.ones((4, 4)))  # singular: the fallback start
    one_by_one = [omega_from_correlation(c, max_iter=200, tol=1e-6).omega for c in stack]
    assert omega_batch(np.array(stack), max_iter=200, tol=1e-6) == pytest.approx(one_by_one, abs=1e-12)


def test_corrected_item_total_by_hand() -> None:
    frame = pd.DataFrame(SMALL, columns=["a", "b", "c"])
    got = corrected_item_total(frame)
    for column in frame:
        rest = frame.drop(columns=column).sum(axis=1)
        assert got[column] == pytest.approx(frame[column].corr(rest))
    assert math.isnan(corrected_item_total(np.column_stack([SMALL, np.full(5, 2.0)]))["4"])


# -- the quality tables ------------------------------------------------------------------------------
def tidy_scale(tmp_path: Path):
    path = tmp_path / "tidy.yaml"
    path.write_text(TIDY_YAML, encoding="utf-8")
    return path, load_scale_file(path)[0]


def answers_frame(raw: np.ndarray, runs: list[int] | None = None) -> pd.DataFrame:
    runs = runs or list(range(1, len(raw) + 1))
    return pd.DataFrame(
        [
            {"scale": "TIDY", "run": run, "item": i + 1, "answer": None if math.isnan(v) else v}
            for run, row in zip(runs, raw, strict=True)
            for i, v in enumerate(row)
        ]
    )


def valid_frame(raw: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {"scale": "TIDY", "run": range(1, len(raw) + 1), "items": 6, "valid": (~np.isnan(raw)).sum(axis=1)}
    )


def test_quality_tables_against_pingouin_and_by_hand(tmp_path: Path) -> None:
    _, scale = tidy_scale(tmp_path)
    raw = people(12, 5)
    raw[4, 2] = math.nan  # one run left item 3 unanswered: Order has n = 11, Planning 12
    tables = quality_tables({"TIDY": scale}, answers_frame(raw), valid_frame(raw), seed=3)
    quality = tables["quality"].set_index("subscale")
    order = pd.DataFrame(keyed(raw)[:, :3]).dropna()
    value, (low, high) = pingouin.cronbach_alpha(order)
    assert quality.loc["Order", "n"] == 11 and quality.loc["Planning", "n"] == 12
    assert quality.loc["Order", "alpha"] == pytest.approx(value)
    assert (quality.loc["Order", "alpha_ci_low"], quality.loc["Order", "alpha_ci_high"]) == pytest.approx(
        (low, high), abs=5e-4
    )
    assert quality.loc["Order", "omega"] == pytest.approx(mcdonald_omega(order).omega)
    assert (
        quality.loc["Order", "omega_ci_low"]
        < quality.loc["Order", "omega"]
        < quality.loc["Order", "omega_ci_high"]
    )
    assert (quality["alpha_note"] == "").all() and (quality["omega_note"] == "").all()

    items = tables["quality_items"].set_index("item")
    assert items.loc[2, "reverse"] and not items.loc[1, "reverse"]
    assert items.loc[2, "mean"] == pytest.approx(order[1].mean())  # keyed answers
    rest = order[[0, 2]].sum(axis=1)
    assert items.loc[2, "item_total_r"] == pytest.approx(order[1].corr(rest))
    assert items.loc[1, "alpha_if_deleted"] == pytest.approx(cronbach_alpha(order[[1, 2]]))

    per_scale = tables["quality_scales"].iloc[0]
    assert per_scale["valid"] == 71 and per_scale["answers"] == 72
    assert per_scale["valid_rate"] == pytest.approx(71 / 72) and per_scale["valid_ci_low"] < 71 / 72
    # acquiescence: the mean raw answer (before reverse keying) of each run, minus the midpoint 3
    by_run = np.nanmean(raw, axis=1) - 3
    assert per_scale["acquiescence"] == pytest.approx(by_run.mean())
    assert per_scale["acquiescence_sd"] == pytest.approx(by_run.std(ddof=1))
    assert per_scale["acquiescence_n"] == 12 and per_scale["acquiescence_note"] == ""


def test_yea_saying_shows_as_acquiescence_not_as_a_trait(tmp_path: Path) -> None:
    """A respondent who agrees with everything: high acquiescence, and the reverse keys cancel it."""
    _, scale = tidy_scale(tmp_path)
    raw = np.array([[5, 5, 5, 5, 5, 5], [4, 5, 4, 5, 4, 5], [5, 4, 5, 4, 5, 4]], dtype=float)
    tables = quality_tables({"TIDY": scale}, answers_frame(raw), valid_frame(raw))
    per_scale = tables["quality_scales"].iloc[0]
    assert per_scale["acquiescence"] == pytest.approx(np.mean(raw) - 3) and per_scale["acquiescence"] > 1.5


@pytest.mark.parametrize(
    ("raw", "alpha_note", "omega_note"),
    [
        (np.array([[1, 2, 3, 4, 5, 1], [2, 3, 4, 5, 1, 2]], float), "n = 2 complete run(s), need 3", None),
        (np.tile([2.0, 4, 3, 3, 3, 3], (4, 1)), "every run has the same subscale score", None),
        (
            np.array([[1, 5, 3, 1, 5, 5], [2, 4, 3, 3, 3, 3], [4, 2, 3, 5, 1, 1]], float),
            "",
            "item 3 has the same answer in every run",
        ),
    ],
    ids=["two-runs", "identical-runs", "constant-item"],
)
def test_not_meaningful_figures_say_why(tmp_path: Path, raw, alpha_note: str, omega_note: str | None) -> None:
    _, scale = tidy_scale(tmp_path)
    quality = quality_tables({"TIDY": scale}, answers_frame(raw), valid_frame(raw))["quality"]
    order = quality.set_index("subscale").loc["Order"]
    assert order["alpha_note"] == (f"{NOT_MEANINGFUL}: {alpha_note}" if alpha_note else "")
    assert math.isnan(order["alpha"]) == bool(alpha_note)
    expected = f"{NOT_MEANINGFUL}: {omega_note or alpha_note}"
    assert order["omega_note"] == expected and math.isnan(order["omega"])


def test_an_item_answered_against_its_key_gives_no_omega(tmp_path: Path) -> None:
    """A keying error (item 3 worded in reverse but keyed as forward): its loading opposes the other items',
    so omega total, which adds the loadings up, is not reported; alpha shows the damage as it is."""
    _, scale = tidy_scale(tmp_path)
    raw = people(30, 7)
    raw[:, 2] = 6 - raw[:, 2]
    quality = quality_tables({"TIDY": scale}, answers_frame(raw), valid_frame(raw))["quality"]
    order, planning = (
        quality.set_index("subscale").loc["Order"],
        quality.set_index("subscale").loc["Planning"],
    )
    assert order["omega_note"].startswith(f"{NOT_MEANINGFUL}: item 3 loads against its key")
    assert math.isnan(order["omega"]) and order["alpha"] == pytest.approx(
        pingouin.cronbach_alpha(pd.DataFrame(keyed(raw)[:, :3]))[0]
    )
    assert order["alpha"] < 0.3 and planning["omega_note"] == "" and planning["omega"] > 0.5


def test_small_subscales_and_unbalanced_scales(tmp_path: Path) -> None:
    text = TIDY_YAML.replace("items: [1, 2, 3]", "items: [1, 2]").replace("items: [4, 5, 6]", "items: [4]")
    text = text.replace(", reverse: true}", "}")
    path = tmp_path / "small.yaml"
    path.write_text(text, encoding="utf-8")
    scale = load_scale_file(path)[0]
    raw = people(10, 6)
    tables = quality_tables({"TIDY": scale}, answers_frame(raw), valid_frame(raw))
    quality = tables["quality"].set_index("subscale")
    assert not math.isnan(quality.loc["Order", "alpha"])  # two items: alpha, but no omega
    assert quality.loc["Order", "omega_note"].startswith(f"{NOT_MEANINGFUL}: omega needs 3 items")
    assert quality.loc["Planning", "alpha_note"] == f"{NOT_MEANINGFUL}: the subscale has 1 item"
    assert tables["quality_scales"].iloc[0]["acquiescence_note"].startswith("no reverse-keyed items")


def test_logprob_values_are_read_from_the_value_column(tmp_path: Path) -> None:
    _, scale = tidy_scale(tmp_path)
    raw = people(6, 8) + 0.25  # expected values need not be whole
    frame = answers_frame(raw).rename(columns={"answer": "value"}).assign(answer=None)
    tables = quality_tables({"TIDY": scale}, frame, valid_frame(raw), column="value")
    order = tables["quality"].set_index("subscale").loc["Order"]
    assert order["alpha"] == pytest.approx(cronbach_alpha(keyed(raw)[:, :3]))  # a shift changes no alpha
    assert tables["quality_items"].set_index("item").loc[1, "mean"] == pytest.approx(raw[:, 0].mean())


# -- through the reports -----------------------------------------------------------------------------
def write_people(path: Path, raw: np.ndarray) -> None:
    lines = ["run,1,2,3,4,5,6"] + [
        f"{run}," + ",".join("" if math.isnan(v) else str(int(v)) for v in row)
        for run, row in enumerate(raw, start=1)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_imported_people_get_a_quality_section_and_compare_shows_it(tmp_path: Path) -> None:
    scale_path, _ = tidy_scale(tmp_path)
    raw = people(15, 9)
    write_people(tmp_path / "people.csv", raw)
    write_people(tmp_path / "pair.csv", raw[:2])
    import_answers(tmp_path / "people.csv", tmp_path / "people", scale_files=[scale_path], label="people")
    import_answers(tmp_path / "pair.csv", tmp_path / "pair", scale_files=[scale_path], label="pair")
    quality = pd.read_csv(tmp_path / "people" / "quality.csv").set_index("subscale")
    for subscale, columns in (("Order", [0, 1, 2]), ("Planning", [3, 4, 5])):
        value, _ = pingouin.cronbach_alpha(pd.DataFrame(keyed(raw)[:, columns]))
        assert quality.loc[subscale, "alpha"] == pytest.approx(value) and quality.loc[subscale, "n"] == 15
    assert (tmp_path / "people" / "quality_items.parquet").is_file()
    report = (tmp_path / "people" / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Psychometric quality") :]
    assert f"{quality.loc['Order', 'alpha']:.2f} [" in section and "quality_items.csv" in section
    pair = (tmp_path / "pair" / "report.md").read_text(encoding="utf-8")
    assert f"{NOT_MEANINGFUL}: n = 2 complete run(s), need 3" in pair

    write_comparison([tmp_path / "people", tmp_path / "pair"], tmp_path / "cmp")
    compared = (tmp_path / "cmp" / "comparison.md").read_text(encoding="utf-8")
    line = next(
        row for row in compared.splitlines() if row.startswith("| TIDY") and "α" in row and "Order" in row
    )
    assert f"α {quality.loc['Order', 'alpha']:.2f}" in line and f"α {NOT_MEANINGFUL}" in line
    tidy = pd.read_csv(tmp_path / "cmp" / "comparison_quality.csv")
    assert set(tidy["model"]) == {"people", "pair"} and len(tidy) == 4


def test_damaged_quality_file_is_one_clear_error(tmp_path: Path) -> None:
    scale_path, _ = tidy_scale(tmp_path)
    write_people(tmp_path / "people.csv", people(5, 2))
    import_answers(tmp_path / "people.csv", tmp_path / "people", scale_files=[scale_path])
    path = tmp_path / "people" / "quality.csv"
    path.write_text(path.read_text().replace("TIDY,Order,3,5,", "TIDY,Order,3,five,"), encoding="utf-8")
    with pytest.raises(DataError, match=r"quality\.csv: row 2, column 'n': 'five' is not a finite number"):
        write_comparison([tmp_path / "people"], tmp_path / "c")


def test_model_runs_of_an_official_and_an_own_scale_report_quality(tmp_path: Path, seed_data: Path) -> None:
    """Scripted answers depend on each item's position, so runs in different orders differ."""
    scale_path, _ = tidy_scale(tmp_path)
    cli._mount_subcommands()
    with FaultServer(responder=scripted) as server:
        result = CliRunner().invoke(
            cli.app,
            ["psychobench", "run", "-m", "openai-compatible/scripted", "--scale", "DTDD", "--scale-file",
             str(scale_path), "--runs", "4", "--data-dir", str(seed_data), "--base-url", server.base_url,
             "--out", str(tmp_path / "out"), "--no-cache", "--no-progress"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "out" / "openai-compatible_scripted"
    quality = pd.read_csv(run_dir / "quality.csv")
    assert quality["scale"].unique().tolist() == ["DTDD", "TIDY"]
    answers = pd.read_csv(run_dir / "answers.csv")
    tidy = answers[answers["scale"] == "TIDY"].pivot(index="run", columns="item", values="answer")
    tidy[[2, 6]] = 6 - tidy[[2, 6]]
    row = quality.set_index(["scale", "subscale"]).loc[("TIDY", "Planning")]
    if pd.notna(row["alpha_note"]):
        assert math.isnan(row["alpha"]) and tidy[[4, 5, 6]].sum(axis=1).var() == 0
    else:
        assert row["alpha"] == pytest.approx(pingouin.cronbach_alpha(tidy[[4, 5, 6]])[0])
    assert set(pd.read_csv(run_dir / "quality_scales.csv")["runs"]) == {4}
    assert "## Psychometric quality" in (run_dir / "report.md").read_text(encoding="utf-8")
