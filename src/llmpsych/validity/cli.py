"""``llmpsych validity ...``: item response models, measurement invariance, self-report against behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import clikit as kit
from ..errors import terminal_text
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
