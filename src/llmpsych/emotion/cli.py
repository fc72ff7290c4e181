"""``llmpsych emotionbench ...``: run the benchmark, re-score released runs, the human table."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..errors import LlmpsychError

app = typer.Typer(
    help="EmotionBench: how situations shift a model's emotions, against 1,266 humans.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", help="Folder holding EmotionBench/ (default: $LLMPSYCH_DATA_DIR, else the cache)."
    ),
]
ScoringOpt = Annotated[
    str,
    typer.Option(
        "--scoring",
        help="paper: plain sums (reproduces the papers); corrected: reverse keys, ×2 where the scale says.",
    ),
]
AlphaOpt = Annotated[float, typer.Option("--alpha", min=1e-6, max=0.5, help="Significance level.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.callback()
def emotionbench() -> None:
    """EmotionBench: how situations shift a model's emotions, against 1,266 humans."""


@app.command("score-results")
def score_results(
    csv_file: Annotated[Path, typer.Argument(help="A released <model>-<scale>-testing.csv file.")],
    scale: Annotated[
        str | None, typer.Option("--scale", help="PANAS, AGQ, DASS-21, BDI, FDS, MJS, GASP, FSS or BFNE.")
    ] = None,
    data_dir: DataDirOpt = None,
    scoring: ScoringOpt = "paper",
    alpha: AlphaOpt = 0.01,
    as_json: JsonOpt = False,
) -> None:
    """Re-score a released run file: default M ± SD, and the change per factor, emotion and overall."""
    from ..instruments.official import load_emotionbench_scales
    from .rescore import scale_for_file, score_released
    from .tables import markdown, paper_table

    if scoring not in ("paper", "corrected"):
        raise LlmpsychError(f"unknown --scoring {scoring!r} (use paper or corrected)")
    scales = load_emotionbench_scales(data_dir)
    chosen = scale_for_file(csv_file, scales, scale)
    result = score_released(csv_file, chosen, scoring=scoring, alpha=alpha)  # type: ignore[arg-type]
    if as_json:
        _print_json(result)
        return
    names = _factor_names(data_dir)
    console.print(f"[bold]{result['file']}[/bold]: {chosen.name}, scoring {scoring}, alpha {alpha}")
    typer.echo(markdown(paper_table({result["model"] or chosen.name: result}, names)))
    if result["invalid_runs"]:
        console.print(f"invalid (unparseable) runs skipped: {result['invalid_runs']}")


@app.command("human")
def human(
    data_dir: DataDirOpt = None,
    alpha: AlphaOpt = 0.01,
    as_json: JsonOpt = False,
) -> None:
    """The human table from crowd.xlsx: paired test per factor, emotion and overall (spec §8.4)."""
    from ..instruments.official import load_emotionbench_scales
    from .crowd import crowd_path, human_table, human_table_json, load_crowd
    from .report import human_frame

    panas = load_emotionbench_scales(data_dir)["PANAS"]
    table = human_table(load_crowd(crowd_path(data_dir), panas), panas, alpha)
    if as_json:
        _print_json(human_table_json(table))
        return
    typer.echo(human_frame(table, _factor_names(data_dir)).to_markdown(index=False))


def _factor_names(data_dir: Path | None) -> dict[str, str]:
    from .situations import load_situations

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_situations(data_dir).names()
    except LlmpsychError:
        return {}
