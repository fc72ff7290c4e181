"""Test-retest over time (Fig. 3.5, Table 3.7): scripted dated BFI runs through the run engine, the
statistics against the thesis's printed table, and the refusal of runs of different configurations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from llmpsych.errors import ConfigError
from llmpsych.reliability.retest import load_measurements
from llmpsych.runs import parse_run_config, read_run, start_run
from llmpsych.stats.compare import GroupStats, t_test_from_stats
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli

#: Table 3.7 (000:823-835; spec Table 3.7): dimension, average mean ± sd, extremum mean ± sd, printed p.
TABLE_3_7 = [
    ("O", 4.12, 0.28, 4.01, 0.29, 0.25),
    ("O", 4.12, 0.28, 4.23, 0.25, 0.23),
    ("C", 4.12, 0.25, 4.00, 0.19, 0.16),
    ("C", 4.12, 0.25, 4.28, 0.32, 0.06),
    ("E", 3.68, 0.19, 3.60, 0.15, 0.20),
    ("E", 3.68, 0.19, 3.79, 0.22, 0.10),
    ("A", 4.20, 0.17, 4.11, 0.17, 0.12),
    ("A", 4.20, 0.17, 4.37, 0.17, 0.00),
    ("N", 2.28, 0.23, 2.20, 0.22, 0.30),
    ("N", 2.28, 0.23, 2.36, 0.21, 0.30),
]


def test_student_t_of_an_extreme_date_against_all_reproduces_table_3_7() -> None:
    """Ten biweekly dates (mid-September to late January) of ten BFI runs each: the Student's t-test
    retest uses gives every printed p within 0.02 (the inputs are printed to two decimals), and the same
    'equal mean?' verdicts at alpha 0.05 (only Agreeableness' maximum differs)."""
    for dim, mean, sd, extreme, extreme_sd, printed in TABLE_3_7:
        result = t_test_from_stats(
            GroupStats(extreme, extreme_sd, 10), GroupStats(mean, sd, 100), equal_var=True
        )
        assert result.p_value == pytest.approx(printed, abs=0.02), dim
        assert (result.p_value > 0.05) == (printed > 0.05), dim


SHIFT = {"value": 0}


def rate(body: dict[str, Any]) -> str:
    """Each statement rated by its position plus the current shift, so each date has its own level."""
    low, high = (int(x) for x in re.search(r"from (\d+) to (\d+)", body["messages"][0]["content"]).groups())
    listed = re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)
    span = high - low + 1
    return "\n".join(f"{item}: {low + (p % 2 + SHIFT['value']) % span}" for p, item in enumerate(listed))


def bfi_config(server: FaultServer, seed_data: Path, seed: int = 0, runs: int = 4) -> Any:  # noqa: ANN401
    return parse_run_config(
        {
            "task": "psychobench",
            "model": "openai-compatible/scripted",
            "base_url": server.base_url,
            "cache": False,
            "seed": seed,
            "data_dir": str(seed_data),
            "options": {"scale": ["BFI"], "runs": runs},
        }
    )


def test_retest_of_dated_runs(tmp_path: Path, seed_data: Path) -> None:
    folder = tmp_path / "retest"
    with FaultServer(responder=rate) as server:
        for day, shift in enumerate((0, 2, 0)):
            SHIFT["value"] = shift
            start_run(bfi_config(server, seed_data, seed=day), folder / f"d{day}", False)
        other = start_run(bfi_config(server, seed_data, runs=3), tmp_path / "other", False).run_dir
    dates = [read_run(folder / f"d{d}").manifest["created"] for d in range(3)]
    assert dates == sorted(dates)
    done = run_cli("reliability", "retest", folder, "--out", tmp_path / "report", "--json")
    assert done.returncode == 0, done.stderr
    rows = {(r["dimension"], r["side"]): r for r in json.loads(done.stdout)}
    assert len(rows) == 10
    per = pd.read_csv(tmp_path / "report" / "retest_measurements.csv")
    assert list(per["measurement"].unique()) == ["d0", "d1", "d2"] and set(per["n"]) == {4}
    # the shifted date is an extreme of every dimension, and its mean is that measurement's
    for (dim, side), row in rows.items():
        part = per[per["dimension"] == dim].set_index("measurement")["mean"]
        assert row["extreme"] == pytest.approx(part[row["run"]])
        assert row["run"] == (part.idxmin() if side == "min" else part.idxmax())
        assert "d1" in (rows[(dim, "min")]["run"], rows[(dim, "max")]["run"])
    anova = pd.read_csv(tmp_path / "report" / "retest_anova.csv")
    assert (anova["measurements"] == 3).all()
    assert (tmp_path / "report" / "retest.md").is_file() and (tmp_path / "report" / "retest.html").is_file()
    # a run of another configuration is refused in one line
    with pytest.raises(ConfigError, match="differ in: options"):
        load_measurements([folder / "d0", other])
    refused = run_cli("reliability", "retest", folder / "d0", other)
    assert refused.returncode != 0 and "not the same configuration" in refused.stderr


def test_retest_run_takes_one_uncached_bfi_measurement(tmp_path: Path, seed_data: Path) -> None:
    with FaultServer(responder=rate) as server:
        done = run_cli(
            "reliability", "retest-run", tmp_path / "m", "--model", "openai-compatible/scripted",
            "--base-url", server.base_url, "--runs", "2", "--data-dir", seed_data, "--no-progress",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [run_dir] = list((tmp_path / "m").iterdir())
    config = read_run(run_dir).config
    assert config.options == {"scale": ["BFI"], "runs": 2} and config.cache is False
    assert config.params.temperature == 0


def test_retest_of_reliability_runs(tmp_path: Path, seed_data: Path) -> None:
    """Reliability runs (one grid of configurations per date) are measurements too."""
    from test_reliability_task import Respondent  # the scripted BFI respondent of the reliability grid

    grid = {"languages": ["En"], "templates": ["t1", "t2"], "versions": ["v1"], "labels": ["n"]}
    with FaultServer(responder=Respondent(seed_data)) as server:
        for day in range(2):
            cfg = parse_run_config(
                {
                    "task": "reliability",
                    "model": "openai-compatible/scripted",
                    "base_url": server.base_url,
                    "cache": False,
                    "seed": day,
                    "data_dir": str(seed_data),
                    "options": grid,
                }
            )
            start_run(cfg, tmp_path / f"d{day}", False)
    measurements = load_measurements([tmp_path / "d1", tmp_path / "d0"])
    assert [m.label for m in measurements] == ["d0", "d1"]  # date order (then name), not argument order
    assert [len(m.points) for m in measurements] == [4, 4]  # one point per configuration of the grid
    done = run_cli("reliability", "retest", tmp_path / "d0", tmp_path / "d1", "--out", tmp_path / "report")
    assert done.returncode == 0, done.stderr
    assert "Openness" in done.stdout and (tmp_path / "report" / "retest.png").is_file()


def test_each_retest_date_asks_its_own_item_orders(
    tmp_path: Path, seed_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from llmpsych.reliability import cli as reliability_cli

    stamps = iter(["2024-01-15T093000", "2024-01-29T093000"])
    monkeypatch.setattr(reliability_cli, "_stamp", lambda: next(stamps))
    with FaultServer(responder=rate) as server:
        for _ in range(2):
            done = CliRunner().invoke(
                reliability_cli.app,
                [
                    "retest-run", str(tmp_path / "m"), "--model", "openai-compatible/scripted",
                    "--base-url", server.base_url, "--runs", "3", "--data-dir", str(seed_data),
                    "--no-progress",
                ],
            )  # fmt: skip
            assert done.exit_code == 0, (done.output, done.exception)
    first, second = (read_run(tmp_path / "m" / stamp) for stamp in ("2024-01-15T093000", "2024-01-29T093000"))
    assert first.config.seed != second.config.seed  # stored: a resume keeps each date's orders

    def orders(record: Any) -> list[list[int]]:  # noqa: ANN401 - a run record
        return [unit.result["order"] for unit in record.units]

    assert orders(first) != orders(second)
    assert all(a != b for a, b in zip(orders(first), orders(second), strict=True))
    # the same date again gives the same seed (reproducible), and the folder is refused, not overwritten
    monkeypatch.setattr(reliability_cli, "_stamp", lambda: "2024-01-15T093000")
    again = CliRunner().invoke(reliability_cli.app, ["retest-run", str(tmp_path / "m"), "--no-progress"])
    assert again.exit_code != 0 and "exists already" in str(again.exception)


def test_retest_chart_labels_dates_with_their_time() -> None:
    from llmpsych.reliability.retest import date_labels

    dates = ["2024-01-15T09:30:00+00:00", "2024-01-15T17:05:10+00:00", "2024-01-15T17:05:40+00:00", ""]
    labels = date_labels(dates, ["a", "b", "c", "save"])
    assert labels == ["2024-01-15 09:30", "2024-01-15 17:05:10", "2024-01-15 17:05:40", "save"]
    assert len(set(labels)) == len(labels)  # two measurements of one day are told apart
