"""The CLI kit: task options from -O and --task-config checked against the task, one --debug for every
command, --resume that keeps what the run started with, and a command line that starts without the
research packages' libraries.

Every command runs in a fresh process (``python -m llmpsych``) against the scripted loopback server; the
exit status 1 of each benchmark's run command with failed units is tested in ``test_run_summary.py``.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from llmpsych import clikit as kit
from llmpsych.clikit import parse_options
from llmpsych.errors import ConfigError
from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer, status_reply
from llmpsych.testing.runs import run_cli

#: Libraries the research commands need and the command line itself must not load (seen in
#: ``python -X importtime``: pandas, scipy via reliability.analysis, aiohttp via data.fetch, numpy).
HEAVY = ("pandas", "numpy", "scipy", "aiohttp", "httpx", "matplotlib", "sklearn", "pyarrow", "xllamacpp")
#: The run engine and the task modules (pydantic models, the model clients) load only inside a command.
ENGINE = (
    "llmpsych.runs",
    "llmpsych.models",
    "llmpsych.psychobench.task",
    "llmpsych.emotion.task",
    "llmpsych.reliability.task",
    "llmpsych.collab.task",
    "llmpsych.games.task",
    "llmpsych.quickstart.task",
)


def loaded_after(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; the heavy and engine modules loaded, by the name of each
    stage the code printed (``print(json.dumps([stage, sorted(sys.modules)]))``)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    stages: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        stage, modules = json.loads(line)
        stages[stage] = [m for m in (*HEAVY, *ENGINE) if m in modules]
    return stages


def test_the_command_line_starts_without_the_research_libraries() -> None:
    """Importing the CLI, mounting every group as ``llmpsych --help`` does, and building the whole
    command tree (every group's help text) loads none of the libraries of the research code."""
    code = """if True:
        import json, sys
        import typer
        import llmpsych.cli as c
        c._mount_subcommands(["--help"])
        typer.main.get_command(c.app)
        print(json.dumps(["help", sorted(sys.modules)]))
    """
    assert loaded_after(code) == {"help": []}


@pytest.mark.parametrize(
    "group",
    ["psychobench", "emotionbench", "mas", "reliability", "report", "data", "scales", "gamabench", "web"],
)
def test_each_group_loads_only_its_command_line(group: str) -> None:
    """``llmpsych GROUP --help`` imports the group's CLI module, whose heavy imports wait in its
    commands."""
    code = f"""if True:
        import json, sys
        import typer
        import llmpsych.cli as c
        c._mount_subcommands([{group!r}, "--help"])
        typer.main.get_command(c.app)
        print(json.dumps(["group", sorted(sys.modules)]))
    """
    assert loaded_after(code) == {"group": []}


@pytest.mark.parametrize(
    ("package", "module"),
    [("llmpsych.data", "llmpsych.data.cli"), ("llmpsych.instruments", "llmpsych.instruments.cli")]
    + [("llmpsych.games", "llmpsych.games.cli")],
)
def test_a_group_cli_adds_nothing_heavy_to_its_package(package: str, module: str) -> None:
    """These packages' ``__init__`` re-export their modules on first use; the CLI module itself adds
    nothing heavy to the package."""
    code = f"""if True:
        import json, sys
        import {package}
        print(json.dumps(["package", sorted(sys.modules)]))
        import {module}
        print(json.dumps(["cli", sorted(sys.modules)]))
    """
    stages = loaded_after(code)
    assert stages["cli"] == stages["package"]
    assert not {"pandas", "numpy", "scipy", "matplotlib"} & set(stages["cli"])


@pytest.mark.parametrize(
    ("group", "summary"),
    [
        ("emotionbench", "ask the model to describe demographic groups;"),
        (
            "gamabench",
            "seats `web[:NAME]` (e.g. -O seats='[web:Ann, web:Bob, llm, llm]') get one join link",
        ),
    ],
)
def test_a_group_lists_each_command_summary_as_one_sentence(group: str, summary: str) -> None:
    """A command whose summary wraps in its docstring is listed with the sentence whole, not broken where
    the docstring's line ended (typer's rich help keeps those line breaks in a group's command list)."""
    result = run_cli(group, "--help")
    assert result.returncode == 0, result.stderr
    assert summary in result.stdout, result.stdout


def test_options_are_yaml_values_and_a_bad_pair_is_one_line() -> None:
    assert parse_options(["runs=3", "scales=[BFI, EPQ-R]", "stable=true", "persona=a=b", "x="]) == {
        "runs": 3,
        "scales": ["BFI", "EPQ-R"],
        "stable": True,
        "persona": "a=b",
        "x": None,
    }
    with pytest.raises(ConfigError, match="expects key=value"):
        parse_options(["runs"])
    with pytest.raises(ConfigError, match="runs: the value is not valid YAML"):
        parse_options(["runs=[1, 2"])


@pytest.mark.parametrize(
    "value",
    [
        "10",
        "0",
        "-0",
        "+7",
        "-12",
        "007",
        "0x1F",
        "0b101",
        "1_000",
        "1:30",
        "1e3",
        "1.5",
        ".inf",
        "12345678901234567890",
    ]
    + ["BFI", "bfi_2", "_", "yes", "No", "TRUE", "off", "On", "null", "Null", "NULL", "y", "n", "NaN", "inf"]
    + ["~", "", " 5", "5 ", "a b", "EPQ-R", "a.b", "[1, 2]", "{a: 1}", "'10'", "2024-01-01", "#x", "a#b"],
)
def test_an_option_value_is_what_yaml_reads_also_without_yaml(value: str) -> None:
    """Plain integers and words are read without importing YAML (``-O units=10``: ~0.02 s of CPU at
    every start); every value is still exactly what ``yaml.safe_load`` gives."""
    import yaml

    parsed = parse_options([f"k={value}"])["k"]
    expected = yaml.safe_load(value)
    assert parsed == expected and type(parsed) is type(expected), (value, parsed, expected)


def test_plain_option_values_do_not_import_yaml() -> None:
    code = """if True:
        import json, sys
        from llmpsych.clikit import parse_options
        plain = parse_options(["units=10", "scale=BFI", "seed=-3"])
        assert plain == {"units": 10, "scale": "BFI", "seed": -3}
        print(json.dumps(["plain", "yaml" in sys.modules]))
        parse_options(["scales=[BFI]"])
        print(json.dumps(["flow", "yaml" in sys.modules]))
    """
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert [json.loads(line) for line in result.stdout.splitlines()] == [["plain", False], ["flow", True]]


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_an_unknown_option_names_the_key_and_the_valid_ones(tmp_path: Path) -> None:
    line = one_line_error(run_cli("run", "--task", "echo", "-O", "unit=2", "--out", tmp_path / "r"))
    assert "unknown option 'unit' for task 'echo'" in line
    assert "valid options: units, turns, parallel, max_tokens" in line
    line = one_line_error(run_cli("mas", "run", "-O", "pm=0.5", "--out", tmp_path / "m"))
    assert "unknown option 'pm' for task 'mas'" in line and "p_m" in line and "sandbox_timeout" in line
    assert not (tmp_path / "r").exists() and not (tmp_path / "m").exists()


def test_an_option_given_as_flag_and_as_O_is_refused(tmp_path: Path) -> None:
    line = one_line_error(run_cli("emotionbench", "run", "--runs", "3", "-O", "runs=2", "-o", tmp_path))
    assert "option 'runs' is given twice: as --runs and as -O" in line


def test_an_unknown_task_is_one_fast_line() -> None:
    line = one_line_error(run_cli("run", "--task", "nope"))
    assert "unknown task 'nope'" in line and "echo" in line


def stored(run_dir: Path, key: str) -> object:
    store = RunStore.in_dir(run_dir)
    try:
        return store.get_meta(key)
    finally:
        store.close()


def test_task_config_file_then_O_then_explicit_flags(tmp_path: Path) -> None:
    """--task-config sets options; -O wins over it; a flag given on the command line wins over the file,
    a flag left at its default does not."""
    (tmp_path / "options.yaml").write_text("units: 3\nturns: 2\n")
    (tmp_path / "options.toml").write_text("runs = 4\ngame_players = 0\nmax_tokens = 32\n")
    with FaultServer() as server:
        url = ["-m", "openai-compatible/m", "--base-url", server.base_url, "--no-cache", "--no-progress"]
        echo = run_cli(
            "run", "--task", "echo", *url, "--task-config", tmp_path / "options.yaml", "-O", "turns=1",
            "--out", tmp_path / "echo",
        )  # fmt: skip
        quick = run_cli(
            "quickstart", *url, "--runs", "2", "--task-config", tmp_path / "options.toml",
            "--out", tmp_path / "quick",
        )  # fmt: skip
    assert echo.returncode == 0, echo.stderr
    assert stored(tmp_path / "echo", "config")["options"] == {"units": 3, "turns": 1}  # type: ignore[index]
    options = stored(tmp_path / "quick", "config")["options"]  # type: ignore[index]
    # only what was given is stored (game_rounds keeps its one default, the field's: issue 29)
    assert options == {"runs": 2, "game_players": 0, "max_tokens": 32}, quick.stderr


def test_a_task_config_that_is_not_a_mapping_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- units\n- 3\n")
    line = one_line_error(run_cli("run", "--task", "echo", "--task-config", tmp_path / "list.yaml"))
    assert "must hold a mapping" in line


@pytest.mark.parametrize(
    "args",
    [
        ["emotionbench", "run", "-O", "nope=1"],
        ["emotionbench", "--debug", "run", "-O", "nope=1"],
        ["--debug", "mas", "run", "-O", "nope=1"],
        ["reliability", "run", "-O", "nope=1"],
        ["psychobench", "run", "-O", "nope=1"],
        ["gamabench", "run", "-O", "nope=1"],
    ],
)
def test_debug_shows_the_traceback_in_every_sub_app(args: list[str]) -> None:
    debug = run_cli(*args, "--debug") if "--debug" not in args else run_cli(*args)
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr, debug.stderr
    assert "ConfigError: " in debug.stderr and "unknown option 'nope'" in debug.stderr
    plain = run_cli(*[a for a in args if a != "--debug"])
    assert "unknown option 'nope'" in one_line_error(plain)


def test_resume_keeps_the_display_choice_and_refuses_what_it_cannot_change(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {"LLMPSYCH_CACHE_DIR": str(tmp_path / "cache")}
    with FaultServer(api_key="right") as server:
        args = ["--model", "openai-compatible/m", "--base-url", server.base_url, "-O", "units=2"]
        failed = run_cli(
            "run", "--task", "echo", *args, "--no-progress", "--out", run_dir,
            env={**env, "LLMPSYCH_API_KEY": "wrong"},
        )  # fmt: skip
        assert failed.returncode == 1, failed.stderr
        assert stored(run_dir, "display") == {"progress": False}
        refused = run_cli("run", "--resume", run_dir, "-m", "openai-compatible/other", "-O", "units=3")
        line = one_line_error(refused)
        assert "--resume continues the run as it was started and cannot take --model, --option" in line
        assert "--base-url" in line and "--progress" in line
        resumed = run_cli("run", "--resume", run_dir, env={**env, "LLMPSYCH_API_KEY": "right"})
        assert resumed.returncode == 0, resumed.stderr
        assert "2/2 units done" in resumed.stdout
        assert "units/s" not in resumed.stdout + resumed.stderr  # no progress bar, as at the start
        assert stored(run_dir, "display") == {"progress": False}


def test_gamabench_run_plays_through_the_kit_and_exits_1_when_games_failed(tmp_path: Path) -> None:
    from llmpsych.testing.game_player import game_answer

    def scripted(body: dict[str, object]) -> str:
        return game_answer(body, fenced=True)

    args = ["gamabench", "run", "--game", "guessing", "--players", "2", "--rounds", "2", "--runs", "1"]
    args += ["-m", "openai-compatible/scripted", "--no-cache", "--no-progress"]
    with FaultServer(responder=scripted) as server:
        played = run_cli(*args, "--base-url", server.base_url, "-O", "max_reasks=1", "--out", tmp_path / "ok")
    assert played.returncode == 0, played.stderr
    assert "1/1 units done" in played.stdout and "wrote" in played.stdout
    options = stored(tmp_path / "ok", "config")["options"]  # type: ignore[index]
    assert options == {
        "game": "guessing",
        "runs": 1,
        "players": 2,
        "rounds": 2,
        "max_reasks": 1,
        "language": "en",  # resolved by the task and recorded (the built-in prompts are English)
    }
    with FaultServer(hostile=status_reply(400)) as server:
        refused = run_cli(*args, "--base-url", server.base_url, "--out", tmp_path / "bad")
    assert refused.returncode == 1, refused.stderr
    assert "0/1 units done, 1 failed" in refused.stdout


def test_a_config_file_option_is_checked_with_the_valid_ones_listed(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text('task = "echo"\noptions = { units = 2, turn = 1 }\n')
    line = one_line_error(run_cli("run", tmp_path / "run.toml", "--out", tmp_path / "r"))
    assert f"{tmp_path / 'run.toml'}: unknown option 'turn' for task 'echo'" in line and "turns" in line
    line = one_line_error(run_cli("run", tmp_path / "run.toml", "-O", "turns=1", "-O", "x=1"))
    assert "unknown option 'turn'" in line


def _flags_app(flags_type: type[kit.RunFlags] = kit.RunFlags) -> tuple[typer.Typer, list[kit.RunFlags]]:
    """A one-command app declaring some of the shared options; each call's flags are kept."""
    seen: list[kit.RunFlags] = []
    app = typer.Typer()

    def run(
        games: Annotated[int, typer.Option("--games")] = 1,
        model: kit.ModelOpt = None,
        seed: kit.SeedOpt = None,
        option: kit.OptionOpt = None,
        out: kit.OutOpt = None,
        progress: kit.ProgressOpt = True,
        debug: kit.DebugOpt = False,
        *,
        flags: kit.RunFlags,
    ) -> None:
        assert games == 2  # the command's own options still reach it
        seen.append(flags)

    app.command()(kit.run_command(run, flags_type))
    return app, seen


def test_run_flags_are_filled_once_from_the_shared_options(tmp_path: Path) -> None:
    app, seen = _flags_app()
    args = ["--games", "2", "-m", "openai/x", "--seed", "7", "-O", "a=1", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    (flags,) = seen
    assert (flags.models, flags.model, flags.seed, flags.option) == (("openai/x",), "openai/x", 7, ("a=1",))
    assert (flags.out, flags.progress, flags.base_url, flags.concurrency) == (tmp_path, False, None, None)
    assert flags.config_values() == {
        "model": "openai/x",
        "base_url": None,
        "seed": 7,
        "concurrency": None,
        "data_dir": None,
    }
    assert flags.but(models=("a", "b")).models == ("a", "b")
    with pytest.raises(ValueError, match="several"):
        _ = flags.but(models=("a", "b")).model


@dataclass(frozen=True)
class _WithBudget(kit.RunFlags):
    """The kit's flags with one more every-command flag: the one-place change a new shared flag is."""

    budget: str | None = field(
        default=None,
        metadata={"option": Annotated[str | None, typer.Option("--budget", help="Spend at most this.")]},
    )


def test_a_flag_added_to_run_flags_reaches_every_run_command_and_the_config() -> None:
    app, seen = _flags_app(_WithBudget)
    help_text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--budget" in help_text and "Spend at most this." in help_text
    assert help_text.index("--debug") < help_text.index("--budget")  # added after --debug
    result = CliRunner().invoke(app, ["--games", "2", "--budget", "5"])
    assert result.exit_code == 0, result.output
    (flags,) = seen
    assert isinstance(flags, _WithBudget) and flags.budget == "5"
    assert flags.config_values()["budget"] == "5"
    assert CliRunner().invoke(app, ["--games", "2"]).exit_code == 0
    assert seen[1].config_values()["budget"] is None  # not given: left out of the config


def test_a_run_command_without_a_shared_option_does_not_take_it() -> None:
    """``without=`` leaves a shared option out of one command: not offered, refused, its field at the
    default; a name that is no shared option is an error when the command is made."""
    seen: list[kit.RunFlags] = []
    app = typer.Typer()

    @app.command()
    @kit.run_command(without={"resume", "temperature"})
    def run(games: Annotated[int, typer.Option("--games")] = 1, *, flags: kit.RunFlags) -> None:
        seen.append(flags)

    offered = {p.name for p in typer.main.get_command(app).params}
    assert {"games", "seed", "model", "option", "debug", "executor"} <= offered
    assert not {"resume", "temperature"} & offered
    assert CliRunner().invoke(app, ["--temperature", "1"]).exit_code == 2  # no such option
    result = CliRunner().invoke(app, ["--seed", "3", "-m", "openai/x", "-O", "a=1"])
    assert result.exit_code == 0, result.output
    (flags,) = seen
    assert (flags.seed, flags.models, flags.option) == (3, ("openai/x",), ("a=1",))
    assert (flags.temperature, flags.resume, flags.debug) == (None, None, False)
    with pytest.raises(ValueError, match="names no shared option"):
        kit.run_command(without={"temprature"})(run)


def test_every_run_command_takes_its_flags_from_the_kit() -> None:
    """The eight commands that build a run config all receive a RunFlags (none reads the shared options
    itself), so a flag added to RunFlags reaches each of them."""
    import importlib

    commands = [
        ("llmpsych.cli", "run"),
        ("llmpsych.cli", "quickstart"),
        ("llmpsych.psychobench.cli", "run"),
        ("llmpsych.emotion.cli", "run"),
        ("llmpsych.reliability.cli", "run"),
        ("llmpsych.collab.cli", "run"),
        ("llmpsych.games.cli", "run_cmd"),
        ("llmpsych.games.cli", "host_cmd"),
    ]
    for module, name in commands:
        command = getattr(importlib.import_module(module), name)
        flags = inspect.signature(inspect.unwrap(command)).parameters.get("flags")
        assert flags is not None and flags.default is inspect.Parameter.empty, name  # filled by the kit
        assert "flags" not in inspect.signature(command).parameters, name  # not an option


def test_game_parameters_pass_the_option_check_and_a_misspelt_game_is_refused() -> None:
    """``-O 'guessing={ratio: 1/2}'`` (docs/games-engine.md) reaches the games task; a table named after
    no game is refused with the games listed, and a bad parameter value names the game."""
    from llmpsych.errors import ConfigError

    kit.check_options("gamabench", {"game": "guessing", "guessing": {"ratio": "1/2"}})
    with pytest.raises(ConfigError, match="guesing.*guessing, bar"):
        kit.check_options("gamabench", {"guesing": {"ratio": "1/2"}})
    with pytest.raises(ConfigError, match="unknown option 'nope' for task 'psychobench'"):
        kit.check_options("psychobench", {"nope": 1})
