"""The executor flags and environment: wrong combinations are one-line errors before anything is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from llmpsych import clikit as kit
from llmpsych.clikit import EXECUTOR_FLAGS
from llmpsych.errors import ConfigError
from llmpsych.runs.executors import ExecutorSettings, current, from_environment, use
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


def _commands() -> dict[str, set[str]]:
    """Every command and group of the ``llmpsych`` CLI (``"gamabench preset"``) with its parameters'
    names."""
    from llmpsych.cli import _mount_subcommands, app

    _mount_subcommands()
    found: dict[str, set[str]] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found[" ".join(path)] = {str(param.name) for param in command.params}  # a group's options too
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


#: Every command that starts or resumes runs of models (a preset and a sweep too).
RUN_COMMANDS = {
    "run",
    "quickstart",
    "psychobench run",
    "psychobench validity",
    "psychobench preset",
    "gamabench run",
    "gamabench preset",
    "gamabench translate",
    "gamabench rephrase",
    "emotionbench run",
    "emotionbench describe",
    "emotionbench translate",
    "emotionbench finetune evaluate",
    "reliability run",
    "reliability grid",
    "reliability retest-run",
    "mas run",
    "mas preset",
    "scales translate",
}


def test_every_run_command_and_preset_takes_the_executor_flags_and_no_other_command_does() -> None:
    commands = _commands()
    assert {k for k in commands if k.startswith("games ")} == {
        "games " + k.removeprefix("gamabench ") for k in commands if k.startswith("gamabench ")
    }  # `games` is an alias of `gamabench`
    commands = {name: params for name, params in commands.items() if not name.startswith("games ")}
    taking = {name for name, params in commands.items() if params & EXECUTOR_FLAGS}
    assert taking == RUN_COMMANDS
    for name in RUN_COMMANDS:
        assert commands[name] >= EXECUTOR_FLAGS, name  # all of them, never a few
    for name in ("gamabench host", "web", "analyze", "report", "export", "serve"):
        assert name in commands and not commands[name] & EXECUTOR_FLAGS, name
    rescoring = [name for name in commands if "rescore" in name or name.startswith("gamabench score")]
    assert len(rescoring) >= 4 and not any(commands[name] & EXECUTOR_FLAGS for name in rescoring)


@pytest.mark.parametrize("command", ["psychobench preset", "gamabench preset", "mas preset", "run"])
def test_the_help_of_a_preset_shows_the_executor_flags(command: str) -> None:
    from llmpsych.cli import _mount_subcommands, app

    _mount_subcommands()
    shown = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    for flag in (
        "--executor",
        "--ray-address",
        "--actors",
        "--actor-cpus",
        "--actor-gpus",
        "--actor-threads",
    ):
        assert flag in shown.output, flag


def _recording_app(make: Any) -> tuple[typer.Typer, list[ExecutorSettings]]:
    """A one-command app made by ``make`` (a kit decorator) that records the executor its runs get."""
    seen: list[ExecutorSettings] = []
    app = typer.Typer()

    def command(debug: kit.DebugOpt = False) -> None:
        seen.append(current())

    app.command()(make(command))
    return app, seen


@pytest.mark.parametrize("make", [kit.run_command, kit.sweep_command])
def test_the_flags_set_the_executor_of_the_command_only(make: Any) -> None:
    """Given flags win over the process's settings (the environment's), for the command's duration."""
    app, seen = _recording_app(make)
    before = current()
    with use(ExecutorSettings(kind="ray", actors=4, threads_per_actor=2)):
        args = ["--executor", "ray", "--actors", "3", "--actor-gpus", "0.5", "--actor-cpus", "2"]
        assert CliRunner().invoke(app, args).exit_code == 0
        assert CliRunner().invoke(app, []).exit_code == 0
    assert current() == before  # nothing outlives the command
    assert seen == [
        ExecutorSettings(kind="ray", actors=3, cpus_per_actor=2, gpus_per_actor=0.5, threads_per_actor=2),
        ExecutorSettings(kind="ray", actors=4, threads_per_actor=2),
    ]
    refused = CliRunner().invoke(app, ["--executor", "cluster"])
    assert isinstance(refused.exception, ConfigError) and not seen[2:]  # refused before the command ran


def test_the_executor_flags_are_not_part_of_the_run_config_and_resume_honours_them() -> None:
    flags = kit.RunFlags(executor="ray", actors=3, actor_gpus=1.0, seed=2)
    assert flags.config_values() == {
        "model": None,
        "base_url": None,
        "seed": 2,
        "concurrency": None,
        "data_dir": None,
    }
    assert flags.executor_settings().gpus_per_actor == 1.0
    assert {
        "executor",
        "ray_address",
        "actors",
        "actor_cpus",
        "actor_gpus",
        "actor_threads",
    } == EXECUTOR_FLAGS
    assert EXECUTOR_FLAGS <= kit.RESUME_FLAGS


def test_a_person_s_seat_command_keeps_the_environment_s_executor() -> None:
    """``gamabench host`` takes no executor flags and leaves the executor as the process has it."""
    app, seen = _recording_app(kit.local_run_command)
    with use(ExecutorSettings(kind="ray", actors=5)):
        assert CliRunner().invoke(app, []).exit_code == 0
        assert CliRunner().invoke(app, ["--executor", "ray"]).exit_code == 2  # no such option
    assert seen == [ExecutorSettings(kind="ray", actors=5)]


def test_the_gpu_flag_from_the_environment(tmp_path: Path) -> None:
    assert from_environment({"LLMPSYCH_RAY_ACTOR_GPUS": "0.5"}) == ExecutorSettings(gpus_per_actor=0.5)
    with pytest.raises(ConfigError, match="LLMPSYCH_RAY_ACTOR_GPUS='one' is not a number"):
        from_environment({"LLMPSYCH_RAY_ACTOR_GPUS": "one"})
    done = run_cli(*ECHO, "--out", tmp_path / "r", env={"LLMPSYCH_RAY_ACTOR_GPUS": "-1"})
    assert done.returncode == 2 and "no negative CPUs, GPUs or threads" in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "nothing answers at the Ray address 127.0.0.1:1"),
        ("ray://127.0.0.1:1", r"Ray Client \(ray://\) addresses cannot run llmpsych's actors"),
        ("head-node", "is not auto or HOST:PORT"),
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
