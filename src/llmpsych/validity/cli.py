"""``llmpsych validity ...``: item response models, measurement invariance, self-report against behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import clikit as kit
from ..errors import DataError, terminal_text
from ..report.terminal import InertConsole

if TYPE_CHECKING:
    import pandas as pd

console = InertConsole(soft_wrap=True)

app = typer.Typer(
    help="Validity: item response models, invariance, people vs models, self-report vs behaviour.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def validity(debug: kit.DebugOpt = False) -> None:
    """Does a scale measure the same thing in a model as in people? Item response models, measurement
    invariance, people against models on the same items, and self-report against behaviour."""


# -- the item-level long format and item response models (validity/items.py, validity/irt.py) ----------
RunsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Run folders, sweep or preset folders, or globs (their item-level answers)."),
]
HumanOpt = Annotated[
    Path | None,
    typer.Option(
        "--human",
        help="People's answers in `psychobench import-answers` format (CSV or JSONL, long or wide).",
    ),
]
HumanScaleOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--scale-file", help="The scale file of the --human answers (default: the official scales)."
    ),
]
HumanLabelOpt = Annotated[
    str | None,
    typer.Option("--label", help="The human sample's name in the run column (default: file name)."),
]
ValidityOutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder to write the tables into.")]


def _answers(
    runs: list[str] | None,
    human: Path | None,
    scale_file: list[Path] | None,
    data_dir: Path | None,
    label: str | None,
) -> pd.DataFrame:
    from .items import item_frame

    return item_frame(runs or [], human=human, scale_files=scale_file or [], data_dir=data_dir, label=label)


def _sources(runs: list[str] | None, human: Path | None) -> str:
    named = [*(runs or []), *([f"{human} (people)"] if human else [])]
    return ", ".join(terminal_text(n, markup=False, one_line=True) for n in named)


@app.command("items")
def items_command(
    runs: RunsArg = None,
    out: ValidityOutOpt = Path("validity-items"),
    human: HumanOpt = None,
    scale_file: HumanScaleOpt = None,
    data_dir: kit.DataDirOpt = None,
    label: HumanLabelOpt = None,
) -> None:
    """Write the item-level long format (items.csv) and one respondent x item table per scale
    (wide_<scale>.csv) that mirt, girth and semopy read."""
    from .items import export_items

    frame = _answers(runs, human, scale_file, data_dir, label)
    for path in export_items(frame, out):
        console.print(f"wrote {terminal_text(path)}")


@app.command("irt")
def irt_command(
    runs: RunsArg = None,
    out: ValidityOutOpt = Path("validity-irt"),
    human: HumanOpt = None,
    scale_file: HumanScaleOpt = None,
    data_dir: kit.DataDirOpt = None,
    label: HumanLabelOpt = None,
    scale: Annotated[
        list[str] | None,
        typer.Option("--scale", help="Fit only this scale; repeatable (default: every scale)."),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            "--group", help="Fit each level of this column apart (model, persona, language, source, ...)."
        ),
    ] = None,
    whole_scale: Annotated[
        bool,
        typer.Option("--whole-scale", help="Fit all of a scale's items as one dimension, not per subscale."),
    ] = False,
    min_respondents: Annotated[
        int | None,
        typer.Option("--min-respondents", min=2, help="Refuse a fit on fewer respondents (default 50)."),
    ] = None,
) -> None:
    """Fit a graded response model (2PL for binary items) per scale: discriminations and thresholds with
    standard errors, test information, respondents' theta, item fit (irt_*.csv and irt.md)."""
    import time

    from .irt import MIN_RESPONDENTS, fit_items
    from .irt_report import write_irt

    frame = _answers(runs, human, scale_file, data_dir, label)
    started = time.perf_counter()

    def progress(text: str) -> None:
        console.print(f"fitting {terminal_text(text)} ({time.perf_counter() - started:.0f} s)")

    tables = fit_items(
        frame,
        scales=scale,
        group=group,
        whole_scale=whole_scale,
        min_respondents=min_respondents or MIN_RESPONDENTS,
        progress=progress,
    )
    for _, row in tables.summary.iterrows():
        where = terminal_text(f"{row['scale']}: {row['dimension']} ({row['group']})")
        if row["status"] == "fitted":
            console.print(
                f"{where}: {row['model_type']} fitted, n={row['respondents']}, {row['seconds']:.1f} s"
            )
        else:
            console.print(f"{where}: not fitted: {terminal_text(row['reason'])}")
    for path in write_irt(tables, out, _sources(runs, human)):
        console.print(f"wrote {terminal_text(path)}")


# -- measurement invariance, people vs models, self-report vs behaviour ----------------------------------
SourcesArg = Annotated[
    list[Path],
    typer.Argument(help="Item tables (CSV or Parquet in the long layout, docs/validity.md) or run folders."),
]
ReportOutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Folder for the report (Markdown) and its CSV tables.")
]


def _progress(message: str) -> None:
    kit.err_console.print(f"[dim]{message}[/dim]")


@app.command("invariance")
def invariance(
    sources: SourcesArg,
    by: Annotated[
        str,
        typer.Option(
            "--by", help="Grouping column(s), comma-separated: model, persona, language, template, source."
        ),
    ],
    scale: Annotated[
        str | None, typer.Option("--scale", help="The scale (needed when the data hold several).")
    ] = None,
    min_n: Annotated[int, typer.Option("--min-n", min=2, help="Fewest complete respondents per group.")] = 30,
    dif: Annotated[
        bool, typer.Option("--dif/--no-dif", help="Item-level DIF (ordinal logistic regression).")
    ] = True,
    delta_cfi: Annotated[
        float, typer.Option("--delta-cfi", help="Largest CFI drop for a level to hold.")
    ] = 0.01,
    delta_rmsea: Annotated[
        float, typer.Option("--delta-rmsea", help="Largest RMSEA rise for a level to hold.")
    ] = 0.015,
    per_subscale: Annotated[
        bool, typer.Option("--per-subscale", help="Also test each subscale alone (a one-factor model each).")
    ] = False,
    out: ReportOutOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
    debug: kit.DebugOpt = False,
) -> None:
    """Does the scale measure the same construct in every group? Multi-group CFA (configural, metric,
    scalar) on the scale's own subscales, Chen's (2007) rule, and item-level DIF, in plain words."""
    from ._runs import load_frame
    from .invariance import measurement_invariance
    from .report import invariance_markdown, write_invariance

    frame = load_frame(sources)
    columns = [c.strip() for c in by.split(",") if c.strip()]
    result = measurement_invariance(
        frame,
        columns,
        scale=scale,
        min_n=min_n,
        dif=dif,
        delta_cfi=delta_cfi,
        delta_rmsea=delta_rmsea,
        progress=None if quiet else _progress,
    )
    results = [result]
    if per_subscale:
        for sub in [s for s in result.factors if s != result.scale]:
            results.append(
                measurement_invariance(
                    frame,
                    columns,
                    scale=result.scale,
                    subscale=sub,
                    min_n=min_n,
                    dif=dif,
                    delta_cfi=delta_cfi,
                    delta_rmsea=delta_rmsea,
                    progress=None if quiet else _progress,
                )
            )
    kit.console.print(invariance_markdown(result), markup=False, highlight=False)
    if len(results) > 1:
        kit.console.print("## Each subscale alone\n", markup=False, highlight=False)
        for one in results[1:]:
            kit.console.print(f"- {one.headline()}", markup=False, highlight=False)
    if out is not None:
        for one in results:
            for path in write_invariance(one, out):
                kit.console.print(f"wrote {path}", markup=False, highlight=False)


@app.command("people")
def people(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            help="An imported human sample (psychobench import-answers) and model runs, or item tables "
            "with a "
            "source column; none: EmotionBench's PANAS, people (crowd.xlsx) against the released model runs."
        ),
    ] = None,
    scale: Annotated[
        str | None, typer.Option("--scale", help="The scale (needed when the data hold several).")
    ] = None,
    model_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--model-file", help="PANAS: a model's EmotionBench testing CSV instead of the released one."
        ),
    ] = None,
    phase: Annotated[
        str | None, typer.Option("--phase", help="Only this phase (PANAS: before or after the situation).")
    ] = None,
    data_dir: kit.DataDirOpt = None,
    min_n: Annotated[int, typer.Option("--min-n", min=2, help="Fewest complete respondents per group.")] = 30,
    dif: Annotated[
        bool, typer.Option("--dif/--no-dif", help="Item-level DIF (ordinal logistic regression).")
    ] = True,
    out: ReportOutOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
    debug: kit.DebugOpt = False,
) -> None:
    """Does the scale have the same structure in models as in people? Invariance across people and models
    on the same items (PANAS: before and after the situation, separately)."""
    from ._runs import load_frame
    from .people import panas_frame, people_vs_models
    from .report import invariance_markdown, write_invariance

    frame = load_frame(sources) if sources else panas_frame(data_dir, model_file or [])
    if phase is not None:
        if "phase" not in frame.columns or phase not in set(frame["phase"].astype(str)):
            raise DataError(f"no answers in phase {phase!r}", hint="PANAS has phases before and after")
        frame = frame[frame["phase"].astype(str) == phase]
    results = people_vs_models(
        frame, scale=scale, min_n=min_n, dif=dif, progress=None if quiet else _progress
    )
    for name, result in results:
        if name:
            kit.console.print(f"\n<!-- {name} -->", markup=False, highlight=False)
        kit.console.print(invariance_markdown(result), markup=False, highlight=False)
        if out is not None:
            folder = out / name.replace(" ", "-") if name else out
            for path in write_invariance(result, folder):
                kit.console.print(f"wrote {path}", markup=False, highlight=False)


@app.command("behaviour")
def behaviour(
    scores: Annotated[
        Path | None, typer.Option("--scores", help="CSV: model, persona, scale, subscale, score[, run].")
    ] = None,
    behaviour_table: Annotated[
        Path | None, typer.Option("--behaviour", help="CSV: model, persona, behaviour, value[, run].")
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option("--mapping", help="TOML of [[pair]] scale/subscale/behaviour (default: shipped)."),
    ] = None,
    thesis: Annotated[
        bool,
        typer.Option(
            "--thesis", help="The thesis's Fig. 4.2 per-role numbers (EPQ-R vs TruthfulQA, SafetyQA)."
        ),
    ] = False,
    sweep: Annotated[
        Path | None,
        typer.Option(
            "--sweep", help="A `psychobench validity --scale ...` folder (--preset thesis: Fig. 4.2 rerun)."
        ),
    ] = None,
    out: ReportOutOpt = None,
    debug: kit.DebugOpt = False,
) -> None:
    """Does each construct's scale score go with its behavioural counterpart across personas and models?
    Correlations with confidence intervals and n, and a plot."""
    from ..report.files import atomic_write_text, output_dir, write_csv
    from ..report.markdown import table as md_table
    from .behaviour import (
        load_long,
        plot,
        read_mapping,
        relate,
        relations_frame,
        summary_lines,
        sweep_tables,
        thesis_fig_4_2,
    )

    pairs = read_mapping(mapping)
    if sum((thesis, sweep is not None, scores is not None or behaviour_table is not None)) > 1:
        raise DataError("give one source", hint="--thesis, --sweep DIR, or --scores FILE --behaviour FILE")
    if thesis:
        s, b = thesis_fig_4_2()
    elif sweep is not None:
        s, b = sweep_tables(sweep)
    elif scores is None or behaviour_table is None:
        raise DataError(
            "name a scores and a behaviour table",
            hint="--scores FILE --behaviour FILE, --sweep DIR or --thesis",
        )
    else:
        s, b = load_long(scores, "scores"), load_long(behaviour_table, "behaviour")
    relations, points = relate(s, b, pairs)
    lines = summary_lines(relations)
    if thesis:
        lines.insert(0, "Thesis Fig. 4.2 (gpt-3.5-turbo, five roles; published per-role means, n = 5 roles):")
    frame = relations_frame(relations)
    text = "\n".join(lines)
    kit.console.print(text, markup=False, highlight=False)
    if out is not None:
        folder = output_dir(out)
        paths = [write_csv(frame, folder / "behaviour.csv")]
        if not points.empty:
            paths.append(write_csv(points, folder / "behaviour-conditions.csv"))
        png = plot(points, relations, folder / "behaviour.png")
        image = "\n\n![scale score against behaviour](behaviour.png)\n" if png else ""
        shown = md_table(frame.astype(object).where(frame.notna(), ""))
        body = f"# Self-report against behaviour\n\n{text}\n\n{shown}{image}"
        paths.insert(0, atomic_write_text(folder / "behaviour.md", body))
        if png:
            paths.append(png)
        for path in paths:
            kit.console.print(f"wrote {path}", markup=False, highlight=False)
