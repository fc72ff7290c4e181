"""``llmpsych mas ...``: run a collaboration system on a task, run the paper's experiment presets, compare."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import clikit as kit
from ..clinames import RETIRED_FLAGS_OF
from ..errors import LlmpsychError, terminal_text
from ..report.terminal import InertConsole

app = typer.Typer(
    help="MAS-Resilience: multi-agent systems with faulty agents, and defences.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(soft_wrap=True)  # long paths stay on one line


@app.callback()
def mas(debug: kit.DebugOpt = False) -> None:
    """MAS-Resilience: multi-agent systems with faulty agents, and defences."""


def _parse_models(pairs: list[str] | None) -> dict[str, str]:
    models = {}
    for pair in pairs or []:
        role, sep, spec = pair.partition("=")
        if not sep:
            raise LlmpsychError(f"--agent-model expects role=spec, got {pair!r}")
        models[role.strip()] = spec.strip()
    return models


@kit.task_command(
    app,
    "run",
    "mas",
    moved={"--task": "--dataset", "--pm": "--p-m", "--pe": "--p-e", "--error": "--error-type"},
)
def run(
    ctx: typer.Context,
    agent_model: Annotated[
        list[str] | None,
        typer.Option(
            help="Per-agent or helper model, role=spec (roles: agent names, injector, transformer, "
            "inspector). Repeatable."
        ),
    ] = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Run one system on one task (--dataset) under one condition and write its report. Each option of
    the task is a flag."""
    kit.check_options("mas", options)  # an unknown key named with the valid ones, before the name is read
    chosen: Any = kit.check_task("mas").validate_options(options)
    name = f"mas-{chosen.system}-{chosen.dataset}"
    kit.run_task(
        ctx, "mas", flags.but(name=name), options, models=_parse_models(agent_model), source="mas run"
    )


@app.command("systems")
def systems() -> None:
    """The six systems: structure, tasks, agents, final and default faulty agent, limits."""
    from rich.table import Table

    from .systems import SYSTEMS, system_class

    table = Table(title="MAS-Resilience systems")
    for column in ("system", "structure", "tasks", "agents", "final", "faulty", "limits"):
        table.add_column(column)
    for name in SYSTEMS:
        cls = system_class(name)
        agents = [a.name for a in cls("code" if "code" in cls.kinds else sorted(cls.kinds)[0]).agents("")]
        table.add_row(
            name,
            cls.structure,
            ", ".join(sorted(cls.kinds)),
            ", ".join(agents),
            cls.final_agent,
            cls.default_faulty,
            f"{cls.max_rounds} rounds, {cls.max_messages} messages",
        )
    console.print(table)


@app.command("compare")
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="Finished mas run directories.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the comparison report.")] = Path(
        "mas-comparison"
    ),
    pool_settings: kit.PoolSettingsOpt = False,
) -> None:
    """Tables in the thesis's layout (structure, task, improvements, sweeps, defences), per model and
    setting."""
    from .experiments import compare_runs

    for path in compare_runs(run_dirs, out, pool_settings):
        console.print(f"wrote {terminal_text(path)}")
    skipped = [d for d in run_dirs if not (d / "summary.json").exists()]
    if skipped:  # said here too, not only in comparison.md
        kit.err_console.print(
            f"left out {len(skipped)} of {len(run_dirs)} folders without summary.json (an unfinished run, or "
            "not a MAS-Resilience run): " + ", ".join(terminal_text(d) for d in skipped),
            markup=False,
            highlight=False,
        )


def _presets() -> Any:
    from . import presets

    return presets


_SUBSET = [
    inspect.Parameter(
        "systems",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=None,
        annotation=Annotated[
            str | None, typer.Option("--systems", help="Comma-separated subset of the preset's systems.")
        ],
    ),
    inspect.Parameter(
        "datasets",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=None,
        annotation=Annotated[
            str | None, typer.Option("--datasets", help="Comma-separated subset of the preset's datasets.")
        ],
    ),
]
kit.preset_command(app, "mas", "mas", _presets, retired=RETIRED_FLAGS_OF["mas preset"], own=_SUBSET)
