"""``llmpsych mas ...``: run a collaboration system on a task, run the paper's experiment presets, compare."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .. import clikit as kit
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


@app.command("preset")
@kit.sweep_command
def preset(
    name: Annotated[str, typer.Argument(help="main, error-rates, error-types or defences.")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model spec.")] = "local/qwen2.5-0.5b",
    base_url: kit.BaseUrlOpt = None,
    systems_: Annotated[
        str | None, typer.Option("--systems", help="Comma-separated subset of the preset's systems.")
    ] = None,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated subset of the preset's tasks.")] = None,
    items: Annotated[int | None, typer.Option(help="Only the first N items of every task.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Maximum tokens per answer.")] = None,
    data_dir: kit.DataDirOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for all runs and the report.")] = Path(
        "mas-preset"
    ),
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list the runs.")] = False,
    progress: kit.ProgressOpt = True,
) -> None:
    """Run one of the paper's experiments (every run, then the comparison report)."""
    from .experiments import PRESETS, PresetModel, expand_preset, run_preset

    if name not in PRESETS:
        raise LlmpsychError(f"unknown preset {name!r}", f"choose one of {', '.join(PRESETS)}")
    plan = expand_preset(
        name,
        systems=systems_.split(",") if systems_ else None,
        tasks=tasks.split(",") if tasks else None,
    )
    if dry_run:
        for run_name, options in plan:
            console.print(terminal_text(f"{run_name}: {options}"))
        return
    common: PresetModel = {
        "model": model,
        "base_url": base_url,
        "data_dir": data_dir,
        "items": items,
        "max_tokens": max_tokens,
    }
    for path in run_preset(plan, out, **common, show_progress=progress):
        console.print(f"wrote {terminal_text(path)}")
    again = f"llmpsych mas preset {terminal_text(name)} ... --out {terminal_text(out)}"
    # the preset resumes its unfinished runs when run again with the same --out
    kit.exit_if_failed(kit.summarize([out / run_name for run_name, _ in plan], again))
