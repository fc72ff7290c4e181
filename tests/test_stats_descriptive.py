"""Descriptive statistics: mean ± sample SD, t intervals, valid-answer rates."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmpsych.instruments.parsing import parse_item_answers
from llmpsych.stats.descriptive import (
    StatsError,
    complete_run_rate,
    format_mean_sd,
    mean_sd,
    summarize,
    t_interval,
    valid_answer_rate,
    valid_rate,
)


def test_sample_sd_like_the_original_code() -> None:
    values = [4.2, 4.0, 4.5, 3.9, 4.4]
    summary = summarize(values)
    assert summary.mean == pytest.approx(statistics.mean(values))
    assert summary.sd == pytest.approx(statistics.stdev(values))
    assert summary.n == 5 and summary.n_missing == 0 and summary.ddof == 1
    assert mean_sd(values) == pytest.approx((statistics.mean(values), statistics.stdev(values)))
    assert summarize(values, ddof=0).sd == pytest.approx(statistics.pstdev(values))


def test_nan_runs_are_dropped_and_counted() -> None:
    summary = summarize([1.0, math.nan, 3.0])
    assert (summary.mean, summary.n, summary.n_missing) == (2.0, 2, 1)


def test_degenerate_inputs() -> None:
    empty = summarize([])
    assert math.isnan(empty.mean) and empty.n == 0
    one = summarize([2.0])
    assert one.mean == 2.0 and math.isnan(one.sd) and math.isnan(one.ci_low)


def test_t_interval_matches_scipy() -> None:
    values = np.array([3.1, 3.4, 2.9, 3.8, 3.3, 3.0])
    summary = summarize(values)
    low, high = stats.t.interval(0.95, 5, loc=values.mean(), scale=stats.sem(values))
    assert (summary.ci_low, summary.ci_high) == pytest.approx((low, high))
    assert summary.sem == pytest.approx(stats.sem(values))
    assert t_interval(3.0, 1.0, 10, 0.99) == pytest.approx(
        stats.t.interval(0.99, 9, loc=3.0, scale=1.0 / math.sqrt(10))
    )
    with pytest.raises(StatsError):
        t_interval(3.0, 1.0, 10, 1.5)


def test_format() -> None:
    assert format_mean_sd(4.25, 0.333) == "4.2 ± 0.3"
    assert summarize([39.0, 40.0]).format(2) == "39.50 ± 0.71"
    assert format_mean_sd(63.44, 3.36, sep="±") == "63.4±3.4"  # published layouts without spaces


def test_format_says_what_is_missing() -> None:
    """One rule: no mean (n = 0) is ``n/a``; a mean without an sd (n = 1, NaN sd) is ``m ± n/a``."""
    assert summarize([]).format() == "n/a"
    assert summarize([float("nan"), float("nan")]).format() == "n/a"
    assert summarize([4.0]).format(2) == "4.00 ± n/a"
    assert format_mean_sd(4.0, float("nan")) == format_mean_sd(4.0, None) == "4.0 ± n/a"
    assert format_mean_sd(float("nan"), 1.0) == format_mean_sd(None, None) == "n/a"
    assert format_mean_sd(pd.NA, pd.NA) == "n/a" and format_mean_sd(2.0, pd.NA) == "2.0 ± n/a"
    assert format_mean_sd(np.float64(1.25), np.float64(0.5), 2) == "1.25 ± 0.50"


def test_valid_rate_wilson() -> None:
    rate = valid_rate(45, 50)
    assert rate.rate == 0.9
    expected = stats.binomtest(45, 50).proportion_ci(0.95, method="wilson")
    assert (rate.ci_low, rate.ci_high) == pytest.approx((expected.low, expected.high))
    assert math.isnan(valid_rate(0, 0).rate)
    with pytest.raises(StatsError, match="impossible"):
        valid_rate(5, 3)


def test_rates_from_parsed_replies() -> None:
    replies = [
        parse_item_answers("1: 3\n2: 4\n3: 5", [1, 2, 3], 1, 5),
        parse_item_answers("1: 3\n2: 9", [1, 2, 3], 1, 5),
        parse_item_answers("As an AI, I don't have personal feelings.", [1, 2, 3], 1, 5),
    ]
    items = valid_answer_rate(replies)
    assert (items.valid, items.total) == (4, 9)
    runs = complete_run_rate(replies)
    assert (runs.valid, runs.total) == (1, 3)
