"""The CLI kit: what every ``run`` command shares, defined once.

The options every run command takes (one definition and one help text each), task options from
``-O key=value`` and ``--task-config FILE`` checked against the task's ``Options`` model, the run config,
starting or resuming through the one engine entry (:func:`llmpsych.runs.start_run` /
:func:`~llmpsych.runs.resume_run`), the printed outcome (the shared end-of-run summary), exit status 1
when units failed, and ``--debug``.

Only typer and rich are imported here: ``llmpsych --help`` and a one-line error must stay fast (the run
engine pulls in pydantic, aiohttp and the task's libraries, so it is imported inside the functions).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .errors import ConfigError, terminal_text
from .report.terminal import InertConsole

if TYPE_CHECKING:
    from .runs import RunConfig, RunOutcome

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
        help="Task option key=value (value read as YAML: 3, true, \\[a, b]); repeatable; wins over "
        "--task-config.",
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

#: Flags that ``--resume`` honours (everything else defines the run, which is already stored).
RESUME_FLAGS = frozenset({"resume", "base_url", "progress", "debug"})


# -- where units execute (--executor; docs/scale-out.md) -----------------------------------------------
def _executor_flag(field: str) -> Any:
    """A callback making a given flag part of the executor of every run this command starts or resumes
    (a preset's and a sweep's too); flags not given leave the environment's choice."""

    def callback(value: Any) -> Any:
        if value is not None:
            from dataclasses import replace

            from .runs.executors import current, set_current

            set_current(replace(current(), **{field: value}))
        return value

    return callback


ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        callback=_executor_flag("kind"),
        help="Where work units run: local (this process, the default) or ray (actors of a Ray cluster; "
        "the store stays here). Default: $LLMPSYCH_EXECUTOR, else local.",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        callback=_executor_flag("address"),
        help="Ray cluster to use (auto, host:6379, ray://host:10001); default: start a private Ray on "
        "127.0.0.1 ($LLMPSYCH_RAY_ADDRESS).",
    ),
]
ActorsOpt = Annotated[
    int | None,
    typer.Option(
        "--actors",
        min=1,
        callback=_executor_flag("actors"),
        help="Ray actors running units, each with its own model clients (an embedded model loaded once "
        "per actor); default 2.",
    ),
]
ActorCpusOpt = Annotated[
    float | None,
    typer.Option(
        "--actor-cpus",
        min=0,
        callback=_executor_flag("cpus_per_actor"),
        help="CPUs each actor reserves (default 1).",
    ),
]
ActorThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--actor-threads",
        min=0,
        callback=_executor_flag("threads_per_actor"),
        help="llama.cpp threads of an actor's embedded model (default 0: every core of its node).",
    ),
]
#: The executor flags; ``--resume`` honours them (where a run executes is not part of the run).
EXECUTOR_FLAGS = frozenset({"executor", "ray_address", "actors", "actor_cpus", "actor_threads"})
RESUME_FLAGS = RESUME_FLAGS | EXECUTOR_FLAGS


# -- task options --------------------------------------------------------------------------------------
def parse_options(pairs: Iterable[str]) -> dict[str, Any]:
    """``["runs=3", "scales=[BFI, EPQ-R]"]`` -> ``{"runs": 3, "scales": ["BFI", "EPQ-R"]}``: each value is
    read as a YAML scalar or flow collection (as inspect_ai's ``-T``)."""
    import yaml

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--option expects key=value, got {pair!r}")
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            reason = " ".join(str(exc).split())
            raise ConfigError(f"--option {key.strip()}: the value is not valid YAML: {reason}") from None
    return options


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
    flags: dict[str, Any],
    *,
    pairs: list[str] | None = None,
    task_config: Path | None = None,
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The task options of a command: its own flags (``flags``, None values left out), then the
    ``--task-config`` file, then ``-O`` pairs, each layer winning over the one before.

    A flag given on the command line wins over the file; the same option given both as a flag and as
    ``-O`` is an error. ``aliases`` maps a flag's parameter name to the option it sets when they differ
    (``keep_order`` -> ``shuffle``).
    """
    explicit = {(aliases or {}).get(name, name): name for name in given(ctx)}
    options = {k: v for k, v in flags.items() if v is not None}
    if task_config is not None:
        for key, value in read_task_config(task_config).items():
            if not (key in explicit and key in flags):  # a flag given on the command line wins
                options[key] = value
    for key, value in parse_options(pairs or []).items():
        if key in explicit and key in flags:
            raise ConfigError(
                f"option {key!r} is given twice: as {flag_name(ctx, explicit[key])} and as -O", "keep one"
            )
        options[key] = value
    return options


def check_task(task: str) -> Any:
    """The task's class, or one line naming the known tasks."""
    from .runs.task import task_class

    return task_class(task)


def check_options(task: str, options: dict[str, Any], source: str | None = None) -> None:
    """Validate task options against the task's ``Options`` model: an unknown key is named with the
    valid ones listed; a bad value says what is wrong with it (one line each)."""
    cls = check_task(task)
    fields = getattr(cls.Options, "model_fields", {})
    prefix = f"{source}: " if source else ""
    for key in options:
        if key not in fields:
            raise ConfigError(
                f"{prefix}unknown option {key!r} for task {task!r}",
                "valid options: " + (", ".join(fields) or "none"),
            )
    cls.validate_options(options, source)


def build_config(
    task: str,
    *,
    options: dict[str, Any],
    model: str | None = None,
    models: dict[str, Any] | None = None,
    base_url: str | None = None,
    seed: int | None = None,
    concurrency: int | None = None,
    data_dir: Path | None = None,
    no_cache: bool = False,
    temperature: float | None = None,
    params: dict[str, Any] | None = None,
    n_parallel: int | None = None,
    source: str = "flags",
) -> RunConfig:
    """The run config of a command (its options checked against the task first)."""
    from .runs import parse_run_config

    check_options(task, options)
    all_params = {**(params or {}), **({"temperature": temperature} if temperature is not None else {})}
    data: dict[str, Any] = {
        "task": task,
        "model": model,
        "models": models or None,
        "base_url": base_url,
        "seed": seed,
        "concurrency": concurrency,
        "n_parallel": n_parallel,
        "data_dir": str(data_dir) if data_dir else None,
        "cache": not no_cache,
        "params": all_params or None,
        "options": options,
    }
    return parse_run_config({k: v for k, v in data.items() if v is not None}, source)


# -- starting, resuming, the outcome -------------------------------------------------------------------
def start(config: RunConfig, out: Path | None, progress: bool, name: str | None = None) -> RunOutcome:
    """Start a run in ``out`` (default: a new folder named after ``name`` or the task)."""
    from .paths import runs_dir
    from .runs import start_run
    from .runs.runner import new_run_dir

    run_dir = out or new_run_dir(runs_dir(), name or config.task)
    return start_run(config, run_dir, progress, state.debug)


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


def resume(ctx: typer.Context, run_dir: Path, *, base_url: str | None, progress: bool) -> RunOutcome:
    """Resume a run: refuses flags it cannot honour; ``--progress/--no-progress`` defaults to the choice
    the run was started with."""
    from .runs import resume_run

    refuse_with_resume(ctx)
    show = progress if "progress" in given(ctx) else None
    return resume_run(run_dir, show, state.debug, base_url=base_url)


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

    store = RunStore.in_dir(run_dir)
    try:
        task = (store.get_meta("config") or {}).get("task")
    finally:
        store.close()
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
    "build_config",
    "check_options",
    "check_task",
    "exit_if_failed",
    "finish",
    "outcome_line",
    "parse_options",
    "print_outcome",
    "resume",
    "start",
    "state",
    "summarize",
    "task_options",
]
