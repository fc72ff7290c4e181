"""``llmpsych games ...``: recompute the GAMA-Bench leaderboard from the authors' released logs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import LlmpsychError
from .released_logs import (
    PUBLISHED,
    PUBLISHED_ARXIV,
    released_models,
    released_runs,
    score_released,
)
from .scoring import GAME_TITLES, GAMES, VERSIONS, RunSummary, ScoringVersion, score

app = typer.Typer(
    help="GAMA-Bench games: scoring of released logs.",
    no_args_is_help=True,
    add_completion=False,
)

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", help="Folder holding GAMABench/ (default: $LLMPSYCH_DATA_DIR, else the cache)."
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model as named in the released files, e.g. gpt-3.5-turbo-0125, gpt-4o (default: all found).",
    ),
]
ScoringOpt = Annotated[
    str,
    typer.Option("--scoring", help="Formulas: thesis (the leaderboard) or arxiv_v4 (the arXiv v4 paper)."),
]
CorrectedOpt = Annotated[
    bool,
    typer.Option(
        "--corrected",
        help="Apply llmpsych's documented corrections (Pirate votes, Diner answers) instead of "
        "reproducing the published scoring.",
    ),
]


@app.callback()
def games() -> None:
    """GAMA-Bench games: scoring of released logs."""


#: Published values agree when they are within half a unit of the last printed digit.
TOLERANCE = 0.05 + 1e-6


def _published(version: str) -> dict[str, dict[str, tuple[float, float]]]:
    return PUBLISHED if version == "thesis" else PUBLISHED_ARXIV


def _cell(summary: RunSummary | None, published: tuple[float, float] | None, check: bool) -> str:
    if summary is None:
        return "[dim]-[/dim]"
    sd = "" if math.isnan(summary.sd) else f"±{summary.sd:.1f}"
    text = f"{summary.mean:.1f}{sd}"
    if not check or published is None:
        return text
    ok = abs(summary.mean - published[0]) <= TOLERANCE and (
        math.isnan(summary.sd) or abs(summary.sd - published[1]) <= TOLERANCE
    )
    return f"[green]{text}[/green]" if ok else f"[red]{text}[/red] [dim](pub. {published[0]:.1f})[/dim]"


def _leaderboard(models: list[str], data_dir: Path | None, version: str, compat: bool) -> Table:
    published = _published(version)
    table = Table(title=f"GAMA-Bench leaderboard recomputed from the released logs ({version} scoring)")
    table.add_column("model", style="bold")
    for game in (*GAMES, "overall"):
        table.add_column(GAME_TITLES.get(game, "Overall"), justify="right")
    for model in models:
        row = score_released(model, data_dir, version=version, compat=compat)  # type: ignore[arg-type]
        pub = published.get(model, {})
        table.add_row(escape(model), *(_cell(row.get(g), pub.get(g), compat) for g in (*GAMES, "overall")))
    return table


def _detail(model: str, data_dir: Path | None, version: ScoringVersion, compat: bool) -> Table:
    pub = _published(version).get(model, {})
    runs = {game: released_runs(game, model, data_dir) for game in GAMES}
    n_runs = max((len(r) for r in runs.values()), default=0)
    table = Table(title=f"{model}: GAMA-Bench scores from the released logs ({version} scoring)")
    table.add_column("game", style="bold")
    for i in range(n_runs):
        table.add_column(f"T{i + 1}", justify="right")
    table.add_column("mean±sd", justify="right")
    table.add_column("published", justify="right")
    row = score_released(model, data_dir, version=version, compat=compat)
    for game in (*GAMES, "overall"):
        if game == "overall":
            values = list(row["overall"].values) if "overall" in row else []
        else:
            values = [score(r.log, version=version, compat=compat) for r in runs[game]]
        cells = [f"{v:.1f}" for v in values] + ["-"] * (n_runs - len(values))
        published = pub.get(game)
        table.add_row(
            GAME_TITLES.get(game, "Overall"),
            *cells,
            _cell(row.get(game), published, compat),
            f"{published[0]:.1f}±{published[1]:.1f}" if published else "-",
        )
    return table


@app.command("score-released")
def score_released_cmd(
    data_dir: DataDirOpt = None,
    model: ModelOpt = None,
    scoring: ScoringOpt = "thesis",
    corrected: CorrectedOpt = False,
) -> None:
    """Score the released leaderboard logs (5 runs per game) and compare them with the published table."""
    if scoring not in VERSIONS:
        raise LlmpsychError(f"unknown --scoring {scoring!r}", f"use one of {', '.join(VERSIONS)}")
    models = released_models(data_dir)
    if not models:
        raise LlmpsychError("no released GAMA-Bench leaderboard logs found in the data directory")
    if model is not None and model not in models:
        raise LlmpsychError(f"no released logs for model {model!r}", f"models found: {', '.join(models)}")
    console = Console()
    compat = not corrected
    if model is None:
        console.print(_leaderboard(models, data_dir, scoring, compat))
    else:
        console.print(_detail(model, data_dir, scoring, compat))  # type: ignore[arg-type]
    if compat:
        console.print("green: equals the published value to its printed precision; red: differs.")
    else:
        console.print("corrected scoring: values may differ from the published ones (see docs/games.md).")
