"""``llmpsych reliability ...``: re-analyse released or own results; run the perturbation grid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import clikit as kit
from ..clinames import notice, renamed, retired_command, retired_option
from ..errors import LlmpsychError, terminal_text
from ..report.terminal import InertConsole, echo

if TYPE_CHECKING:
    import pandas as pd

    from .reanalysis import Reanalysis

app = typer.Typer(
    help="Scale reliability: the 2,500-configuration BFI grid, steering, maps and statistics.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(width=120)


@app.callback()
def reliability(debug: kit.DebugOpt = False) -> None:
    """Scale reliability: the 2,500-configuration BFI grid, steering, maps and statistics."""


@kit.field_command(app, "rescore", "reliability")
def rescore(
    paths: Annotated[list[Path], typer.Argument(help="Save files or run directories.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    default: Annotated[
        list[Path] | None,
        typer.Option("--default", help="Default (unsteered) data for the min/max tests of Table 3.10."),
    ] = None,
    fit_with: Annotated[
        list[Path] | None,
        typer.Option("--fit-with", help="Also fit the PCA on these results (the thesis: all four models)."),
    ] = None,
    group_by: Annotated[
        str | None,
        typer.Option(
            help="Mean ± sd per value of a column: source (one row per file, Table 3.6), language, ..."
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="Scoring method of own runs: text (written labels) or expected (label probabilities, "
            "method=logprob).",
        ),
    ] = "text",
    published: kit.PublishedOpt = None,
    keep_outliers: Annotated[
        bool, typer.Option("--keep-outliers", help="Test factor levels on all points, not the inliers.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write tables, map and report.md into this folder.")
    ] = None,
    scoring: Annotated[str | None, retired_option("--scoring", "--method")] = None,
    *,
    fit_on: str,
    eps: float,
    min_pts: int,
    test: str,
) -> None:
    """Re-score released saves (published unless --corrected) or own run directories (corrected).

    Per-dimension mean ± sd, outliers, factor-level table, variance tests, steering tables.
    """
    import pandas as pd

    from ..stats.compare import METHOD_ALIASES, METHODS
    from .published import DIMENSIONS
    from .reanalysis import reanalyse
    from .results import load_points

    if METHOD_ALIASES.get(method, method) in METHODS:  # the old --method, which named the t-test
        notice(f"--method {method}", f"--test {method}")
        test, method = renamed(test, method, default="f-test", names=("--test", "--method")), "text"
    method = renamed(method, scoring, default="text", names=("--method", "--scoring"))
    if method not in ("text", "expected"):
        raise LlmpsychError(f"--method must be text or expected, got {method!r}")
    missing: list[str] = []
    frame = load_points(paths, method, missing)
    default_frame = load_points(default, missing=missing) if default else None
    fit: object = fit_on
    if fit_with:
        union = pd.concat([frame, load_points(fit_with)], ignore_index=True)
        fit = union[list(DIMENSIONS)].dropna().to_numpy(dtype=float)
    result = reanalyse(
        frame,
        fit_on=fit,  # type: ignore[arg-type]
        eps=eps,
        min_pts=min_pts,
        method=test,
        # released saves: published by default; only own run directories: corrected
        published=not all(p.is_dir() for p in paths) if published is None else published,
        keep_outliers=keep_outliers,
        default=default_frame,
        group_by=group_by,
        missing=missing,
    )
    written: list[Path] = []
    if out is not None:
        from .report import write_reanalysis

        written = write_reanalysis(result, out, default_frame, points=frame)
    if as_json:
        payload = result.to_json()
        payload["sources"] = [str(p) for p in paths]
        payload["written"] = [str(p) for p in written]
        echo(json.dumps(payload, indent=1))
        return
    _print(result)
    for path in written:
        console.print(f"  wrote {terminal_text(path)}")


retired_command(app, "reliability analyze", rescore)


def _fmt(mean: float, sd: float) -> str:
    from ..stats import format_mean_sd  # scipy loads on first use

    return format_mean_sd(mean, sd, 2, sep="±")


def _print(result: Reanalysis) -> None:
    from rich.table import Table

    from .analysis import METHOD_NOTES, PUBLISHED_NOTES
    from .published import DIMENSIONS, LEVEL_NAMES
    from .reanalysis import missing_lines

    n = len(result.frame)
    summary = Table(title=f"{n} data points: mean ± sd (ddof 1)")
    for dim in DIMENSIONS:
        summary.add_column(dim[0], justify="right")
    row = result.summary.set_index("dimension")
    summary.add_row(*(_fmt(row["mean"][d], row["sd"][d]) for d in DIMENSIONS))
    console.print(summary)
    for line in missing_lines(result):
        console.print(line, markup=False)
    count = int(result.outliers.sum())
    console.print(
        f"outliers: {count} ({count / n:.2%}) — DBSCAN eps {result.settings['eps']}, "
        f"minPts {result.settings['min_pts']} on the PCA map fitted on {result.projection.fitted_on}"
    )
    if not result.comparisons.empty:
        table = Table(title=f"level minus rest, difference (p), {result.settings['comparisons_on']}")
        table.add_column("level")
        for dim in DIMENSIONS:
            table.add_column(dim[0], justify="right")
        for (_factor, level), part in result.comparisons.groupby(["factor", "level"], sort=False):
            cells = part.set_index("dimension")
            table.add_row(
                LEVEL_NAMES.get(str(level), str(level)),
                *(f"{cells['difference'][d]:+.2f} ({cells['p'][d]:.2f})" for d in DIMENSIONS),
            )
        console.print(table)
    if result.groups is not None:
        table = Table(title=f"per {result.settings['group_by']}: mean ± sd")
        table.add_column("group")
        table.add_column("n", justify="right")
        for dim in DIMENSIONS:
            table.add_column(dim[0], justify="right")
        for rec in result.groups.to_dict("records"):
            name = rec.get("short") or rec[result.settings["group_by"]]
            table.add_row(
                str(name), str(rec["n"]), *(_fmt(rec[f"{d}_mean"], rec[f"{d}_sd"]) for d in DIMENSIONS)
            )
        console.print(table)
    if result.extremes is not None:
        method = result.settings["method"]
        table = Table(
            title=f"steering extremes vs default (Table 3.10), --test {method}: {METHOD_NOTES[method]}; "
            f"{PUBLISHED_NOTES[bool(result.settings['published'])]}"
        )
        for col in ("dimension", "side", "profile", "assigned", "difference", "t", "p", "test"):
            table.add_column(col)
        for rec in result.extremes.to_dict("records"):
            table.add_row(
                rec["dimension"],
                rec["side"],
                rec["profile"],
                _fmt(rec["assigned_mean"], rec["assigned_sd"]),
                f"{rec['difference']:+.2f}",
                f"{rec['t']:.2f}",
                f"{rec['p']:.3g}",
                str(rec["test"]),
            )
        console.print(table)
    variance = Table(title="variance F-tests against human SDs (one-sided, H1: LLM varies less)")
    for col in ("dimension", "LLM sd", "human sd", "F", "p"):
        variance.add_column(col)
    for rec in result.variance.to_dict("records"):
        variance.add_row(
            rec["dimension"],
            f"{rec['model_sd']:.2f}",
            f"{rec['human_sd']:.2f}",
            f"{rec['f']:.2f}",
            f"{rec['p']:.2g}",
        )
    console.print(variance)


@kit.task_command(
    app,
    "run",
    "reliability",
    moved={"--target": "--targets", "--default": "--default-data", "--logprobs": "--method logprob"},
)
def run(
    ctx: typer.Context,
    n_parallel: Annotated[int, typer.Option(help="llama.cpp slots for the embedded model.")] = 1,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Run (part of) the 2,500-configuration grid, optionally steered, and write the report. Each option
    of the task is a flag (--steer personality:POR sets steer and style).

    The temperature is 0 unless given (the thesis's)."""
    thesis = flags.but(temperature=0.0 if flags.temperature is None else flags.temperature)
    again = "llmpsych reliability run --resume {run_dir}"
    kit.run_task(
        ctx, "reliability", thesis, options, n_parallel=n_parallel, source="reliability run", again=again
    )


def _groups(paths: list[Path]) -> dict[str, pd.DataFrame]:
    from .results import load_points

    groups = {}
    for path in paths:
        name = path.stem if path.is_file() else path.name
        groups[name] = load_points([path])
    if len(groups) < 2:
        raise LlmpsychError("give at least two save files or run directories to compare")
    return groups


@app.command()
def compare(
    paths: Annotated[list[Path], typer.Argument(help="Two or more save files or run directories.")],
    test: Annotated[
        str, typer.Option("--test", help="t-test: student (thesis), welch or f-test.")
    ] = "student",
    published: kit.PublishedOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    method: Annotated[str | None, retired_option("--method", "--test")] = None,
) -> None:
    """Pairwise t-tests between groups of runs, e.g. the item-order experiment (Tables 3.4-3.5)."""
    from rich.table import Table

    from .analysis import describe, paired_group_tests
    from .published import DIMENSIONS

    test = renamed(test, method, default="student", names=("--test", "--method"))
    groups = _groups(paths)
    tests = paired_group_tests(groups, method=test, published=bool(published))
    summaries = {name: describe(frame) for name, frame in groups.items()}
    if as_json:
        payload = {
            "groups": {n: s.to_dict("records") for n, s in summaries.items()},
            "tests": tests.to_dict("records"),
        }
        echo(json.dumps(payload, indent=1, default=str))
        return
    table = Table(title="mean ± sd per group")
    table.add_column("group")
    table.add_column("n", justify="right")
    for dim in DIMENSIONS:
        table.add_column(dim[0], justify="right")
    for name, summary in summaries.items():
        rows = summary.set_index("dimension")
        table.add_row(name, str(rows["n"].min()), *(_fmt(rows["mean"][d], rows["sd"][d]) for d in DIMENSIONS))
    console.print(table)
    pairs = Table(title=f"p-values ({test} t-test; equal means rejected at 0.05?)")
    pairs.add_column("pair")
    for dim in DIMENSIONS:
        pairs.add_column(dim[0], justify="right")
    for (x, y), part in tests.groupby(["x", "y"], sort=False):
        cells = part.set_index("dimension")
        pairs.add_row(
            f"{x} vs {y}",
            *(f"{cells['p'][d]:.2f} ({'Yes' if cells['p'][d] < 0.05 else 'No'})" for d in DIMENSIONS),
        )
    console.print(pairs)


@app.command()
def retest(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Dated measurements of one configuration: run directories (PsychoBench BFI or reliability), "
            "folders of them (e.g. a retest-run folder), or save files."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the tables, the chart (Fig. 3.5) and retest.md here."),
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", min=0, max=1, help="Equal mean when p > alpha.")] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Test-retest (Table 3.7): the lowest and highest dated measurement of each dimension against all.

    Run directories are put in date order (when each was started) and must share one configuration
    (only the seed may differ)."""
    from rich.table import Table

    from ..runs.store import STORE_FILE
    from .retest import extremes, load_measurements, write_retest

    expanded: list[Path] = []
    for path in paths:
        inner = sorted(p for p in path.iterdir() if (p / STORE_FILE).is_file()) if path.is_dir() else []
        expanded.extend(inner if inner and not (path / STORE_FILE).is_file() else [path])
    measurements = load_measurements(expanded)
    result = extremes(measurements, alpha)
    if out is not None:
        for written in write_retest(measurements, out, alpha):
            if not as_json:  # the JSON stays the only output
                console.print(f"wrote {terminal_text(written)}")
    if as_json:
        echo(json.dumps(result.to_dict("records"), indent=1, default=str))
        return
    table = Table(title="test-retest: extreme runs against the average (Student's t-test)")
    for col in ("dimension", "average", "side", "run", "extreme", "p", "equal mean?"):
        table.add_column(col)
    for rec in result.to_dict("records"):
        table.add_row(
            rec["dimension"],
            _fmt(rec["average"], rec["average_sd"]),
            rec["side"],
            rec["run"],
            _fmt(rec["extreme"], rec["extreme_sd"]),
            f"{rec['p']:.2f}",
            "Yes" if rec["equal_mean"] else "No",
        )
    console.print(table)


def _stamp() -> str:
    """The UTC date and time naming a retest measurement's folder (``2024-01-15T093000``)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H%M%S")


@app.command("retest-run")
@kit.run_command(  # the thesis's configuration, fixed: see the docstring
    without={"option", "task_config", "temperature", "seed", "out", "resume", "no_cache"}
)
def retest_run(
    folder: Annotated[
        Path, typer.Argument(help="The folder of the measurements; each goes into a dated subfolder.")
    ],
    runs: Annotated[
        int, typer.Option("--runs", min=2, max=1000, help="BFI administrations (the thesis: 10).")
    ] = 10,
    *,
    flags: kit.RunFlags,
) -> None:
    """One dated measurement of the thesis's test-retest configuration (Fig. 3.5): the BFI, --runs times,
    temperature 0, never from the cache, into FOLDER/<UTC date and time>, with item orders of its own
    (the run seed is derived from that date and time). Run it at each date, then
    `llmpsych reliability retest FOLDER --out FOLDER/report`."""
    from ..runs.config import DEFAULT_MODEL
    from ..runs.context import derived_seed

    stamp = _stamp()
    # A seed of its own per date: the same seed would ask every date the same item orders, so a change over
    # time could not be told from an order effect. Stored in the run config, so a resume keeps the orders.
    seed = derived_seed("reliability retest-run", stamp)
    fixed = flags.but(models=(flags.model or DEFAULT_MODEL,), no_cache=True, temperature=0.0, seed=seed)
    cfg = kit.build_config(
        "psychobench", fixed, options={"scale": ["BFI"], "runs": runs}, source="reliability retest-run"
    )
    target = folder / stamp
    if target.exists():
        raise LlmpsychError(f"{target} exists already", "wait a second and run again")
    kit.finish(kit.start(cfg, fixed.but(out=target)))


@kit.task_command(app, "grid", "reliability-grid", without={"data_dir"}, moved={"--repeats": "--runs"})
def grid(
    ctx: typer.Context,
    n_parallel: Annotated[int, typer.Option(help="llama.cpp slots for the embedded model.")] = 1,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Run the perturbation grid on your own scale file (templates x item versions x languages x
    framings x personas) and write the reliability report per factor and subscale. Each option of the
    task is a flag (--scale-file repeated for the same scale in other languages, --grid the grid file).

    The temperature is 0 unless given."""
    if flags.resume is None:
        if not options.get("scale_file"):
            raise LlmpsychError(
                "give your scale file with --scale-file", "see docs/reliability.md, 'Any instrument'"
            )
        if not options.get("grid"):
            raise LlmpsychError("give the grid file with --grid", "see docs/reliability.md, 'Any instrument'")
    fixed = flags.but(temperature=0.0 if flags.temperature is None else flags.temperature)
    again = "llmpsych reliability grid --resume {run_dir}"
    kit.run_task(
        ctx, "reliability-grid", fixed, options, n_parallel=n_parallel, source="reliability grid", again=again
    )
