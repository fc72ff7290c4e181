"""``llmpsych scales``: list, show, corrections, validate, translate (mounted by the main command line)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import clikit as kit
from ..clikit import CommandT
from ..clinames import RETIRED_FLAGS_OF, renamed, retired_option
from ..errors import ConfigError, DataError, LlmpsychError, terminal_text
from ..report.terminal import InertConsole

if TYPE_CHECKING:
    from .scale import Scale

app = typer.Typer(
    help="Psychometric scales: list, show, corrections, validate, translate.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def scales(debug: kit.DebugOpt = False) -> None:
    """Psychometric scales: list, show, corrections, validate, translate."""


console = InertConsole(soft_wrap=True)  # long paths stay on one line

DataDirOpt = kit.DataDirOpt
DatasetOpt = Annotated[
    str | None,
    typer.Option("--dataset", help="Only this dataset: PsychoBench or EmotionBench (default: both)."),
]
NoCorrectionsOpt = Annotated[
    bool,
    typer.Option("--no-corrections", help="Load the data as published, without llmpsych's documented fixes."),
]


def _load(data_dir: Path | None, dataset: str | None, corrections: bool) -> dict[str, dict[str, Scale]]:
    """Scales by dataset; a named dataset must exist, otherwise missing datasets are skipped."""
    from .official import DATASETS, load_dataset_scales

    if dataset is not None:
        matches = [d for d in DATASETS if d.lower() == dataset.lower()]
        if not matches:
            raise LlmpsychError(f"unknown dataset {dataset!r} (use {' or '.join(DATASETS)})")
        return {matches[0]: load_dataset_scales(matches[0], data_dir, corrections=corrections)}
    loaded: dict[str, dict[str, Scale]] = {}
    first_error: DataError | None = None
    for name in DATASETS:
        try:
            loaded[name] = load_dataset_scales(name, data_dir, corrections=corrections)
        except DataError as exc:
            if "not found" not in str(exc):
                raise
            first_error = first_error or exc
    if not loaded and first_error is not None:
        raise first_error
    return loaded


def _range(scale: Scale) -> str:
    return f"{scale.response_min}-{scale.response_max}"


def _norm_summary(scale: Scale) -> str:
    labels = scale.norm_labels
    if not labels:
        return "-"
    n_by_label = {g.label: g.n for sub in scale.subscales for g in sub.norms}
    return ", ".join(f"{label} (n={n_by_label[label]})" for label in labels)


def _subscale_summary(scale: Scale, limit: int = 3) -> str:
    if scale.unscored:
        return "unscored"
    names = [f"{s.name} ({len(s.item_indices)})" for s in scale.subscales]
    extra = f", … {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + extra


@app.command("list")
def list_scales(
    data_dir: DataDirOpt = None, dataset: DatasetOpt = None, no_corrections: NoCorrectionsOpt = False
) -> None:
    """Scales in the data directory: items, response range, scoring, subscales and norm groups."""
    from rich.table import Table

    table = Table(title="Scales")
    for column in ("dataset", "scale", "items", "range", "scoring", "subscales (items)", "norm groups"):
        table.add_column(column, overflow="fold")
    for name, scales in _load(data_dir, dataset, not no_corrections).items():
        for scale in scales.values():
            table.add_row(
                name,
                scale.name,
                str(scale.n_items),
                _range(scale),
                scale.scoring,
                _subscale_summary(scale),
                _norm_summary(scale),
            )
    console.print(table)


@app.command("show")
def show_scale(
    name: Annotated[str, typer.Argument(help="Scale name, e.g. BFI or PANAS.")],
    data_dir: DataDirOpt = None,
    dataset: DatasetOpt = None,
    no_corrections: NoCorrectionsOpt = False,
    scale_file: Annotated[
        Path | None, typer.Option("--scale-file", help="Read the scale from this scale file instead.")
    ] = None,
    items: Annotated[bool, typer.Option("--items", help="Also print the item texts from the data.")] = False,
    old_file: Annotated[Path | None, retired_option("--file", "--scale-file")] = None,
) -> None:
    """Everything llmpsych knows about one scale."""
    from .native import load_scale_file

    file = renamed(scale_file, old_file, default=None, names=("--scale-file", "--file"))
    if file is not None:
        candidates = {s.name: s for s in load_scale_file(file, corrections=not no_corrections)}
    else:
        candidates = {}
        for scales in _load(data_dir, dataset, not no_corrections).values():
            candidates.update(scales)
    matches = [s for key, s in candidates.items() if key.lower() == name.lower()]
    if not matches:
        known = ", ".join(candidates) or "none"
        raise LlmpsychError(f"no scale named {name!r} (available: {known})")
    _print_scale(matches[0], items)


def _print_scale(scale: Scale, with_items: bool) -> None:
    console.print(
        f"[bold]{terminal_text(scale.name)}[/bold]"
        + (f" — {terminal_text(scale.title)}" if scale.title else "")
    )
    console.print(f"  items: {scale.n_items}; response range {_range(scale)}; scoring {scale.scoring}")
    reverse = ", ".join(map(str, scale.reverse_indices)) or "none"
    console.print(f"  reverse-keyed items: {reverse}")
    if scale.filler_indices and not scale.unscored:
        console.print(f"  unscored filler items: {', '.join(map(str, scale.filler_indices))}")
    if scale.unscored:
        console.print(f"  [yellow]not scored by llmpsych[/yellow]: {terminal_text(scale.unscored_reason)}")
    for label, value in (("source", scale.source), ("license", scale.license), ("reference", scale.citation)):
        if value:
            console.print(f"  {label}: {terminal_text(value)}")
    for sub in scale.subscales:
        low, high = scale.subscale_range(sub.name)
        console.print(
            f"  subscale [bold]{terminal_text(sub.name)}[/bold] ({len(sub.item_indices)} items, "
            f"score {low:g}-{high:g}): " + ", ".join(map(str, sub.item_indices)),
            highlight=False,
        )
        for group in sub.norms:
            console.print(
                f"    norm {terminal_text(group.label)}: {group.mean:g} ± {group.sd:g}, n = {group.n}",
                highlight=False,
            )
    for correction in scale.corrections:
        console.print(
            terminal_text(f"  corrected {correction.field}: {correction.old!r} -> {correction.new!r}")
        )
    if with_items:
        for item in scale.items:
            flag = " (reversed)" if item.reverse else ""
            console.print(f"  {item.index}. {item.text}{flag}", highlight=False, markup=False)


@app.command("corrections")
def list_corrections(data_dir: DataDirOpt = None, dataset: DatasetOpt = None) -> None:
    """Every documented correction llmpsych applies when loading the official data."""
    from rich.table import Table

    table = Table(title="Corrections applied on load (use --no-corrections to load as published)")
    for column in ("dataset", "scale", "field", "published", "corrected", "reason"):
        table.add_column(column, overflow="fold")
    count = 0
    for name, scales in _load(data_dir, dataset, True).items():
        for scale in scales.values():
            for c in scale.corrections:
                table.add_row(name, c.scale, c.field, c.old, c.new, c.reason)
                count += 1
    console.print(table)
    console.print(f"{count} correction(s)")


@app.command("validate")
def validate_file(
    file: Annotated[
        Path, typer.Argument(help="A scale file: llmpsych YAML/JSON, or the official JSON format.")
    ],
    no_corrections: NoCorrectionsOpt = False,
) -> None:
    """Check a user scale file; exits with an error line naming the first problem."""
    from .native import load_scale_file

    scales = load_scale_file(file, corrections=not no_corrections)
    for scale in scales:
        norms = sum(len(s.norms) for s in scale.subscales)
        console.print(
            f"  {terminal_text(scale.name)}: {scale.n_items} items, range {_range(scale)}, {scale.scoring}, "
            f"{len(scale.subscales)} subscale(s), {norms} norm group(s), "
            f"{len(scale.reverse_indices)} reverse-keyed item(s)",
            highlight=False,
        )
    console.print(f"[green]{terminal_text(file)}: {len(scales)} valid scale(s)[/green]", highlight=False)


BackModelOpt = Annotated[
    str | None, typer.Option("--back-model", help="Model spec that translates back (default: the --model).")
]
OutFileOpt = Annotated[
    Path | None,
    typer.Option("--out-file", help="Also write the new file here (it is always in the run folder)."),
]
#: The run flags a translation of one file has never taken.
_NOT_TAKEN = frozenset({"task_config", "concurrency", "data_dir", "resume"})


def translate_command(
    app: typer.Typer, *, retired: Mapping[str, str] | None = None
) -> Callable[[CommandT], CommandT]:
    """Register a function as ``app``'s ``translate`` command (this group's scale files, or the texts a
    benchmark registered with the translation kit, :mod:`llmpsych.instruments.translate`): a run of the
    ``translate`` task whose every option is a flag generated from its ``Options`` model
    (:func:`llmpsych.clikit.task_command`), without the run flags a translation has never taken.
    ``retired``: the command's old flag spellings, accepted hidden with a notice
    (:data:`~llmpsych.clinames.RETIRED_FLAGS_OF`)."""
    return kit.task_command(app, "translate", "translate", without=_NOT_TAKEN, retired=retired)


def with_source(options: dict[str, Any], key: str, file: Path) -> dict[str, Any]:
    """``options`` with the FILE argument as the option ``key`` (the file to translate); that option also
    given as ``-O`` or in a config file is one error line."""
    if key in options:
        raise ConfigError(f"option {key!r} is given twice: as FILE and as -O or --task-config", "keep FILE")
    return {**options, key: str(file)}


@translate_command(app, retired=RETIRED_FLAGS_OF["scales translate"])
def translate_file(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="A scale file: llmpsych YAML/JSON, or the official JSON format.")
    ],
    back_model: BackModelOpt = None,
    out_file: OutFileOpt = None,
    *,
    flags: kit.RunFlags,
    options: dict[str, Any],
) -> None:
    """Translate a scale file into another language (with back-translation and an agreement report), or
    write new item wordings with --paraphrase N; exits 1 naming the texts without a usable reply. Each
    option of the translate task is a flag."""
    if (options.get("to") is None) == (not options.get("paraphrase")):
        raise LlmpsychError("give either --to LANGUAGE or --paraphrase N", "e.g. --to de")
    options = with_source(options, "scale_file", file)
    run_translation(options, flags, file, back_model=back_model, out_file=out_file)


def run_translation(
    options: dict[str, Any],
    flags: kit.RunFlags,
    file: Path,
    *,
    back_model: str | None,
    out_file: Path | None,
) -> None:
    """The shared body of the translate commands: one ``translate`` run with these task ``options``, its
    outcome, the copy to ``--out-file``, and exit status 1 when texts failed."""
    import json
    import shutil

    if out_file is not None and out_file.exists():
        raise LlmpsychError(f"{out_file} already exists", "choose another --out-file, or remove it first")
    models = {"back": back_model} if back_model else None
    cfg = kit.build_config("translate", flags, options=options, models=models, source="translate")
    outcome = kit.start(cfg, flags.but(name=f"translate-{file.stem}"))
    failed = kit.print_outcome(outcome)
    summary = outcome.run_dir / "translation.json"
    written = json.loads(summary.read_text(encoding="utf-8")).get("file") if summary.is_file() else None
    if out_file is not None and written:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, out_file)
        console.print(f"wrote {terminal_text(out_file)}")
    kit.exit_if_failed(failed)
