"""People vs models on PANAS (EmotionBench's released data), the validity CLI, and self-report against
behaviour."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych.errors import DataError
from llmpsych.validity.behaviour import Pair, read_mapping, relate, thesis_fig_4_2
from llmpsych.validity.cli import app
from llmpsych.validity.simulate import simulate_long

SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seed-data"


def test_panas_people_against_the_released_model_runs_before_the_situation() -> None:
    result = CliRunner().invoke(
        app, ["people", "--data-dir", str(SEED), "--phase", "before", "--no-dif", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "PANAS across source: 2 groups: model (n=50), person (n=1266)." in out
    assert "Negative Affect (10 items), Positive Affect (10 items)" in out
    # the model's 50 default runs cannot carry 41 free parameters: said where the fit is shown
    assert "In model alone:" in out and "fewer than 5, Bentler & Chou 1987" in out
    assert "(metric invariance) holds" in out and "(scalar invariance) does not hold" in out


def test_invariance_cli_refuses_a_group_too_small_with_its_reason(tmp_path: Path) -> None:
    frame = simulate_long(groups=["a", "b"], n=40, factors={"A": [1, 2, 3], "B": [4, 5, 6]}, seed=1)
    frame = frame[~((frame["persona"] == "b") & (frame["respondent"].str.slice(2).astype(int) >= 10))]
    path = tmp_path / "items.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(app, ["invariance", str(path), "--by", "persona", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "group b: 10 complete respondents, fewer than the 30 required" in result.output
    assert "chi2" not in result.output.split("Not tested")[1]  # no fit is printed for a refused model


def test_invariance_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_text("respondent,scale,item\nr1,X,1\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "llmpsych", "validity", "invariance", str(path), "--by", "persona"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and "no column response" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_thesis_fig_4_2_relation() -> None:
    scores, behaviour = thesis_fig_4_2()
    pairs = [
        Pair("EPQ-R", "Psychoticism", "safetyqa", "negative"),
        Pair("EPQ-R", "Lying", "truthfulqa", "positive"),
    ]
    relations, points = relate(scores, behaviour, pairs)
    psy, lie = relations
    assert psy.n == 5 and psy.r < -0.9 and psy.agrees == "yes" and psy.low < psy.r < psy.high
    assert lie.n == 5 and lie.low < 0 < lie.high  # five roles: the interval spans zero
    assert len(points) == 10


def test_relation_without_enough_conditions_or_variance_is_not_a_number() -> None:
    scores = pd.DataFrame(
        {"persona": ["a", "b", "c"], "scale": "S", "subscale": "T", "score": [1.0, 1.0, 1.0]}
    )
    behaviour = pd.DataFrame({"persona": ["a", "b", "c"], "behaviour": "x", "value": [1.0, 2.0, 3.0]})
    (flat,), _ = relate(scores, behaviour, [Pair("S", "T", "x")])
    assert math.isnan(flat.r) and "the score is the same in every condition" in flat.note
    (two,), _ = relate(scores.iloc[:2], behaviour, [Pair("S", "T", "x")])
    assert math.isnan(two.r) and "2 conditions" in two.note


def test_the_shipped_mapping_parses_and_a_broken_one_is_named(tmp_path: Path) -> None:
    assert len(read_mapping()) >= 5
    bad = tmp_path / "map.toml"
    bad.write_text('[[pair]]\nscale = "BFI"\nbehaviour = "safetyqa"\n')
    with pytest.raises(DataError, match="pair 1 has no subscale"):
        read_mapping(bad)


def test_behaviour_cli_thesis_writes_a_report_and_a_plot(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["behaviour", "--thesis", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "EPQ-R Psychoticism vs safetyqa: r = -0.99" in result.output
    assert (tmp_path / "behaviour.csv").is_file() and (tmp_path / "behaviour.md").is_file()


def test_an_imported_human_sample_against_model_answers_on_the_same_scale(tmp_path: Path) -> None:
    """People imported with `psychobench import-answers` (a run folder) against model answers given as an
    item table: the folder is read into the long format with source person and the scale's subscales."""
    from llmpsych.instruments.official import load_psychobench_scales
    from llmpsych.psychobench.imports import import_answers
    from llmpsych.validity._runs import load_frame

    gse = load_psychobench_scales(SEED)["GSE"]  # 10 items, one subscale
    items = list(gse.item_indices)
    people = simulate_long(groups=["person"], n=60, factors={"x": items}, points=4, seed=11)
    wide = people.pivot(index="respondent", columns="item", values="response").astype(int)
    wide.insert(0, "run", range(1, len(wide) + 1))
    answers = tmp_path / "people.csv"
    wide.to_csv(answers, index=False)
    import_answers(answers, tmp_path / "humans", scale_files=[], scales=["GSE"], data_dir=SEED)
    models = simulate_long(groups=["m"], n=60, factors={"x": items}, points=4, scale="GSE", seed=12)
    models["source"] = "model"
    table = tmp_path / "models.csv"
    models.drop(columns=["persona"]).to_csv(table, index=False)

    frame = load_frame([tmp_path / "humans", table])
    humans = frame[frame["source"] == "person"]
    assert len(humans) == 60 * len(items) and humans["response"].notna().all()
    assert set(humans["scale"]) == {"GSE"}

    result = CliRunner().invoke(app, ["people", str(tmp_path / "humans"), str(table), "--no-dif", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "GSE across source: 2 groups: model (n=60), person (n=60)." in result.output


def test_behaviour_from_a_validity_sweep_folder(tmp_path: Path) -> None:
    """The folder `psychobench validity --preset thesis` writes: per-run behaviour and each persona's
    PsychoBench scores, related per persona (a mean over runs each), n = personas."""
    roles = {"hero": (3.0, 99.0), "default": (5.0, 100.0), "liar": (18.0, 55.0), "psychopath": (24.0, 22.0)}
    (tmp_path / "validity").mkdir()
    rows = [
        {
            "benchmark": "safetyqa",
            "persona": p,
            "run": r,
            "questions": 10,
            "valid": 10,
            "invalid": 0,
            "score": safe + r,
        }
        for p, (_, safe) in roles.items()
        for r in (1, 2, 3)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "validity" / "validity_runs.csv", index=False)
    for p, (psy, _) in roles.items():
        (tmp_path / f"scales-{p}").mkdir()
        pd.DataFrame(
            [
                {"scale": "EPQ-R", "run": r, "subscale": "Psychoticism", "score": psy + r, "range": "0-32"}
                for r in (1, 2)
            ]
        ).to_csv(tmp_path / f"scales-{p}" / "scores.csv", index=False)
    result = CliRunner().invoke(app, ["behaviour", "--sweep", str(tmp_path)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("EPQ-R Psychoticism vs safetyqa"))
    assert "n = 4 conditions" in line and "as expected" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = CliRunner().invoke(app, ["behaviour", "--sweep", str(empty)])
    assert bad.exit_code != 0 and "no validity/validity_runs.csv" in str(bad.exception)
