"""``llmpsych faults study``: a user's system over fault plans × tasks × runs (see
:mod:`llmpsych.faults.study`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import clikit as kit
from ..errors import ConfigError, terminal_text
from ..report.terminal import InertConsole

console = InertConsole(soft_wrap=True)


def study(
    plans: Annotated[
        list[Path], typer.Argument(help="Fault plan files (TOML, or JSON by name); one is clean.")
    ],
    system: Annotated[
        str,
        typer.Option(
            "--system",
            help='The command that runs your system once, e.g. "python my_team.py": it reads its base URL '
            "and key from OPENAI_BASE_URL / OPENAI_API_KEY, the task row on standard input, and prints its "
            "answer.",
        ),
    ],
    tasks: Annotated[Path, typer.Option("--tasks", help="Tasks, one JSON object a line (id or task_id).")],
    scorer: Annotated[
        str,
        typer.Option(
            "--scorer",
            help="humaneval (the tests in the sandbox), module:function or file.py:function, or a command "
            'reading {"task", "answer"} on standard input and printing a score (0-100, true/false).',
        ),
    ],
    model: Annotated[
        str, typer.Option("--model", "-m", help="The upstream model spec the endpoint forwards to.")
    ],
    base_url: kit.BaseUrlOpt = None,
    runs: Annotated[
        int, typer.Option("--runs", min=1, max=1000, help="Repetitions of each plan × task.")
    ] = 1,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder of the study (resumed when run again).")
    ] = Path("faults-study"),
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, max=86_400, help="Seconds one run of the system may take.")
    ] = 600.0,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=64, help="Runs of the system side by side.")
    ] = 1,
    data_dir: kit.DataDirOpt = None,
    progress: kit.ProgressOpt = True,
) -> None:
    """Run your system (any command taking its base URL from the environment) behind the fault endpoint,
    once per plan × task × run; score each answer; write per-plan tables as `mas compare` does."""
    from .study import Study, command_argv, load_plans, load_tasks, make_scorer, run_study

    if not (timeout > 0):
        raise ConfigError("--timeout must be positive")
    chosen = Study(
        system=command_argv(system, "--system"),
        plans=load_plans(plans),
        tasks=load_tasks(tasks),
        scorer=make_scorer(scorer, data_dir=data_dir),
        runs=runs,
        out=out,
        upstream=model,
        base_url=base_url,
        timeout=timeout,
        workers=workers,
    )
    say = (
        (lambda line: kit.err_console.print(terminal_text(line), markup=False, highlight=False))
        if progress
        else None
    )
    for path in run_study(chosen, say):
        console.print(f"wrote {terminal_text(path)}")
