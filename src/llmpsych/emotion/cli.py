"""``llmpsych emotionbench ...``: run the benchmark, re-score released runs, the human table."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import clikit as kit
from ..clinames import RETIRED_FLAGS_OF, notice, retired_command
from ..errors import LlmpsychError, terminal_text
from ..instruments.cli import BackModelOpt, OutFileOpt, run_translation, translate_command, with_source
from ..report.terminal import InertConsole, echo
from .compare import factor_names, missing_lines, scoring_label

app = typer.Typer(
    help="EmotionBench: how situations shift a model's emotions, against 1,266 humans.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(soft_wrap=True)  # long paths stay on one line

DataDirOpt = kit.DataDirOpt
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _print_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.callback()
def emotionbench(debug: kit.DebugOpt = False) -> None:
    """EmotionBench: how situations shift a model's emotions, against 1,266 humans."""


#: ``--published/--corrected`` for EmotionBench: which published numbers ``published`` gives, exactly.
EmotionPublishedOpt = Annotated[
    bool | None,
    typer.Option(
        "--published/--corrected",
        help="published: the numbers the thesis prints: plain sums of the raw answers (no reverse keys, no "
        "x2 for DASS-21) and the original code's F-test details (1e-8 on both SDs, uncapped p); for AGQ, "
        "BFNE and DASS-21 that is not what the authors' code computes (--authors-code). corrected: reverse "
        "keys, x2 for DASS-21, the plain F-test. Released data defaults to published, your own runs to "
        "corrected.",
    ),
]
AuthorsCodeOpt = Annotated[
    bool,
    typer.Option(
        "--authors-code",
        help="Score as the authors' run_emotionbench.py computes: reverse keys and the scale's mode (x2 for "
        "DASS-21) with its F-test details. Differs from --published for AGQ, BFNE and DASS-21 (GPT-3.5 "
        "defaults 117.3, 42.2, 65.0, where the thesis prints the plain sums 128.3, 39.0, 32.5).",
    ),
]


@kit.field_command(app, "rescore", "emotionbench")
def rescore(
    csv_file: Annotated[Path, typer.Argument(help="A released <model>-<scale>-testing.csv file.")],
    scale: Annotated[
        str | None, typer.Option("--scale", help="PANAS, AGQ, DASS-21, BDI, FDS, MJS, GASP, FSS or BFNE.")
    ] = None,
    data_dir: DataDirOpt = None,
    published: EmotionPublishedOpt = None,
    authors_code: AuthorsCodeOpt = False,
    as_json: JsonOpt = False,
    *,
    alpha: float,
) -> None:
    """Re-score a released run file: default M ± SD, and the change per factor, emotion and overall.

    --published (the default) gives the thesis's printed numbers, --authors-code what the authors' code
    computes, --corrected llmpsych's corrections; they differ for AGQ, BFNE and DASS-21 only."""
    from .rescore import scale_for_file, score_released
    from .scales import load_scales as load_emotionbench_scales
    from .tables import markdown, paper_table

    if authors_code and published is False:
        raise LlmpsychError("--authors-code and --corrected are two different scorings", "choose one of them")
    published = published is not False
    scales = load_emotionbench_scales(data_dir)
    chosen = scale_for_file(csv_file, scales, scale)
    result = score_released(csv_file, chosen, published=published, authors_code=authors_code, alpha=alpha)
    if as_json:
        _print_json(result)
        return
    names = factor_names(data_dir)
    console.print(
        f"[bold]{terminal_text(result['file'])}[/bold]: {terminal_text(chosen.name)}, "
        f"{scoring_label(published, authors_code)}, alpha {alpha}"
    )
    echo(markdown(paper_table({result["model"] or chosen.name: result}, names)))
    for line in missing_lines(result):
        console.print(line, markup=False)
    console.print(f"positional replies: {result['positional']['note']}", markup=False)
    if result["invalid_runs"]:
        console.print(
            f"invalid runs left out: {result['invalid_runs']} ({result['invalid_reasons']})", markup=False
        )
        for example in result["invalid_examples"]:
            console.print(f"  e.g. {example}", markup=False)


retired_command(app, "emotionbench score-results", rescore)


@kit.field_command(app, "human", "emotionbench")
def human(data_dir: DataDirOpt = None, as_json: JsonOpt = False, *, alpha: float) -> None:
    """The human table (thesis Table 5.10) recomputed from crowd.xlsx: paired test per factor, emotion and
    overall."""
    from .crowd import crowd_path, human_table, human_table_json, load_crowd
    from .report import human_frame
    from .scales import load_scales as load_emotionbench_scales

    panas = load_emotionbench_scales(data_dir)["PANAS"]
    table = human_table(load_crowd(crowd_path(data_dir), panas), panas, alpha)
    if as_json:
        _print_json(human_table_json(table))
        return
    echo(human_frame(table, factor_names(data_dir)).to_markdown(index=False))


@kit.field_command(app, "crowd", "emotionbench")
def crowd(
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by", help="age, gender, region, education or employment (repeatable; default: all five)."
        ),
    ] = None,
    min_n: Annotated[
        int,
        typer.Option("--min-n", min=1, help="Flag groups with fewer people (34: the authors' power target)."),
    ] = 34,
    survey_year: Annotated[
        int, typer.Option("--survey-year", min=1901, max=2100, help="Age = this year - year of birth.")
    ] = 2023,
    data_dir: DataDirOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for crowd-<by>.md/.csv/.png tables and figures."),
    ] = None,
    as_json: JsonOpt = False,
    *,
    alpha: float,
) -> None:
    """The human subjects by demographic group (thesis Figs. 5.3-5.7): n and PANAS before/after per group."""
    from ..report.files import atomic_write_text, output_dir, write_csv
    from .crowd import crowd_path, load_crowd
    from .demographics import DIMENSIONS, group_chart, group_csv_frame, group_markdown, group_table
    from .scales import load_scales as load_emotionbench_scales

    chosen = list(dict.fromkeys(b.strip().lower() for b in (by or DIMENSIONS)))
    unknown = [b for b in chosen if b not in DIMENSIONS]
    if unknown:
        raise LlmpsychError(f"unknown --by {unknown[0]!r} (use {', '.join(DIMENSIONS)})")
    panas = load_emotionbench_scales(data_dir)["PANAS"]
    people = load_crowd(crowd_path(data_dir), panas)
    tables = {
        b: group_table(people, panas, b, alpha=alpha, min_n=min_n, survey_year=survey_year) for b in chosen
    }
    if as_json:
        _print_json({b: [r.to_json() for r in rows] for b, rows in tables.items()})
        return
    if out is not None:
        if out.exists() and not out.is_dir():
            raise LlmpsychError(f"--out {out} is a file; give a folder for the tables and figures")
        output_dir(out)
    for b, rows in tables.items():
        text = group_markdown(rows, b, min_n)
        small = sum(r.small for r in rows[:-1])
        if out is None:
            echo(f"## By {b} ({len(rows) - 1} groups, {small} with n < {min_n})\n\n{text}\n")
            continue
        png = group_chart(rows, b, out / f"crowd-{b}.png", min_n)
        image = f"\n\n![by {b}]({png.name})" if png is not None else ""
        atomic_write_text(out / f"crowd-{b}.md", f"# Human subjects by {b}\n\n{text}{image}\n")
        write_csv(group_csv_frame(rows, b), out / f"crowd-{b}.csv")
        written = [out / f"crowd-{b}.md", out / f"crowd-{b}.csv", *([png] if png is not None else [])]
        console.print(
            f"by {b}: {len(rows) - 1} groups, {small} with n < {min_n}; wrote "
            + ", ".join(str(w) for w in written),
            markup=False,
        )


@kit.task_command(
    app, "run", "emotionbench", moved={"--keep-order": "--no-shuffle", "--situations": "--situations-file"}
)
def run(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Run EmotionBench on a model: default runs, then runs per situation; writes tables and a report.
    Each option of the task is a flag (--experiment describe / heldout: the thesis's two experiments)."""
    kit.run_task(ctx, "emotionbench", flags, options, source="emotionbench run")


#: What ``describe`` and ``finetune evaluate`` set unless given: each is ``emotionbench run`` with these
#: values (the thesis's design for that experiment), every other option the task's own default.
DESCRIBE = {"experiment": "describe", "runs": 1, "situations_per_factor": 1}
HELDOUT = {"experiment": "heldout", "scale": "PANAS", "runs": 1}


def _experiment(
    ctx: typer.Context, flags: kit.RunFlags, options: dict[str, Any], fixed: dict[str, Any]
) -> None:
    """Start ``emotionbench run`` with ``fixed`` under what was given (an ``experiment`` given otherwise
    is refused: the command names its experiment), or resume the run ``--resume`` names."""
    source = "emotionbench " + ctx.command_path.split(" emotionbench ", 1)[-1]
    if options.get("experiment", fixed["experiment"]) != fixed["experiment"]:
        raise LlmpsychError(
            f"`{source}` runs the {fixed['experiment']} experiment, not {options['experiment']!r}",
            "use `llmpsych emotionbench run --experiment ...` for another one",
        )
    kit.run_task(ctx, "emotionbench", flags, {**fixed, **options}, source=source)


@kit.task_command(
    app, "describe", "emotionbench", shown_defaults=False, moved={"--situations": "--situations-file"}
)
def describe(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Beyond questionnaires (thesis Fig. 5.8): after no, negative and positive situations, ask the model
    to describe demographic groups; the refusal rate (PoR) per condition and group.

    This is `emotionbench run --experiment describe` with --runs 1 and --situations-per-factor 1 (without
    --select-from/--positive) unless given; every other default is the run's."""
    _experiment(ctx, flags, options, DESCRIBE)


finetune_app = typer.Typer(
    help="Tuning to align with humans (thesis Table 5.9): the 866/400 split, its export, the evaluation.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(finetune_app, name="finetune")


@kit.field_command(finetune_app, "export", "emotionbench")
def finetune_export(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for train.jsonl, test.jsonl, split.csv/json.")
    ],
    data_dir: DataDirOpt = None,
    *,
    split_seed: int,
    test_size: int,
    prompt: str,
    template: str | None,
) -> None:
    """Write the 866/400 split of crowd.xlsx as OpenAI chat fine-tuning JSONL (the training stays the
    provider's)."""
    from .crowd import crowd_path, load_crowd
    from .finetune import export_split
    from .prompts import PromptSettings
    from .scales import load_scales as load_emotionbench_scales
    from .situations import load_situations

    if out.exists() and not out.is_dir():
        raise LlmpsychError(f"--out {out} is a file; give a folder")
    panas = load_emotionbench_scales(data_dir)["PANAS"]
    crowd_file = crowd_path(data_dir)
    people = load_crowd(crowd_file, panas)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        situations = load_situations(data_dir)
    settings = PromptSettings(prompt, template=template)  # type: ignore[arg-type]
    info = export_split(
        people,
        panas,
        situations,
        out,
        crowd_file=crowd_file,
        test_size=test_size,
        seed=split_seed,
        settings=settings,
    )
    train, test = info["train"], info["test"]
    console.print(
        f"train: {train['people']} people, {train['examples']} examples; test: {test['people']} people, "
        f"{test['examples']} examples (split seed {split_seed}); wrote {terminal_text(out)}/train.jsonl, "
        "test.jsonl, split.csv, split.json",
        markup=False,
    )


@kit.task_command(
    finetune_app, "evaluate", "emotionbench", shown_defaults=False, moved={"--keep-order": "--no-shuffle"}
)
def finetune_evaluate(ctx: typer.Context, *, flags: kit.RunFlags, options: dict[str, Any]) -> None:
    """Run any model (vanilla or fine-tuned) on the held-out people's situations; the report holds the
    thesis's Table 5.9 rows (negative affect, default and evoked) next to those people.

    This is `emotionbench run --experiment heldout` with --scale PANAS and --runs 1 unless given (--split-seed
    and --test-size as the export's); every other default is the run's."""
    _experiment(ctx, flags, options, HELDOUT)


@finetune_app.command("table")
def finetune_table(
    run_dirs: Annotated[list[Path], typer.Argument(help="Analysed finetune-evaluate run directories.")],
    label: Annotated[
        list[str] | None, typer.Option("--label", help="Column label per run directory, in order.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Table 5.9 from several evaluation runs (e.g. vanilla and fine-tuned) next to the held-out humans."""
    from .finetune import table_5_9, thesis_table

    if label and len(label) != len(run_dirs):
        raise LlmpsychError(f"{len(label)} --label for {len(run_dirs)} run directories; give one per run")
    columns: dict[str, dict[str, Any]] = {}
    humans: dict[str, Any] | None = None
    split: dict[str, Any] | None = None
    for k, run_dir in enumerate(run_dirs):
        summary_file = run_dir / "summary.json"
        if not summary_file.is_file():
            raise LlmpsychError(f"{run_dir}: no summary.json (run `llmpsych analyze {run_dir}` first)")
        try:
            summary = json.loads(summary_file.read_text(encoding="utf-8"))
            cells = summary["heldout"]
            model_cells, its_split = cells["model"], cells["split"]
        except (ValueError, KeyError, TypeError):
            raise LlmpsychError(
                f"{run_dir}: not a held-out evaluation (run `llmpsych emotionbench finetune evaluate`)"
            ) from None
        if split is not None and its_split != split:
            raise LlmpsychError(
                f"{run_dir}: split {its_split} differs from the first run's {split}",
                "compare runs on one split",
            )
        split, humans = its_split, cells["humans"]
        name = label[k] if label else f"{summary.get('model', '?')} ({run_dir.name})"
        columns[terminal_text(name, markup=False, one_line=True).replace("|", "\\|")] = model_cells
    assert humans is not None and split is not None
    if as_json:
        _print_json({"split": split, "humans": humans, "models": columns})
        return
    echo(f"Held-out people: {split['people']} (split seed {split['seed']}); negative affect, mean ± SD\n")
    echo(table_5_9(columns, humans))
    echo("\nThe thesis (its own split, not published):\n")
    echo(thesis_table())


@app.command("compare")
def compare(
    sources: Annotated[list[Path], typer.Argument(help="Run directories and/or released testing CSV files.")],
    scale: Annotated[
        str | None, typer.Option("--scale", help="Scale of released CSVs (default: file name).")
    ] = None,
    humans: Annotated[
        bool, typer.Option("--humans/--no-humans", help="Add the crowd column (PANAS).")
    ] = True,
    data_dir: DataDirOpt = None,
    published: EmotionPublishedOpt = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for comparison.md and its heatmap comparison.png."),
    ] = None,
) -> None:
    """Several models side by side in the papers' layout (from run directories or released CSVs).

    Every column must be scored the same way (all published or all corrected), else the command
    refuses: a run directory keeps the scoring it was run with; released CSVs are re-scored like the run
    directories (published when there are none), or as --published/--corrected says."""
    from .compare import comparison_table, write_comparison

    text, columns = comparison_table(sources, scale, humans=humans, data_dir=data_dir, published=published)
    if out is not None:
        out = _comparison_file(out)
        png = write_comparison(out, text, columns)
        console.print(
            f"wrote {terminal_text(out)}" + (f" and {terminal_text(png)}" if png is not None else "")
        )
    else:
        echo(text)


def _comparison_file(out: Path) -> Path:
    """Where ``compare --out`` writes its Markdown table: ``OUT/comparison.md`` (its heatmap beside it).

    ``--out`` named the Markdown file itself before; a path ending in ``.md`` that is not a folder is still
    taken as that file for one release, with a one-line notice."""
    from ..report.files import output_dir

    if out.suffix.lower() == ".md" and not out.is_dir():
        notice("--out FILE.md", "--out FOLDER (FOLDER/comparison.md)")
        return out
    return output_dir(out) / "comparison.md"


@translate_command(app, retired=RETIRED_FLAGS_OF["emotionbench translate"])
def translate_situations(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A situations file in EmotionBench's JSON form.")],
    back_model: BackModelOpt = None,
    out_file: OutFileOpt = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Translate an EmotionBench situations file (with back-translation and an agreement report); exits 1
    naming the situations without a usable reply. Each option of the translate task is a flag."""
    if not options.get("to"):
        raise LlmpsychError("give the target language with --to", "e.g. --to de")
    options = with_source(options, "situations_file", file)
    run_translation(options, flags, file, back_model=back_model, out_file=out_file)
