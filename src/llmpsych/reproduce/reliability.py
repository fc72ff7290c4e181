"""LLMPersonality (thesis ch. 3, EMNLP 2024 "On the Reliability of Psychological Scales on LLMs"): Tables
3.3, 3.6, 3.10, 3.13-3.15 recomputed from the released saves (``LLMPersonality/Analysis/save``) by
:func:`llmpsych.reliability.reanalysis.reanalyse`, the code behind ``llmpsych reliability rescore``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .cells import Cause, PrintedCell, Recomputed, printed

SYSTEM = "LLMPersonality"
DATASET = "LLMPersonality"
PERSONALITY = (
    "personality_qa",
    "personality_qa_cot",
    "personality_biography",
    "personality_biography_cot",
    "personality_portray",
    "personality_portray_cot",
)
CITE = "thesis ch. 3 (= EMNLP 2024 paper)"
#: Table 3.3 and the outlier count come from a PCA map the thesis fitted on four models' 10,000 points;
#: only GPT-3.5-Turbo's 2,500 are released, so the outliers (76 here, 77 printed) and the differences of
#: the inliers move by up to 0.02; a larger difference is not explained by this. Neither a misprint nor a
#: convention: no setting llmpsych has reproduces every printed difference (map fitted on the released
#: points or on the 5^5 grid, DBSCAN eps 0.24-0.36 and minPts 15-25, or no outlier removal: at best 92 of
#: 135 within rounding, eps 0.34; keeping the outliers, 15), so the cells wait for the unreleased points.
MAP_NOT_RELEASED = (
    "the thesis fitted its outlier map on four models' points, three not released (76 outliers here, "
    "77 printed); no map or DBSCAN setting llmpsych has reproduces all 135 differences (at best 92)"
)
MAP_TOLERANCE = 0.0205


def _saves(data_dir: Path | None) -> Path:
    from ..data.sources import dataset_path
    from ..errors import DataError

    folder = dataset_path(DATASET, data_dir) / "Analysis" / "save"
    if not folder.is_dir():
        raise DataError(f"{folder} not found", f"run `llmpsych data fetch {DATASET}`")
    return folder


def _grid(data_dir: Path | None) -> Any:
    from ..reliability.saves import load_save

    return load_save(_saves(data_dir) / "save.json").frame


def _concat(data_dir: Path | None, names: tuple[str, ...]) -> Any:
    from ..reliability.saves import concat_saves, load_save

    return concat_saves([load_save(_saves(data_dir) / f"{n}.json") for n in names])


def table_3_6(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.6: mean ± SD of each dimension over the 2,500 configurations, per model."""
    from ..reliability.published import TABLE_3_6
    from ..reliability.reanalysis import reanalyse

    summary = reanalyse(_grid(data_dir)).summary.set_index("dimension")
    values: dict[tuple[str, str], float] = {
        (str(r["dimension"]), stat): float(r[stat])
        for r in summary.reset_index().to_dict("records")
        for stat in ("mean", "sd")
    }
    out = []
    for model, cells in TABLE_3_6.items():
        for dim, (mean, sd) in cells.items():
            for stat, value in (("mean", mean), ("sd", sd)):
                cell = PrintedCell(SYSTEM, "Table 3.6", model, f"{dim} {stat}", printed(value, 2), CITE)
                if model == "gpt-3.5-turbo":
                    out.append(Recomputed(cell, values[(dim, stat)]))
                else:
                    why = "only GPT-3.5-Turbo's grid is released"
                    out.append(Recomputed(cell, None, Cause("not-released", why)))
    return out


def table_3_3(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.3: each factor level's difference from the rest (inliers), and the outlier count."""
    from ..reliability.outliers import outlier_mask
    from ..reliability.projection import fit_projection
    from ..reliability.published import DIMENSIONS, OUTLIERS_GPT35, TABLE_3_3
    from ..reliability.reanalysis import reanalyse

    grid = _grid(data_dir)
    ours = reanalyse(grid).comparisons.set_index(["level", "dimension"])["difference"]
    out = []
    for level, cells in TABLE_3_3.items():
        for dim, (difference, _p) in cells.items():
            cell = PrintedCell(SYSTEM, "Table 3.3", level, f"{dim} difference", printed(difference, 2), CITE)
            value = float(ours.loc[(level, dim)])
            near = abs(value - difference) <= MAP_TOLERANCE
            out.append(Recomputed(cell, value, Cause("not-released", MAP_NOT_RELEASED) if near else None))
    points = grid[list(DIMENSIONS)].to_numpy()
    count = float(outlier_mask(fit_projection(points, "data").transform(points)).sum())
    cell = PrintedCell(SYSTEM, "Table 3.3", "gpt-3.5-turbo", "outliers", str(OUTLIERS_GPT35), "thesis §3.3.1")
    near = abs(count - OUTLIERS_GPT35) <= 1
    out.append(Recomputed(cell, count, Cause("not-released", MAP_NOT_RELEASED) if near else None))
    return out


def table_3_10(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.10: steering extremes against the default grid (the authors' F-test then t-test)."""
    from ..reliability.published import TABLE_3_10
    from ..reliability.reanalysis import reanalyse

    extremes = reanalyse(_concat(data_dir, PERSONALITY), default=_grid(data_dir)).extremes
    assert extremes is not None
    rows = {(r["dimension"], r["side"]): r for r in extremes.to_dict("records")}
    out = []
    for (dim, side), values in TABLE_3_10.items():
        row = rows.get((dim, side))
        for column, value, ours in zip(
            ("assigned mean", "assigned sd", "difference", "t"),
            values,
            ("assigned_mean", "assigned_sd", "difference", "t"),
            strict=True,
        ):
            cell = PrintedCell(
                SYSTEM, "Table 3.10", f"{dim} {side}", column, printed(value, 2), "000:880-893"
            )
            out.append(Recomputed(cell, None if row is None else float(row[ours])))
    return out


def _groups(
    table: str, groups: Any, published: Mapping[str, Mapping[str, tuple[float, float]]], key: str
) -> list[Recomputed]:
    rows = groups.set_index(key)
    out = []
    for name, cells in published.items():
        for dim, (mean, sd) in cells.items():
            for stat, value in (("mean", mean), ("sd", sd)):
                cell = PrintedCell(SYSTEM, table, name, f"{dim} {stat}", printed(value, 2), CITE)
                got = float(rows.loc[name, f"{dim}_{stat}"]) if name in rows.index else None
                out.append(Recomputed(cell, got))
    return out


def table_3_13(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.13: the BFI under sixteen emotional environments."""
    from ..reliability.published import TABLE_3_13
    from ..reliability.reanalysis import reanalyse
    from ..reliability.saves import load_save

    groups = reanalyse(load_save(_saves(data_dir) / "environment.json").frame).groups
    return _groups("Table 3.13", groups, TABLE_3_13, "append_label")


def table_3_14(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.14: the BFI under ten assigned personalities (QA, biography, portray; with and without CoT)."""
    from ..reliability.published import TABLE_3_14
    from ..reliability.reanalysis import reanalyse

    return _groups("Table 3.14", reanalyse(_concat(data_dir, PERSONALITY)).groups, TABLE_3_14, "short")


def table_3_15(data_dir: Path | None) -> list[Recomputed]:
    """Table 3.15: the BFI of sixteen characters."""
    from ..reliability.published import TABLE_3_15
    from ..reliability.reanalysis import reanalyse

    groups = reanalyse(_concat(data_dir, ("character", "character_cot"))).groups
    return _groups("Table 3.15", groups, TABLE_3_15, "append_label")
