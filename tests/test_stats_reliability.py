"""Cronbach's alpha and McDonald's omega."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmpsych.stats.descriptive import StatsError
from llmpsych.stats.reliability import (
    alpha_if_item_deleted,
    cronbach_alpha,
    mcdonald_omega,
    omega_from_correlation,
    response_matrix,
)

SMALL = np.array(
    [
        [4, 5, 4],
        [2, 3, 3],
        [5, 5, 4],
        [3, 2, 2],
        [4, 4, 5],
    ],
    dtype=float,
)


def test_alpha_by_hand() -> None:
    # item variances (ddof=1): 1.3, 1.7, 1.3 -> 4.3; totals 13, 8, 14, 7, 13 -> variance 42 / 4 = 10.5
    assert cronbach_alpha(SMALL) == pytest.approx(1.5 * (1 - 4.3 / 10.5))


def test_alpha_of_identical_items_is_one_and_constant_total_is_nan() -> None:
    column = np.array([1.0, 2.0, 3.0, 4.0])
    assert cronbach_alpha(np.column_stack([column, column, column])) == pytest.approx(1.0)
    assert math.isnan(cronbach_alpha(np.full((4, 3), 2.0)))


def test_listwise_deletion_and_dataframe_labels() -> None:
    frame = pd.DataFrame(SMALL, columns=["a", "b", "c"])
    frame.loc[5] = [np.nan, 1, 1]
    matrix, labels = response_matrix(frame)
    assert matrix.shape == (5, 3) and labels == ["a", "b", "c"]
    assert cronbach_alpha(frame) == pytest.approx(cronbach_alpha(SMALL))
    deleted = alpha_if_item_deleted(frame)
    assert deleted["a"] == pytest.approx(cronbach_alpha(SMALL[:, 1:]))


def test_shape_errors() -> None:
    with pytest.raises(StatsError, match="at least 2 items"):
        cronbach_alpha(SMALL[:, :1])
    with pytest.raises(StatsError, match="at least 2 complete rows"):
        cronbach_alpha(SMALL[:1])
    with pytest.raises(StatsError, match="2-D"):
        cronbach_alpha([1, 2, 3])
    with pytest.raises(StatsError, match="at least 3 items"):
        alpha_if_item_deleted(SMALL[:, :2])


def test_omega_recovers_population_loadings() -> None:
    loadings = np.array([0.8, 0.7, 0.6, 0.5])
    correlation = np.outer(loadings, loadings)
    np.fill_diagonal(correlation, 1.0)
    result = omega_from_correlation(correlation)
    assert result.converged
    assert result.loadings == pytest.approx(list(loadings), abs=1e-6)
    expected = loadings.sum() ** 2 / (loadings.sum() ** 2 + (1 - loadings**2).sum())
    assert result.omega == pytest.approx(expected, abs=1e-6)


def test_omega_equals_alpha_for_parallel_items() -> None:
    rng = np.random.default_rng(5)
    factor = rng.normal(size=(5000, 1))
    items = 0.7 * factor + rng.normal(scale=0.6, size=(5000, 5))
    result = mcdonald_omega(items)
    assert result.n_rows == 5000
    assert result.omega == pytest.approx(cronbach_alpha(items), abs=0.01)


def test_omega_errors() -> None:
    with pytest.raises(StatsError, match="item 2 has no variance"):
        mcdonald_omega(np.column_stack([np.arange(5.0), np.full(5, 3.0)]))
    with pytest.raises(StatsError, match="not a correlation matrix"):
        omega_from_correlation(np.array([[1.0, 0.5], [0.4, 1.0]]))
