"""The executor flags and environment: wrong combinations are one-line errors before anything is made."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmpsych.errors import ConfigError
from llmpsych.runs.executors import ExecutorSettings, from_environment
from llmpsych.testing.runs import run_cli

ECHO = ["run", "--task", "echo", "--model", "openai-compatible/m", "--base-url", "http://127.0.0.1:9/v1"]


def test_an_unknown_executor_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run_cli(*ECHO, "--executor", "cluster", "--out", tmp_path / "r")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: unknown executor 'cluster' (choose one of: local, ray)"
    ]
    assert not (tmp_path / "r").exists()


def test_a_ray_address_without_the_ray_executor_is_refused(tmp_path: Path) -> None:
    done = run_cli(*ECHO, "--ray-address", "auto", "--out", tmp_path / "r")
    assert done.returncode == 2 and "--ray-address applies to --executor ray" in done.stderr
    assert not (tmp_path / "r").exists()
    env = {"LLMPSYCH_RAY_ADDRESS": "auto"}  # the same from the environment
    assert run_cli(*ECHO, "--out", tmp_path / "r", env=env).returncode == 2
    assert not (tmp_path / "r").exists()


def test_settings_from_the_environment() -> None:
    assert from_environment({}) == ExecutorSettings()
    env = {"LLMPSYCH_EXECUTOR": "ray", "LLMPSYCH_RAY_ACTORS": "4", "LLMPSYCH_RAY_ACTOR_CPUS": "0.5"}
    assert from_environment(env) == ExecutorSettings(kind="ray", actors=4, cpus_per_actor=0.5)
    with pytest.raises(ConfigError, match="LLMPSYCH_RAY_ACTORS='many' is not a whole number"):
        from_environment({"LLMPSYCH_RAY_ACTORS": "many"})
    with pytest.raises(ConfigError, match="actors >= 1"):
        from_environment({"LLMPSYCH_RAY_ACTORS": "0"})


#: (module of a command group, command): every command that starts runs
RUN_COMMANDS = [
    ("llmpsych.cli", "run"),
    ("llmpsych.psychobench.cli", "run"),
    ("llmpsych.games.cli", "run"),
    ("llmpsych.games.cli", "preset"),
    ("llmpsych.emotion.cli", "run"),
    ("llmpsych.reliability.cli", "run"),
    ("llmpsych.collab.cli", "run"),
    ("llmpsych.collab.cli", "preset"),
]


@pytest.mark.parametrize(("module", "command"), RUN_COMMANDS)
def test_every_run_command_and_preset_takes_the_executor_flags(module: str, command: str) -> None:
    app = importlib.import_module(module).app
    shown = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    for flag in ("--executor", "--ray-address", "--actors", "--actor-cpus", "--actor-threads"):
        assert flag in shown.output, flag


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "nothing answers at the Ray address 127.0.0.1:1"),
        ("ray://127.0.0.1:1", "nothing answers at the Ray address ray://127.0.0.1:1"),
        ("head-node", "is not auto, HOST:PORT or ray://HOST:PORT"),
    ],
)
def test_a_cluster_address_where_nothing_answers_is_refused_at_once(
    address: str, message: str, tmp_path: Path
) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")
    from llmpsych.runs import parse_run_config, start_run
    from llmpsych.runs.executors import use

    config = parse_run_config(
        {"task": "echo", "model": "openai-compatible/m", "base_url": "http://127.0.0.1:9/v1"}
    )
    with use(ExecutorSettings(kind="ray", address=address)), pytest.raises(ConfigError, match=message):
        start_run(config, tmp_path / "r", False)
    assert not (tmp_path / "r").exists()
