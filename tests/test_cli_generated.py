"""One declared surface: each benchmark's run command is generated from its task's ``Options`` model.

Every option of every registered task is reachable from ``-O`` (and, for the five research run commands,
from a flag named after it); the flag's default is the field's (read from the click command objects, not
from a second list); no flag sets an option of another name; ``-O game.key=value`` reaches a game's
parameters. No model is called: the run config a command builds is caught before it starts, and the one
game played end to end seats two fixed players.
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
from llmpsych.errors import ConfigError, LlmpsychError
from llmpsych.runs.task import TASKS, task_class
from llmpsych.testing.runs import unit_results

#: (group, the task its ``run`` command runs)
RUN_COMMANDS = [
    ("psychobench", "psychobench"),
    ("emotionbench", "emotionbench"),
    ("gamabench", "gamabench"),
    ("reliability", "reliability"),
    ("mas", "mas"),
]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    cli._mount_subcommands()
    return cli.app


def run_params(app: typer.Typer, group: str, name: str = "run") -> dict[str, Any]:
    """The click parameters of ``llmpsych GROUP NAME``, by name, as ``--help`` and parsing see them."""
    root = typer.main.get_command(app)
    command = root.commands[group].commands[name]  # type: ignore[attr-defined]
    ctx = command.make_context(name, [], resilient_parsing=True)
    return {p.name: p for p in command.get_params(ctx)}


def flagged(info: Any) -> bool:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    return extra.get("flag") is not False


#: (group, command, task) of the other commands generated from a task's ``Options`` (issue 29)
OTHER_GENERATED = [
    ("scales", "translate", "translate"),
    ("emotionbench", "translate", "translate"),
    ("gamabench", "translate", "translate"),
    ("gamabench", "rephrase", "gamabench-rephrase"),
]


@pytest.mark.parametrize(
    ("group", "command", "task"), [(g, "run", t) for g, t in RUN_COMMANDS] + OTHER_GENERATED
)
def test_every_option_is_a_flag_of_its_own_name_with_the_fields_default(
    app: typer.Typer, group: str, command: str, task: str
) -> None:
    params = run_params(app, group, command)
    fields = task_class(task).Options.model_fields
    for name, info in fields.items():
        if not flagged(info):
            continue
        param = params.get(kit.OPTION_PARAM + name)
        assert param is not None, f"{group} {command}: option {name!r} has no flag"
        assert param.opts == ["--" + name.replace("_", "-")], (name, param.opts)  # its own name, no alias
        assert param.help, f"{group} {command} --{name}: no help (the field has no description)"
        default = param.default
        if isinstance(default, str) and param.metavar is None and param.help.endswith("as -O reads it."):
            default = yaml.safe_load(default)  # a YAML-valued flag shows its default as text
        if isinstance(default, tuple):
            default = list(default)
        expected = info.get_default(call_default_factory=True)
        assert default == expected or (default in (None, []) and expected in (None, [])), (name, default)


@pytest.mark.parametrize(
    ("group", "command", "task"), [(g, "run", t) for g, t in RUN_COMMANDS] + OTHER_GENERATED
)
def test_no_other_flag_of_a_run_command_names_a_task_option(
    app: typer.Typer, group: str, command: str, task: str
) -> None:
    """A flag that is no generated one (a shared run flag, a report setting, a model role) never carries
    an option's name: an option is set by its own flag only."""
    fields = task_class(task).Options.model_fields
    own = {"--" + n.replace("_", "-") for n in fields}
    for name, param in run_params(app, group, command).items():
        if name.startswith(kit.OPTION_PARAM):
            continue
        assert not own & set(param.opts), (group, name, param.opts)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_option_of_every_task_is_reachable_from_dash_o(task: str) -> None:
    """``-O name=<the field's default>`` passes the option check of every registered task (none is
    refused as unknown); a misspelt key is one line naming it with the valid ones."""
    model = task_class(task).Options
    for name, info in model.model_fields.items():
        if info.is_required():
            value: Any = "x"
        else:
            value = info.get_default(call_default_factory=True)
        pair = f"{name}={json.dumps(value, default=str)}"
        options = kit.parse_options([pair])
        try:
            kit.check_options(task, options)
        except LlmpsychError as exc:  # a value refused (a file that is not there) is not an unknown key
            assert "unknown option" not in str(exc), (task, name, str(exc))
    with pytest.raises(ConfigError, match=f"unknown option 'no_such_key' for task '{task}'"):
        kit.check_options(task, kit.parse_options(["no_such_key=1"]))


def test_dotted_keys_make_tables_and_merge() -> None:
    assert kit.parse_options(["guessing.ratio=0.5", "guessing.max=50", "runs=2"]) == {
        "guessing": {"ratio": 0.5, "max": 50},
        "runs": 2,
    }
    assert kit.parse_options(["guessing={ratio: 0.5}", "guessing.max=50"]) == {
        "guessing": {"ratio": 0.5, "max": 50}
    }
    with pytest.raises(ConfigError, match="'runs' is given both as a value and as a table"):
        kit.parse_options(["runs=2", "runs.x=1"])
    with pytest.raises(ConfigError, match="empty part"):
        kit.parse_options(["guessing..ratio=1"])


class Planned(Exception):
    """Raised instead of starting a run: carries the config the command built."""


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Configs the commands build; building one stops the command (no run, no model)."""
    built: list[Any] = []
    build = kit.build_config

    def catch(*args: Any, **kwargs: Any) -> Any:
        built.append(build(*args, **kwargs))
        raise Planned

    monkeypatch.setattr(kit, "build_config", catch)
    return built


def plan(app: typer.Typer, planned: list[Any], *args: str | Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, Planned), result.output or repr(result.exception)
    return dict(planned.pop().options)


@pytest.mark.parametrize(
    ("group", "args"),
    [
        ("psychobench", ["--scale", "BFI,DTDD", "--cipher", "--cipher-shift", "5"]),
        ("emotionbench", ["--no-shuffle", "--emotions", "Anger", "--emotions", "Fear"]),
        ("gamabench", ["--game", "guessing,pirate", "--seats", "[llm, llm]", "--corrected"]),
        ("reliability", ["--languages", "En,Zh", "--steer", "personality:bio", "--targets", "a"]),
        ("mas", ["--dataset", "ciar", "--p-m", "0.5", "--defence", "challenger,inspector"]),
    ],
)
def test_a_flag_and_its_dash_o_form_build_the_same_config(
    app: typer.Typer, planned: list[Any], group: str, args: list[str]
) -> None:
    """``--x value`` and ``-O x=value`` are one option: the same stored options, the comma forms written
    out as lists (declared on the field, so -O takes them too)."""
    by_flags = plan(app, planned, group, "run", *args)
    pairs: list[str] = []
    for key, value in by_flags.items():
        pairs += ["-O", f"{key}={json.dumps(value)}"]
    assert plan(app, planned, group, "run", *pairs) == by_flags
    if group == "psychobench":
        assert by_flags == {"scale": ["BFI", "DTDD"], "cipher": True, "cipher_shift": 5}
        assert plan(app, planned, group, "run", "-O", "scale=BFI,DTDD")["scale"] == ["BFI", "DTDD"]
    if group == "emotionbench":
        assert by_flags == {"shuffle": False, "emotions": ["Anger", "Fear"]}
    if group == "gamabench":
        assert by_flags["game"] == ["guessing", "pirate"] and by_flags["published"] is False
    if group == "reliability":
        assert by_flags["languages"] == ["En", "Zh"]
        assert (by_flags["steer"], by_flags.get("style")) == ("personality:bio", None)  # the model splits it
    if group == "mas":
        assert by_flags == {"dataset": "ciar", "p_m": 0.5, "defence": ["challenger", "inspector"]}


@pytest.mark.parametrize(
    ("group", "old", "new"),
    [
        ("emotionbench", "--keep-order", "--no-shuffle"),
        ("emotionbench", "--situations", "--situations-file"),
        ("mas", "--task", "--dataset"),
        ("mas", "--pm", "--p-m"),
        ("reliability", "--target", "--targets"),
        ("reliability", "--logprobs", "--method logprob"),
    ],
)
def test_an_old_renaming_flag_is_one_line_naming_the_options_flag(
    app: typer.Typer, group: str, old: str, new: str
) -> None:
    result = CliRunner().invoke(app, [group, "run", old, "x"])
    assert isinstance(result.exception, ConfigError), result.output
    assert str(result.exception).startswith(f"{old} is now {new}")


def test_a_flag_and_dash_o_for_one_option_is_an_error(app: typer.Typer, planned: list[Any]) -> None:
    result = CliRunner().invoke(app, ["mas", "run", "--p-m", "0.5", "-O", "p_m=0.4"])
    assert isinstance(result.exception, ConfigError)
    assert "option 'p_m' is given twice: as --p-m and as -O" in str(result.exception)
    assert not planned


def test_an_unknown_nested_key_is_one_line(app: typer.Typer, planned: list[Any]) -> None:
    for group, pair, words in [
        ("psychobench", "guessing.ratio=0.5", "unknown option 'guessing' for task 'psychobench'"),
        ("gamabench", "guesing.ratio=0.5", "guesing"),
    ]:
        result = CliRunner().invoke(app, [group, "run", "-O", pair])
        assert isinstance(result.exception, ConfigError), result.output
        assert words in str(result.exception) and "\n" not in str(result.exception)
    assert not planned


def test_the_documented_nested_form_reaches_the_game(app: typer.Typer, tmp_path: Path) -> None:
    """``-O guessing.ratio=0.5`` (docs/games-engine.md) plays a game at ratio 1/2, merged with the
    ``--task-config`` file's other guessing parameters; two fixed seats, so no model is asked."""
    (tmp_path / "options.yaml").write_text("guessing: {max: 50}\n", encoding="utf-8")
    args = [
        "gamabench",
        "run",
        "--players",
        "2",
        "--rounds",
        "1",
        "--runs",
        "1",
        "--seats",
        "[fixed:40, fixed:10]",
    ]
    args += ["-O", "guessing.ratio=0.5", "--task-config", str(tmp_path / "options.yaml")]
    result = CliRunner().invoke(app, [*args, "--no-progress", "--no-cache", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    [played] = unit_results(tmp_path / "r").values()
    assert played["params"]["ratio"] == 0.5 and played["params"]["max"] == 50


def test_a_dotted_key_keeps_the_config_files_other_keys(
    app: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``llmpsych run game.toml -O guessing.ratio=0.5``: the file's ``[options.guessing]`` table keeps its
    other keys (the override was a whole-table replacement)."""
    started: list[Any] = []

    def catch(config: Any, flags: Any) -> Any:
        started.append(config)
        raise Planned

    monkeypatch.setattr(kit, "start", catch)
    (tmp_path / "game.toml").write_text(
        'task = "gamabench"\n[options]\nplayers = 2\n[options.guessing]\nmax = 50\n', encoding="utf-8"
    )
    result = CliRunner().invoke(app, ["run", str(tmp_path / "game.toml"), "-O", "guessing.ratio=0.5"])
    assert isinstance(result.exception, Planned), result.output or repr(result.exception)
    assert started[0].options["guessing"] == {"max": 50, "ratio": 0.5}


def generated_commands(app: typer.Typer) -> list[tuple[str, Any]]:
    """Every visible command whose task options are generated (run commands, presets, grid, host, ...)."""
    from llmpsych.clinames import visible_commands

    root = typer.main.get_command(app)
    return [(path, c) for path, c in visible_commands(root) if isinstance(c, kit.TaskCommand)]


def test_every_generated_flag_has_help_and_published_is_one_switch(app: typer.Typer) -> None:
    """Not only the five run commands: every generated command's flags say what they set (help read off the
    field), and the published/corrected switch is spelled ``--published/--corrected`` everywhere
    (``reliability grid`` showed six flags with no help and ``--published/--no-published``)."""
    commands = generated_commands(app)
    assert {"reliability grid", "gamabench host", "psychobench validity"} <= {path for path, _ in commands}
    silent, switches = [], set()
    for path, command in commands:
        for f in command.generated():
            if not f.help.removeprefix("Required.").strip():
                silent.append(f"{path} {f.flag}")
        for param in command.params:
            if param.name == kit.OPTION_PARAM + "published":
                switches.add((path, tuple(param.opts), tuple(param.secondary_opts)))
    assert not silent, silent
    assert {(o, s) for _, o, s in switches} == {(("--published",), ("--corrected",))}, sorted(switches)


#: (group, command path under it, the task whose options it takes): the verbs that run no task but take
#: some of its options (a significance level, the held-out split, the map's fit), each from the field.
FIELD_VERBS = [
    ("emotionbench", ("rescore",), "emotionbench", {"alpha"}),
    ("emotionbench", ("score-results",), "emotionbench", {"alpha"}),  # its hidden old name
    ("emotionbench", ("human",), "emotionbench", {"alpha"}),
    ("emotionbench", ("crowd",), "emotionbench", {"alpha"}),
    (
        "emotionbench",
        ("finetune", "export"),
        "emotionbench",
        {"split_seed", "test_size", "prompt", "template"},
    ),
    ("reliability", ("rescore",), "reliability", {"fit_on", "eps", "min_pts", "test"}),
    ("gamabench", ("leaderboard",), "gamabench", {"published"}),
]


def command_at(app: typer.Typer, group: str, path: tuple[str, ...]) -> Any:
    """The click command ``llmpsych GROUP PATH...``, built afresh from the typer app."""
    command = typer.main.get_command(app).commands[group]  # type: ignore[attr-defined]
    for name in path:
        command = command.commands[name]
    return command


def every_command(group: Any, path: str = "") -> Any:
    """(path, command) of every command under a click group, hidden ones included."""
    for name, command in group.commands.items():
        where = f"{path} {name}".strip()
        if getattr(command, "commands", None):
            yield from every_command(command, where)
        else:
            yield where, command


@pytest.mark.parametrize(("group", "task"), RUN_COMMANDS)
def test_no_hand_declared_flag_repeats_a_task_options_default(
    app: typer.Typer, group: str, task: str
) -> None:
    """A flag of a research group named after an option of its task is that option's flag, generated
    from the field, never a hand-written copy of its default (``--alpha 0.01`` declared on three
    verbs, ``--test-size 400`` on ``finetune export``, ``--fit-on data`` on ``reliability rescore``)."""
    fields = task_class(task).Options.model_fields
    root = typer.main.get_command(app).commands[group]  # type: ignore[attr-defined]
    copies = []
    for path, command in every_command(root):
        for param in command.get_params(command.make_context(path, [], resilient_parsing=True)):
            if param.name.startswith(kit.OPTION_PARAM) or param.param_type_name != "option":
                continue
            for flag in param.opts:
                name = flag.removeprefix("--").replace("-", "_")
                default = fields[name].get_default(call_default_factory=True) if name in fields else None
                if default is not None and param.default == default:
                    copies.append(f"{group} {path} {flag}={param.default!r}")
    assert not copies, copies


@pytest.mark.parametrize(("group", "path", "task", "names"), FIELD_VERBS)
def test_a_verbs_task_option_flags_follow_the_field(
    app: typer.Typer,
    monkeypatch: pytest.MonkeyPatch,
    group: str,
    path: tuple[str, ...],
    task: str,
    names: set[str],
) -> None:
    """Declared once: change a field's default and description and the verb's flag shows the new ones
    (no second copy to drift); the flag is spelled as the field, and a ``Literal`` lists its values."""
    fields = task_class(task).Options.model_fields
    for name in names:
        monkeypatch.setattr(fields[name], "default", f"moved-{name}")
        monkeypatch.setattr(fields[name], "description", f"said once for {name}")
    command = command_at(app, group, path)
    params = {
        p.name: p for p in command.get_params(command.make_context(path[-1], [], resilient_parsing=True))
    }
    for name in names:
        param = params.get(kit.OPTION_PARAM + name)
        assert param is not None, f"{group} {' '.join(path)}: --{name} is not the field's flag"
        assert param.opts == ["--" + name.replace("_", "-")], param.opts
        assert param.default == f"moved-{name}", (name, param.default)
        assert param.help == f"Said once for {name}.", (name, param.help)
        choices = kit._choices(kit._bare(fields[name].annotation)[0])
        assert (param.metavar or None) == ("|".join(choices) or None), (name, param.metavar)


def test_a_field_command_gets_the_checked_value_or_the_fields_default() -> None:
    """The body of a field command gets what was given, as the model reads it (an alias of a validator
    holds: ``--test paper`` is f-test), else the field's default; a bad value is one line naming the flag
    (exit 2, no traceback); a field the model does not have is an error, not a silently missing flag."""
    seen: list[tuple[Any, ...]] = []
    sub = typer.Typer()

    @kit.field_command(sub, "emotion", "emotionbench")
    def emotion(as_json: bool = False, *, alpha: float, prompt: str) -> None:
        seen.append((as_json, alpha, prompt))

    @kit.field_command(sub, "grid", "reliability")
    def grid(ctx: typer.Context, *, test: str, min_pts: int) -> None:
        seen.append((ctx.command_path.split()[-1], test, min_pts))

    @kit.field_command(sub, "nothing", "emotionbench")
    def nothing(*, no_such_option: int) -> None:
        raise AssertionError("never called")

    runner = CliRunner()
    assert runner.invoke(sub, ["emotion"]).exit_code == 0
    assert runner.invoke(sub, ["emotion", "--alpha", "0.05", "--prompt", "v2", "--as-json"]).exit_code == 0
    assert runner.invoke(sub, ["grid", "--test", "paper"]).exit_code == 0
    defaults = task_class("emotionbench").Options.model_fields
    assert seen == [
        (False, defaults["alpha"].default, defaults["prompt"].default),
        (True, 0.05, "v2"),
        ("grid", "f-test", task_class("reliability").Options.model_fields["min_pts"].default),
    ]
    for args, line in [
        (["emotion", "--alpha", "0"], "--alpha: Input should be greater than 0"),
        (["emotion", "--prompt", "v3"], "--prompt: Input should be 'official' or 'v2'"),
        (["grid", "--min-pts", "0"], "--min-pts: Input should be greater than or equal to 1"),
    ]:
        error = runner.invoke(sub, args).exception  # llmpsych's main prints it as one line, exit 2
        assert isinstance(error, ConfigError) and str(error) == line, (args, error)
        assert error.exit_code == 2
    assert len(seen) == 3
    result = runner.invoke(sub, ["nothing", "--help"])
    assert isinstance(result.exception, ValueError) and "no_such_option" in str(result.exception)
