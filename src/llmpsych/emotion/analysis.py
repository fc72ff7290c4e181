"""EmotionBench analysis of a run: scores per run, the change tables, humans, and the report.

Reads only the run store and the data files. A run is *valid* when every item got a valid answer (after
the bounded re-asks) and the model did not refuse; invalid runs are listed and counted per group, and
left out of the statistics (each table says its n).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from ..errors import DataError
from ..instruments.parsing import positional_note
from ..instruments.scale import STORED_HINT, Scale, ScoringError
from ..report.files import atomic_open, atomic_write_text
from ..report.html import fenced
from ..report.markdown import markdown_cells
from ..report.run_report import write_run_report
from ..report.transcripts import write_transcripts
from ..runs.config import RunConfig
from ..runs.record import RunRecord
from ..stats import format_mean_sd
from .changes import change_table, measures, score_answers, summary_json, table_json
from .options import EmotionBenchOptions, EmotionBenchResult
from .prompts import PromptSettings
from .quality import emotion_quality, emotion_quality_section
from .report import alignment, heatmap, human_frame
from .situations import SituationSet
from .tables import markdown, paper_table

if TYPE_CHECKING:
    from .finetune import Person


class EmotionBenchRun(Protocol):
    """What the analysis reads of the task that ran (the task itself; analysis never builds one)."""

    config: RunConfig
    options: EmotionBenchOptions

    @property
    def scale(self) -> Scale: ...

    @property
    def situation_set(self) -> SituationSet: ...

    @property
    def prompt_settings(self) -> PromptSettings: ...

    @property
    def heldout_split(self) -> tuple[list[Person], list[Person]]: ...


def run_frame(task: EmotionBenchRun, results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run: kind, factor, situation, run, validity, asks and the measures (``NaN`` if invalid)."""
    scale = task.scale
    names = measures(scale)
    rows = []
    for result in results:
        answers = {int(k): v for k, v in (result.get("answers") or {}).items()}
        positional = result.get("positional") or []
        valid = (
            not result.get("unanswered") and not result.get("refused") and not scale.missing_items(answers)
        )
        try:
            scores = score_answers(scale, answers, published=task.options.published) if valid else {}
        except ScoringError as exc:  # the parser never stores such answers: an edited or foreign store
            where = f"{result['kind']} {result.get('factor', '')} situation {result.get('situation')}"
            raise DataError(f"run store, {where} run {result['run']}: {exc}", STORED_HINT) from None
        rows.append(
            {
                "kind": result["kind"],
                "factor": result.get("factor", ""),
                "situation": result.get("situation"),
                "text": result.get("text", ""),
                "run": result["run"],
                "valid": valid,
                "refused": bool(result.get("refused")),
                "asks": result.get("asks", 0),
                "positional": _count(len(positional) if isinstance(positional, list) else -1),
                "positional_replies": _count(result.get("positional_replies", 0)),
                **{m: scores.get(m, math.nan) for m in names},
            }
        )
    return pd.DataFrame(rows)


def _count(value: Any) -> int:
    """A stored count (0 for runs stored before it was recorded); anything else is an edited store."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(f"run store: {str(value)[:20]!r} is not a count of positional replies", STORED_HINT)
    return value


def _by_factor(frame: pd.DataFrame, kind: str, names: tuple[str, ...]) -> dict[str, dict[str, list[float]]]:
    part = frame[(frame["kind"] == kind) & frame["valid"]]
    return {
        str(fid): {m: group[m].tolist() for m in names} for fid, group in part.groupby("factor", sort=False)
    }


def invalid_runs(frame: pd.DataFrame) -> dict[str, int]:
    """Invalid runs per group (``default`` or the factor), for the summary and the report."""
    groups = frame["kind"].where(frame["kind"] == "default", frame["factor"])
    return dict(Counter(groups[~frame["valid"].astype(bool)].tolist()))


def summarize_runs(task: EmotionBenchRun, frame: pd.DataFrame, model: str) -> dict[str, Any]:
    """The score-shaped summary of a run (same keys as ``rescore``), plus validity and RQ2."""
    names = measures(task.scale)
    opts = task.options
    valid_default = frame[(frame["kind"] == "default") & frame["valid"]]
    default = {m: valid_default[m].tolist() for m in names}
    evoked = _by_factor(frame, "evoked", names) or _by_factor(frame, "negative", names)
    table = change_table(default, evoked, names, alpha=opts.alpha, published=opts.published)
    invalid = invalid_runs(frame)
    out: dict[str, Any] = {
        "model": model,
        "scale": task.scale.name,
        "published": opts.published,
        "alpha": opts.alpha,
        "prompt": opts.prompt,
        "stable": opts.stable,
        "runs": len(frame),
        "valid_runs": int(frame["valid"].sum()),
        "invalid_runs": invalid,
        "default": {m: summary_json(default[m]) for m in names},
        **table_json(table),
    }
    positive = _by_factor(frame, "positive", names)
    if positive:
        rq2 = change_table(
            {}, positive, names, alpha=opts.alpha, published=opts.published, pooled_baseline=evoked
        )
        out["positive"] = table_json(rq2)
    return out


def _load_human(task: EmotionBenchRun) -> Any:
    from .crowd import crowd_path, human_table, load_crowd

    if task.scale.name != "PANAS":
        return None
    try:
        path = crowd_path(task.config.data_dir)
        return human_table(load_crowd(path, task.scale), task.scale, task.options.alpha)
    except DataError:
        return None


def situation_frame(frame: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    """Per situation: valid runs out of all, and mean ± sd of each measure."""
    rows = []
    for (kind, factor, situation), group in frame.groupby(["kind", "factor", "situation"], dropna=False):
        valid = group[group["valid"]]
        row: dict[str, Any] = {
            "kind": kind,
            "factor": factor,
            "situation": situation,
            "valid": f"{len(valid)}/{len(group)}",
        }
        for m in names:
            values = valid[m]
            row[m] = format_mean_sd(values.mean(), values.std(ddof=1))  # NaN for n = 0, sd for n = 1
        rows.append(row)
    return pd.DataFrame(rows)


def analyze_record(task: EmotionBenchRun, record: RunRecord) -> list[Path]:
    """Write ``runs.csv``, ``situations.csv``, the quality tables (``quality.csv``, ``quality_items.csv``,
    ``quality_scales.csv``), ``summary.json``, ``transcripts.jsonl``, ``transcripts.md`` (and its HTML
    page), ``report.md``
    (and ``alignment.csv`` and ``heatmap.png`` when human data and matplotlib are available)."""
    run_dir, units = record.run_dir, record.units
    last_calls = record.calls.last_by_unit()
    record.results(EmotionBenchResult)  # every stored result fits, or one error naming the unit
    done = [u for u in units if u.status == "done" and isinstance(u.result, dict)]
    failed = [u for u in units if u.status == "failed"]
    results = [u.result for u in done]
    written: list[Path] = []
    transcripts = run_dir / "transcripts.jsonl"
    with atomic_open(transcripts) as handle:
        for unit in done:
            entry = {"unit_id": unit.unit_id, **{k: unit.result.get(k) for k in ("kind", "factor", "text")}}
            call = last_calls.get(unit.unit_id)
            if call is not None:
                reply = {"role": "assistant", "content": call.response.get("text")}
                entry["transcript"] = [*call.request.get("messages", []), reply]
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    written.append(transcripts)
    written += write_transcripts(
        record,
        title=f"EmotionBench transcripts: {task.config.model}",
        intro="Every run's conversation as sent and answered, re-asks included (from run.sqlite); "
        "transcripts.jsonl holds each run's final request and reply as data.",
    )
    if not results:
        return written
    names = measures(task.scale)
    frame = run_frame(task, results)
    details = situation_frame(frame, names)
    quality = emotion_quality(task.scale, results, task.config.seed)
    tables: list[tuple[str, pd.DataFrame]] = [
        ("runs", frame.drop(columns=["text"])),
        ("situations", details),
        *quality.items(),
    ]
    figures: list[Path | None] = []
    if frame[(frame["kind"] == "default") & frame["valid"]].shape[0] < 2:
        # the validity counts still hold (a hostile server's unusable replies: every run invalid)
        summary: dict[str, Any] = {
            "error": "fewer than two valid default runs; no tests possible",
            "runs": len(frame),
            "valid_runs": int(frame["valid"].sum()),
            "invalid_runs": invalid_runs(frame),
        }
    else:
        summary = summarize_runs(task, frame, task.config.model)
    summary["failed_units"] = len(failed)
    summary["prompt"] = prompt_record(task)
    summary["language"] = task.options.language
    factor_names = task.situation_set.names()
    sections: list[tuple[str, str]] = []
    human = _load_human(task) if "factors" in summary else None
    if "factors" in summary:
        sections.append(
            (
                f"Change from default ({task.scale.name}, alpha {task.options.alpha}, "
                f"{'published' if task.options.published else 'corrected'})",
                markdown(paper_table({task.config.model: summary}, factor_names)),
            )
        )
        if "positive" in summary:
            rq2 = {"default": {}, **summary["positive"]}
            sections.append(
                (
                    "Positive situations against their negative originals",
                    markdown(paper_table({"RQ2": rq2}, factor_names)),
                )
            )
    if task.options.experiment == "heldout" and "factors" in summary:
        summary["heldout"], text = heldout_section(task, frame)
        sections.insert(0, ("Held-out humans (thesis Table 5.9)", text))
    per_group = ", ".join(f"{group} {n}" for group, n in (summary.get("invalid_runs") or {}).items())
    validity = (
        f"{summary.get('valid_runs', int(frame['valid'].sum()))} of {len(frame)} runs valid; "
        f"{len(failed)} units failed. Invalid runs per group: {per_group or 'none'}."
    )
    positional_runs = int((frame["positional"] > 0).sum()) if "positional" in frame else 0
    validity += (
        f" {positional_runs} of {len(frame)} runs are invalid because the reply numbered its answers by "
        "position, also after a re-ask with the numbers as shown. "
        if positional_runs
        else " "
    ) + positional_note(
        int(frame["positional_replies"].sum()) if "positional_replies" in frame else 0,
        int(frame["positional"].sum()) if "positional" in frame else 0,
        len(frame) * task.scale.n_items,
    )
    sections.append(("Valid runs", validity))
    sections.append(("Psychometric quality", emotion_quality_section(quality, task.config.seed)))
    sections.append(("Language", language_text(task)))
    wording = summary["prompt"]
    kind = f"Version {wording['version']}"
    shown = f"{wording['system']}\n\n{wording['instructions']}"
    if wording["template"]:
        kind = (
            f"Built-in template {wording['template']} (our own words, standing in for "
            f"{wording['template_stands_in_for']}; it replaces the {wording['version']} prompt)"
        )
    sections.append(
        (
            "Prompt",
            f"{kind}{', stable' if wording['stable'] else ''}. A default run's system message and "
            "instructions (the numbered statements follow; an evoked run puts the situation line first):"
            f"\n\n{fenced(shown)}",
        )
    )
    if task.situation_set.warnings:
        summary["situation_warnings"] = list(task.situation_set.warnings)
        differences = "; ".join(task.situation_set.warnings)
        sections.append(
            ("Situations", f"The situations differ from the papers' 428 in 36 factors: {differences}.")
        )
    if human is not None:
        cells, agreement = alignment(summary, human)
        tables.append(("alignment", cells))
        summary["human_alignment"] = agreement
        sections.append(("Model against humans (crowd.xlsx, paired test)", _agreement_text(agreement)))
        sections.append(
            ("Human table", markdown_cells(human_frame(human, factor_names)).to_markdown(index=False))
        )
        columns = {
            "model P": {f: c["positive"]["change"] for f, c in summary["factors"].items()},
            "humans P": {f: c["positive"].change for f, c in human["factors"].items()},
            "model N": {f: c["negative"]["change"] for f, c in summary["factors"].items()},
            "humans N": {f: c["negative"].change for f, c in human["factors"].items()},
        }
        png = heatmap(columns, run_dir / "heatmap.png", f"{task.config.model}: change from default")
        figures.append(png)
        if png is not None:
            sections.append(("Heatmap", "![shifts](heatmap.png)"))
    sections.append(("Per situation", markdown(details)))
    written.append(
        atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    )
    title = f"EmotionBench: {task.config.model}"
    return write_run_report(run_dir, title, sections, tables=tables, figures=figures, files=written)


def heldout_section(task: EmotionBenchRun, frame: pd.DataFrame) -> tuple[dict[str, Any], str]:
    """The Table 5.9 cells of a held-out evaluation (model and held-out humans) and their section text."""
    from .finetune import heldout_summary, human_heldout, table_5_9, thesis_table

    valid = frame[frame["valid"]]
    scores = {
        kind: [
            {"positive": float(p), "negative": float(n)}
            for p, n in zip(part["positive"], part["negative"], strict=True)
        ]
        for kind, part in ((k, valid[valid["kind"] == k]) for k in ("default", "evoked"))
    }
    test = task.heldout_split[1]
    cells = heldout_summary(scores["evoked"], scores["default"], human_heldout(test, task.scale))
    cells["split"] = {
        "seed": task.options.split_seed,
        "test_size": task.options.test_size,
        "people": len(test),
    }
    text = (
        f"Negative affect (sum of 10 items, 10-50), mean ± SD, on the {len(test)} held-out people "
        f"(split seed {task.options.split_seed}): the model's default runs and its evoked runs in the "
        "situations those people read, next to the people's own answers.\n\n"
        + table_5_9({task.config.model: cells["model"]}, cells["humans"])
        + "\n\nPositive affect, the same way:\n\n"
        + table_5_9({task.config.model: cells["model"]}, cells["humans"], "positive")
        + "\n\nThe thesis's Table 5.9 (its own, unpublished split; GPT-3.5-Turbo and LLaMA-3.1-8B, vanilla "
        "and fine-tuned):\n\n"
        + thesis_table()
        + "\n\nSeveral runs side by side: `llmpsych emotionbench finetune table RUN_DIR ...`."
    )
    return cells, text


def language_text(task: EmotionBenchRun) -> str:
    """The report's line on the run's language, and which texts are in it."""
    from ..runs.languages import OFFICIAL_LANGUAGE, language_key, language_name

    language = task.options.language or OFFICIAL_LANGUAGE
    name = language_name(language)
    shown = f"{name} (`{language}`)" if name != language else f"`{language}`"
    text = f"{shown}: the run's `language` (`emotionbench compare` labels runs by it when they differ)."
    if language_key(language) != language_key(OFFICIAL_LANGUAGE):
        official = [
            what
            for what, own in (
                ("situations", task.options.situations_file),
                ("scale", task.options.scale_file),
            )
            if own is None
        ]
        if official:
            verb = "comes" if official == ["scale"] else "come"
            text += f" The {' and the '.join(official)} {verb} from the official data, in English."
    return text


def prompt_record(task: EmotionBenchRun) -> dict[str, Any]:
    """Which wording the run used: version, built-in template, stable, and a default run's prompt."""
    from .prompts import TEMPLATES, build_prompt

    settings = task.prompt_settings
    system, instructions = build_prompt(task.scale, None, settings)
    builtin = TEMPLATES.get(settings.template or "")
    return {
        "version": settings.version,
        "template": settings.template,
        "template_stands_in_for": builtin.stands_in_for if builtin else None,
        "stable": settings.stable,
        "own_templates": [
            k
            for k in ("situation_template", "system_template", "instructions_template")
            if getattr(settings, k)
        ],
        "system": system,
        "instructions": instructions,
    }


def _agreement_text(summary: dict[str, Any]) -> str:
    if not summary.get("cells"):
        return "No factor in common with the human data."

    def pct(key: str) -> str:
        return f"{100 * summary[key]:.0f} %"

    def corr(key: str) -> str:
        value = summary.get(key)
        return "n/a" if value is None else f"{value:+.2f}"

    return (
        f"{summary['cells']} factor × affect cells. Marks (↑/↓/—) agree in {pct('marks_agree')}, the sign "
        f"of the change in {pct('same_sign')}; mean absolute difference of the changes "
        f"{summary['mean_abs_difference']:.1f} points (of the evoked scores: "
        f"{summary['mean_abs_evoked_difference']:.1f}); correlation of the changes across factors "
        f"r = {corr('r_positive')} (PA), {corr('r_negative')} (NA). Per-cell effect sizes (model Hedges g, "
        "human d_z, model-vs-human evoked g) are in alignment.csv."
    )
