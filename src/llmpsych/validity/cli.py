"""``llmpsych validity ...``: item response models, measurement invariance, self-report against behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import clikit as kit
from ..errors import DataError

app = typer.Typer(
    help="Validity: item response models, measurement invariance, people vs models, self-report vs behaviour.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def validity(debug: kit.DebugOpt = False) -> None:
    """Does a scale measure the same thing in a model as in people? Item response models, measurement
    invariance, people against models on the same items, and self-report against behaviour."""


# -- measurement invariance, people vs models, self-report vs behaviour ----------------------------------
SourcesArg = Annotated[
    list[Path],
    typer.Argument(help="Item tables (CSV or Parquet in the long layout, docs/validity.md) or run folders."),
]
ValidityOutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Folder for the report (Markdown) and its CSV tables.")
]


def _progress(message: str) -> None:
    kit.err_console.print(f"[dim]{message}[/dim]")


@app.command("invariance")
def invariance(
    sources: SourcesArg,
    by: Annotated[
        str,
        typer.Option("--by", help="Grouping column(s), comma-separated: model, persona, language, template, source."),
    ],
    scale: Annotated[str | None, typer.Option("--scale", help="The scale (needed when the data hold several).")] = None,
    min_n: Annotated[int, typer.Option("--min-n", min=2, help="Fewest complete respondents per group.")] = 30,
    dif: Annotated[bool, typer.Option("--dif/--no-dif", help="Item-level DIF (ordinal logistic regression).")] = True,
    delta_cfi: Annotated[float, typer.Option("--delta-cfi", help="Largest CFI drop for a level to hold.")] = 0.01,
    delta_rmsea: Annotated[float, typer.Option("--delta-rmsea", help="Largest RMSEA rise for a level to hold.")] = 0.015,
    out: ValidityOutOpt = None,
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
    kit.console.print(invariance_markdown(result), markup=False, highlight=False)
    if out is not None:
        for path in write_invariance(result, out):
            kit.console.print(f"wrote {path}", markup=False, highlight=False)


@app.command("people")
def people(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            help="An imported human sample (psychobench import-answers) and model runs, or item tables with a "
            "source column; none: EmotionBench's PANAS, people (crowd.xlsx) against the released model runs."
        ),
    ] = None,
    scale: Annotated[str | None, typer.Option("--scale", help="The scale (needed when the data hold several).")] = None,
    model_file: Annotated[
        list[Path] | None,
        typer.Option("--model-file", help="PANAS: a model's EmotionBench testing CSV instead of the released one."),
    ] = None,
    phase: Annotated[
        str | None, typer.Option("--phase", help="Only this phase (PANAS: before or after the situation).")
    ] = None,
    data_dir: kit.DataDirOpt = None,
    min_n: Annotated[int, typer.Option("--min-n", min=2, help="Fewest complete respondents per group.")] = 30,
    dif: Annotated[bool, typer.Option("--dif/--no-dif", help="Item-level DIF (ordinal logistic regression).")] = True,
    out: ValidityOutOpt = None,
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
    results = people_vs_models(frame, scale=scale, min_n=min_n, dif=dif, progress=None if quiet else _progress)
    for name, result in results:
        if name:
            kit.console.print(f"\n<!-- {name} -->", markup=False, highlight=False)
        kit.console.print(invariance_markdown(result), markup=False, highlight=False)
        if out is not None:
            folder = out / name.replace(" ", "-") if name else out
            for path in write_invariance(result, folder):
                kit.console.print(f"wrote {path}", markup=False, highlight=False)
