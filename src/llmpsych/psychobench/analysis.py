"""PsychoBench analysis: per-run scores, valid-answer rates, mean ± sd over runs, tests against norms,
BSRI classification, CABIN groupings (only from a given mapping), tidy tables and Markdown/HTML reports.

Reads only the run store and the data file (for keys and norms). Every subscale with at least two scored
runs is compared with every human norm group of the data file by the paper's procedure (F-test, then
Student's or Welch's t-test, alpha 0.01 by default) through :mod:`llmpsych.stats`, with Hedges' g and its
95 % CI, and Holm's correction across the whole family of comparisons in the run. Report settings (BSRI
thresholds and label order, a CABIN mapping) are stored in the run, so ``llmpsych analyze RUN_DIR``
rebuilds the same report without calling a model.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import DataError
from ..instruments.native import ScaleFileRecord
from ..instruments.parsing import positional_note
from ..instruments.quality import Repeats, quality_section, quality_tables, repeats
from ..instruments.scale import STORED_HINT, Scale, ScoringError
from ..report.charts import Bar, grouped_bar_chart
from ..report.html import write_html
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.config import RunConfig
from ..runs.items import Administration
from ..runs.record import RunRecord
from ..runs.scores import range_text
from ..runs.store import RunStore
from ..stats import (
    GroupStats,
    apply_holm,
    compare_with_norm,
    comparisons_frame,
    format_mean_sd,
    summarize,
    valid_rate,
)
from ..stats.compare import Method
from ..stats.reliability import BOOTSTRAP_RESAMPLES
from . import bsri as bsri_mod
from . import cabin as cabin_mod
from .logprob import ItemDistribution, weighted_scores
from .options import PsychoBenchOptions, PsychoBenchResult
from .personas import Persona
from .transcripts import TRANSCRIPTS, run_link, write_transcripts

SETTINGS_KEY = "psychobench_report"


class ReportSettings(BaseModel):
    """How a run's report is built; stored in the run (meta ``psychobench_report``)."""

    model_config = ConfigDict(extra="forbid")

    bsri: bsri_mod.BsriSettings = Field(default_factory=bsri_mod.BsriSettings)
    cabin_groupings: dict[str, Any] | None = Field(
        default=None, description="a checked mapping {source, groupings}; None: groupings are not reported"
    )
    parquet: bool = True
    html: bool = True
    embed_images: bool = True

    @field_validator("cabin_groupings")
    @classmethod
    def _mapping(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else cabin_mod.check_groupings(value)


class PsychoBenchRun(Protocol):
    """What the analysis reads of the task that ran (the task itself; analysis never builds one)."""

    config: RunConfig
    options: PsychoBenchOptions

    @property
    def scales(self) -> list[Scale]: ...

    @property
    def all_scales(self) -> dict[str, Scale]: ...

    @property
    def persona(self) -> Persona: ...

    def scale_source(self, name: str) -> ScaleFileRecord | None: ...

    def administrations(self, record: RunRecord) -> list[Administration]: ...


def load_settings(run_dir: Path) -> ReportSettings:
    """The report settings stored in a run (defaults if none)."""
    with RunStore.in_dir(run_dir) as store:
        raw = store.get_meta(SETTINGS_KEY)
    return ReportSettings.model_validate(raw or {})


def save_settings(run_dir: Path, settings: ReportSettings) -> None:
    """Store report settings in a run, for every later ``llmpsych analyze``."""
    with RunStore.in_dir(run_dir) as store:
        store.set_meta(SETTINGS_KEY, settings.model_dump(mode="json"))


def run_tables(scales: dict[str, Scale], results: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """Tidy per-run tables from unit results: ``answers``, ``scores`` and ``valid`` (one row per run)."""
    answers, scores, valid = [], [], []
    for result in results:
        scale = scales[result["scale"]]
        run, mode = result["run"], result.get("mode", "generate")
        given = {int(k): v for k, v in (result.get("answers") or {}).items()}
        position = {item: p for p, item in enumerate(result.get("order") or [], start=1)}
        items = {d.item: d for d in map(ItemDistribution.from_json, result.get("items") or [])}
        for index in scale.item_indices:
            row = {"scale": scale.name, "run": run, "item": index, "position": position.get(index)}
            row["answer"] = given.get(index)
            if mode == "logprob":
                dist = items.get(index)
                row |= {"value": dist.value, "mass": dist.mass, "source": dist.status} if dist else {}
            answers.append(row)
        if mode == "logprob":
            values = {i: d.value for i, d in items.items() if d.value is not None}
            for item, value in values.items():  # an expected value lies in the range, as every option does
                if (
                    not _in_range(value, scale.response_min, scale.response_max)
                    or item not in scale.item_indices
                ):
                    raise DataError(
                        f"run store, {scale.name} run {run}: item {item} value {str(value)[:20]!r} is not a "
                        f"number in {scale.response_min}-{scale.response_max}",
                        STORED_HINT,
                    )
            subscores = weighted_scores(scale, values)
            n_valid = len(values)
        else:
            try:
                subscores = scale.score(given)
            except ScoringError as exc:  # the parser never stores such answers: an edited or foreign store
                raise DataError(f"run store, {scale.name} run {run}: {exc}", STORED_HINT) from None
            n_valid = len(given)
        for name, value in subscores.items():
            span = range_text(*scale.score_range(name))  # what the score is on, from the scale's definition
            scores.append({"scale": scale.name, "run": run, "subscale": name, "score": value, "range": span})
        row = {
            "scale": scale.name,
            "run": run,
            "items": scale.n_items,
            "valid": n_valid,
            "valid_rate": n_valid / scale.n_items,
            "asks": result.get("asks", 0),
            "refused": bool(result.get("refused", False)),
        }
        if mode == "generate":
            row |= _positional_counts(result, scale.name, run)
        if mode == "logprob":
            statuses = [d.status for d in items.values()]
            masses = [d.mass for d in items.values() if d.mass is not None]
            row |= {
                "from_logprobs": statuses.count("logprobs"),
                "from_text": statuses.count("text_fallback"),
                "mean_option_mass": sum(masses) / len(masses) if masses else math.nan,
            }
        valid.append(row)
    return {"answers": pd.DataFrame(answers), "scores": pd.DataFrame(scores), "valid": pd.DataFrame(valid)}


def _positional_counts(result: dict[str, Any], scale: str, run: int) -> dict[str, int]:
    """The run's positional replies and the items they left invalid (0 for runs stored before the rule)."""
    replies, items = result.get("positional_replies", 0), result.get("positional") or []
    if (
        isinstance(replies, bool)
        or not isinstance(replies, int)
        or replies < 0
        or not isinstance(items, list)
    ):
        raise DataError(f"run store, {scale} run {run}: unreadable positional-reply counts", STORED_HINT)
    return {"positional_replies": replies, "positional": len(items)}


def _in_range(value: object, low: int, high: int) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and low - 1e-9 <= value <= high + 1e-9
    )


def summary_table(scales: dict[str, Scale], scores: pd.DataFrame, n_runs: dict[str, int]) -> pd.DataFrame:
    """Mean ± sd (ddof 1) over scored runs per (scale, subscale); ``n`` = runs with a score."""
    rows = []
    for name, scale in scales.items():
        for subscale in scale.subscale_names:
            picked = scores[(scores["scale"] == name) & (scores["subscale"] == subscale)]["score"]
            summary = summarize(picked.tolist())
            rows.append(
                {
                    "scale": name,
                    "subscale": subscale,
                    "runs": n_runs.get(name, 0),
                    "n": summary.n,
                    "mean": summary.mean,
                    "sd": summary.sd,
                    "ci_low": summary.ci_low,
                    "ci_high": summary.ci_high,
                    "language": scale.language,  # from the scale file (None: it names none)
                }
            )
    return pd.DataFrame(rows)


def norm_comparisons(
    scales: dict[str, Scale],
    summary: pd.DataFrame,
    *,
    model_label: str,
    alpha: float,
    method: Method,
    published: bool,
    dependence: str = "",
) -> tuple[pd.DataFrame, list[str]]:
    """Every (scale, subscale, norm group) test, Holm-adjusted over all of them; and what was skipped.

    ``dependence`` says why the runs are not independent samples (:func:`run_dependence`); it, or a
    model SD near 0, makes a comparison degenerate (``docs/statistics.md``)."""
    comparisons, skipped = [], []
    for _, row in summary.iterrows():
        subscale = scales[row["scale"]].subscale(row["subscale"])
        if not subscale.norms:
            continue
        if row["n"] < 2 or math.isnan(row["sd"]):
            skipped.append(f"{row['scale']} {row['subscale']}: {row['n']} scored run(s), a test needs 2")
            continue
        model = GroupStats(float(row["mean"]), float(row["sd"]), int(row["n"]), model_label)
        for norm in subscale.norms:
            comparisons.append(
                compare_with_norm(
                    model,
                    norm,
                    alpha=alpha,
                    method=method,
                    published=published,
                    scale=row["scale"],
                    subscale=row["subscale"],
                    dependence=dependence,
                )
            )
    return comparisons_frame(apply_holm(comparisons)), skipped


def run_dependence(options: PsychoBenchOptions, config: RunConfig) -> str:
    """Why this run's repeated runs are not independent samples ("" when they are).

    In logprob mode every statement is asked alone, so the item order changes nothing, and at
    temperature 0 (or unset: the endpoint's deterministic default is not assumed random) every run sends
    the same requests and reads the same probabilities: the runs repeat one measurement."""
    temperature = config.params.temperature
    if options.method == "logprob" and not options.imported and not temperature:
        return "logprob mode at temperature 0: every run sends the same requests"
    return ""


def analyze_record(task: PsychoBenchRun, record: RunRecord) -> list[Path]:
    """Write tidy tables (CSV, Parquet), charts, report and transcripts (Markdown and HTML)."""
    run_dir, units, n_calls = record.run_dir, record.units, len(record.calls)
    settings = ReportSettings.model_validate(record.meta.get(SETTINGS_KEY) or {})
    typed = [(unit, result) for unit, result in record.results(PsychoBenchResult) if unit.result]
    done: list[dict[str, Any]] = [unit.result for unit, _ in typed]
    ran = {result.scale for _, result in typed}
    scales = {s.name: s for s in task.scales if s.name in ran}
    tables = run_tables(task.all_scales, done)
    n_runs = {name: sum(1 for _, r in typed if r.scale == name) for name in scales}
    scores = tables["scores"]
    if scores.empty:
        scores = pd.DataFrame(columns=["scale", "run", "subscale", "score", "range"])
    summary = summary_table(scales, scores, n_runs)
    model = task.config.model
    comparisons, skipped = norm_comparisons(
        scales,
        summary,
        model_label=model,
        alpha=task.options.alpha,
        method=task.options.test,
        published=task.options.published,
        dependence=run_dependence(task.options, task.config),
    )
    seed = task.config.seed
    column = "value" if task.options.method == "logprob" else "answer"
    copies = COPIES if deterministic(task) else ""
    quality = quality_tables(
        scales, tables["answers"], tables["valid"], column=column, seed=seed, copies=copies
    )
    extra = Extras()
    for scale in scales.values():
        if bsri_mod.is_bsri(scale):
            extra.add_bsri(scale, scores, summary, settings.bsri)
        if cabin_mod.is_cabin(scale):
            extra.add_cabin(scale, scores, settings.cabin_groupings)
    frames: list[tuple[str, pd.DataFrame]] = [
        *tables.items(),
        ("summary", summary),
        ("comparisons", comparisons),
        ("norms", norms_table(scales)),
        *quality.items(),
        *extra.frames(),
    ]
    extra.add_irt(task, record, list(scales))
    frames.extend(extra.irt_frames)
    failed = [u.unit_id for u in units if u.status == "failed"]
    charts = [
        c for c in (_chart(scale, summary, run_dir, model) for scale in scales.values()) if c is not None
    ]
    note = (
        "Every request exactly as sent and every reply as received (cipher runs: enciphered, each reply "
        "followed by its deciphered text as scored); as data: `llmpsych export RUN_DIR`."
    )
    shift = task.options.cipher_shift if task.options.cipher else None
    transcripts = write_transcripts(record, model, shift, note)
    outputs = write_run_report(
        run_dir,
        "PsychoBench report",
        lambda parquet_note: _sections(
            task,
            tables["valid"],
            summary,
            comparisons,
            skipped,
            failed,
            n_calls,
            charts,
            extra,
            parquet_note,
            identical_runs_note(task, repeats(scales, tables["answers"], column))
            + quality_section(
                quality, seed=seed, resamples=BOOTSTRAP_RESAMPLES, imported=bool(task.options.imported)
            ),
        ),
        tables=frames,
        parquet=settings.parquet,
        figures=charts,
        files=[transcripts],
        html=settings.html,
        embed_images=settings.embed_images,
        md_links=[TRANSCRIPTS],
    )
    if settings.html:
        outputs.append(write_html(transcripts, embed_images=False))
    return outputs


#: What makes repeated runs samples (docs/psychobench.md, "Consistency over runs").
SAMPLING_ADVICE = (
    "generate mode at a temperature above 0 (`-O mode=generate -O chunk_size=1 --temperature 0.7`), on a "
    "model that answers in the scale's format (see the valid answers below; the embedded 0.5B model did "
    "not in our measurement, so on it no run-to-run consistency can be measured: "
    "docs/psychobench.md#consistency-over-runs)"
)


#: Why alpha and omega are not meaningful over runs that nothing samples (:func:`deterministic`).
COPIES = "logprob mode at temperature 0 repeats one computation, so the runs are not samples"


def deterministic(task: PsychoBenchRun) -> bool:
    """Whether the runs repeat one computation: logprob mode (each statement asked on its own, so the item
    order cannot matter) at temperature 0 (nothing before the score is sampled)."""
    options = task.options
    return options.method == "logprob" and not task.config.params.temperature and not options.imported


def identical_runs_note(task: PsychoBenchRun, seen: dict[str, Repeats]) -> str:
    """Why alpha and omega are not meaningful when a scale's runs are copies (every answer the same, or
    logprob mode at temperature 0), and what to do ('' when the runs are samples)."""
    if task.options.imported:
        return ""
    copied = {name: r for name, r in seen.items() if r.varying == 0 or deterministic(task)}
    if not copied:
        return ""
    parts = []
    for name, r in copied.items():
        text = f"{name}: {r.administrations} runs, the same answer in every run to {r.items - r.varying} of "
        text += f"{r.items} items"
        if r.varying:
            text += f"; the other {r.varying} by at most {r.spread:.2g}"
            if deterministic(task):
                text += ", although every run sent the same request for it"
        parts.append(text)
    temperature = task.config.params.temperature or 0
    if task.options.method == "logprob":
        why = (
            "In logprob mode each answer is read from the model's probabilities for the options, with each "
            "statement asked on its own, so the item order cannot change it"
            + (
                ", and at temperature 0 nothing before the score is sampled."
                if temperature == 0
                else f"; at temperature {temperature:g} the words before the score did not change it either."
            )
        )
    elif temperature == 0:
        why = (
            "At temperature 0 the model gives its most likely reply, so runs differ only in item order, "
            "and that did not change the answers."
        )
    else:
        why = f"The runs sampled at temperature {temperature:g}, yet gave the same answers."
    return (
        f"**The runs are copies, not samples** ({'; '.join(parts)}), so alpha, omega, the item-total "
        "correlations and every SD over runs are not meaningful, and asking for more runs will not change "
        f"that. {why} To measure consistency over runs, let each run sample its answers: "
        f"{SAMPLING_ADVICE}.\n\n"
    )


class Extras:
    """The BSRI and CABIN additions of one run: tidy frames and report sections."""

    def __init__(self) -> None:
        self.tables: dict[str, pd.DataFrame] = {}
        self.sections: list[tuple[str, str]] = []
        self.irt_frames: list[tuple[str, pd.DataFrame]] = []

    def add_irt(self, task: PsychoBenchRun, record: RunRecord, scales: list[str]) -> None:
        """Item response models of this run's item-level answers (llmpsych.validity.irt: a graded response
        model per subscale, a 2PL for binary items), each administration one respondent: fitted where the
        run holds enough administrations, else the reason, with the command that pools several runs."""
        from ..errors import ConfigError
        from ..runs.items import items_frame
        from ..validity.irt import MIN_RESPONDENTS, fit_items

        title = "Item response models"
        items = items_frame(task.administrations(record), record.run_dir.name, {"model": task.config.model})
        named = [s for s in scales if s in set(items["scale"])]
        if items.empty or not named:
            return
        try:
            irt = fit_items(items, scales=named)
        except ConfigError as exc:
            self.sections.append(
                (title, f"Not fitted: {exc.message}" + (f" ({exc.hint})." if exc.hint else "."))
            )
            return
        view = irt.summary[["scale", "dimension", "model_type", "status", "respondents", "items", "reason"]]
        text = [
            "Each administration of a scale in this run is one respondent (a model's repeated answers, not "
            f"people); a fit needs at least {MIN_RESPONDENTS} respondents with variance on every item. "
            "Pool several runs (models, personas, languages) or compare with people: "
            "`llmpsych validity irt RUN... [--human FILE] --out DIR` (docs/validity.md).",
            table(view.fillna("")),
        ]
        fitted = irt.items[irt.items["parameter"] == "a"] if not irt.items.empty else irt.items
        if not fitted.empty:
            cols = [
                c for c in ("scale", "dimension", "item", "reverse", "estimate", "se") if c in fitted.columns
            ]
            text += [
                "Discriminations (a) with standard errors; thresholds in `irt_items.csv`.",
                table(fitted[cols]),
            ]
            self.irt_frames.append(("irt_items", irt.items))
        self.irt_frames.append(("irt_summary", irt.summary))
        self.sections.append((title, "\n\n".join(text)))

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        return list(self.tables.items())

    def add_bsri(
        self, scale: Scale, scores: pd.DataFrame, summary: pd.DataFrame, settings: bsri_mod.BsriSettings
    ) -> None:
        cut = bsri_mod.thresholds(scale, settings)
        runs = bsri_mod.classify_runs(scores, scale.name, cut)
        self.tables["bsri"] = runs
        order = settings.label_order
        means = summary[summary["scale"] == scale.name].set_index("subscale")["mean"]
        overall = bsri_mod.classify(
            float(means.get(bsri_mod.MASCULINE, math.nan)), float(means.get(bsri_mod.FEMININE, math.nan)), cut
        )
        counted = bsri_mod.counts(runs["label"], order)
        unclassified = int(runs["label"].isna().sum())
        view = pd.DataFrame(
            [
                {
                    "run": run_link(scale.name, int(r["run"])),
                    "masculine": r["masculine"],
                    "feminine": r["feminine"],
                    "classification": "unclassified (a subscale has no score)"
                    if pd.isna(r["label"])
                    else r["label"],
                }
                for _, r in runs.iterrows()
            ]
        )
        text = [
            "Each run is classified by Bem's split: high on a subscale when its mean is **above** the "
            "threshold; Masculine = high masculine only, Feminine = high feminine only, Androgynous = both, "
            "Undifferentiated = neither.",
            f"Thresholds: {cut.source}.",
            f"Counts over {len(runs)} run(s) in the order **{' : '.join(order)}**: "
            f"**{bsri_mod.count_string(runs['label'], order)}**"
            + (f" ({unclassified} run(s) unclassified)." if unclassified else "."),
            "Classification of the mean over runs: "
            + (f"**{overall}**." if overall else "none (a subscale has no scored run)."),
            "PsychoBench prints such counts as 'Undifferentiated : Masculinity : Femininity : "
            "Androgynous' but never gives its medians, and several of its published count strings "
            "contradict its own means under that order; published counts are therefore not comparable "
            "with these. Change the thresholds or the order with `llmpsych psychobench analyze RUN_DIR "
            "--bsri-thresholds M,F --bsri-order U,M,F,A`.",
            table(pd.DataFrame([counted])),
            table(view),
        ]
        self.sections.append(("BSRI sex-role classification", "\n\n".join(text)))

    def add_cabin(self, scale: Scale, scores: pd.DataFrame, mapping: dict[str, Any] | None) -> None:
        if mapping is None:
            self.sections.append(("CABIN higher-order groupings", cabin_mod.ABSENT))
            return
        groups = cabin_mod.resolve(scale, mapping)
        per_run = cabin_mod.group_scores(scores, scale.name, groups)
        rows = []
        for (grouping, dim), part in per_run.groupby(["grouping", "dimension"], sort=False):
            s = summarize(part["score"].tolist())
            rows.append(
                {
                    "scale": scale.name,
                    "grouping": grouping,
                    "dimension": dim,
                    "interests": ", ".join(groups[str(grouping)][str(dim)]),
                    "n": s.n,
                    "mean": s.mean,
                    "sd": s.sd,
                }
            )
        summary = pd.DataFrame(
            rows, columns=["scale", "grouping", "dimension", "interests", "n", "mean", "sd"]
        )
        self.tables["cabin_groups"] = per_run
        self.tables["cabin_groups_summary"] = summary
        view = summary[["grouping", "dimension", "n"]].copy()
        view["mean ± sd"] = [
            format_mean_sd(m, s, 2) for m, s in zip(summary["mean"], summary["sd"], strict=True)
        ]
        view["interests"] = summary["interests"]
        text = (
            f"From the mapping you supplied (source: {mapping['source']}). A dimension's run score is the "
            "unweighted mean of its interests' scores in that run; mean ± sd over runs. There are no human "
            "norms for these dimensions, so they are not tested.\n\n" + table(view)
        )
        self.sections.append(("CABIN higher-order groupings", text))


def norms_table(scales: dict[str, Scale]) -> pd.DataFrame:
    """The data file's human norms of the administered scales: one row per (scale, subscale, group)."""
    rows = [
        {"scale": name, "subscale": sub, "group": g.label, "mean": g.mean, "sd": g.sd, "n": g.n}
        for name, scale in scales.items()
        for sub in scale.subscale_names
        for g in scale.subscale(sub).norms
    ]
    return pd.DataFrame(rows, columns=["scale", "subscale", "group", "mean", "sd", "n"])


# -- report ------------------------------------------------------------------------------------------
def _sections(
    task: PsychoBenchRun,
    valid: pd.DataFrame,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    skipped: list[str],
    failed: list[str],
    n_calls: int,
    charts: list[Path],
    extra: Extras,
    parquet_note: str | None,
    quality: str,
) -> list[tuple[str, str]]:
    """The report's sections (the Parquet note, when there is one, ends the list of files)."""
    options, config = task.options, task.config
    if options.method == "logprob":
        mode = "one statement per request, scored by the probability-weighted response option (logprob mode)"
    else:
        chunks = (
            "the whole scale in one prompt"
            if options.chunk_size is None
            else f"{options.chunk_size} per turn"
        )
        mode = f"{chunks}, up to {options.max_reasks} re-asks for missing or invalid answers"
    names = ", ".join(summary["scale"].unique()) or "no scale"
    measured = (
        f"Model `{config.model}` answered {names} "
        f"({options.runs} run(s) per scale, each with its own item order; seed {config.seed}, temperature "
        f"{config.params.temperature:g}). Persona: {task.persona.label}; Caesar cipher: "
        f"{'on (shift ' + str(options.cipher_shift) + ')' if options.cipher else 'off'}; {mode}. "
        f"{scale_sources(task, summary)} Every conversation: [{TRANSCRIPTS}]({TRANSCRIPTS})."
    )
    if options.imported:
        source = options.imported
        measured = (
            f"Answers to {names} imported from `{source.get('file')}` (sha256 {source.get('sha256')}, "
            f"{source.get('rows')} rows) with `llmpsych psychobench import-answers`, labelled "
            f"`{config.model}`: no model was called here, so persona, cipher and item order are whatever "
            f"produced that file. {scale_sources(task, summary)}"
        )
    what_n = (
        "**n** for the model is the number of runs whose subscale could be scored (every item validly "
        "answered); a run is one complete administration in its own item order. The runs are repeated "
        "samples from one model, not a sample of people: the tests ask whether the model's run-to-run "
        "distribution could come from the human population, and at temperature 0 the SD over runs mostly "
        "reflects item order. Human n is the norm sample's size as given in the data file. "
        f"Tests: F-test for equal variances, then Student's or Welch's t-test (`--test {options.test}`), "
        f"two-sided, alpha = {options.alpha:g}; Hedges' g (model − human, pooled SD) with a 95 % CI; "
        f"Holm's correction over all {_tested(comparisons)} comparisons of this run"
        + (
            f" that are tests ({len(comparisons) - _tested(comparisons)} degenerate: see below)."
            if _tested(comparisons) < len(comparisons)
            else "."
        )
    )
    if options.imported:
        what_n = (
            "**n** is the number of runs (or respondents: the file's `run` column) whose subscale could be "
            "scored (every item validly answered). If the file holds people, a test compares two samples of "
            "people; if it holds a model's repeated runs, read it as for a run: the runs are samples from "
            "one model, not a sample of people. Human n is the norm sample's size as given in the scale "
            "file. " + what_n[what_n.index("Tests:") :]
        )
    if options.method == "logprob":
        what_n += (
            " In logprob mode every statement is asked on its own, so item order cannot matter: runs differ "
            "only through sampling of the tokens before the score, and at temperature 0 they coincide "
            "(SD ≈ 0), which makes the t-tests degenerate; read the means and the option distributions."
        )
    sections = [("What was measured", measured), ("What n is", what_n)]
    sections.append(("Scores (mean ± sd over runs, ddof = 1)", table(_scores_view(summary))))
    languages = summary["language"].nunique(dropna=True) if "language" in summary else 0
    if languages > 1:  # a run holding several languages (e.g. a scale and its translation)
        by_language = _scores_view(summary).assign(language=summary["language"].fillna("not given"))
        by_language = by_language.sort_values("language", kind="stable")
        sections.append(("Scores by language", table(by_language.set_index("language").reset_index())))
    if not comparisons.empty:
        legend = (
            f"sig.: `**` significant at alpha = {options.alpha:g} after Holm's correction, `*` significant "
            "before the correction only, blank: not significant; ↑/↓ model higher/lower than the group. "
            "Each cell is mean ± sd (n)."
        )
        sections.append(
            (
                "Comparison with human norms",
                legend + "\n\n" + table(_comparison_view(comparisons), floatfmt=".3g"),
            )
        )
    degenerate = pd.Series(dtype=str)
    if not comparisons.empty:
        degenerate = comparisons["degenerate"].fillna("").astype(str)
    if (degenerate != "").any():
        sections.append(
            (
                "Caution: degenerate tests",
                f"{int((degenerate != '').sum())} of {len(comparisons)} comparison(s) are degenerate (marked "
                "in the table: no t, p or sig.; left out of Holm's correction): the runs are not independent "
                "samples, or their SD is 0 or near 0 (the model's variance of the mean below the human "
                "mean's, sd_m²/n_m < sd_h²/n_h). A t-test then only asks whether the human mean equals a "
                "constant, and with a large norm sample its p-value is tiny whatever the difference. The "
                "model's score is one value: compare it with the human distribution, its z = (model − human "
                "mean) / human SD and percentile (column 'model in human norm', normal norm assumed), and "
                "Hedges' g with its CI.",
            )
        )
    sections.extend(extra.sections)
    if charts:
        intro = "Model and every human norm group, mean ± sd (error bars) per subscale.\n\n"
        sections.append(("Charts", intro + "\n\n".join(f"![{c.stem}]({c.name})" for c in charts)))
    if skipped:
        sections.append(("Not tested", "\n".join(f"- {line}" for line in skipped)))
    sections.append(("Valid answers", _valid_text(valid, n_calls, failed, imported=bool(options.imported))))
    sections.append(("Psychometric quality", quality))
    files = (
        "Tidy tables, as CSV and Parquet: answers (scale, run, item), scores (scale, run, subscale), valid "
        "(scale, run), summary (scale, subscale), comparisons (one row per test), norms (scale, subscale, "
        "group), quality (scale, subscale), quality_items (scale, subscale, item), quality_scales (scale)"
        + (", bsri (scale, run)" if "bsri" in extra.tables else "")
        + (
            ", cabin_groups (run, dimension) and cabin_groups_summary"
            if "cabin_groups" in extra.tables
            else ""
        )
        + f". {TRANSCRIPTS} (and .html): every run's conversation. run.sqlite: every request and answer "
        "exactly as sent; `llmpsych analyze RUN_DIR` rebuilds all of this without calling a model."
    )
    if parquet_note:
        files += f"\n\n{parquet_note}"
    sections.append(("Files", files))
    return sections


def scale_sources(task: PsychoBenchRun, summary: pd.DataFrame) -> str:
    """Where each reported scale's items, prompts and norms came from: the official file or a scale file."""
    files: dict[str, list[str]] = {}
    official: list[str] = []
    for name in summary["scale"].unique():
        record = task.scale_source(str(name))
        if record is None:
            official.append(str(name))
        else:
            files.setdefault(f"`{record.name}` (sha256 {record.sha256[:12]}…)", []).append(str(name))
    parts = [f"{', '.join(names)} from {file}" for file, names in files.items()]
    if official:
        parts.insert(
            0,
            f"{', '.join(official)} from PsychoBench's official questionnaires.json (with llmpsych's "
            "documented corrections)",
        )
    if not parts:
        return ""
    return "Items, prompts and norms: " + "; ".join(parts) + "."


def _chart(scale: Scale, summary: pd.DataFrame, run_dir: Path, model: str) -> Path | None:
    """Grouped bars per scored subscale: model and every norm group, mean ± sd (None: no matplotlib)."""
    rows = summary[(summary["scale"] == scale.name) & (summary["n"] > 0)]
    if rows.empty:
        return None
    subscales = [str(s) for s in rows["subscale"]]
    series: dict[str, list[Bar]] = {
        f"{model} (runs)": [
            (float(r["mean"]), 0.0 if math.isnan(r["sd"]) else float(r["sd"])) for _, r in rows.iterrows()
        ]
    }
    for label in scale.norm_labels:
        bars: list[Bar] = []
        for name in subscales:
            try:
                group = scale.subscale(name).norm(label)
            except KeyError:
                bars.append(None)
                continue
            bars.append((group.mean, group.sd))
        series[label] = bars
    ranges = [scale.subscale_range(name) for name in subscales]
    limits = (min(low for low, _ in ranges), max(high for _, high in ranges))
    path = run_dir / f"chart-{re.sub(r'[^A-Za-z0-9]+', '-', scale.name)}.png"
    return grouped_bar_chart(subscales, series, path, f"{scale.name}: mean ± sd", limits)


def _scores_view(summary: pd.DataFrame) -> pd.DataFrame:
    view = summary[["scale", "subscale", "runs", "n"]].copy()
    view["mean ± sd"] = [format_mean_sd(m, s, 2) for m, s in zip(summary["mean"], summary["sd"], strict=True)]
    view["95% CI of mean"] = [
        "" if math.isnan(lo) else f"{lo:.2f} – {hi:.2f}"
        for lo, hi in zip(summary["ci_low"], summary["ci_high"], strict=True)
    ]
    return view


def significance_mark(row: Any) -> str:
    """``**`` significant after Holm, ``*`` before Holm only, ``""`` otherwise; with ↑/↓ direction.

    Literal asterisks: a table cell passes text through as it is but for ``|`` and ``\\``
    (:func:`~llmpsych.report.markdown.cell_text`), and an unclosed ``**`` or ``*`` stays text in
    CommonMark, so report.md and report.html both show ``**↓`` (escaping them here showed ``\\*\\*↓``)."""
    if row["significant_holm"] is True or row["significant_holm"] == 1:
        mark = "**"
    elif bool(row["significant"]):
        mark = "*"
    else:
        return ""
    return mark + ("↑" if row["difference"] > 0 else "↓")


def _comparison_view(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, c in frame.iterrows():
        degenerate = c.get("degenerate") or ""
        degenerate = "" if isinstance(degenerate, float) else str(degenerate)
        rows.append(
            {
                "scale": c["scale"],
                "subscale": c["subscale"],
                "human group": c["human_label"],
                "model (n)": f"{format_mean_sd(c['model_mean'], c['model_sd'], 2)} ({c['model_n']})",
                "human (n)": f"{format_mean_sd(c['human_mean'], c['human_sd'], 2)} ({c['human_n']})",
                "sig.": "" if degenerate else significance_mark(c),
                "test": "not a test" if degenerate else c["test"],
                "t": "—" if degenerate else _number(c["t_statistic"]),
                "p": "—" if degenerate else _number(c["t_p_value"]),
                "p (Holm)": "—" if degenerate else _number(c["p_holm"]),
                "g [95% CI]": "n/a"
                if math.isnan(c["hedges_g"])
                else f"{c['hedges_g']:.2f} [{c['g_ci_low']:.2f}, {c['g_ci_high']:.2f}]",
                "model in human norm": _in_norm(c),
                "result": f"degenerate: {degenerate}; read the z and percentile"
                if degenerate
                else (c["direction"] if c["significant_holm"] else "no difference (Holm)"),
            }
        )
    return pd.DataFrame(rows)


def _tested(comparisons: pd.DataFrame) -> int:
    """How many comparisons are tests (not degenerate)."""
    if comparisons.empty or "degenerate" not in comparisons:
        return len(comparisons)
    return int((comparisons["degenerate"].fillna("").astype(str) == "").sum())


def _number(value: Any) -> str:
    """A test statistic for the table, 3 significant digits ("n/a": not computed)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):.3g}"


def _in_norm(row: Any) -> str:
    """The model's mean as one value in the human norm: z and percentile (normal norm assumed)."""
    z, percentile = row["glass_delta"], row.get("human_percentile", math.nan)
    if z is None or math.isnan(z):
        return "n/a"
    return f"z = {z:.2f} (percentile {percentile:.1f})" if not math.isnan(percentile) else f"z = {z:.2f}"


def _valid_text(valid: pd.DataFrame, n_calls: int, failed: list[str], *, imported: bool = False) -> str:
    if valid.empty:
        return "No run finished."
    per_scale = (
        valid.groupby("scale", sort=False)
        .agg(
            runs=("run", "count"), items=("items", "sum"), valid=("valid", "sum"), refusals=("refused", "sum")
        )
        .reset_index()
    )
    per_scale["valid rate"] = per_scale["valid"] / per_scale["items"]
    intervals = [
        valid_rate(int(v), int(n)) for v, n in zip(per_scale["valid"], per_scale["items"], strict=True)
    ]
    per_scale["95% CI (Wilson)"] = [f"{r.ci_low:.2f} – {r.ci_high:.2f}" for r in intervals]
    if "from_logprobs" in valid:
        extra = valid.groupby("scale", sort=False)[["from_logprobs", "from_text"]].sum().reset_index()
        per_scale = per_scale.merge(extra, on="scale")
    per_scale["transcripts"] = [
        " ".join(run_link(scale, int(run)) for run in sorted(valid[valid["scale"] == scale]["run"]))
        for scale in per_scale["scale"]
    ]
    lines = [
        f"{int(valid['valid'].sum())} of {int(valid['items'].sum())} items answered validly (parsed, in "
        f"range, not contradicted) after re-asking; {n_calls} model calls. Per run: valid.csv; each run's "
        f"conversation is one click away in the transcripts column.",
    ]
    if imported:
        lines = [
            f"{int(valid['valid'].sum())} of {int(valid['items'].sum())} items have an answer in the "
            "imported file (every one checked: a whole number in range; an empty cell is no answer). "
            "Per run: valid.csv."
        ]
    if "positional_replies" in valid and not imported:
        lines.append(
            positional_note(
                int(valid["positional_replies"].fillna(0).sum()),
                int(valid["positional"].fillna(0).sum()),
                int(valid["items"].sum()),
            )
        )
        if int(valid["positional_replies"].fillna(0).sum()):
            extra = (
                valid.groupby("scale", sort=False)[["positional_replies", "positional"]].sum().reset_index()
            )
            per_scale = per_scale.merge(extra.rename(columns={"positional": "positional items"}), on="scale")
    if "from_logprobs" in valid and int(valid["from_text"].sum()):
        lines.append(
            f"{int(valid['from_text'].sum())} item(s) had no usable top_logprobs and were scored from the "
            "written number instead."
        )
    if failed:
        lines.append(f"{len(failed)} unit(s) failed and are not scored: {', '.join(failed)}.")
    return "\n\n".join([*lines, table(per_scale)])
