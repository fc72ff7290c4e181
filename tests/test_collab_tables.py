"""The comparison tables on hand-made run summaries: Tables 7.4, 7.5 and 7.6, models, metric names."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from llmpsych.collab.analysis import METRIC_LABEL
from llmpsych.collab.experiments import (
    by_structure,
    by_task,
    compare_runs,
    error_rate_drops,
    error_rates,
    error_type_drops,
    error_types,
    improved_any,
    improvements,
    load_summaries,
)

STRUCTURE = {
    "metagpt": "linear",
    "selfcollab": "linear",
    "camel": "flat",
    "spp": "flat",
    "mad": "hierarchical",
    "agentverse": "hierarchical",
}
KIND = {"humaneval": "code", "ciar": "math", "commonmt": "translation", "faireval": "texteval"}
#: Tables 7.5 and 7.6 (thesis, GPT-3.5, HumanEval), specs/mas-resilience.md §8.6-8.7.
VANILLA = {"metagpt": 50.0, "selfcollab": 76.2, "camel": 62.2, "spp": 65.2, "mad": 62.2, "agentverse": 72.6}
SEMANTIC = {"metagpt": 26.8, "selfcollab": 40.9, "camel": 29.27, "spp": 34.8, "mad": 53.7, "agentverse": 49.4}
SYNTACTIC = {"metagpt": 29.3, "selfcollab": 75.6, "camel": 42.7, "spp": 28.7, "mad": 67.1, "agentverse": 43.3}
_count = itertools.count()


def _summary(
    root: Path, system: str, score: float, model: str = "gpt-3.5", dataset: str = "humaneval", **options: Any
) -> Path:
    run_dir = root / f"run{next(_count)}"
    run_dir.mkdir(parents=True)
    opts = {"fault": "none", "p_m": 1.0, "p_e": 0.2, "error_type": "semantic", "defence": [], **options}
    summary = {
        "system": system,
        "structure": STRUCTURE[system],
        "dataset": dataset,
        "metric": METRIC_LABEL[KIND[dataset]],
        "model": model,
        "options": {"metric": "chrf", **opts},
        "n_items": 164,
        "score": score,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def _ai(root: Path, system: str, score: float, **options: Any) -> Path:
    return _summary(root, system, score, fault="autoinject", **options)


def test_error_rates_scores_and_drops_against_each_systems_clean_run(tmp_path: Path) -> None:
    dirs = [_summary(tmp_path, s, v) for s, v in VANILLA.items()]
    dirs += [_ai(tmp_path, s, v) for s, v in SEMANTIC.items()]  # P_e=0.2, P_m=1.0
    dirs += [_ai(tmp_path, "metagpt", 52.44, p_m=0.2), _ai(tmp_path, "selfcollab", 68.29, p_m=0.2)]
    dirs += [_ai(tmp_path, "metagpt", 15.9, p_e=0.4)]
    # not part of the sweep: AutoTransform, a defended run, syntactic errors, another task
    dirs += [_summary(tmp_path, "metagpt", 1.0, fault="autotransform")]
    dirs += [
        _ai(tmp_path, "metagpt", 2.0, defence=["inspector"]),
        _ai(tmp_path, "spp", 3.0, error_type="syntactic"),
    ]
    dirs += [_summary(tmp_path, "mad", 4.0, dataset="ciar"), _ai(tmp_path, "mad", 5.0, p_m=0.2)]
    frame = load_summaries(dirs)
    frame = frame[frame.task == "humaneval"]
    scores, drops = error_rates(frame), error_rate_drops(frame)

    assert list(scores.index) == ["vanilla", "P_e=0.2, P_m=0.2", "P_e=0.2, P_m=1.0", "P_e=0.4, P_m=1.0"]
    assert list(scores.columns[:2]) == ["metagpt", "selfcollab"] and scores.columns[-1] == "average"
    assert round(scores.loc["vanilla", "average"], 3) == round(388.4 / 6, 3)
    assert round(scores.loc["P_e=0.2, P_m=1.0", "average"], 3) == 39.145
    assert round(scores.loc["P_e=0.2, P_m=0.2", "mad"], 2) == 5.0
    # per system: 100·(clean − faulty)/clean, spec §8.6 (46.4, 46.3, 52.9, 46.6, 13.7, 32.0)
    row = drops.loc["P_e=0.2, P_m=1.0"]
    assert [round(row[s], 1) for s in VANILLA] == [46.4, 46.3, 52.9, 46.6, 13.7, 32.0]
    # the average is the drop of the mean score against the mean clean score: 100·(64.733 − 39.145)/64.733
    assert round(row["average"], 1) == 39.5
    assert (
        round(drops.loc["P_e=0.2, P_m=0.2", "metagpt"], 2) == round(100 * (50.0 - 52.44) / 50.0, 2) == -4.88
    )
    assert round(drops.loc["P_e=0.2, P_m=0.2", "selfcollab"], 2) == 10.38
    assert round(drops.loc["P_e=0.2, P_m=0.2", "mad"], 2) == round(100 * (62.2 - 5.0) / 62.2, 2) == 91.96
    # averages are over the systems of the row: clean (50 + 76.2 + 62.2)/3, faulty (52.44 + 68.29 + 5)/3
    assert round(drops.loc["P_e=0.2, P_m=0.2", "average"], 2) == round(100 * (188.4 - 125.73) / 188.4, 2)
    assert round(drops.loc["P_e=0.4, P_m=1.0", "metagpt"], 1) == 68.2
    assert "vanilla" not in drops.index


def test_error_types_scores_and_drops(tmp_path: Path) -> None:
    dirs = [_summary(tmp_path, s, v) for s, v in VANILLA.items()]
    dirs += [_ai(tmp_path, s, v) for s, v in SEMANTIC.items()]
    dirs += [_ai(tmp_path, s, v, error_type="syntactic") for s, v in SYNTACTIC.items()]
    dirs += [_ai(tmp_path, "spp", 1.0, error_type="syntactic", p_e=0.4)]  # not the default rates
    frame = load_summaries(dirs)
    scores, drops = error_types(frame), error_type_drops(frame)

    assert list(scores.index) == ["vanilla", "semantic", "syntactic"]
    assert round(scores.loc["syntactic", "average"], 2) == 47.78 and scores.loc["syntactic", "spp"] == 28.7
    # spec §8.7: averaged over systems, drops of 39.5% (semantic) and 26.2% (syntactic)
    assert round(drops.loc["semantic", "average"], 1) == 39.5
    assert round(drops.loc["syntactic", "average"], 1) == 26.2
    # MAD improves with syntactic errors (67.1 > 62.2): a negative drop
    assert round(drops.loc["syntactic", "mad"], 2) == round(100 * (62.2 - 67.1) / 62.2, 2) == -7.88
    assert round(drops.loc["syntactic", "selfcollab"], 2) == 0.79
    assert list(drops.index) == ["semantic", "syntactic"]


def test_models_are_compared_separately(tmp_path: Path) -> None:
    dirs = [
        _summary(tmp_path, "mad", 62.2),
        _ai(tmp_path, "mad", 53.7),
        _summary(tmp_path, "mad", 80.0, model="gpt-4o"),
        _ai(tmp_path, "mad", 84.0, model="gpt-4o"),
        _summary(tmp_path, "camel", 62.0, model="gpt-4o"),
        _summary(tmp_path, "camel", 70.0, model="gpt-4o", fault="autotransform"),
    ]
    frame = load_summaries(dirs)
    with pytest.raises(ValueError, match="several models"):
        by_structure(frame)
    with pytest.raises(ValueError, match="several models"):
        error_rates(frame)
    old = by_structure(frame[frame.model == "gpt-3.5"])
    new = by_structure(frame[frame.model == "gpt-4o"])
    assert old.loc["clean", "hierarchical"] == 62.2 and new.loc["clean", "hierarchical"] == 80.0
    assert error_rate_drops(frame[frame.model == "gpt-4o"]).loc["P_e=0.2, P_m=1.0", "mad"] == -5.0

    # Table 7.4: gpt-4o MAD (84 > 80) and gpt-4o Camel (70 > 62) improved; gpt-3.5 MAD dropped.
    table = improvements(frame)
    assert table.loc["humaneval", "AutoInject"] == "mad (gpt-4o +4.00)"
    assert table.loc["humaneval", "AutoTransform"] == "camel (gpt-4o +8.00)"
    assert improved_any(table)

    compare_runs(dirs, tmp_path / "cmp")
    report = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "## gpt-3.5: performance by structure (Table 7.2 layout)" in report
    assert "## gpt-4o: performance by structure (Table 7.2 layout)" in report
    assert "Table 7.4 layout" in report and "mad (gpt-4o +4.00)" in report
    assert "71.10" not in report  # (62.2 + 80) / 2: the models are never averaged together


def test_no_improvement_says_none_and_not_run(tmp_path: Path) -> None:
    dirs = [_summary(tmp_path, "mad", 62.2), _ai(tmp_path, "mad", 62.2), _ai(tmp_path, "camel", 99.0)]
    dirs += [_summary(tmp_path, "mad", 40.0, dataset="faireval", fault="autotransform")]  # no clean run
    table = improvements(load_summaries(dirs))
    assert table.to_dict("index") == {"humaneval": {"AutoTransform": "not run", "AutoInject": "not observed"}}
    assert not improved_any(table)
    compare_runs(dirs, tmp_path / "cmp")
    report = (tmp_path / "cmp" / "comparison.md").read_text()
    section = report.split("(Table 7.4 layout)")[1].split("\n## ")[0]
    assert section.strip().startswith("None: no faulty setting scored above the clean run")


def test_task_columns_name_the_metric_from_the_summaries(tmp_path: Path) -> None:
    dirs = [
        _summary(tmp_path, "camel", 40.0, dataset="commonmt"),
        _summary(tmp_path, "camel", 30.0, dataset="commonmt", fault="autotransform"),
        _summary(tmp_path, "camel", 60.0),
    ]
    frame = load_summaries(dirs)
    assert list(by_task(frame).columns) == ["humaneval (Pass@1)", "commonmt (chrF, substitute for BLEURT-20)"]
    assert by_task(frame).loc["AutoTransform", "commonmt (chrF, substitute for BLEURT-20)"] == 30.0
    compare_runs(dirs, tmp_path / "cmp")
    report = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "commonmt (chrF, substitute for BLEURT-20)" in report
    assert METRIC_LABEL["translation"] in report  # the Metrics section quotes the summaries' label
