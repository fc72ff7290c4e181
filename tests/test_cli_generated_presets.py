"""The MAS-Resilience preset, the quickstart, ``psychobench validity`` and ``gamabench host`` are
generated from their task's ``Options`` as the other run commands and presets are.

Before, ``mas preset`` declared ``--items``, ``--max-tokens``, ``--model``, ``--out``, ``--dry-run``,
``--progress`` by hand with its own defaults (``--out mas-preset``, one model, no ``--temperature`` or
``--seed``), and ``quickstart`` declared ``--runs``/``--game-rounds`` with second defaults and set
``game_players`` through ``--game-seats`` and ``--game/--no-game``; ``psychobench validity`` declared five
of its task's options again (``--runs`` "default 3" in its help) and ``gamabench host`` five of
gamabench's (``--game guessing``, ``--max-tokens 1024`` a second time). No model is called: the configs are
caught before they start (``--dry-run`` for the preset).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych import clikit as kit
from llmpsych.errors import ConfigError
from llmpsych.runs.task import task_class

#: (command path, the task whose options it takes)
GENERATED = [
    ("mas preset", "mas"),
    ("quickstart", "quickstart"),
    ("psychobench preset", "psychobench"),
    ("gamabench preset", "gamabench"),
    ("psychobench validity", "validity"),
    ("gamabench host", "gamabench"),
]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    cli._mount_subcommands()
    return cli.app


def params_of(app: typer.Typer, path: str) -> dict[str, Any]:
    command: Any = typer.main.get_command(app)
    for word in path.split():
        command = command.commands[word]
    ctx = command.make_context(path, ["x"] if "preset" in path else [], resilient_parsing=True)
    return {p.name: p for p in command.get_params(ctx)}


@pytest.mark.parametrize(("path", "task"), GENERATED)
def test_every_option_is_a_flag_of_its_name_with_the_fields_default(
    app: typer.Typer, path: str, task: str
) -> None:
    params = params_of(app, path)
    fields = task_class(task).Options.model_fields
    for name, info in fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("flag") is False:
            continue
        param = params.get(kit.OPTION_PARAM + name)
        assert param is not None, f"{path}: option {name!r} has no flag"
        assert param.opts == ["--" + name.replace("_", "-")], (name, param.opts)
        assert param.help, (path, name)
        default = param.default
        if isinstance(default, str) and param.metavar is None and param.help.endswith("as -O reads it."):
            default = yaml.safe_load(default)
        default = list(default) if isinstance(default, tuple) else default
        expected = info.get_default(call_default_factory=True)
        assert default == expected or (default in (None, []) and expected in (None, [])), (name, default)
    own = {"--" + n.replace("_", "-") for n in fields}
    for name, param in params.items():  # no other flag carries an option's name
        if not name.startswith(kit.OPTION_PARAM):
            assert not own & set(param.opts), (path, name, param.opts)


def dry_run(app: typer.Typer, *args: str) -> Any:
    return CliRunner().invoke(app, ["mas", "preset", *args, "--dry-run"])


def test_mas_preset_old_tasks_flag_is_datasets_with_one_line(app: typer.Typer) -> None:
    old = dry_run(app, "main", "--systems", "mad", "--tasks", "ciar")
    new = dry_run(app, "main", "--systems", "mad", "--datasets", "ciar")
    assert old.exit_code == new.exit_code == 0, old.output
    assert old.stdout == new.stdout and new.stdout.count("| mad_ciar_") == 3
    assert old.stderr.splitlines() == [
        "note: `--tasks` is now `--datasets` (the old spelling goes in the next release)"
    ]
    assert new.stderr == ""
    both = dry_run(app, "main", "--tasks", "ciar", "--datasets", "ciar")
    assert isinstance(both.exception, ConfigError) and "give --datasets only" in str(both.exception)


def test_mas_preset_task_options_are_the_run_commands_flags(app: typer.Typer) -> None:
    result = dry_run(app, "error-types", "--systems", "camel", "--items", "3", "--max-tokens", "64")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("| camel_")]
    assert len(rows) == 3 and all('"items": 3' in r and '"max_tokens": 64' in r for r in rows)
    # the field checks the value (ge=16), as `mas run --max-tokens` and -O do
    low = dry_run(app, "main", "--max-tokens", "8")
    assert low.exit_code != 0 and "max_tokens" in str(low.exception) + low.output
    # an option the preset varies would be overwritten run by run: refused, naming the subset flags
    varied = dry_run(app, "defences", "--fault", "none")
    assert isinstance(varied.exception, ConfigError) and "--systems / --datasets" in str(varied.exception)
    unknown = dry_run(app, "main", "--systems", "camle")
    assert isinstance(unknown.exception, ConfigError) and "unknown 'camle'" in str(unknown.exception)


def test_mas_preset_keeps_one_model_flat_and_puts_several_in_model_folders(app: typer.Typer) -> None:
    one = dry_run(app, "rounds", "--model", "a/m")
    assert "| camel_humaneval50_none " in one.stdout  # an earlier preset folder resumes
    two = dry_run(app, "rounds", "--model", "a/m", "--model", "b/m")
    assert "| a_m/camel_humaneval50_none " in two.stdout and "| b_m/camel_humaneval50_none " in two.stdout
    assert "4 run directories" in two.stdout


class Planned(Exception):
    """Raised instead of starting a run."""


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    built: list[Any] = []
    build = kit.build_config

    def catch(*args: Any, **kwargs: Any) -> Any:
        built.append(build(*args, **kwargs))
        raise Planned

    monkeypatch.setattr(kit, "build_config", catch)
    return built


@pytest.mark.parametrize(
    ("old", "new", "players"),
    [
        (["--game-seats", "3"], ["--game-players", "3"], 3),
        (["--no-game"], ["--game-players", "0"], 0),
        (["--game"], [], None),
    ],
)
def test_quickstart_old_game_flags_say_the_new_spelling(
    app: typer.Typer, planned: list[Any], old: list[str], new: list[str], players: int | None
) -> None:
    outputs = []
    for args in (old, new):
        result = CliRunner().invoke(app, ["quickstart", *args, "--runs", "2"])
        assert isinstance(result.exception, Planned), result.output
        outputs.append(result)
    new_options, old_options = dict(planned.pop().options), dict(planned.pop().options)
    assert old_options == new_options == {"runs": 2, **({} if players is None else {"game_players": players})}
    shown = (" ".join(new) if len(old) == 1 else new[0]) if new else "the default (no flag)"
    assert outputs[0].stderr.splitlines() == [
        f"note: `{old[0]}` is now `{shown}` (the old spelling goes in the next release)"
    ]
    assert outputs[1].stderr == ""


def test_quickstart_one_seat_is_refused_by_the_option(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["quickstart", "--game-players", "1", "--out", str(tmp_path / "q")])
    assert result.exit_code != 0 and "at least 2 seats" in str(result.exception) + result.output
    assert not (tmp_path / "q").exists()
    options = kit.parse_options(["game_players=1"])
    with pytest.raises(ConfigError, match="at least 2 seats"):
        kit.check_options("quickstart", options)
    assert json.dumps(kit.parse_options(["game_players=0"])) == '{"game_players": 0}'


def test_validity_takes_its_options_as_flags_with_the_comma_forms_it_had(
    app: typer.Typer, planned: list[Any]
) -> None:
    def options(*args: str) -> dict[str, Any]:
        result = CliRunner().invoke(app, ["psychobench", "validity", *args])
        assert isinstance(result.exception, Planned), result.output or repr(result.exception)
        return dict(planned.pop().options)

    given = options("--personas", "default,liar", "--benchmarks", "TruthfulQA", "--questions", "2")
    assert given == {"personas": ["default", "liar"], "benchmarks": ["truthfulqa"], "questions": 2}
    assert options("-O", "personas=default,liar")["personas"] == ["default", "liar"]  # -O reads it alike
    role = "You are a pirate, and proud of it"  # a role text holding a comma stays one persona
    assert options("--personas", role, "--personas", "hero")["personas"] == [role, "hero"]
    # --preset thesis: its roles and runs lie under what is given
    assert options("--preset", "thesis") == {
        "personas": ["default", "psychopath", "liar", "ordinary", "hero"],
        "runs": 3,
    }
    assert options("--preset", "thesis", "--runs", "1")["runs"] == 1


def test_host_takes_gamabench_options_over_its_short_session(app: typer.Typer, planned: list[Any]) -> None:
    def options(*args: str) -> dict[str, Any]:
        result = CliRunner().invoke(app, ["gamabench", "host", *args])
        assert isinstance(result.exception, Planned), result.output or repr(result.exception)
        return dict(planned.pop().options)

    assert options() == {"runs": 1, "players": 5, "rounds": 5}
    assert options("--players", "3", "--game", "guessing,pirate", "--corrected") == {
        "runs": 1,
        "players": 3,
        "rounds": 5,
        "game": ["guessing", "pirate"],
        "published": False,
    }
    assert options("-O", "rounds=2")["rounds"] == 2
