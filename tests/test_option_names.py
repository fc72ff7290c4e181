"""A flag never renames what it sets: the options whose generated flags spelled a concept the old way were
renamed instead (PsychoBench ``scales`` -> ``scale``, ``scale_files`` -> ``scale_file``, ``mode`` ->
``method``, the t-test ``method`` -> ``test``; reliability ``repeats`` -> ``runs``, likewise ``mode`` and
``method``; the reliability grid's ``scale_files``, ``repeats``, ``method``).

Before, ``psychobench run`` showed ``--scales`` and ``--mode`` and ``reliability run`` ``--repeats`` and
``--mode`` next to the CLI's one spelling of each concept (``--scale``, ``--method``, ``--runs``), and
``--method`` meant the t-test there. Old names keep working: a stored run or config is read as the new
names (silently), and an old flag, ``-O`` key or task-config key typed by a user prints one notice line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.errors import ConfigError
from llmpsych.psychobench.options import PsychoBenchOptions
from llmpsych.reliability.task import ReliabilityOptions
from llmpsych.runs import RunStore, analyze_run, parse_run_config, resume_run, start_run
from llmpsych.runs.settings import config_settings
from llmpsych.testing.fault_server import FaultServer
from test_own_instruments import TIDY_YAML, scripted


@pytest.fixture(scope="module")
def server() -> Any:
    with FaultServer(responder=scripted) as s:
        yield s


def stored(run_dir: Path) -> dict[str, Any]:
    store = RunStore.in_dir(run_dir)
    try:
        config: dict[str, Any] = store.get_meta("config")
        return config
    finally:
        store.close()


def notices(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if " is now " in line]


def test_old_option_names_are_read_as_the_new_ones() -> None:
    old = PsychoBenchOptions.model_validate({"scales": "BFI,DTDD", "mode": "logprob", "method": "welch"})
    assert (old.scale, old.method, old.test) == (["BFI", "DTDD"], "logprob", "welch")
    # an old config's method alone was the t-test (its alias too); a new one's is the scoring method
    assert PsychoBenchOptions.model_validate({"method": "paper"}).test == "f-test"
    assert PsychoBenchOptions.model_validate({"method": "logprob"}).method == "logprob"
    reliability = ReliabilityOptions.model_validate({"repeats": 3, "mode": "logprob", "method": "student"})
    assert (reliability.runs, reliability.method, reliability.test) == (3, "logprob", "student")
    # the old and the new name at odds: an error naming the one to keep, never a silent choice
    with pytest.raises(ValueError, match="'repeats' is the old name of 'runs'"):
        ReliabilityOptions.model_validate({"repeats": 3, "runs": 2})
    assert "scale" in PsychoBenchOptions.model_fields and "scales" not in PsychoBenchOptions.model_fields


def test_a_run_stored_with_the_old_names_resumes_and_analyses(server: Any, tmp_path: Path) -> None:
    scale = tmp_path / "tidy.yaml"
    scale.write_text(TIDY_YAML, encoding="utf-8")
    config = {
        "task": "psychobench", "model": "openai-compatible/scripted", "base_url": server.base_url,
        "cache": False, "options": {"scale_file": [str(scale)], "runs": 2},
    }  # fmt: skip
    run_dir = tmp_path / "run"
    assert start_run(parse_run_config(config), run_dir, False).summary.done == 2
    new_settings = config_settings(stored(run_dir))
    # the store as an older llmpsych wrote it: the old option names, one unit still to run
    store = RunStore.in_dir(run_dir)
    try:
        options = store.get_meta("config")["options"]
        old = {"scales": ["TIDY"], "scale_files": options["scale_file"], "runs": 2}
        store.set_meta("config", {**store.get_meta("config"), "options": {**old, "mode": "generate"}})
        store.write([("UPDATE units SET status='pending', result=NULL WHERE unit_id=?", ("TIDY-run002",))])
    finally:
        store.close()
    assert config_settings(stored(run_dir)) == new_settings  # one setting, however it was stored
    outcome = resume_run(run_dir, False)
    assert (outcome.summary.done, outcome.summary.failed) == (1, 0)  # the one unit left
    assert analyze_run(run_dir)
    assert "TIDY" in (run_dir / "summary.csv").read_text()
    # the t-test of a stored run is its old `method` value
    store = RunStore.in_dir(run_dir)
    try:
        store.set_meta("config", {**store.get_meta("config"), "options": {**old, "method": "welch"}})
    finally:
        store.close()
    assert analyze_run(run_dir)
    assert "`--test welch`" in (run_dir / "report.md").read_text()


def test_old_flags_and_keys_work_with_one_line_each(server: Any, tmp_path: Path) -> None:
    """Typed by a user: the old flag (``--scales``, ``--scale-files``, ``--mode``, ``--method welch``), the
    old ``-O`` key and the old key of a ``--task-config`` file each print one notice; the stored config
    carries the new names."""
    cli._mount_subcommands()
    scale = tmp_path / "tidy.yaml"
    scale.write_text(TIDY_YAML, encoding="utf-8")
    common = [
        "-m",
        "openai-compatible/scripted",
        "--base-url",
        server.base_url,
        "--no-cache",
        "--no-progress",
    ]
    old = CliRunner().invoke(
        cli.app,
        ["psychobench", "run", *common, "--scales", "TIDY", "--scale-files", str(scale), "--mode", "generate",
         "--method", "welch", "--runs", "1", "--out", str(tmp_path / "old")],
    )  # fmt: skip
    assert old.exit_code == 0, old.output
    assert notices(old) == [
        f"note: `{a}` is now `{b}` (the old spelling goes in the next release)"
        for a, b in [
            ("--scales", "--scale"),
            ("--scale-files", "--scale-file"),
            ("--mode", "--method"),
            ("--method welch", "--test welch"),
        ]
    ]
    options = stored(tmp_path / "old" / "openai-compatible_scripted")["options"]
    assert {"scales", "scale_files", "mode"}.isdisjoint(options)
    assert options["scale"] == ["TIDY"] and options["method"] == "generate" and options["test"] == "welch"

    config = tmp_path / "task.yaml"
    config.write_text("scales: [TIDY]\nmethod: student\n", encoding="utf-8")
    typed = CliRunner().invoke(
        cli.app,
        ["psychobench", "run", *common, "--scale-file", str(scale), "--task-config", str(config),
         "-O", "mode=generate", "-O", "runs=1", "--out", str(tmp_path / "typed")],
    )  # fmt: skip
    assert typed.exit_code == 0, typed.output
    assert [line.split(" (")[0] for line in notices(typed)] == [
        f"note: `{config}: scales` is now `{config}: scale`",
        f"note: `{config}: method=student` is now `{config}: test=student`",
        "note: `-O mode` is now `-O method`",
    ]
    options = stored(tmp_path / "typed" / "openai-compatible_scripted")["options"]
    assert (options["scale"], options["test"], options["method"]) == (["TIDY"], "student", "generate")

    new = CliRunner().invoke(
        cli.app,
        ["psychobench", "run", *common, "--scale-file", str(scale), "--method", "generate", "--test", "welch",
         "--runs", "1", "--out", str(tmp_path / "new")],
    )  # fmt: skip
    assert new.exit_code == 0, new.output
    assert notices(new) == []
    # the old and the new flag at odds is one error line
    clash = CliRunner().invoke(
        cli.app, ["psychobench", "run", *common, "--method", "welch", "--test", "student"]
    )
    assert isinstance(clash.exception, ConfigError), clash.output
    assert str(clash.exception).startswith("--method welch is the old spelling of --test")
