"""The CLI kit: what every ``run`` command shares, defined once.

The options every run command takes (one definition and one help text each, read once into a
:class:`RunFlags` by :func:`run_command`), task options from ``-O key=value`` and ``--task-config
FILE`` checked against the task's ``Options`` model, the run config,
starting or resuming through the one engine entry (:func:`llmpsych.runs.start_run` /
:func:`~llmpsych.runs.resume_run`), the printed outcome (the shared end-of-run summary), exit status 1
when units failed, and ``--debug``.

Only typer and rich are imported here: ``llmpsych --help`` and a one-line error must stay fast (the run
engine pulls in pydantic, orjson and the task's libraries, so it is imported inside the functions).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar, cast, overload

import typer
import typer.core

from . import userfiles
from .errors import ConfigError, terminal_text
from .report.terminal import InertConsole

if TYPE_CHECKING:
    from .runs import RunConfig, RunOutcome
    from .runs.executors import ExecutorSettings

console = InertConsole(soft_wrap=True)  # long paths stay on one line
err_console = InertConsole(stderr=True, soft_wrap=True)


class _State:
    """Process-wide CLI state: ``--debug`` given at any level (``llmpsych --debug``, a group, a command)."""

    debug = False


state = _State()


def _set_debug(value: bool) -> bool:
    if value:
        state.debug = True
    return value


# -- the options every run command takes --------------------------------------------------------------
DEFAULT_MODEL_HELP = "local/qwen2.5-0.5b"
MODEL_HELP = (
    "Model spec, e.g. local/qwen2.5-0.5b, openai/gpt-4o-mini, openai-compatible/<name> with --base-url "
    f"(default {DEFAULT_MODEL_HELP}, or the config file's)."
)

DebugOpt = Annotated[
    bool,
    typer.Option("--debug", callback=_set_debug, help="Show full tracebacks on errors."),
]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help=MODEL_HELP)]
ModelsOpt = Annotated[
    list[str] | None,
    typer.Option("--model", "-m", help=MODEL_HELP + " Repeat for several models."),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="Base URL (…/v1) for openai-compatible/<model> roles; never redirects openai/, openrouter/ "
        "or other endpoints with their own URL. With --resume: the run continues against it.",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Run directory (default: a new folder under ./llmpsych-runs or $LLMPSYCH_RUNS_DIR); commands "
        "that make several runs put one folder per run inside it.",
    ),
]
PoolSettingsOpt = Annotated[
    bool,
    typer.Option(
        "--pool-settings",
        help="Pool runs of one model made with different settings (temperature, persona, cipher, template "
        "set, language, ...) into one row; the report then names the pooled settings under the table. "
        "Default: a row per model and setting, named by the settings that differ.",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache.")]
ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress",
        help="Show a progress bar (with --resume: default, the choice the run started with).",
    ),
]
ConcurrencyOpt = Annotated[
    int | None, typer.Option("--concurrency", min=1, help="Requests in flight per endpoint.")
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Run seed: shuffles, samples, draws (default 0).")
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Folder holding the official datasets (default: $LLMPSYCH_DATA_DIR, else the user cache).",
    ),
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature (default: the task's).")
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-O",
        help="Task option key=value (value read as YAML: 3, true, \\[a, b]); a dotted key sets a key of a "
        "table (guessing.ratio=0.5); repeatable; wins over --task-config.",
    ),
]
TaskConfigOpt = Annotated[
    Path | None,
    typer.Option("--task-config", help="YAML or TOML file mapping task options to values."),
]
PublishedOpt = Annotated[
    bool | None,
    typer.Option(
        "--published/--corrected",
        help="published: score as the authors' code did, its documented errors included (the default when "
        "re-scoring their released data); corrected: apply llmpsych's documented corrections (the default "
        "for your own runs).",
    ),
]
ResumeOpt = Annotated[
    Path | None, typer.Option("--resume", help="Finish an interrupted run in this directory.")
]

# -- where units execute (--executor; docs/scale-out.md) -----------------------------------------------
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="Where work units run: local (this process, the default) or ray (actors of a Ray cluster; "
        "the store stays here). Default: $LLMPSYCH_EXECUTOR, else local.",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to use (auto, or its head's HOST:6379); default: start a private Ray on "
        "127.0.0.1 ($LLMPSYCH_RAY_ADDRESS).",
    ),
]
ActorsOpt = Annotated[
    int | None,
    typer.Option(
        "--actors",
        min=1,
        help="Ray actors running units, each with its own model clients (an embedded model loaded once "
        "per actor); default 2.",
    ),
]
ActorCpusOpt = Annotated[
    float | None,
    typer.Option("--actor-cpus", min=0, help="CPUs each actor reserves (default 1)."),
]
ActorGpusOpt = Annotated[
    float | None,
    typer.Option(
        "--actor-gpus",
        min=0,
        help="GPUs each actor reserves, e.g. 1, or 0.5 for two actors per GPU (default 0).",
    ),
]
ActorThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--actor-threads",
        min=0,
        help="llama.cpp threads of an actor's embedded model (default 0: every core of its node).",
    ),
]


def _executor_field(option: Any, setting: str) -> Any:
    """A flag of the executor: typer ``option``, setting ``setting`` of
    :class:`~llmpsych.runs.executors.ExecutorSettings` (None: not given)."""
    return field(default=None, metadata={"option": option, "setting": setting})


@dataclass(frozen=True)
class ExecutorFlags:
    """Where a command's runs execute: the executor flags, declared once here (docs/scale-out.md).

    Every field with ``option`` metadata becomes an option of each command made by :func:`run_command`
    (its run commands through :class:`RunFlags`, which has these fields) or :func:`sweep_command` (presets
    and other commands starting several runs). The ``setting`` metadata names the
    :class:`~llmpsych.runs.executors.ExecutorSettings` field a flag sets: such a flag is not part of the
    run config (where a run executes is not part of the run) and ``--resume`` honours it.
    """

    executor: str | None = _executor_field(ExecutorOpt, "kind")
    ray_address: str | None = _executor_field(RayAddressOpt, "address")
    actors: int | None = _executor_field(ActorsOpt, "actors")
    actor_cpus: float | None = _executor_field(ActorCpusOpt, "cpus_per_actor")
    actor_gpus: float | None = _executor_field(ActorGpusOpt, "gpus_per_actor")
    actor_threads: int | None = _executor_field(ActorThreadsOpt, "threads_per_actor")

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> ExecutorFlags:
        """The flags among a command's parameter values (``ctx.params``); the others are left out."""
        return cls(**{f.name: params[f.name] for f in fields(cls) if f.name in params})

    def executor_settings(self) -> ExecutorSettings:
        """The executor of this command's runs: the flags given, over the process's settings
        (:func:`~llmpsych.runs.executors.current`: the environment, else local); a bad value is a
        ConfigError."""
        from .runs.executors import current

        changes = {
            f.metadata["setting"]: getattr(self, f.name)
            for f in fields(self)
            if "setting" in f.metadata and getattr(self, f.name) is not None
        }
        return replace(current(), **changes)


#: The executor flags; ``--resume`` honours them (where a run executes is not part of the run).
EXECUTOR_FLAGS = frozenset(f.name for f in fields(ExecutorFlags) if "setting" in f.metadata)
#: Flags that ``--resume`` honours (everything else defines the run, which is already stored).
RESUME_FLAGS = frozenset({"resume", "base_url", "progress", "debug"}) | EXECUTOR_FLAGS


def _shared(option: Any, default: Any = None, **metadata: Any) -> Any:
    """A shared run option: typer ``option``, added by :func:`run_command` to each run command; the
    command reads its value from ``flags`` (``param``: the parameter's name when it is not the field's;
    ``cli_default``: the parameter's default when it is not the field's)."""
    return field(default=default, metadata={"option": option, "shared": True, **metadata})


@dataclass(frozen=True)
class RunFlags(ExecutorFlags):
    """The shared run options of one command, filled once by :func:`run_command` from its parameters.

    Each field is named as the command's parameter is (``--model`` fills ``models``, one spec or, for
    commands taking several, each); a command without a flag gets the field's default. ``name`` is no
    flag: the run folder's name, which a command may set (default: the task's).

    Every field with ``option`` metadata is an option of each run command: :func:`run_command` adds it
    to a command that does not declare it (a command declares one only where its own differs, e.g.
    several ``--model`` values; ``without=`` leaves one out). The fields marked ``shared`` are the
    options every run command has always taken, each read where it applies (:meth:`config_values`,
    :func:`build_config`, :func:`start`, :func:`resume`). Adding a flag that every run command takes is
    one change, here: a field whose metadata holds its typer option, e.g. ``budget: float | None =
    field(default=None, metadata={"option": BudgetOpt})``; :func:`build_config` passes a value given for
    it into the run config under the field's name. The executor flags (:class:`ExecutorFlags`) are such
    fields, kept out of the run config.
    """

    models: tuple[str, ...] = _shared(ModelOpt, (), param="model", cli_default=None)
    option: tuple[str, ...] = _shared(OptionOpt, (), cli_default=None)
    task_config: Path | None = _shared(TaskConfigOpt)
    base_url: str | None = _shared(BaseUrlOpt)
    concurrency: int | None = _shared(ConcurrencyOpt)
    temperature: float | None = _shared(TemperatureOpt)
    seed: int | None = _shared(SeedOpt)
    data_dir: Path | None = _shared(DataDirOpt)
    out: Path | None = _shared(OutOpt)
    resume: Path | None = _shared(ResumeOpt)
    no_cache: bool = _shared(NoCacheOpt, False)
    progress: bool = _shared(ProgressOpt, True)
    debug: bool = _shared(DebugOpt, False)
    name: str | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> RunFlags:
        """The flags among a command's parameter values (``ctx.params``); the others are left out."""
        values = {f.name: params[f.name] for f in fields(cls) if f.name in params and f.name != "name"}
        model = params.get("model")
        values["models"] = tuple(model) if isinstance(model, list | tuple) else (model,) if model else ()
        values["option"] = tuple(params.get("option") or ())
        return cls(**values)

    def but(self, **changes: Any) -> RunFlags:
        """These flags with ``changes`` (``flags.but(models=(spec,))``)."""
        return replace(self, **changes)

    @property
    def model(self) -> str | None:
        """The one model spec given (None: the task's default); an error for several."""
        if len(self.models) > 1:
            raise ValueError("several --model values: build one config per model")
        return self.models[0] if self.models else None

    def config_values(self) -> dict[str, Any]:
        """What the flags set in a run config (None: not given): model, endpoint, seed, concurrency, data
        folder, and every further flag added through a field's ``option`` metadata (but the executor's)."""
        values: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "seed": self.seed,
            "concurrency": self.concurrency,
            "data_dir": str(self.data_dir) if self.data_dir else None,
        }
        for f in fields(self):
            if "option" in f.metadata and not {"setting", "shared"} & f.metadata.keys():
                values[f.name] = getattr(self, f.name)
        return values


CommandT = TypeVar("CommandT", bound=Callable[..., Any])


@overload
def run_command(
    func: CommandT, flags_type: type[ExecutorFlags] = ..., *, local: bool = ..., without: Iterable[str] = ...
) -> CommandT: ...
@overload
def run_command(
    func: None = None,
    flags_type: type[ExecutorFlags] = ...,
    *,
    local: bool = ...,
    without: Iterable[str] = ...,
) -> Callable[[CommandT], CommandT]: ...
def run_command(
    func: CommandT | None = None,
    flags_type: type[ExecutorFlags] = RunFlags,
    *,
    local: bool = False,
    without: Iterable[str] = (),
) -> Any:
    """Make ``func`` a run command (put it under ``@app.command``): its ``flags: RunFlags`` parameter is
    filled once from the shared options, and every field of ``flags_type`` carrying an ``option`` that
    it does not declare is added to its options (after ``--debug`` where it declares that; else last).

    ``@run_command(without={"resume"})``: a command that deliberately lacks a shared option (it cannot
    resume, has no sampling temperature); its field keeps its default. A name that is no shared option
    is an error at import, not a silently ignored exclusion.

    The runs it starts or resumes execute as its executor flags say (:func:`llmpsych.runs.executors.use`
    around the call, so nothing outlives the command). ``local=True``: a command whose units must run in
    this process (a person's seat) takes no executor flags.
    """
    if func is None:
        return functools.partial(run_command, flags_type=flags_type, local=local, without=without)
    options = [f for f in fields(flags_type) if "option" in f.metadata]
    unknown = set(without) - {f.metadata.get("param", f.name) for f in options}
    if unknown:
        raise ValueError(f"{func.__name__}: without={sorted(unknown)} names no shared option")
    signature = inspect.signature(func, eval_str=True)
    wants_flags = "flags" in signature.parameters
    params = [p for name, p in signature.parameters.items() if name != "flags"]
    declared = {p.name for p in params} | set(without)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    added = [
        inspect.Parameter(
            f.metadata.get("param", f.name),
            kind,
            default=f.metadata.get("cli_default", f.default),
            annotation=f.metadata["option"],
        )
        for f in sorted(options, key=lambda f: "setting" in f.metadata)  # the executor's last
        if f.metadata.get("param", f.name) not in declared and not (local and "setting" in f.metadata)
    ]
    at = next((i + 1 for i, p in enumerate(params) if p.name == "debug"), len(params))
    params[at:at] = added
    extra = {p.name for p in added}

    @functools.wraps(func)
    def command(**kwargs: Any) -> Any:
        flags = flags_type.of(kwargs)
        mine = {k: v for k, v in kwargs.items() if k not in extra}
        call = (
            functools.partial(func, **mine, flags=flags) if wants_flags else functools.partial(func, **mine)
        )
        if local:
            return call()
        from .runs.executors import use

        with use(flags.executor_settings()):
            return call()

    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def local_run_command(func: CommandT) -> CommandT:
    """A run command whose units must run in this process (a person's seat in a browser): it takes no
    executor flags."""
    return run_command(func, local=True)


def sweep_command(func: CommandT) -> CommandT:
    """Make ``func`` a command starting several runs of its own (a preset, an experiment): it takes the
    executor flags (:class:`ExecutorFlags`) exactly as a run command does, and its runs execute as they
    say."""
    return run_command(func, ExecutorFlags)


# -- task options --------------------------------------------------------------------------------------
def parse_options(pairs: Iterable[str]) -> dict[str, Any]:
    """``["runs=3", "scales=[BFI, EPQ-R]"]`` -> ``{"runs": 3, "scales": ["BFI", "EPQ-R"]}``: each value is
    read as a YAML scalar or flow collection (as inspect_ai's ``-T``).

    A dotted key sets a key of a table: ``guessing.ratio=0.5`` -> ``{"guessing": {"ratio": 0.5}}``
    (gamabench's per-game parameters), merged with the table's other keys however they are given; a key
    given as a value and as a table is one error line."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--option expects key=value, got {pair!r}")
        parsed = _option_value(key, value)
        userfiles.check_shape(parsed, f"--option {key}", error=ConfigError)
        path = [part.strip() for part in key.split(".")]
        if not all(path):
            raise ConfigError(f"--option {key!r}: an empty part in the dotted key", "e.g. guessing.ratio=0.5")
        for part in reversed(path[1:]):
            parsed = {part: parsed}
        options[path[0]] = merge_option(options.get(path[0], _ABSENT), parsed, path[0])
    return options


_ABSENT: Any = object()

#: Option values YAML reads as a decimal integer or as the word itself: the common ``-O units=10`` and
#: ``-O scale=BFI`` are read without importing YAML (about 0.02 s CPU, most of it compiling its regexes
#: at import). The words YAML 1.1 reads as booleans or null, and everything else, go to YAML.
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})")
_PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})


def _option_value(key: str, value: str) -> Any:
    """One ``-O`` value as YAML reads it (a plain integer or word without YAML, see :data:`_PLAIN_INT`)."""
    if _PLAIN_INT.fullmatch(value):
        return int(value)
    if _PLAIN_WORD.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    import yaml

    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"--option {key}: the value is not valid YAML: {reason}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; an integer of 4,300+ digits
        raise ConfigError(f"--option {key}: the value is not valid YAML: {userfiles.reason(exc)}") from None


def merge_option(old: Any, new: Any, key: str) -> Any:
    """``new`` over ``old``: two tables merge key by key (``-O guessing.ratio=0.5`` keeps the file's
    ``guessing.rounds``); a table over a value, or a value over a table, is one error line."""
    if old is _ABSENT or old is None:
        return new
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for name, value in new.items():
            merged[name] = merge_option(merged.get(name, _ABSENT), value, f"{key}.{name}")
        return merged
    if isinstance(old, dict) != isinstance(new, dict):
        raise ConfigError(
            f"option {key!r} is given both as a value and as a table ({key}.KEY=...)", "keep one"
        )
    return new


def read_task_config(path: Path) -> dict[str, Any]:
    """A ``--task-config`` file: a YAML or TOML mapping of task options (size-capped, safe YAML)."""
    from .runs.config import read_config_file

    return read_config_file(path)


def given(ctx: typer.Context) -> set[str]:
    """Names of the command's parameters given on the command line or through the environment."""
    names: set[str] = set()
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name else None
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            names.add(str(param.name))
    return names


def flag_name(ctx: typer.Context, name: str) -> str:
    """How a parameter is spelt on the command line (``model`` -> ``--model``)."""
    for param in ctx.command.params:
        if param.name == name and param.opts:
            return max(param.opts, key=len)
    return name


def task_options(
    ctx: typer.Context,
    values: dict[str, Any],
    run: RunFlags,
    *,
    aliases: dict[str, str] | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """The task options of a command: its own flags' ``values`` (None values left out), then the
    ``--task-config`` file, then the ``-O`` pairs of its ``run`` flags, each layer winning over the one
    before.

    A flag given on the command line wins over the file; the same option given both as a flag and as
    ``-O`` is an error. ``aliases`` maps a flag's parameter name to the option it sets when they differ
    (``keep_order`` -> ``shuffle``); ``task``: the file's and ``-O``'s old option names of that task are
    read as the new ones (:func:`current_names`).
    """
    explicit = {(aliases or {}).get(name, name): name for name in given(ctx)}
    options = {k: v for k, v in values.items() if v is not None}
    flags_of = {k: n for k, n in explicit.items() if k in values}
    return layer_options(ctx, options, flags_of, run, task=task)


def layer_options(
    ctx: typer.Context,
    values: dict[str, Any],
    flags_of: dict[str, str],
    run: RunFlags,
    *,
    task: str | None = None,
) -> dict[str, Any]:
    """``values`` (the command's flags), then the ``--task-config`` file, then the ``-O`` pairs, each layer
    winning over the one before and tables merged key by key; ``flags_of`` maps each option given as a
    flag on the command line to that flag's parameter: it wins over the file, and ``-O`` for it too is an
    error. ``task``: an old option name in the file or ``-O`` is its new name, with one notice line."""
    options = dict(values)
    if run.task_config is not None:
        in_file = read_task_config(run.task_config)
        if task is not None:
            in_file = current_names(task, in_file, f"{run.task_config}:")
        for key, value in in_file.items():
            if key not in flags_of:  # a flag given on the command line wins
                options[key] = merge_option(options.get(key, _ABSENT), value, key)
    pairs = parse_options(run.option)
    for key, value in (current_names(task, pairs, "-O") if task is not None else pairs).items():
        if key in flags_of:
            raise ConfigError(
                f"option {key!r} is given twice: as {flag_name(ctx, flags_of[key])} and as -O", "keep one"
            )
        options[key] = merge_option(options.get(key, _ABSENT), value, key)
    return options


# -- commands generated from a task's Options model -----------------------------------------------------
#: Generated parameters are named ``option__<field>`` inside the command (never a clash with its own).
OPTION_PARAM = "option__"
#: Where :class:`TaskCommand` leaves the options given as flags for the command body (``ctx.meta``).
GIVEN_OPTIONS = "llmpsych.given_options"
#: Field types a flag carries as they are; every other type is read from YAML, as ``-O`` reads it.
_PLAIN = (str, int, float)


@dataclass(frozen=True)
class OptionFlag:
    """One option of a task's ``Options`` model as a flag of its command, everything read off the field.

    The rule, the same for every task (docs/cli.md, "Task options are flags"):

    - the flag is the field's name in kebab-case (``situations_per_factor`` -> ``--situations-per-factor``):
      a flag never names anything but the option it sets;
    - its help is the field's ``description``, its default the field's default (shown in ``--help``);
    - a ``Literal`` field shows its values (``<generate|logprob>``) and the model checks the value given,
      as it checks ``-O`` (so its validators' aliases hold: ``--test paper``); a bool is ``--x/--no-x``
      (a field may name its off switch: ``published`` is ``--published/--corrected``);
    - a list is a repeatable flag (``--scale-file a.yaml --scale-file b.yaml``); a list of names declared
      as :data:`~llmpsych.runs.optionfields.CommaList` also takes ``--scale BFI,EPQ-R`` (the field splits
      it, so ``-O`` and config files take that spelling too);
    - a model-typed field (a scale file, a template set) takes its text form (a path);
    - any other type (a table, a union of shapes) takes a YAML value, as ``-O`` does;
    - only flags given on the command line (or from the environment) become options; the rest is left to
      the model, so the one default is the field's.
    """

    name: str
    flag: str
    annotation: Any
    default: Any
    help: str
    yaml: bool = False
    off: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def param(self) -> str:
        """The parameter's name inside the command."""
        return OPTION_PARAM + self.name

    def value(self, given: Any) -> Any:
        """The option's value from what click parsed (a YAML text read as ``-O`` reads it)."""
        if self.yaml and isinstance(given, str):
            return parse_options([f"{self.name}={given}"])[self.name]
        if isinstance(given, tuple):
            return list(given)
        return given


def _bare(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``Annotated`` and ``None``; whether ``None`` was one of its members."""
    import types
    from typing import Union, get_args, get_origin

    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        if len(members) == 1:
            return _bare(members[0])[0], optional
        return annotation, optional
    return annotation, False


def _flag_type(annotation: Any) -> Any:
    """The flag's type for a field's bare type (None: the value is read as YAML)."""
    from typing import Literal, get_args, get_origin

    from pydantic import BaseModel

    if annotation in _PLAIN or annotation is bool:
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, Path | BaseModel):
        return str  # a path, or a model's text form (a scale file, PATH#VERSION)
    if get_origin(annotation) is Literal and all(isinstance(v, str) for v in get_args(annotation)):
        return str  # the model checks the value: its validators also take aliases (test: paper)
    return None


def _choices(annotation: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` (or a list of one), shown as the flag's metavar."""
    from typing import Literal, get_args, get_origin

    if get_origin(annotation) is list:
        annotation = _bare(get_args(annotation)[0])[0]
    if get_origin(annotation) is Literal:
        return tuple(str(v) for v in get_args(annotation))
    return ()


def option_flags(model: type[Any]) -> list[OptionFlag]:
    """The flags of a task's ``Options`` model, one per field (fields marked
    :func:`~llmpsych.runs.optionfields.no_flag` left out), by the rule of :class:`OptionFlag`."""
    from typing import get_args, get_origin

    from pydantic_core import PydanticUndefined

    flags: list[OptionFlag] = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("flag") is False:
            continue
        bare, optional = _bare(info.annotation)
        default = info.get_default(call_default_factory=True)
        required = default is PydanticUndefined
        if required:  # no default to show: the model names it when it is not given
            default = None
        text = (info.description or "").strip()
        first = text.split(" ", 1)[0]
        if first.isalpha() and first.islower() and (len(first) > 2 or first in ("a", "an")):  # not t1..t5
            text = text[:1].upper() + text[1:]
        text = text.replace("[", "\\[")
        if text and not text.endswith("."):
            text += "."
        if required:
            text = ("Required. " + text).strip()
        kind = _flag_type(bare)
        many = get_origin(bare) is list and _flag_type(_bare(get_args(bare)[0])[0]) not in (None, bool)
        if many:
            item = _flag_type(_bare(get_args(bare)[0])[0])
            flags.append(
                OptionFlag(
                    name,
                    _kebab(name),
                    list[item] | None,  # type: ignore[valid-type]  # a type read off the field
                    default,
                    (text + " Repeatable.").strip(),
                    choices=_choices(bare),
                )
            )
        elif kind is None:  # a table, a union of shapes: YAML, as -O reads it
            shown = default if isinstance(default, str) or default is None else json.dumps(default)
            help_text = (text + " A YAML value, as -O reads it.").strip()
            flags.append(OptionFlag(name, _kebab(name), str | None, shown, help_text, yaml=True))
        elif kind is bool:
            off = extra.get("off")
            flags.append(
                OptionFlag(
                    name,
                    _kebab(name),
                    bool | None if optional else bool,
                    default,
                    text,
                    off=str(off) if off else None,
                )
            )
        else:
            flags.append(OptionFlag(name, _kebab(name), kind | None, default, text, choices=_choices(bare)))
    return flags


def _kebab(name: str) -> str:
    return "--" + name.replace("_", "-")


def _click_params(
    flags: Iterable[OptionFlag], panel: str | None, *, shown_defaults: bool = True
) -> list[Any]:
    """typer's own options for ``flags`` (built as typer builds a declared ``Annotated`` parameter)."""
    from typer.main import _get_param
    from typer.models import ParamMeta

    params = []
    for f in flags:
        decl = f"{f.flag}/--{f.off or 'no-' + f.flag[2:]}" if f.annotation in (bool, bool | None) else f.flag
        metavar = "|".join(f.choices) if f.choices else None
        info = typer.Option(
            f.default, decl, help=f.help, show_default=shown_defaults, rich_help_panel=panel, metavar=metavar
        )
        params.append(_get_param(ParamMeta(name=f.param, default=info, annotation=f.annotation)))
    return params


def current_names(task: str, options: dict[str, Any], where: str = "option") -> dict[str, Any]:
    """``options`` with each old option name of the task's ``Options`` model (its ``renamed_options``,
    :class:`~llmpsych.runs.optionfields.Renamed`) as the new one, one notice line each (``where``: how the
    user gave it, ``-O`` or a file); the two names at odds is one error line."""
    from .clinames import notice
    from .runs.optionfields import Renamed, new_names

    renamed = getattr(check_task(task).Options, "renamed_options", ())

    def said(rule: Renamed, value: Any) -> None:
        shown = f"={value}" if rule.values is not None else ""
        notice(f"{where} {rule.old}{shown}", f"{where} {rule.new}{shown}")

    try:
        out: dict[str, Any] = new_names(options, renamed, said)
    except ValueError as exc:
        raise ConfigError(f"{where} {exc}") from None
    return out


def old_flags_renamed(model: type[Any], args: list[str]) -> list[str]:
    """``args`` with each flag of an option's old name (``--scales``, ``--mode``; ``--method welch`` where
    ``method`` named the t-test) spelt as the option's new flag, one notice line each; an old flag next
    to its new one is one error line."""
    from .clinames import notice

    renamed = getattr(model, "renamed_options", ())
    end = args.index("--") if "--" in args else len(args)
    moved: dict[int, tuple[str, str]] = {}  # position -> (the old spelling shown, the new flag)
    for i, arg in enumerate(args[:end]):
        flag, eq, inline = arg.partition("=")
        value = inline if eq else (args[i + 1] if i + 1 < end else None)
        rule = next((r for r in renamed if _kebab(r.old) == flag and r.moves(value)), None)
        if rule is not None:
            moved[i] = (flag + (f" {value}" if rule.values is not None else ""), _kebab(rule.new))
    kept = {arg.partition("=")[0] for i, arg in enumerate(args[:end]) if i not in moved}
    out = list(args)
    for i, (old, new) in moved.items():
        if new in kept:  # both spellings: one line naming the one to keep, never a silent choice
            raise ConfigError(f"{old} is the old spelling of {new}", f"give {new} only")
        notice(old, new + old[len(old.split(" ")[0]) :])
        out[i] = new + args[i][len(args[i].partition("=")[0]) :]
    return out


def retired_flags(retired: Mapping[str, str], args: list[str]) -> list[str]:
    """``args`` with each old flag of ``retired`` (old -> new) spelt the new way, one notice line each.

    A new spelling of one word takes the old flag's value (``--tasks ciar`` -> ``--datasets ciar``); one
    with a value replaces a switch (``--no-game`` -> ``--game-players 0``); an empty one drops a switch
    that only said what the default does (``--game``). An old flag next to its new one is one error line.
    """
    from .clinames import notice

    end = args.index("--") if "--" in args else len(args)
    out: list[str] = []
    for arg in args[:end]:
        flag, eq, inline = arg.partition("=")
        new = retired.get(flag)
        if new is None or not flag.startswith("--"):
            out.append(arg)
            continue
        words = new.split()
        if words and any(a.partition("=")[0] == words[0] for a in args[:end]):
            raise ConfigError(f"{flag} is the old spelling of {words[0]}", f"give {words[0]} only")
        notice(flag, new or "the default (no flag)")
        if len(words) == 1:
            out.append(words[0] + eq + inline)
        else:
            out.extend(words)
    return out + args[end:]


class GeneratedCommand(typer.core.TyperCommand):
    """A command with flags generated from its task's ``Options`` model (:class:`OptionFlag`), next to
    those it declares. The model is imported when the command's parameters are first needed (its
    ``--help``, or running it), never for ``llmpsych --help`` or the group's help."""

    task: ClassVar[str] = ""
    #: False: the command has defaults of its own (a preset's), so the fields' are not shown.
    shown_defaults: ClassVar[bool] = True
    _generated: list[OptionFlag] | None = None

    _declared: list[Any]

    def option_flags(self) -> tuple[list[OptionFlag], str | None]:
        """The flags it generates, and the ``--help`` panel that lists them (None: with its own)."""
        raise NotImplementedError

    @property
    def params(self) -> list[Any]:
        """The declared parameters, then the generated ones (added on first read: that imports the
        task's model)."""
        if self._generated is None:
            self._generated = []  # being built (reading params below must not build them again)
            flags, panel = self.option_flags()
            self._declared.extend(_click_params(flags, panel, shown_defaults=self.shown_defaults))
            self._generated = flags
        return self._declared

    @params.setter
    def params(self, value: list[Any]) -> None:
        self._declared = value

    def generated(self) -> list[OptionFlag]:
        """The generated flags."""
        self.params  # noqa: B018 - reading them builds them
        assert self._generated is not None
        return self._generated

    def take_given(self, ctx: Any) -> dict[str, Any]:
        """Take the generated values out of the call (``ctx.params``): those given on the command line
        or from the environment, by option name; the others are the model's to fill (its one default)."""
        given_options: dict[str, Any] = {}
        for f in self.generated():
            value = ctx.params.pop(f.param, None)
            source = ctx.get_parameter_source(f.param)
            if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
                given_options[f.name] = f.value(value)
        return given_options


class TaskCommand(GeneratedCommand):
    """A run command whose task options are generated from its task's ``Options`` model
    (:func:`task_command`): every option is a flag."""

    #: Flags this command once had that named another option: old flag -> the flag of the option it set.
    moved: ClassVar[Mapping[str, str]] = {}
    #: Old spellings still accepted, hidden (:data:`~llmpsych.clinames.RETIRED_FLAGS_OF`): old -> new.
    retired: ClassVar[Mapping[str, str]] = {}

    def option_flags(self) -> tuple[list[OptionFlag], str | None]:
        """Every option of the task, in a panel of its own."""
        return option_flags(check_task(self.task).Options), f"Task options ({self.task}; also -O key=value)"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """An old flag that renamed its option is one line naming the option's own flag; the flag of an
        option renamed in the model (``--scales``: ``scale``) still works, with one notice line."""
        args = retired_flags(self.retired, args)
        args = old_flags_renamed(check_task(self.task).Options, args)
        for arg in args[: args.index("--")] if "--" in args else args:
            old = arg.split("=", 1)[0]
            if old in self.moved:
                raise ConfigError(
                    f"{old} is now {self.moved[old]}: a flag is named after the option it sets",
                    f"see `{ctx.command_path} --help`",
                )
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Take the generated values out of the call: those given (on the command line or from the
        environment) go to the body through ``ctx.meta``, the rest is the model's default."""
        ctx.meta[GIVEN_OPTIONS] = self.take_given(ctx)
        return super().invoke(ctx)


def task_command(
    app: typer.Typer,
    name: str,
    task: str,
    *,
    flags_type: type[ExecutorFlags] = RunFlags,
    without: Iterable[str] = (),
    local: bool = False,
    moved: Mapping[str, str] | None = None,
    retired: Mapping[str, str] | None = None,
    shown_defaults: bool = True,
) -> Callable[[CommandT], CommandT]:
    """Register ``func`` as ``app``'s command ``name`` running ``task``: every option of the task's
    ``Options`` model is a flag of it (:class:`OptionFlag`), next to the shared run flags
    (:func:`run_command`; ``without``/``local`` as there).

    ``func`` takes ``ctx``, ``flags`` and ``options``: the task options of the command line, the flags
    given, then ``--task-config``, then ``-O`` (:func:`layer_options`); a flag of its own (a report
    setting, a model role) is declared as usual and must not be a task option. ``moved`` names the
    command's old flags that set an option of another name (each is refused with the new spelling);
    ``retired`` its old spellings still accepted, hidden, with a notice (:func:`retired_flags`).
    ``shown_defaults=False``: the command has defaults of its own (a preset's values), so ``--help``
    shows none of the fields'.
    """

    def decorate(func: CommandT) -> CommandT:
        signature = inspect.signature(func, eval_str=True)
        if not {"ctx", "flags", "options"} <= signature.parameters.keys():
            raise ValueError(f"{func.__name__}: a task command takes ctx, flags and options")

        @functools.wraps(func)
        def command(*args: Any, flags: RunFlags, **kwargs: Any) -> Any:
            ctx = kwargs["ctx"]
            values = dict(ctx.meta.get(GIVEN_OPTIONS, {}))
            options = layer_options(ctx, values, {k: OPTION_PARAM + k for k in values}, flags, task=task)
            return func(*args, flags=flags, options=options, **kwargs)

        params = [p for n, p in signature.parameters.items() if n != "options"]
        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        members = {
            "task": task,
            "moved": dict(moved or {}),
            "retired": dict(retired or {}),
            "shown_defaults": shown_defaults,
        }
        cls = type(f"{task.title()}Command", (TaskCommand,), members)
        made = run_command(command, flags_type, local=local, without=without)
        app.command(name, cls=cls)(made)
        return cast("CommandT", made)

    return decorate


#: Where :class:`FieldCommand` leaves the values of its field flags for the command body (``ctx.meta``).
FIELD_VALUES = "llmpsych.field_values"
#: The context parameter :func:`field_command` adds to a function that takes none.
_FIELD_CTX = "field_command_context__"


class FieldCommand(GeneratedCommand):
    """A command that runs no task but takes some of a task's options (a significance level, the split
    of a held-out set): :func:`field_command`. Each is the field's flag (:class:`OptionFlag`), listed
    with the command's own flags."""

    #: The names of the fields it takes, in the order its ``--help`` lists them.
    fields: ClassVar[tuple[str, ...]] = ()

    def option_flags(self) -> tuple[list[OptionFlag], str | None]:
        """The flags of its fields (a name the model does not have is an error, not a missing flag)."""
        model = check_task(self.task).Options
        by_name = {f.name: f for f in option_flags(model)}
        unknown = [n for n in self.fields if n not in by_name]
        if unknown:
            raise ValueError(f"{self.name}: {self.task!r} has no option {', '.join(unknown)} with a flag")
        return [by_name[n] for n in self.fields], None

    def invoke(self, ctx: Any) -> Any:
        """The fields' values for the body (``ctx.meta``): each given one checked by the model, as ``-O``
        is (a bad value is one line naming its flag; a validator's aliases hold: ``--test paper``), the
        others the fields' defaults."""
        from pydantic import ValidationError

        given_values = self.take_given(ctx)
        try:
            checked = check_task(self.task).Options.model_validate(given_values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = str(first["loc"][0]) if first["loc"] else ""
            flag = _kebab(where) if where in self.fields else ", ".join(_kebab(n) for n in given_values)
            raise ConfigError(f"{flag}: {first['msg']}") from None
        ctx.meta[FIELD_VALUES] = {n: getattr(checked, n) for n in self.fields}
        return super().invoke(ctx)


def field_command(app: typer.Typer, name: str, task: str, **settings: Any) -> Callable[[CommandT], CommandT]:
    """Register ``func`` as ``app``'s command ``name`` (``settings`` as for ``app.command``), whose
    keyword-only parameters are options of ``task``: each is the flag of the field of its name, its
    help, choices and default read off the field, as on the task's run command (:class:`OptionFlag`),
    so the one default is the field's. ``func`` gets the value given (checked by the model) or the
    field's default.

    ``@kit.field_command(app, "human", "emotionbench")`` over ``def human(data_dir: DataDirOpt = None,
    *, alpha: float)``: ``--alpha`` is EmotionBench's ``alpha`` option. The model is imported when the
    command's parameters are first read (its ``--help``, or running it), not when the group is built.
    The function returned is the registered callback (pass it to
    :func:`~llmpsych.clinames.retired_command` for a hidden old name)."""

    def decorate(func: CommandT) -> CommandT:
        signature = inspect.signature(func, eval_str=True)
        keyword = inspect.Parameter.KEYWORD_ONLY
        kept = [p for p in signature.parameters.values() if p.kind is not keyword]
        chosen = tuple(n for n, p in signature.parameters.items() if p.kind is keyword)
        if not chosen:
            raise ValueError(f"{func.__name__}: a field command takes its task's options as keyword-only")
        # the values reach the body through the context, which typer passes to a parameter so annotated
        own = next((p.name for p in kept if p.annotation is typer.Context), None)
        if own is None:
            kept.append(
                inspect.Parameter(_FIELD_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
            )

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            ctx = kwargs[own] if own is not None else kwargs.pop(_FIELD_CTX)
            return func(*args, **kwargs, **ctx.meta[FIELD_VALUES])

        command.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
        cls = type(f"{task.title()}FieldCommand", (FieldCommand,), {"task": task, "fields": chosen})
        command.command_class = cls  # type: ignore[attr-defined]  # for a hidden old name of it
        app.command(name, cls=cls, **settings)(command)
        return cast("CommandT", command)

    return decorate


DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the runs it would make, run nothing.")]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Answer limit (default: the preset's).")
]


def preset_command(
    app: typer.Typer,
    group: str,
    task: str,
    presets: Callable[[], Any],
    *,
    max_tokens: bool = False,
    moved: Mapping[str, str] | None = None,
    retired: Mapping[str, str] | None = None,
    own: Sequence[inspect.Parameter] = (),
) -> None:
    """Give ``app`` the command ``preset NAME``: one of a paper's experiments, its runs (resumable in the
    same ``--out``), then its summary. The one body of every benchmark's presets.

    Each option of ``task`` is a flag, as on its run command (:func:`task_command`): what is given layers
    over the preset's values (a preset's values are its own defaults, so the flags show none).
    ``presets`` returns the benchmark's presets module (imported only when the command runs): its
    ``get_preset``, ``PresetSettings``, ``expand``, ``describe``, ``execute``, ``summarize`` and, where it
    has more to say about a plan, ``plan_note(planned)``. ``max_tokens``: the command takes
    ``--max-tokens`` as a sampling parameter (for a task without such an option). ``own``: flags of the
    benchmark's presets that are no task option (a subset of the grid: ``mas preset --systems``), each
    passed to its ``PresetSettings`` by name; ``moved``/``retired`` as for :func:`task_command`.
    """

    def preset(
        ctx: typer.Context,
        name: Annotated[
            str, typer.Argument(help="Preset name (a name it does not know is answered with the list).")
        ],
        model: ModelsOpt = None,
        dry_run: DryRunOpt = False,
        max_tokens: MaxTokensOpt = None,
        *,
        flags: RunFlags,
        options: dict[str, Any],
        **chosen_subset: Any,
    ) -> None:
        """Run one of the paper's experiments: its runs (resumable in the same --out), then a summary in
        --out. Each option of the task is a flag; what is given layers over the preset's values."""
        from .paths import runs_dir
        from .report.markdown import table as md_table
        from .report.terminal import echo
        from .runs.runner import new_run_dir

        module = presets()
        chosen = module.get_preset(name)
        if flags.temperature is not None and chosen.name == "temperatures":
            raise ConfigError("--temperature conflicts with the 'temperatures' preset, which sets it per run")
        from .runs.optionfields import comma_forms

        check_options(task, options)
        options = comma_forms(check_task(task).Options, options)
        settings = module.PresetSettings(
            models=list(model or []),
            temperature=flags.temperature,
            max_tokens=max_tokens,
            base_url=flags.base_url,
            concurrency=flags.concurrency,
            data_dir=flags.data_dir,
            seed=flags.seed or 0,
            cache=not flags.no_cache,
            options=options,
            **chosen_subset,
        )
        planned = module.expand(chosen, settings)
        note = getattr(module, "plan_note", None)
        size = note(planned) if callable(note) else f"{len(planned)} run directories"
        if dry_run:
            echo(f"preset {chosen.name}: {chosen.title} ({chosen.paper})")
            echo(terminal_text(md_table(module.describe(planned), floatfmt="g"), markup=False))
            echo(f"{size}; nothing was run (--dry-run).")
            return
        parent = flags.out or new_run_dir(runs_dir(), f"{group}-{chosen.name}")

        def report(run: Any, outcome: RunOutcome) -> None:
            console.print(outcome_line(outcome, f"{run.model} | {run.setting}"), soft_wrap=True)

        outcomes = module.execute(
            planned, parent, progress=flags.progress, debug=state.debug, on_outcome=report
        )
        for path in module.summarize(chosen, planned, parent):
            console.print(f"  wrote {terminal_text(path)}")
        again = f"llmpsych {group} preset {terminal_text(chosen.name)} ... --out {terminal_text(parent)}"
        exit_if_failed(summarize([o.run_dir for o in outcomes], again))  # the same --out resumes

    signature = inspect.signature(preset, eval_str=True)
    params = [
        p
        for n, p in signature.parameters.items()
        if (max_tokens or n != "max_tokens") and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    at = next(i for i, p in enumerate(params) if p.kind is inspect.Parameter.KEYWORD_ONLY)
    params[at:at] = own
    preset.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    # a sweep of runs: re-run into the same --out to resume
    task_command(app, "preset", task, without={"resume"}, moved=moved, retired=retired, shown_defaults=False)(
        preset
    )


def run_task(
    ctx: typer.Context,
    task: str,
    flags: RunFlags,
    options: dict[str, Any],
    *,
    source: str,
    models: dict[str, Any] | None = None,
    n_parallel: int | None = None,
    again: str | None = None,
) -> None:
    """A run command's body: resume the run ``--resume`` names, or start one of ``task`` with these
    options; print the outcome and exit 1 when units failed."""
    if flags.resume is not None:
        finish(resume(ctx, flags), again)
        return
    cfg = build_config(task, flags, options=options, models=models, n_parallel=n_parallel, source=source)
    finish(start(cfg, flags), again)


def check_task(task: str) -> Any:
    """The task's class, or one line naming the known tasks."""
    from .runs.task import task_class

    return task_class(task)


def check_options(task: str, options: dict[str, Any], source: str | None = None) -> None:
    """Validate task options against the task's ``Options`` model: an unknown key is named with the
    valid ones listed; a bad value says what is wrong with it (one line each)."""
    cls = check_task(task)
    options = current_names(task, options, source or "option")
    fields = getattr(cls.Options, "model_fields", {})
    # an Options model that takes further keys (gamabench: a table per game) checks them itself
    open_keys = getattr(cls.Options, "model_config", {}).get("extra") == "allow"
    prefix = f"{source}: " if source else ""
    for key in options:
        if key not in fields and not open_keys:
            raise ConfigError(
                f"{prefix}unknown option {key!r} for task {task!r}",
                "valid options: " + (", ".join(fields) or "none"),
            )
    cls.validate_options(options, source)


def build_config(
    task: str,
    flags: RunFlags,
    *,
    options: dict[str, Any],
    models: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    n_parallel: int | None = None,
    source: str = "flags",
) -> RunConfig:
    """The run config of a command from its shared ``flags`` and task ``options`` (checked against the
    task first); ``models`` maps further model roles, ``params`` adds sampling parameters."""
    from .runs import parse_run_config
    from .runs.optionfields import comma_forms

    options = current_names(task, options)
    check_options(task, options)
    options = comma_forms(check_task(task).Options, options)
    temperature = flags.temperature
    all_params = {**(params or {}), **({"temperature": temperature} if temperature is not None else {})}
    data: dict[str, Any] = {
        "task": task,
        **flags.config_values(),
        "models": models or None,
        "n_parallel": n_parallel,
        "cache": not flags.no_cache,
        "params": all_params or None,
        "options": options,
    }
    return parse_run_config({k: v for k, v in data.items() if v is not None}, source)


# -- starting, resuming, the outcome -------------------------------------------------------------------
def start(config: RunConfig, flags: RunFlags) -> RunOutcome:
    """Start a run in ``flags.out`` (default: a new folder named after ``flags.name`` or the task)."""
    from .paths import runs_dir
    from .runs import start_run
    from .runs.runner import new_run_dir

    run_dir = flags.out or new_run_dir(runs_dir(), flags.name or config.task)
    return start_run(config, run_dir, flags.progress, state.debug)


def refuse_with_resume(ctx: typer.Context, honoured: Iterable[str] = RESUME_FLAGS) -> None:
    """``--resume`` continues a run as it was started: a flag it cannot honour is an error (exit 2)
    naming it, rather than silently ignored."""
    ignored = sorted(given(ctx) - set(honoured))
    if ignored:
        names = ", ".join(flag_name(ctx, n) for n in ignored)
        allowed = ", ".join(flag_name(ctx, n) for n in sorted(honoured) if n != "resume")
        raise ConfigError(
            f"--resume continues the run as it was started and cannot take {names}",
            f"with --resume only {allowed} apply; start a new run to change the rest",
        )


def resume(ctx: typer.Context, flags: RunFlags) -> RunOutcome:
    """Resume the run in ``flags.resume``: refuses flags it cannot honour; ``--progress/--no-progress``
    defaults to the choice the run was started with."""
    from .runs import resume_run

    if flags.resume is None:
        raise ValueError("resume() needs flags.resume")
    refuse_with_resume(ctx)
    show = flags.progress if "progress" in given(ctx) else None
    return resume_run(flags.resume, show, state.debug, base_url=flags.base_url)


def outcome_line(outcome: RunOutcome, label: str = "run") -> str:
    """One line: the run directory, units done / failed, requests sent, cached, replayed, seconds."""
    s = outcome.summary
    return (
        f"[bold]{terminal_text(label)}[/bold] {terminal_text(outcome.run_dir)}: "
        f"{s.done + s.skipped}/{s.total} units done"
        + (f", [red]{s.failed} failed[/red]" if s.failed else "")
        + f"; {s.calls_sent} requests sent, {s.calls_cached} answered from the cache, "
        f"{s.calls_replayed} from the run store; {s.seconds:.1f} s"
    )


def task_console_lines(run_dir: Path) -> list[str]:
    """What the run's task prints after its summary: the task module's ``console_lines(run_dir)``, found
    through the task registry (none for tasks without one)."""
    import sys

    from .runs import RunStore

    with RunStore.in_dir(run_dir) as store:
        task = (store.get_meta("config") or {}).get("task")
    if not isinstance(task, str):
        return []
    module = sys.modules[check_task(task).__module__]
    lines = getattr(module, "console_lines", None)
    return list(lines(run_dir)) if callable(lines) else []


def summarize(run_dirs: Path | list[Path], resume_hint: str | None = None) -> int:
    """The shared end-of-run summary of one or several runs; returns the number of failed units."""
    from .report.summary import print_run_summary

    return print_run_summary(console, run_dirs, resume_hint, err_console)


def print_outcome(outcome: RunOutcome, resume_hint: str | None = None) -> int:
    """What the execution did, the files written, the shared summary, then the task's own lines;
    returns the number of failed units."""
    console.print(outcome_line(outcome), soft_wrap=True)
    for path in outcome.outputs:
        console.print(f"  wrote {terminal_text(path)}")
    failed = summarize(outcome.run_dir, resume_hint)
    for line in task_console_lines(outcome.run_dir):
        console.print(line, highlight=False, markup=False)
    return failed


def exit_if_failed(failed: int) -> None:
    """Exit with status 1 when units failed (scripts and CI see it; the run stays resumable)."""
    if failed:
        raise typer.Exit(1)


def finish(outcome: RunOutcome, resume_hint: str | None = None) -> None:
    """Print the outcome and exit 1 when units failed."""
    exit_if_failed(print_outcome(outcome, resume_hint))


__all__ = [
    "ExecutorFlags",
    "RunFlags",
    "build_config",
    "check_options",
    "check_task",
    "exit_if_failed",
    "field_command",
    "finish",
    "local_run_command",
    "outcome_line",
    "parse_options",
    "print_outcome",
    "resume",
    "run_command",
    "start",
    "state",
    "summarize",
    "sweep_command",
    "option_flags",
    "run_task",
    "task_command",
    "task_options",
]
