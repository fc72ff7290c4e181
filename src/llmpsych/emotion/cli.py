"""``llmpsych emotionbench ...``: run the benchmark, re-score released runs, the human table."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import clikit as kit
from ..clinames import notice, retired_command
from ..errors import LlmpsychError, terminal_text
from ..instruments.cli import translate_situations
from ..report.terminal import InertConsole, echo

app = typer.Typer(
    help="EmotionBench: how situations shift a model's emotions, against 1,266 humans.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(soft_wrap=True)  # long paths stay on one line

DataDirOpt = kit.DataDirOpt
AlphaOpt = Annotated[float, typer.Option("--alpha", min=1e-6, max=0.5, help="Significance level.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _print_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.callback()
def emotionbench(debug: kit.DebugOpt = False) -> None:
    """EmotionBench: how situations shift a model's emotions, against 1,266 humans."""


def _scoring_label(published: bool, authors_code: bool = False) -> str:
    if authors_code:
        return "the authors' code's scoring (reverse keys, x2 for DASS-21, original F-test details)"
    return "published (the thesis's printed sums)" if published else "corrected"


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


@app.command("rescore")
def rescore(
    csv_file: Annotated[Path, typer.Argument(help="A released <model>-<scale>-testing.csv file.")],
    scale: Annotated[
        str | None, typer.Option("--scale", help="PANAS, AGQ, DASS-21, BDI, FDS, MJS, GASP, FSS or BFNE.")
    ] = None,
    data_dir: DataDirOpt = None,
    published: EmotionPublishedOpt = None,
    authors_code: AuthorsCodeOpt = False,
    alpha: AlphaOpt = 0.01,
    as_json: JsonOpt = False,
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
    names = _factor_names(data_dir)
    console.print(
        f"[bold]{terminal_text(result['file'])}[/bold]: {terminal_text(chosen.name)}, "
        f"{_scoring_label(published, authors_code)}, alpha {alpha}"
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


@app.command("human")
def human(
    data_dir: DataDirOpt = None,
    alpha: AlphaOpt = 0.01,
    as_json: JsonOpt = False,
) -> None:
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
    echo(human_frame(table, _factor_names(data_dir)).to_markdown(index=False))


@app.command("crowd")
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
    alpha: AlphaOpt = 0.01,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for crowd-<by>.md/.csv/.png tables and figures."),
    ] = None,
    as_json: JsonOpt = False,
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


def _factor_names(data_dir: Path | None) -> dict[str, str]:
    from .situations import load_situations

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_situations(data_dir).names()
    except LlmpsychError:
        return {}


@app.command("run")
@kit.run_command
def run(
    ctx: typer.Context,
    scale: Annotated[
        str, typer.Option("--scale", help="PANAS or AGQ, DASS-21, BDI, FDS, MJS, GASP, FSS, BFNE.")
    ] = ("PANAS"),
    situations_per_factor: Annotated[
        int, typer.Option("--situations-per-factor", min=0, help="Situations per factor (0: all).")
    ] = 5,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Runs per situation.")] = 10,
    default_runs: Annotated[
        int | None, typer.Option("--default-runs", min=2, help="Default runs (50 for PANAS, else 10).")
    ] = None,
    emotions: Annotated[
        str | None, typer.Option("--emotions", help="Comma-separated emotions (default: all).")
    ] = None,
    factors: Annotated[
        str | None, typer.Option("--factors", help="Comma-separated factor ids, e.g. Anger-1.")
    ] = None,
    prompt: Annotated[
        str, typer.Option("--prompt", help="official (the released code's) or v2.")
    ] = "official",
    stable: Annotated[
        bool, typer.Option("--stable", help="Ask the model to keep its emotions stable.")
    ] = False,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Built-in alternative wording: romero, serapio-1 or serapio-2 (our own words; see docs).",
        ),
    ] = None,
    positive: Annotated[Path | None, typer.Option("--positive", help="Positive rewrites file (RQ2).")] = None,
    situations: Annotated[Path | None, typer.Option("--situations", help="Own situations file.")] = None,
    scale_file: Annotated[
        Path | None, typer.Option("--scale-file", help="Your own scale file as the emotion measure.")
    ] = None,
    keep_order: Annotated[bool, typer.Option("--keep-order", help="Keep the items' original order.")] = False,
    published: EmotionPublishedOpt = None,
    alpha: AlphaOpt = 0.01,
    *,
    flags: kit.RunFlags,
) -> None:
    """Run EmotionBench on a model: default runs, then runs per situation; writes tables and a report."""
    values: dict[str, Any] = {
        "scale": scale,
        "situations_per_factor": situations_per_factor,
        "runs": runs,
        "default_runs": default_runs,
        "emotions": _split(emotions),
        "factors": _split(factors),
        "prompt": prompt,
        "stable": stable,
        "template": template,
        "positive": str(positive) if positive else None,
        "situations_file": str(situations) if situations else None,
        "scale_file": str(scale_file) if scale_file else None,
        "shuffle": not keep_order,
        "published": published,
        "alpha": alpha,
    }
    aliases = {"situations": "situations_file", "keep_order": "shuffle"}
    _start_run(ctx, values, flags, source="emotionbench run", aliases=aliases)


def _start_run(
    ctx: typer.Context,
    values: dict[str, Any],
    flags: kit.RunFlags,
    *,
    source: str,
    aliases: dict[str, str] | None = None,
) -> None:
    """Build the emotionbench run config from a command's values and flags and start it (shared by
    ``run`` and the experiments), or resume the run named by ``--resume``."""
    if flags.resume is not None:
        kit.finish(kit.resume(ctx, flags))
        return
    options = _all_situations(kit.task_options(ctx, values, flags, aliases=aliases))
    cfg = kit.build_config("emotionbench", flags, options=options, source=source)
    kit.finish(kit.start(cfg, flags))


@app.command("describe")
@kit.run_command
def describe(
    ctx: typer.Context,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups", help="Comma-separated groups (default: the thesis's 20, e.g. 'Asian Female')."
        ),
    ] = None,
    select_from: Annotated[
        Path | None,
        typer.Option(
            "--select-from",
            help="An analysed PANAS run: its --select-n highest-NA and lowest-PA situations "
            "(the thesis's choice).",
        ),
    ] = None,
    select_n: Annotated[int, typer.Option("--select-n", min=1, help="Situations per criterion.")] = 5,
    positive: Annotated[
        Path | None, typer.Option("--positive", help="Positive rewrites file: the positive condition.")
    ] = None,
    situations_per_factor: Annotated[
        int,
        typer.Option("--situations-per-factor", min=0, help="Without --select-from/--positive (0: all)."),
    ] = 1,
    emotions: Annotated[str | None, typer.Option("--emotions", help="Comma-separated emotions.")] = None,
    factors: Annotated[str | None, typer.Option("--factors", help="Comma-separated factor ids.")] = None,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Replies per group and situation.")] = 1,
    situations: Annotated[Path | None, typer.Option("--situations", help="Own situations file.")] = None,
    *,
    flags: kit.RunFlags,
) -> None:
    """Beyond questionnaires (thesis Fig. 5.8): after no, negative and positive situations, ask the model
    to describe demographic groups; the refusal rate (PoR) per condition and group."""
    values: dict[str, Any] = {
        "experiment": "describe",
        "groups": _split(groups),
        "select_from": str(select_from) if select_from else None,
        "select_n": select_n,
        "positive": str(positive) if positive else None,
        "situations_per_factor": situations_per_factor,
        "emotions": _split(emotions),
        "factors": _split(factors),
        "runs": runs,
        "situations_file": str(situations) if situations else None,
    }
    _start_run(
        ctx,
        values,
        flags,
        source="emotionbench describe",
        aliases={"situations": "situations_file"},
    )


finetune_app = typer.Typer(
    help="Tuning to align with humans (thesis Table 5.9): the 866/400 split, its export, the evaluation.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(finetune_app, name="finetune")

SplitSeedOpt = Annotated[int, typer.Option("--split-seed", min=0, help="Seed of the stratified split.")]
TestSizeOpt = Annotated[int, typer.Option("--test-size", min=1, help="People held out for testing.")]


@finetune_app.command("export")
def finetune_export(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for train.jsonl, test.jsonl, split.csv/json.")
    ],
    split_seed: SplitSeedOpt = 0,
    test_size: TestSizeOpt = 400,
    prompt: Annotated[
        str, typer.Option("--prompt", help="official or v2 (as the evaluation run).")
    ] = "official",
    template: Annotated[
        str | None, typer.Option("--template", help="romero, serapio-1 or serapio-2 (as the evaluation run).")
    ] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Write the 866/400 split of crowd.xlsx as OpenAI chat fine-tuning JSONL (the training stays the
    provider's)."""
    from .crowd import crowd_path, load_crowd
    from .finetune import export_split
    from .prompts import PromptSettings, template_names
    from .scales import load_scales as load_emotionbench_scales
    from .situations import load_situations

    if prompt not in ("official", "v2"):
        raise LlmpsychError(f"unknown --prompt {prompt!r} (use official or v2)")
    if template is not None and template not in template_names():
        raise LlmpsychError(f"unknown --template {template!r} (use {', '.join(template_names())})")
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


@finetune_app.command("evaluate")
@kit.run_command
def finetune_evaluate(
    ctx: typer.Context,
    split_seed: SplitSeedOpt = 0,
    test_size: TestSizeOpt = 400,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Evoked runs per held-out person.")] = 1,
    default_runs: Annotated[
        int | None, typer.Option("--default-runs", min=2, help="Default runs (50 by default).")
    ] = None,
    prompt: Annotated[str, typer.Option("--prompt", help="official or v2 (as the export).")] = "official",
    template: Annotated[str | None, typer.Option("--template", help="As the export.")] = None,
    keep_order: Annotated[bool, typer.Option("--keep-order", help="Keep the items' original order.")] = False,
    *,
    flags: kit.RunFlags,
) -> None:
    """Run any model (vanilla or fine-tuned) on the held-out people's situations; the report holds the
    thesis's Table 5.9 rows (negative affect, default and evoked) next to those people."""
    values: dict[str, Any] = {
        "experiment": "heldout",
        "scale": "PANAS",
        "split_seed": split_seed,
        "test_size": test_size,
        "runs": runs,
        "default_runs": default_runs,
        "prompt": prompt,
        "template": template,
        "shuffle": not keep_order,
    }
    _start_run(
        ctx,
        values,
        flags,
        source="emotionbench finetune evaluate",
        aliases={"keep_order": "shuffle"},
    )


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
    from ..runs.settings import LANGUAGE, labels_by_settings, stored_config
    from .rescore import scale_for_file, score_released, summary_published
    from .scales import load_scales as load_emotionbench_scales
    from .tables import markdown, paper_table

    columns: dict[str, dict[str, Any]] = {}
    scorings: dict[str, bool] = {}
    scale_names: set[str] = set()
    summaries: dict[Path, dict[str, Any]] = {}
    for source in sources:
        if source.is_dir():
            summary_file = source / "summary.json"
            if not summary_file.is_file():
                raise LlmpsychError(f"{source}: no summary.json (run `llmpsych analyze {source}` first)")
            summaries[source] = json.loads(summary_file.read_text())
            if summaries[source].get("experiment") == "describe":
                raise LlmpsychError(
                    f"{source}: a describe run has refusal rates, no scale scores to compare",
                    "see its report.md and por.csv",
                )
    if published is None:  # released files follow the runs when they agree, else the authors' scoring
        run_scorings = {summary_published(s) for s in summaries.values()}
        published = run_scorings.pop() if len(run_scorings) == 1 else True
    languages = {source: _summary_language(source, summaries.get(source)) for source in sources}
    by_language = len(set(languages.values())) > 1  # columns say their language when the runs differ
    configs = {source: stored_config(source) for source in sources}
    results: list[tuple[Path, dict[str, Any], str, str]] = []
    for source in sources:
        if source in summaries:
            result = summaries[source]
            model = str(result.get("model", source.name))
            where = source.name
        else:
            scales = load_emotionbench_scales(data_dir)
            result = score_released(source, scale_for_file(source, scales, scale), published=published)
            model, where = str(result.get("model") or source.stem), ""
        results.append((source, result, model, where))
    named, _ = labels_by_settings(  # and every other setting the runs differ in (a column is one source)
        [f"{m} · {languages[s]}" if by_language else m for s, _, m, _ in results],
        [configs[s] for s, _, _, _ in results],
        ignore=[LANGUAGE],
    )
    for (source, result, _, where), name in zip(results, named, strict=True):
        label = f"{name} ({where})" if where else name
        if label in columns:  # two runs of one model in folders of one name: never merged or overwritten
            label = f"{name} ({source})"
        while label in columns:
            label += "'"
        scale_names.add(result.get("scale", "?"))
        scorings[label] = summary_published(result)
        columns[label] = result
    if len(scale_names) > 1:
        raise LlmpsychError(f"the sources use different scales ({', '.join(sorted(scale_names))})")
    if len(set(scorings.values())) > 1:
        listed = "; ".join(f"{label}: {_scoring_label(p)}" for label, p in scorings.items())
        raise LlmpsychError(
            f"the columns mix published and corrected scoring ({listed})",
            "compare like with like: re-run with --published or --corrected to match the run directories",
        )
    if humans and scale_names == {"PANAS"}:
        from .crowd import crowd_path, human_table, load_crowd
        from .report import human_as_result

        panas = load_emotionbench_scales(data_dir)["PANAS"]
        columns["Crowd"] = human_as_result(human_table(load_crowd(crowd_path(data_dir), panas), panas))
    text = markdown(paper_table(columns, _factor_names(data_dir), with_n=False))
    gaps = [f"{label}: {line.strip()}" for label, r in columns.items() for line in missing_lines(r)[1:]]
    if gaps:  # a released file with parts removed is never compared as if it were whole
        text += "\n\nMissing from the released design (these columns average fewer runs):\n\n" + "\n".join(
            f"- {gap}" for gap in gaps
        )
    if out is not None:
        from ..report.files import atomic_write_text
        from .report import heatmap

        out = _comparison_file(out)
        shifts = {
            f"{label} {m[0].upper()}": {
                f: (c.get(m) or {}).get("change") for f, c in result["factors"].items()
            }
            for label, result in columns.items()
            for m in ("positive", "negative", "total")
            if any(m in c for c in result["factors"].values())
        }
        present = {k: {f: float(v) for f, v in col.items() if v is not None} for k, col in shifts.items()}
        png = heatmap(present, out.with_suffix(".png"), "Change from default")
        image = f"\n\n![shifts]({png.name})" if png is not None else ""
        atomic_write_text(out, f"# EmotionBench comparison\n\n{text}{image}\n")
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


def missing_lines(result: dict[str, Any]) -> list[str]:
    """Under a released file's table: what of the released design it lacks, with the n it has."""
    gaps = result.get("missing") or []
    if not gaps:
        return []
    return [
        f"missing from the released design ({len(gaps)} part(s); the n shown are what the file has):",
        *(f"  {gap}" for gap in gaps),
    ]


def _summary_language(source: Path, summary: dict[str, Any] | None) -> str:
    """A compared source's language: a run's (its summary, else its stored config); released CSVs are the
    official English data."""
    from ..runs.languages import OFFICIAL_LANGUAGE, config_language
    from ..runs.store import STORE_FILE, RunStore

    if summary is None:
        return OFFICIAL_LANGUAGE
    language = summary.get("language")
    if isinstance(language, str) and language:
        return language
    if (source / STORE_FILE).is_file():  # analysed before runs recorded their language
        with RunStore.in_dir(source, readonly=True) as store:
            language = config_language(store.get_meta("config") or {})
    return language or OFFICIAL_LANGUAGE


def _all_situations(options: dict[str, Any]) -> dict[str, Any]:
    """``--situations-per-factor 0`` means every situation (the option's ``None``; a ``None`` flag would
    be dropped as not given and the default of 5 would apply)."""
    if options.get("situations_per_factor") == 0:
        options["situations_per_factor"] = None
    return options


def _split(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


app.command("translate")(translate_situations)  # the shared translate command (instruments/cli.py)
