"""``llmpsych gamabench ...``: score official GAMA-Bench logs, recompute the leaderboard (``games`` is the old
name, hidden, accepted one release)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from .. import clikit as kit
from ..clinames import RETIRED_FLAGS_OF, renamed, retired_command, retired_option
from ..errors import ConfigError, LlmpsychError, terminal_text
from ..instruments.cli import BackModelOpt, run_translation, translate_command
from ..report.terminal import InertConsole, echo

if TYPE_CHECKING:
    from rich.table import Table

    from ..runs.runner import RunOutcome
    from .scoring import RunSummary, ScoringVersion
    from .variant_logs import VariantTable

app = typer.Typer(
    help="GAMA-Bench games: scoring of official logs and of the released leaderboard.",
    no_args_is_help=True,
    add_completion=False,
)

DataDirOpt = kit.DataDirOpt
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model as named in the released files, e.g. gpt-3.5-turbo-0125, gpt-4o (default: all found).",
    ),
]
MethodOpt = Annotated[
    str,
    typer.Option(
        "--method",
        help="Scoring method: thesis (the leaderboard's formulas) or arxiv_v4 (the arXiv v4 paper).",
    ),
]
#: ``--scoring``: the old spelling of ``--method`` (hidden, accepted one release).
ScoringOpt = Annotated[str | None, retired_option("--scoring", "--method")]


def _method(method: str, scoring: str | None) -> ScoringVersion:
    """The scoring method ``--method`` (or the old ``--scoring``) names, checked."""
    from .scoring import VERSIONS

    method = renamed(method, scoring, default="thesis", names=("--method", "--scoring"))
    if method not in VERSIONS:
        raise LlmpsychError(f"unknown --method {method!r}", f"use one of {', '.join(VERSIONS)}")
    return method


@app.callback()
def games(ctx: typer.Context, debug: kit.DebugOpt = False) -> None:
    """GAMA-Bench games: scoring of official logs and of the released leaderboard."""
    if ctx.info_name == "games":
        from ..clinames import notice

        notice("llmpsych games", "llmpsych gamabench")


#: Published values agree when they are within half a unit of the last printed digit.
TOLERANCE = 0.05 + 1e-6


def _published(version: str) -> dict[str, dict[str, tuple[float, float]]]:
    from .released_logs import PUBLISHED, PUBLISHED_ARXIV

    return PUBLISHED if version == "thesis" else PUBLISHED_ARXIV


def _cell(summary: RunSummary | None, printed: tuple[float, float] | None, check: bool) -> str:
    from ..stats import format_mean_sd  # scipy loads on first use

    if summary is None:
        return "[dim]-[/dim]"
    text = format_mean_sd(summary.mean, summary.sd, sep="±")
    if not check or printed is None:
        return text
    ok = abs(summary.mean - printed[0]) <= TOLERANCE and (
        math.isnan(summary.sd) or abs(summary.sd - printed[1]) <= TOLERANCE
    )
    return f"[green]{text}[/green]" if ok else f"[red]{text}[/red] [dim](pub. {printed[0]:.1f})[/dim]"


def _leaderboard(models: list[str], data_dir: Path | None, version: ScoringVersion, published: bool) -> Table:
    from rich.table import Table

    from .released_logs import score_released
    from .scoring import GAME_TITLES, GAMES

    printed = _published(version)
    table = Table(title=f"GAMA-Bench leaderboard recomputed from the released logs ({version} scoring)")
    table.add_column("model", style="bold")
    for game in (*GAMES, "overall"):
        table.add_column(GAME_TITLES.get(game, "Overall"), justify="right")
    for model in models:
        row = score_released(model, data_dir, version=version, published=published)
        pub = printed.get(model, {})
        table.add_row(escape(model), *(_cell(row.get(g), pub.get(g), published) for g in (*GAMES, "overall")))
    return table


def _detail(model: str, data_dir: Path | None, version: ScoringVersion, published: bool) -> Table:
    from rich.table import Table

    from ..stats import format_mean_sd  # scipy loads on first use
    from .released_logs import released_runs, score_released
    from .scoring import GAME_TITLES, GAMES, score

    pub = _published(version).get(model, {})
    runs = {game: released_runs(game, model, data_dir) for game in GAMES}
    n_runs = max((r.run for found in runs.values() for r in found), default=0)
    table = Table(title=f"{model}: GAMA-Bench scores from the released logs ({version} scoring)")
    table.add_column("game", style="bold")
    for i in range(n_runs):
        table.add_column(f"T{i + 1}", justify="right")
    table.add_column("mean±sd", justify="right")
    table.add_column("published", justify="right")
    row = score_released(model, data_dir, version=version, published=published)
    for game in (*GAMES, "overall"):
        if game == "overall":  # over the runs every game has (released_gaps names them)
            values = list(row["overall"].values) if "overall" in row else []
            cells = [f"{v:.1f}" for v in values] + ["-"] * (n_runs - len(values))
        else:  # run k in column Tk: a missing run is a "-" in its own column
            by_run = {r.run: score(r.log, version=version, published=published) for r in runs[game]}
            cells = [f"{by_run[k]:.1f}" if k in by_run else "-" for k in range(1, n_runs + 1)]
        printed_cell = pub.get(game)
        table.add_row(
            GAME_TITLES.get(game, "Overall"),
            *cells,
            _cell(row.get(game), printed_cell, published),
            format_mean_sd(*printed_cell, sep="±") if printed_cell else "-",
        )
    return table


def score_released_cmd(
    data_dir: DataDirOpt = None,
    model: ModelOpt = None,
    method: MethodOpt = "thesis",
    published: kit.PublishedOpt = True,
    scoring: ScoringOpt = None,
) -> None:
    """Score the released leaderboard logs (5 runs per game) and compare them with the published table."""
    from .released_logs import RELEASED_RUNS, released_gaps, released_models

    version = _method(method, scoring)
    models = released_models(data_dir)
    if not models:
        raise LlmpsychError("no released GAMA-Bench leaderboard logs found in the data directory")
    if model is not None and model not in models:
        raise LlmpsychError(f"no released logs for model {model!r}", f"models found: {', '.join(models)}")
    console = InertConsole()
    published = published is not False
    if model is None:
        console.print(_leaderboard(models, data_dir, version, published))
    else:
        console.print(_detail(model, data_dir, version, published))
    gaps = [gap for m in ([model] if model else models) for gap in released_gaps(m, data_dir)]
    if gaps:  # the n of those cells are smaller than the released design's
        console.print(f"missing from the released design ({RELEASED_RUNS} runs of each game):", markup=False)
        for gap in gaps:
            console.print(f"  {gap}", markup=False)
    if published:
        console.print("green: equals the published value to its printed precision; red: differs.")
    else:
        console.print("corrected scoring: values may differ from the published ones (see docs/games.md).")


def _mean_sd(mean: float | None, sd: float | None) -> str:
    from ..stats import format_mean_sd  # scipy loads on first use

    if mean is None:
        return "[dim]-[/dim]"
    return format_mean_sd(mean, sd)


def score_logs_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Log files (raw_results format) or folders searched recursively for *.json."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON on stdout.")] = False,
    method: MethodOpt = "thesis",
    published: kit.PublishedOpt = True,
    skip_malformed: Annotated[
        bool,
        typer.Option(
            "--skip-malformed", help="Skip unreadable or malformed logs with a warning instead of failing."
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every skipped file on stderr, not just counts.")
    ] = False,
    thesis: Annotated[
        bool,
        typer.Option("--thesis", help="Compare the variant tables with the thesis's printed cells."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Folder for variant_tables.md, variant_scores.csv and thesis_variants.csv."
        ),
    ] = None,
    scoring: ScoringOpt = None,
) -> None:
    """Score official GAMA-Bench logs as finished games: the leaderboard and the variant tables.

    Leaderboard runs: [<model>_]<game>_v1_<run>.json with the default parameters.

    Variant logs (temperatures _t<i>, prompt versions v2-v5, _cot1/_role<i>, sweeps, jailbreak, El Farol
    explicit, second-price auction) are scored and grouped by setting in the thesis's table layout.

    The model is the file-name prefix (gpt-3.5-turbo-0125 when there is none).

    A malformed log is an error naming the file; --skip-malformed makes it a warning.
    """
    from rich.table import Table

    from .score_logs import GAME_KEYS, collect, score_runs, to_json
    from .scoring import GAME_TITLES, GAMES
    from .variant_logs import as_variant_runs, build_tables, compare, comparison_lines, write_outputs

    version = _method(method, scoring)
    found = collect(paths, version=version, published=published is not False, skip_malformed=skip_malformed)
    err = InertConsole(stderr=True, soft_wrap=True, highlight=False)
    for exc in found.malformed:
        err.print(f"[yellow]warning:[/yellow] skipped: {escape(str(exc))}")
    if verbose:
        for path, reason in found.skipped:
            err.print(f"note: skipped {escape(str(path))}: {escape(reason)}")
    else:
        for reason, count in Counter(reason for _, reason in found.skipped).items():
            example = next(p for p, r in found.skipped if r == reason)
            err.print(
                f"note: skipped {count} file(s), {escape(reason)} (e.g. {escape(str(example))}; "
                "--verbose lists them)"
            )
    for exc in found.unscored:
        err.print(f"[yellow]warning:[/yellow] not scored: {escape(str(exc))}")
    if not found.runs and not found.variants:
        raise LlmpsychError(
            "no GAMA-Bench logs found in " + ", ".join(str(p) for p in paths),
            "expected [<model>_]<game>_v<k>[_<tag>].json logs",
        )
    if out is not None and out.exists() and not out.is_dir():
        raise LlmpsychError(f"--out {out} is a file; give a folder for the variant tables")
    every = [*as_variant_runs(found.runs), *found.variants]
    tables = build_tables(every)
    compared = compare(tables)
    lines = comparison_lines(compared, verbose) if thesis else []
    if out is not None:
        write_outputs(out, every, tables, compared)
    for v in found.variants:
        if v.above_range:
            err.print(
                f"note: {escape(str(v.path))}: {len(v.above_range)} answer(s) above the asked range kept "
                f"({escape(v.above_range[0])})"
            )
    if found.variants:
        err.print(f"note: {len(found.variants)} variant log(s) scored, grouped by setting")
    if not found.runs:
        if not as_json:
            _print_variants(tables, lines)
        else:
            echo(json.dumps({}))
        return
    scores = score_runs(found.runs)
    for s in scores.values():
        if s.note:
            err.print(f"note: {escape(s.note)}")
    for r in found.runs:  # kept as the reference kept them: docs/security.md section 5
        if r.above_range:
            err.print(
                f"note: {escape(str(r.path))}: {len(r.above_range)} answer(s) above the asked range kept, "
                f"as the reference game accepted them ({escape(r.above_range[0])})"
            )
    if as_json:
        echo(json.dumps(to_json(scores), indent=2))
        return
    # games as rows and models as columns, as in the thesis Tables 6.8/6.9
    table = Table(title=f"GAMA-Bench scores of {len(found.runs)} logs ({version} scoring)")
    table.add_column("game", style="bold")
    for model, s in scores.items():
        counts = sorted({v.n for v in s.games.values()})
        runs = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        table.add_column(f"{escape(model)}\n[dim]{runs} run(s)[/dim]", justify="right")
    for game in GAMES:
        cells = []
        for s in scores.values():
            summary = s.games.get(game)
            sd = None if summary is None or math.isnan(summary.sd) else summary.sd
            cells.append(_mean_sd(None if summary is None else summary.mean, sd))
        table.add_row(f"{GAME_TITLES[game]} [dim]{GAME_KEYS[game]}[/dim]", *cells)
    table.add_row("Overall", *(_mean_sd(s.overall_mean, s.overall_sd) for s in scores.values()))
    InertConsole().print(table)
    mode = "corrected" if published is False else "published (reference-code)"
    echo(
        f"mean ± sample SD over runs; {mode} scoring; "
        "overall = mean of the 8 games, SD over the per-run overall scores."
    )
    _print_variants(tables, lines)


@app.command("rescore")
def rescore_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Log files (raw_results format) or folders searched for *.json; none: the released "
            "leaderboard logs of the data directory, compared with the published table."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    model: ModelOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON (with paths).")] = False,
    method: MethodOpt = "thesis",
    published: kit.PublishedOpt = True,
    skip_malformed: Annotated[
        bool, typer.Option("--skip-malformed", help="With paths: skip malformed logs with a warning.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="With paths: list every skipped file.")
    ] = False,
    thesis: Annotated[
        bool, typer.Option("--thesis", help="With paths: compare the variant tables with the thesis.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="With paths: the folder for the variant tables.")
    ] = None,
    scoring: ScoringOpt = None,
) -> None:
    """Re-score released GAMA-Bench logs (published scoring unless --corrected).

    Without paths: the released leaderboard logs (5 runs per game) against the published table, one
    --model in detail. With paths: the logs given, as finished games (the leaderboard and the variant
    tables; the old ``score-logs``).
    """
    if not paths:
        with_paths = {"--json": as_json, "--skip-malformed": skip_malformed, "--thesis": thesis, "--out": out}
        given = [name for name, value in with_paths.items() if value]
        if given:
            raise LlmpsychError(f"{given[0]} needs log paths", "give log files or folders, or leave it out")
        score_released_cmd(
            data_dir=data_dir, model=model, method=method, published=published, scoring=scoring
        )
        return
    if model is not None:
        raise LlmpsychError("--model chooses a model of the released leaderboard", "leave out the paths")
    score_logs_cmd(
        paths,
        as_json=as_json,
        method=method,
        published=published,
        skip_malformed=skip_malformed,
        verbose=verbose,
        thesis=thesis,
        out=out,
        scoring=scoring,
    )


retired_command(app, "gamabench score-released", score_released_cmd)
retired_command(app, "gamabench score-logs", score_logs_cmd)


def _print_variants(tables: list[VariantTable], lines: list[str]) -> None:
    """The variant tables in the thesis's layout (with the default protocol's multiple runs when any other
    table is shown), then the comparison lines of ``--thesis``."""
    from rich.table import Table

    from .variant_logs import render

    console = InertConsole()
    if any(t.family != "runs" or t.mode != "default" for t in tables):
        for t in tables:
            rows = render(t)
            table = Table(title=escape(t.title))
            for i, head in enumerate(rows[0]):
                left = i == 0 or t.family in {"sweep", "other"}
                table.add_column(escape(head), justify="left" if left else "right")
            for row in rows[1:]:
                table.add_row(*(escape(c) for c in row))
            console.print(table)
    for line in lines:
        echo(line)


# -- presets and the leaderboard of live runs --------------------------------------------------------------
@app.command("presets")
def presets_cmd() -> None:
    """List the presets: the paper's experiments, one command each."""
    import pandas as pd

    from ..report.markdown import table as md_table
    from .presets import ALIASES, PRESETS

    rows = [
        {
            "preset": p.name,
            "aliases": ", ".join(a for a, n in ALIASES.items() if n == p.name),
            "what it runs": p.title,
            "runs per setting": p.runs,
            "settings": len(p.variants()),
            "paper": p.paper,
        }
        for p in PRESETS.values()
    ]
    echo(md_table(pd.DataFrame(rows)))
    echo("Run one with: llmpsych gamabench preset NAME --model SPEC [--model SPEC2] [--out DIR] [--dry-run]")


@kit.task_command(app, "run", "gamabench")
def run_cmd(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Play GAMA-Bench games with a model (the same as `llmpsych run --task gamabench`); writes scores,
    plots and a report. Each option of the task is a flag; a game's parameters: -O guessing.ratio=0.5."""
    kit.run_task(ctx, "gamabench", flags, options, source="gamabench run")


#: A session with people is short unless told otherwise: these values lie under the options given.
HOST_DEFAULTS: dict[str, Any] = {"runs": 1, "players": 5, "rounds": 5}


@kit.task_command(
    app,
    "host",
    "gamabench",
    local=True,
    without={"concurrency", "no_cache", "progress"},
    shown_defaults=False,
)
def host_cmd(
    ctx: typer.Context,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            min=0,
            help="Seconds a participant has per decision (0: none); then --on-deadline decides.",
        ),
    ] = 120.0,
    on_deadline: Annotated[
        str,
        typer.Option(
            "--on-deadline",
            help="What a question past its deadline gets: default (the game's equilibrium action), skip "
            "(the seat sits the round out), repeat (the seat's last answer), llm[:ROLE] (a model stands "
            "in). Each such answer is flagged so in every table.",
        ),
    ] = "default",
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to listen on. Default loopback; another address lets others connect."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (default: a free one).", min=0, max=65535)] = 0,
    lang: Annotated[
        str, typer.Option("--lang", help="Language of the participants' pages: en or de.")
    ] = "en",
    linger: Annotated[
        bool, typer.Option("--linger/--exit", help="Keep serving the report after the game ends.")
    ] = True,
    session: Annotated[
        Path | None,
        typer.Option(
            "--session",
            help="A session file (TOML or YAML): consent, instructions, quiz, the game and its tables, "
            "questionnaire, payment, debrief; one room link for all participants.",
        ),
    ] = None,
    bots: Annotated[
        bool,
        typer.Option(
            "--bots",
            help="Dry-run the session: bots answer in the browser seats through the pages (one invalid "
            "answer each; the last web seat never comes), model seats from a scripted server unless "
            "--model is given; with --session, bots go through the room, consent, quiz, questionnaire "
            "and debrief too; then the exported data are checked.",
        ),
    ] = False,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    r"""Host a game with participants in browsers: seats `web[:NAME]` (e.g. -O seats='\[web:Ann, web:Bob,
    llm, llm]') get one join link each; a monitor page shows the session. --session FILE wraps the game in
    an experiment (consent, quiz, questionnaire, payment, debrief) with one room link for everyone. With
    --bots, a dry run: bots play the browser seats through the same pages and the exported data are
    checked.

    Each option of the task is a flag, as on `gamabench run`; a session is short unless told otherwise:
    one game (--runs 1) of 5 players (--players 5) x 5 rounds (--rounds 5), the task's defaults for the
    rest (Guess 2/3 of the Average); a session file sets the game's part itself."""
    from ..paths import runs_dir
    from ..runs import resume_run, start_run
    from ..runs.runner import new_run_dir
    from .hosting import people_host

    web = people_host()
    resume = flags.resume
    if bots and resume is not None:
        raise ConfigError("--bots dry-runs a new session; it cannot resume one")
    if bots and not flags.models:  # the model seats answer at once: the dry run takes seconds
        stack = ExitStack()
        ctx.call_on_close(stack.close)  # the server stops when the command ends, however it ends
        base_url = stack.enter_context(web.scripted_models())
        flags = dataclasses.replace(flags, models=("openai-compatible/scripted",), base_url=base_url)
        typer.echo(f"bots: the model seats answer from a scripted server at {base_url}")
    if resume is not None:
        kit.refuse_with_resume(ctx, {"resume", "base_url", "host", "port", "linger", "debug"})
        session_state = web.load(resume)
        run_dir = resume

        def play() -> RunOutcome:
            return resume_run(resume, False, kit.state.debug, base_url=flags.base_url)

    else:
        experiment = None
        if session is not None:
            from .experiment import load_session_config

            experiment = load_session_config(session)
            fixed = experiment[0].options()
            # the session file's [game] part is the one place for these: a flag, -O pair or --task-config
            # saying otherwise is refused, not silently overridden
            typed = kit.given(ctx)
            clash = [
                f"--{k}" if kit.OPTION_PARAM + k in typed else k
                for k in sorted(fixed)
                if k in options and options[k] != fixed[k]
            ]
            clash += ["--deadline"] if "deadline" in typed else []
            if clash:
                raise ConfigError(
                    f"{clash[0]} is set by the session file's [game] part", "give it there, not as a flag"
                )
            deadline = experiment[0].game.deadline
            options = {**HOST_DEFAULTS, **options, **fixed}
        else:
            options = {**HOST_DEFAULTS, **options}
        cfg = kit.build_config("gamabench", flags, options=options, source="gamabench host")
        run_dir = flags.out or new_run_dir(runs_dir(), "gamabench-bots" if bots else "gamabench-host")
        session_state = web.prepare(cfg, run_dir, deadline, lang, experiment, on_deadline)

        def play() -> RunOutcome:
            return start_run(cfg, run_dir, False, kit.state.debug)

    if bots:
        outcome = web.dry_run(play, run_dir, session_state, host=host, port=port, announce=typer.echo)
    else:
        outcome = web.serve(
            play, run_dir, session_state, host=host, port=port, announce=typer.echo, linger=linger
        )
    kit.finish(outcome)


def _presets() -> Any:
    from . import presets

    return presets


kit.preset_command(app, "gamabench", "gamabench", _presets, moved={"--games": "--game"})


@kit.field_command(app, "leaderboard", "gamabench")
def leaderboard_cmd(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="gamabench run directories (several per model pool runs).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON on stdout.")] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Folder for leaderboard.md/.csv/.json/.png (default ./gamabench-leaderboard)."
        ),
    ] = None,
    method: MethodOpt = "thesis",
    pool_settings: kit.PoolSettingsOpt = False,
    scoring: ScoringOpt = None,
    *,
    published: bool,
) -> None:
    """Leaderboard across gamabench runs: per model and setting, each game's mean ± SD over runs and the
    overall."""
    from ..report.markdown import table as md_table
    from .leaderboard import (
        leaderboard,
        leaderboard_frame,
        left_out_frame,
        left_out_notes,
        pooled_settings,
        write_leaderboard,
    )
    from .score_logs import to_json

    version = _method(method, scoring)
    scores, infos = leaderboard(run_dirs, version=version, published=published, pool_settings=pool_settings)
    left_out = left_out_frame(infos)
    if not any(s.games for s in scores.values()):
        raise LlmpsychError(
            "no finished, scorable game in " + ", ".join(str(d) for d in run_dirs),
            "; ".join(left_out_notes(left_out)[:3]) or None,
        )
    err = InertConsole(stderr=True, soft_wrap=True, highlight=False)
    for s in scores.values():
        if s.note:
            err.print(f"note: {escape(s.note)}")
    for note in left_out_notes(left_out, limit=20):
        err.print(f"note: {escape(note)}")
    pooled = pooled_settings(infos)
    if as_json:
        for note in pooled:
            err.print(f"note: {escape(note)}")
        echo(json.dumps(to_json(scores), indent=2))
    else:
        echo(md_table(leaderboard_frame(scores, left_out=left_out)))
        for note in pooled:  # under the table it qualifies
            echo(f"note: {note}")
    rules = "published Pirate/Diner rules" if published else "llmpsych's corrected Pirate/Diner rules"
    for path in write_leaderboard(
        scores, infos, out or Path("gamabench-leaderboard"), scoring_note=f"{version} scoring, {rules}"
    ):
        err.print(f"wrote {escape(str(path))}")


@kit.task_command(app, "rephrase", "gamabench-rephrase", without={"resume", "data_dir"})
def rephrase_cmd(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Rephrase every game's prompt templates into new versions with a model, as the thesis's v2-v5 were
    made with GPT-4 (§6.5.1); the set in --out is what `-O template_set=OUT` (or OUT#K for version K)
    names in a run or preset. Each option of the task is a flag."""
    from ..runs.sweep import PlannedRun, run_sweep
    from .prompts import read_template_set

    model, out = flags.model, flags.out
    if model is None:
        raise ConfigError("give the model that rephrases with --model", "e.g. --model openai/gpt-4o")
    if out is None:
        raise ConfigError("give the template set's folder with --out", "e.g. --out templates/gpt4o")
    config = kit.build_config("gamabench-rephrase", flags, options=options, source="gamabench rephrase")
    planned = PlannedRun(".", config, {"model": model})
    [outcome] = run_sweep(
        [planned], out, progress=flags.progress, debug=kit.state.debug
    )  # same --out resumes
    err = InertConsole(stderr=True, soft_wrap=True, highlight=False)
    data, _ = read_template_set(out)
    for failure in data["failed"]:
        err.print(
            f"failed: {escape(failure['game'])} v{failure['version']} {escape(failure['kind'])} turn "
            f"{failure['turn']}: {escape(failure['reason'])} (after {failure['asks']} asks)"
        )
    for version, by_game in data["versions"].items():
        echo(f"version {version}: {', '.join(sorted(by_game))}")
    where = terminal_text(out)
    echo(f"wrote {where}/template_set.json; name it with -O template_set={where}#K")
    again = f"llmpsych gamabench rephrase --model {terminal_text(model)} ... --out {terminal_text(out)}"
    failed = kit.summarize([outcome.run_dir], again) + len(data["failed"])
    kit.exit_if_failed(failed)


@app.command("overlay")
def overlay_cmd(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="gamabench run folders (models, settings) to overlay.")
    ],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for report.md/.html, one PNG per game and overlay.csv."),
    ] = Path("gamabench-overlay"),
    each_run: Annotated[
        bool, typer.Option("--each-run", help="A line per game played, not per folder (thesis Fig. 6.5).")
    ] = False,
) -> None:
    """Per-round series of several runs in one figure per game (thesis Figs 6.5-6.11), one line per run
    labelled by model and setting; reads the runs only."""
    from ..report.html import html_beside
    from .overlay import write_overlay

    err = InertConsole(stderr=True, soft_wrap=True, highlight=False)
    for path in html_beside(write_overlay(run_dirs, out, each_run)):
        err.print(f"wrote {escape(str(path))}")


@translate_command(app, retired=RETIRED_FLAGS_OF["gamabench translate"])
def translate_templates(
    ctx: typer.Context,
    back_model: BackModelOpt = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Translate every game's built-in prompt templates (with back-translation and an agreement report)
    into a template set that `-O template_set=OUT#1` names; exits 1 naming the templates without a
    usable reply. Each option of the translate task is a flag (--game-templates: a subset of the games)."""
    if not options.get("to"):
        raise LlmpsychError("give the target language with --to", "e.g. --to de")
    path = Path("gamabench-templates")  # names the run folder only
    run_translation({"game_templates": "all", **options}, flags, path, back_model=back_model, out_file=None)
    if flags.out is not None and (flags.out / "template_set.json").is_file():
        echo(f"name it with -O template_set={terminal_text(flags.out)}#1")
