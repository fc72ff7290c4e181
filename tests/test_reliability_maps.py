"""The reliability maps (Fig. 3.1, 3.6-3.8) drawn from hand-made data points with known content.

Each map is drawn with matplotlib as in a run; ``plots._save`` is replaced by a function that keeps the
figure open, so the tests read back what was drawn: which points, in which colour, under which label.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmpsych.reliability import plots
from llmpsych.reliability.published import DIMENSIONS, LEVEL_NAMES, PROFILE_TARGET
from llmpsych.reliability.reanalysis import Reanalysis, map_region, reanalyse

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.colors import to_rgba  # noqa: E402


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list:
    """Figures drawn by the map functions, kept open instead of written."""
    kept: list = []

    def keep(plt, fig, path: Path) -> Path:  # noqa: ANN001
        kept.append(fig)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    yield kept
    import matplotlib.pyplot as plt

    for fig in kept:
        plt.close(fig)


def _grid_points() -> pd.DataFrame:
    """60 points in a tight cloud (two templates x two orders) plus two far-away points."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(60):
        scores = 3 + rng.normal(0, 0.05, 5)
        rows.append(
            {
                "template": ["t1", "t2"][i % 2],
                "order": ["f", "r"][i // 30],
                "version": "v1",
                **dict(zip(DIMENSIONS, scores, strict=True)),
            }
        )
    for far in ([1, 1, 1, 1, 1], [5, 5, 5, 5, 1]):
        rows.append(
            {"template": "t1", "order": "r", "version": "v1", **dict(zip(DIMENSIONS, far, strict=True))}
        )
    return pd.DataFrame(rows)


@pytest.fixture
def grid_result() -> Reanalysis:
    return reanalyse(_grid_points(), min_pts=10)


def _offsets(collection) -> np.ndarray:  # noqa: ANN001
    return np.asarray(collection.get_offsets(), dtype=float)


def _same_points(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.allclose(np.sort(a, axis=0), np.sort(b, axis=0))


def test_density_map_bins_the_inliers_and_marks_the_outliers(grid_result: Reanalysis, figures: list) -> None:
    plots.density_map(grid_result, Path("map_density.png"))
    (ax,) = figures[0].axes
    assert grid_result.outliers.sum() == 2 and grid_result.outliers[-2:].all()
    assert ax.get_title() == "62 data points, 2 outliers"
    hexbin, outliers = ax.collections
    assert hexbin.get_array().sum() == 60  # every inlier in one hexagon, nothing else
    assert _same_points(_offsets(outliers), grid_result.coords[-2:])
    # the grey region of all possible results: the projected hull of the 32 corner vectors
    (region,) = ax.patches
    assert np.allclose(region.get_xy(), map_region(grid_result))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["possible BFI results", "outliers"]


def test_factor_map_colours_every_level_apart(grid_result: Reanalysis, figures: list) -> None:
    plots.factor_map(grid_result, "template", Path("map_template.png"))
    (ax,) = figures[0].axes
    assert ax.get_title() == "by template"
    t1, t2 = ax.collections
    frame = grid_result.frame
    assert _same_points(_offsets(t1), grid_result.coords[(frame["template"] == "t1").to_numpy()])
    assert _same_points(_offsets(t2), grid_result.coords[(frame["template"] == "t2").to_numpy()])
    assert len(_offsets(t1)) == 32 and len(_offsets(t2)) == 30
    assert tuple(t1.get_facecolor()[0][:3]) != tuple(t2.get_facecolor()[0][:3])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["possible BFI results", LEVEL_NAMES["t1"], LEVEL_NAMES["t2"]]


def test_all_maps_draw_one_factor_map_per_varied_factor(grid_result: Reanalysis, tmp_path: Path) -> None:
    written = plots.all_maps(grid_result, tmp_path)
    names = [p.name for p in written]
    # version has a single level: no map for it; no default data: no steering maps
    assert names == ["map_density.png", "map_template.png", "map_order.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def _steered_points() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A default cloud around 3 and, per profile, ten points pushed to its side of its dimension."""
    rng = np.random.default_rng(3)
    default = pd.DataFrame(3 + rng.normal(0, 0.2, (80, 5)), columns=list(DIMENSIONS))
    rows = []
    for short, (dim, side) in PROFILE_TARGET.items():
        for _ in range(10):
            scores = dict(zip(DIMENSIONS, 3 + rng.normal(0, 0.1, 5), strict=True))
            scores[dim] = 1.5 if side == "min" else 4.5
            rows.append({"append_label": f"You are {short.lower()} at heart.", **scores})
    return default, pd.DataFrame(rows)


@pytest.fixture
def steering() -> tuple[Reanalysis, pd.DataFrame]:
    default, steered = _steered_points()
    return reanalyse(steered, default=default, min_pts=5), default


def test_steering_map_overlays_targets_on_the_default_cloud(steering: tuple, figures: list) -> None:
    result, default = steering
    plots.steering_map(result, default, Path("map_steering.png"))
    (ax,) = figures[0].axes
    cloud, *targets = ax.collections
    assert _same_points(_offsets(cloud), result.projection.transform(default[list(DIMENSIONS)].to_numpy()))
    assert np.allclose(cloud.get_facecolor()[0], to_rgba("#c8c8c8"))
    assert len(targets) == len(PROFILE_TARGET)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["possible BFI results", "default", *PROFILE_TARGET]
    first = (result.frame["append_label"] == result.frame["append_label"].iloc[0]).to_numpy()
    assert _same_points(_offsets(targets[0]), result.coords[first])
    # the projection is the default cloud's: the steered points do not move it
    refit = reanalyse(_steered_points()[1], min_pts=5)
    assert not np.allclose(refit.projection.components, result.projection.components)


def test_extremes_panel_has_min_and_max_per_dimension(steering: tuple, figures: list) -> None:
    result, default = steering
    plots.extremes_panel(result, default, Path("map_extremes.png"))
    axes = figures[0].axes
    assert [ax.get_title() for ax in axes] == list(DIMENSIONS)
    shorts = result.frame["append_label"].str.extract(r"You are (\w+) at")[0].str.capitalize()
    for ax, dim in zip(axes, DIMENSIONS, strict=True):
        cloud, low, high = ax.collections
        assert len(_offsets(cloud)) == len(default)
        (low_name,) = [p for p, (d, s) in PROFILE_TARGET.items() if d == dim and s == "min"]
        (high_name,) = [p for p, (d, s) in PROFILE_TARGET.items() if d == dim and s == "max"]
        assert _same_points(_offsets(low), result.coords[(shorts == low_name).to_numpy()])
        assert _same_points(_offsets(high), result.coords[(shorts == high_name).to_numpy()])
        assert np.allclose(low.get_facecolor()[0], to_rgba("#1f77b4"))
        assert np.allclose(high.get_facecolor()[0], to_rgba("#d62728"))
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [
            f"min: {low_name}",
            f"max: {high_name}",
        ]


def test_all_maps_with_default_data_add_steering_and_extremes(steering: tuple, tmp_path: Path) -> None:
    result, default = steering
    names = [p.name for p in plots.all_maps(result, tmp_path, default)]
    assert names == ["map_density.png", "map_steering.png", "map_extremes.png"]
