"""``llmpsych mas ...`` on the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from llmpsych.collab.cli import app
from llmpsych.collab.scripted import ScriptedCollaborator
from llmpsych.testing.fault_server import FaultServer

runner = CliRunner()


def test_mas_run_compare_systems_and_preset(seed_data: Path, tmp_path: Path) -> None:
    with FaultServer(responder=ScriptedCollaborator({}, answers={"Alice": "1.5"})) as server:
        for fault in ("none", "autoinject"):
            result = runner.invoke(
                app,
                [
                    "run",
                    "--system",
                    "mad",
                    "--dataset",
                    "ciar",
                    "--items",
                    "2",
                    "--fault",
                    fault,
                    "--defence",
                    "challenger",
                    "--model",
                    "openai-compatible/scripted",
                    "--base-url",
                    server.base_url,
                    "--data-dir",
                    str(seed_data),
                    "--no-cache",
                    "--no-progress",
                    "--out",
                    str(tmp_path / fault),
                ],
            )
            assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "none" / "summary.json").read_text())
    assert summary["system"] == "mad" and summary["n_items"] == 2 and summary["score"] == 50.0
    result = runner.invoke(
        app, ["compare", str(tmp_path / "none"), str(tmp_path / "autoinject"), "--out", str(tmp_path / "cmp")]
    )
    assert result.exit_code == 0, result.output
    assert "Table 7.3 layout" in (tmp_path / "cmp" / "comparison.md").read_text()
    # a folder without summary.json (unfinished, or another benchmark's) is named, not silently skipped
    (tmp_path / "unfinished").mkdir()
    result = runner.invoke(
        app, ["compare", str(tmp_path / "none"), str(tmp_path / "unfinished"), "--out", str(tmp_path / "c2")]
    )
    assert result.exit_code == 0, result.output
    said = "left out 1 of 2 folders without summary.json"
    assert said in result.output.replace("\n", " ") or said in (result.stderr or "")
    assert "Left out, 1 of 2 folders given" in (tmp_path / "c2" / "comparison.md").read_text()
    assert runner.invoke(app, ["systems"]).exit_code == 0
    dry = runner.invoke(app, ["preset", "defences", "--dry-run"])
    assert dry.exit_code == 0 and dry.output.count("selfcollab_humaneval") == 12


def test_mas_run_bleurt_checkpoint_flag(seed_data: Path, tmp_path: Path) -> None:
    base = ["run", "--system", "mad", "--dataset", "commonmt", "--items", "1", "--no-progress"]
    base += ["--model", "openai-compatible/scripted", "--base-url", "http://127.0.0.1:9/v1"]
    base += ["--data-dir", str(seed_data)]
    out = ["--out", str(tmp_path / "run")]
    result = runner.invoke(app, [*base, *out, "--bleurt-checkpoint", str(tmp_path / "nowhere")])
    assert result.exit_code != 0
    assert "BLEURT checkpoint not found" in str(result.exception) + result.output
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "run2"), "--metric", "bleurt"])
    assert result.exit_code != 0
    assert "needs a local BLEURT checkpoint" in str(result.exception) + result.output


def test_mas_preset_takes_no_progress_like_every_run_command(seed_data: Path, tmp_path: Path) -> None:
    args = ["preset", "main", "--systems", "mad", "--tasks", "ciar", "--items", "1", "--no-progress"]
    with FaultServer(responder=ScriptedCollaborator({}, answers={"Alice": "1.5"})) as server:
        args += ["--model", "openai-compatible/scripted", "--base-url", server.base_url]
        result = runner.invoke(app, [*args, "--data-dir", str(seed_data), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "━" not in result.output  # no progress bar drawn
    runs = [p.parent.name for p in (tmp_path / "p").glob("*/summary.json")]
    assert len(runs) == 3 and "mad_ciar_none" in runs  # clean, AutoTransform, AutoInject
    assert (tmp_path / "p" / "comparison.md").is_file()
