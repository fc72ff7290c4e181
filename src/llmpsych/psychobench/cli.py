"""``llmpsych psychobench ...``: run the benchmark on one or more models, and compare runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer

from .. import clikit as kit
from ..clinames import retired_command, retired_option
from ..errors import LlmpsychError, terminal_text
from ..report.terminal import InertConsole, echo

if TYPE_CHECKING:
    from ..runs.runner import RunOutcome

app = typer.Typer(
    help="PsychoBench: thirteen psychometric scales, compared with human norms.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(soft_wrap=True)


@app.callback()
def psychobench(debug: kit.DebugOpt = False) -> None:
    """PsychoBench: thirteen psychometric scales, compared with human norms."""


def parse_scales(value: str | None) -> list[str] | None:
    """``BFI,EPQ-R`` -> names; ``all`` or empty -> None (every scored scale)."""
    if value is None or value.strip().lower() in ("", "all"):
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


#: ``--scale``: the scale(s), repeatable (a value may also list several, comma-separated).
ScaleOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--scale", help="A PsychoBench scale, e.g. BFI; repeat it (or separate with commas) for several."
    ),
]
#: ``--scales``: the old spelling of ``--scale`` (hidden, accepted one release).
ScalesOpt = Annotated[str | None, retired_option("--scales", "--scale")]


def scale_names(scale: list[str] | None, scales: str | None) -> list[str] | None:
    """The scales ``--scale`` (or the old ``--scales``) names: a list, or None for all (``all``/none)."""
    if scale and scales is not None:
        raise LlmpsychError("--scales is the old spelling of --scale", "give --scale only")
    return parse_scales(",".join(scale) if scale else scales)


def parse_thresholds(value: str | None) -> dict[str, float]:
    """``4.9,4.76`` -> masculine and feminine thresholds; absent -> {}."""
    if value is None:
        return {}
    parts = [p.strip() for p in value.split(",")]
    try:
        masculine, feminine = (float(p) for p in parts)
    except ValueError:
        raise LlmpsychError(
            f"--bsri-thresholds {value!r}: expected two numbers MASCULINE,FEMININE", "e.g. 4.9,4.8"
        ) from None
    return {"masculine_threshold": masculine, "feminine_threshold": feminine}


class SettingChanges(TypedDict, total=False):
    """Report settings a command line changes (keywords of :func:`report_settings`)."""

    bsri_thresholds: str | None
    bsri_rule: str | None
    bsri_order: str | None
    cabin_groupings: Path | None


def report_settings(
    run_dir: Path | None,
    *,
    bsri_thresholds: str | None = None,
    bsri_rule: str | None = None,
    bsri_order: str | None = None,
    cabin_groupings: Path | None = None,
    no_cabin_groupings: bool = False,
    parquet: bool | None = None,
    html: bool | None = None,
) -> Any:
    """The run's stored report settings (defaults for a new run) with the given changes applied."""
    from pydantic import ValidationError

    from .analysis import ReportSettings, load_settings
    from .cabin import load_groupings

    settings = load_settings(run_dir) if run_dir is not None else ReportSettings()
    data = settings.model_dump(mode="json")
    bsri = data["bsri"]
    bsri.update(parse_thresholds(bsri_thresholds))
    if bsri_rule is not None:
        bsri.update(rule=bsri_rule, masculine_threshold=None, feminine_threshold=None)
        bsri.update(parse_thresholds(bsri_thresholds))
    if bsri_order is not None:
        bsri["label_order"] = [p.strip() for p in bsri_order.split(",") if p.strip()]
    if cabin_groupings is not None:
        data["cabin_groupings"] = load_groupings(cabin_groupings)
    if no_cabin_groupings:
        data["cabin_groupings"] = None
    if parquet is not None:
        data["parquet"] = parquet
    if html is not None:
        data["html"] = html
    try:
        return ReportSettings.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise LlmpsychError(f"report setting {where}: {problem['msg']}") from None


def model_dir_name(model: str) -> str:
    """A folder name for a model spec (``openai/gpt-4o`` -> ``openai_gpt-4o``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


BSRI_THRESHOLDS = typer.Option(
    "--bsri-thresholds",
    help="BSRI split points MASCULINE,FEMININE (default: n-weighted mean of the data file's norm groups).",
)
BSRI_RULE = typer.Option("--bsri-rule", help="Default split when no thresholds are given: norms or midpoint.")
BSRI_ORDER = typer.Option(
    "--bsri-order", help="Order of the BSRI count string, e.g. U,M,F,A (the paper's printed order)."
)
CABIN_GROUPINGS = typer.Option(
    "--cabin-groupings",
    help="JSON/YAML mapping of CABIN's 41 interests to higher-order dimensions (docs/psychobench.md).",
)


# a sweep of runs: re-run into the same --out to resume
@kit.task_command(app, "run", "psychobench", without={"resume"})
def run(
    ctx: typer.Context,
    model: kit.ModelsOpt = None,
    bsri_thresholds: Annotated[str | None, BSRI_THRESHOLDS] = None,
    bsri_rule: Annotated[str | None, BSRI_RULE] = None,
    bsri_order: Annotated[str | None, BSRI_ORDER] = None,
    cabin_groupings: Annotated[Path | None, CABIN_GROUPINGS] = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Run PsychoBench on each model (one run directory per model), then compare them in one table. Each
    option of the task is a flag (--scale BFI --scale EPQ-R; --cipher --cipher-shift 5)."""
    from ..paths import runs_dir
    from ..runs import analyze_run
    from ..runs.config import DEFAULT_MODEL
    from ..runs.runner import new_run_dir
    from ..runs.store import run_lock
    from ..runs.sweep import PlannedRun, run_sweep

    changes: SettingChanges = {"bsri_thresholds": bsri_thresholds, "bsri_rule": bsri_rule}
    changes |= {"bsri_order": bsri_order, "cabin_groupings": cabin_groupings}
    custom = report_settings(None, **changes) if any(v is not None for v in changes.values()) else None

    models = list(flags.models) or [DEFAULT_MODEL]
    configs = [
        kit.build_config("psychobench", flags.but(models=(spec,)), options=options, source="psychobench run")
        for spec in models
    ]
    parent = flags.out or new_run_dir(runs_dir(), "psychobench")
    names = [model_dir_name(spec) for spec in models]
    folders = [n if names.count(n) == 1 else f"{n}-{i + 1}" for i, n in enumerate(names)]
    run_dirs = [parent / folder for folder in folders]

    def finished(run: PlannedRun, outcome: RunOutcome) -> None:
        from .analysis import save_settings  # imported here: pandas and scipy only once a run has data

        run_dir = parent / run.directory
        if custom is not None and (run_dir / "summary.csv").is_file():
            with run_lock(run_dir):
                save_settings(run_dir, custom)  # then rebuild the report with them (no model call)
                analyze_run(run_dir)
        console.print(kit.outcome_line(outcome, run.config.model), soft_wrap=True)

    # one run folder per model, through the sweep runner: the same command with the same --out resumes
    planned = [PlannedRun(f, cfg, {"model": cfg.model}) for f, cfg in zip(folders, configs, strict=True)]
    run_sweep(planned, parent, progress=flags.progress, debug=kit.state.debug, on_outcome=finished)
    analysed = [d for d in run_dirs if (d / "summary.csv").is_file()]
    if analysed:
        from .compare import write_comparison

        for path in write_comparison(analysed, parent):
            console.print(f"  wrote {terminal_text(path)}")
    kit.exit_if_failed(kit.summarize(run_dirs))  # each run stays resumable (`llmpsych run --resume`)


@app.command("compare")
def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="Analysed PsychoBench run directories.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write comparison.md and comparison.csv into this folder."),
    ] = None,
    marks: Annotated[
        bool,
        typer.Option(
            "--marks/--no-marks",
            help="Highest mean of a row bold, lowest underlined, where a Welch test between those runs' "
            "repeats finds them different.",
        ),
    ] = True,
) -> None:
    """Several runs side by side (rows: scale/subscale; columns: each run's mean ± sd, and the crowd),
    then each run's prompt variant, temperature, persona and cipher."""
    from ..report.markdown import table
    from .compare import (
        BETWEEN_EXPLAINED,
        between_view,
        comparison_tables,
        run_labels,
        settings_frame,
        write_comparison,
    )

    if out is not None:
        for path in write_comparison(run_dirs, out, marks=marks):
            console.print(f"wrote {terminal_text(path)}")
        return
    display, _, between = comparison_tables(run_dirs, marks=marks)
    echo(terminal_text(table(display), markup=False))
    echo("")
    if not between.empty:
        echo(terminal_text(BETWEEN_EXPLAINED + "\n\n" + table(between_view(between)), markup=False))
        echo("")
    echo(terminal_text(table(settings_frame(run_dirs, run_labels(run_dirs)), floatfmt="g"), markup=False))


@app.command("analyze")
def analyze(
    run_dirs: Annotated[list[Path], typer.Argument(help="PsychoBench run directories.")],
    bsri_thresholds: Annotated[str | None, BSRI_THRESHOLDS] = None,
    bsri_rule: Annotated[str | None, BSRI_RULE] = None,
    bsri_order: Annotated[str | None, BSRI_ORDER] = None,
    cabin_groupings: Annotated[Path | None, CABIN_GROUPINGS] = None,
    no_cabin_groupings: Annotated[
        bool, typer.Option("--no-cabin-groupings", help="Forget a stored CABIN mapping.")
    ] = False,
    parquet: Annotated[
        bool | None, typer.Option("--parquet/--no-parquet", help="Also write Parquet tables (pyarrow).")
    ] = None,
    html: Annotated[bool | None, typer.Option("--html/--no-html", help="Also write HTML pages.")] = None,
) -> None:
    """Re-analyse PsychoBench runs from their stores (no model call), changing report settings.

    The settings are stored in the run, so a later `llmpsych analyze RUN_DIR` gives the same report.
    """
    from ..runs import RunStore, analyze_run
    from ..runs.store import run_lock
    from .analysis import save_settings

    for run_dir in run_dirs:
        with RunStore.in_dir(run_dir) as store:  # a folder without a run: one clear error, nothing created
            task = (store.get_meta("config") or {}).get("task")
        if task != "psychobench":
            raise LlmpsychError(
                f"{run_dir} is a {task!r} run, not PsychoBench", "use `llmpsych analyze RUN_DIR`"
            )
        settings = report_settings(
            run_dir,
            bsri_thresholds=bsri_thresholds,
            bsri_rule=bsri_rule,
            bsri_order=bsri_order,
            cabin_groupings=cabin_groupings,
            no_cabin_groupings=no_cabin_groupings,
            parquet=parquet,
            html=html,
        )
        with run_lock(run_dir):  # the settings go into the store: one writer at a time
            save_settings(run_dir, settings)
            for path in analyze_run(run_dir):
                console.print(f"wrote {terminal_text(path)}")


retired_command(app, "psychobench report", analyze)


@app.command("import-answers")
def import_answers_command(
    answers: Annotated[
        Path, typer.Argument(help="CSV or JSONL of item-level answers: scale, run, item, answer[, position].")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The run folder to create.")],
    scale_file: Annotated[
        list[Path] | None,
        typer.Option("--scale-file", help="The scale file the answers belong to; repeatable."),
    ] = None,
    scale: Annotated[
        list[str] | None,
        typer.Option("--scale", help="The official PsychoBench scale the answers belong to; repeatable."),
    ] = None,
    data_dir: kit.DataDirOpt = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Name of the answerer in tables (default imported:FILE).")
    ] = None,
    scales: ScalesOpt = None,
) -> None:
    """Check answers produced elsewhere against their scale and write a run folder analysed like a run."""
    from .imports import import_answers

    if not scale_file and not scale and scales is None:
        raise LlmpsychError("name the answers' scale", "use --scale-file my.yaml or --scale BFI")
    paths = import_answers(
        answers,
        out,
        scale_files=list(scale_file or []),
        scales=scale_names(scale, scales),
        data_dir=data_dir,
        label=label,
    )
    for path in paths:
        console.print(f"wrote {terminal_text(path)}")


#: ``--preset thesis``: Fig. 4.2's sweep (000:1397-1401): five roles, three runs of both question sets, and
#: the scales the figure shows beside them, ten runs each.
VALIDITY_PRESETS: dict[str, dict[str, Any]] = {
    "thesis": {
        "personas": ["default", "psychopath", "liar", "ordinary", "hero"],
        "runs": 3,
        "scales": ["EPQ-R", "DTDD"],
        "scale_runs": 10,
    }
}


@kit.task_command(app, "validity", "validity")
def validity(
    ctx: typer.Context,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="The model that judges SafetyQA replies (the thesis used GPT-4)."),
    ] = None,
    judge_base_url: Annotated[
        str | None,
        typer.Option("--judge-base-url", help="The judge's endpoint, when it is not its provider's."),
    ] = None,
    scale: Annotated[
        list[str] | None,
        typer.Option("--scale", help="Also run this PsychoBench scale per persona, beside; repeatable."),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option("--preset", help="thesis: Fig. 4.2's five roles, 3 runs, with EPQ-R and DTDD."),
    ] = None,
    scales: ScalesOpt = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Behavioural validity per role: TruthfulQA accuracy and SafetyQA safety rate for each persona. Each
    option of the task is a flag."""
    if flags.resume is not None:
        kit.finish(kit.resume(ctx, flags))
        return
    chosen: dict[str, Any] = {}
    if preset is not None:
        if preset not in VALIDITY_PRESETS:
            raise LlmpsychError(f"unknown preset {preset!r}", f"choose one of {', '.join(VALIDITY_PRESETS)}")
        chosen = dict(VALIDITY_PRESETS[preset])
    for key in ("personas", "runs"):  # the preset's values, under what is given
        if key in chosen and key not in options:
            options[key] = chosen[key]
    models: dict[str, Any] | None = None
    if judge is not None:
        models = {"judge": {"model": judge, **({"base_url": judge_base_url} if judge_base_url else {})}}
    elif judge_base_url is not None:
        raise LlmpsychError("--judge-base-url needs --judge MODEL")
    cfg = kit.build_config("validity", flags, options=options, models=models, source="psychobench validity")
    named = scale_names(scale, scales) if scale or scales is not None else chosen.get("scales")
    if not named:
        kit.finish(kit.start(cfg, flags.but(name="validity")))
        return
    from ..paths import runs_dir
    from ..runs.runner import new_run_dir
    from ..runs.sweep import PlannedRun, run_sweep
    from .validity import persona_labels, write_roles_table

    chosen_options: Any = kit.check_task("validity").validate_options(dict(cfg.options))
    persona_list = list(chosen_options.personas)
    labels = persona_labels(persona_list)
    planned = [PlannedRun("validity", cfg, {"task": "validity"})]
    scale_runs = chosen.get("scale_runs", kit.check_task("psychobench").Options.model_fields["runs"].default)
    for persona in persona_list:
        scale_cfg = kit.build_config(
            "psychobench",
            flags,
            options={"scale": named, "persona": persona, "runs": scale_runs},
            source="psychobench validity",
        )
        planned.append(PlannedRun(f"scales-{labels[persona]}", scale_cfg, {"persona": labels[persona]}))
    parent = flags.out or new_run_dir(runs_dir(), "validity")
    for outcome in run_sweep(planned, parent, progress=flags.progress, debug=kit.state.debug):
        console.print(kit.outcome_line(outcome, outcome.run_dir.name), soft_wrap=True)
    for path in write_roles_table(parent, list(labels.values())):
        console.print(f"  wrote {terminal_text(path)}")
    kit.exit_if_failed(kit.summarize([parent / p.directory for p in planned]))


# -- presets: the thesis's sensitivity experiments -------------------------------------------------------
@app.command("presets")
def presets_cmd() -> None:
    """List the presets: the thesis's sensitivity experiments, one command each."""
    import pandas as pd

    from ..report.markdown import table as md_table
    from .presets import ALIASES, PRESETS

    rows = [
        {
            "preset": p.name,
            "aliases": ", ".join(a for a, n in ALIASES.items() if n == p.name),
            "what it runs": p.title,
            "settings": ", ".join(v.label for v in p.variants()),
            "paper": p.paper,
        }
        for p in PRESETS.values()
    ]
    echo(md_table(pd.DataFrame(rows)))
    echo(
        "Run one with: llmpsych psychobench preset NAME --model SPEC [--model SPEC2] [--out DIR] [--dry-run]"
    )


def _presets() -> Any:
    from . import presets

    return presets


kit.preset_command(app, "psychobench", "psychobench", _presets, max_tokens=True)
