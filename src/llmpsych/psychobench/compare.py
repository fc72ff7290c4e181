"""Several PsychoBench runs side by side, in the layout of the thesis's Table 4.3 (report Table 11).

Rows are (scale, subscale); there is one ``mean ± sd`` column per run and one ``Crowd`` column with every
human norm group of the data file. BSRI adds a "Conclusion" row (each run's classification counts) and
CABIN its higher-order dimensions when the runs were reported with a mapping (as in Table 4.4). Only the
files a run's analysis wrote are read (``summary.csv``, ``norms.csv``, ``bsri.csv``,
``cabin_groups_summary.csv``, ``quality.csv``) plus the run's stored config and report settings, so no
model and no data file is needed. Written as Markdown, HTML, a tidy CSV (and Parquet), and one grouped
bar chart per scale.

The thesis marks, in each row, the run with the highest mean bold and the one with the lowest underlined
("For each subscale, we highlight the model with the highest score in bold font and underline the model
with the lowest score", 000:1186). A larger mean is not a difference, so here a row is marked only when a
test between those two runs says so: Welch's t-test on the two runs' per-repeat scores (``scores.csv``),
with n, Hedges' g and Holm's correction over the rows (:func:`between_runs`, a "Between runs" table);
where the repeats cannot support a test (n < 2, or every repeat of both runs the same score, as in
log-prob mode) the table says so and nothing is marked. The crowd is not ranked. A run's label names its
prompt variant and temperature when they are not the defaults, its persona (a custom one by its first
words and a hash), its scales' language when the runs differ in it (a scale and its translation, run
separately, are two columns), and every other setting of its stored config the runs differ in
(:mod:`llmpsych.runs.settings`); a settings table lists them for every run. A column is one run, so runs
are never pooled here.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import LlmpsychError
from ..instruments.numbers import checked_csv
from ..instruments.quality import comparison_quality, comparison_quality_section
from ..report.charts import Bar, grouped_bar_chart
from ..report.files import output_dir
from ..report.html import write_html
from ..report.markdown import table, write_report
from ..report.marks import extremes, marked
from ..report.tables import write_tables
from ..runs.store import STORE_FILE
from ..stats import format_mean_sd
from ..stats.compare import GroupStats, hedges_g, holm_adjust, t_test_from_stats
from . import bsri as bsri_mod
from .personas import persona_label
from .variants import label as variant_label


def stored_config(run_dir: Path) -> dict[str, Any]:
    """A run's stored config ({} for a folder without a store, e.g. an imported table)."""
    from ..runs.settings import stored_config as read_config

    return read_config(run_dir) or {}


def run_settings(run_dir: Path) -> dict[str, Any]:
    """What a run measured with: model, prompt variant, temperature, persona, cipher (stored config)."""
    config = stored_config(run_dir)
    options = config.get("options") or {}
    params = config.get("params") or {}
    temperature = params.get("temperature")
    return {
        "model": str(config.get("model") or run_dir.name),
        "template": str(options.get("template") or "v1").lower(),
        "cot": bool(options.get("cot")),
        "cot_wording": str(options.get("cot_wording") or "thesis"),
        "system_prompt": str(options.get("system_prompt") or "assistant"),
        "temperature": 0.0 if temperature is None else float(temperature),
        "persona": persona_label(options.get("persona")),
        "cipher": bool(options.get("cipher")),
    }


def run_label(run_dir: Path) -> str:
    """The model of a run, with its persona, ``-JB`` for the cipher, and its prompt variant and temperature
    when not the defaults (``v2+CoT``, ``T=0.8``), from the stored config."""
    settings = run_settings(run_dir)
    label = str(settings["model"])
    persona = settings["persona"]
    if persona != "default":
        label += f" [{persona}]"
    if settings["cipher"]:
        label += "-JB"
    variant = variant_label(
        settings["template"], settings["cot"], settings["system_prompt"], settings["cot_wording"]
    )
    if variant != "v1":
        label += f" {variant}"
    if settings["temperature"] != 0:
        label += f" T={settings['temperature']:g}"
    return label


def run_language(run_dir: Path) -> str | None:
    """The languages of a run's scales, comma-joined (official scales are English; None: not known), from
    its stored config (:func:`~llmpsych.runs.languages.config_language`)."""
    from ..runs.languages import config_language

    return config_language(stored_config(run_dir))


def run_languages(run_dirs: list[Path]) -> list[str] | None:
    """Each run's language when the runs differ in it ("not given" where unknown), else None (also when
    only one language is known: a folder without a store, e.g. an imported table, names none)."""
    languages = [run_language(d) for d in run_dirs]
    if len({lang for lang in languages if lang}) < 2:
        return None
    return [lang or "not given" for lang in languages]


#: Settings :func:`run_label` and the language suffix already name (of :mod:`llmpsych.runs.settings`).
_LABELLED = ("template", "cot", "system_prompt", "temperature", "persona", "cipher", "language")


def _base_labels(run_dirs: list[Path]) -> list[str]:
    """Each run's :func:`run_label`, with its language when the runs differ in it (``gpt-4o · de``)."""
    languages = run_languages(run_dirs)
    return [run_label(d) + (f" · {languages[k]}" if languages else "") for k, d in enumerate(run_dirs)]


def other_settings(run_dirs: list[Path]) -> tuple[list[str], list[dict[str, str]]]:
    """The settings :func:`run_label` does not name (a sampling parameter, a scale file, ...) that runs
    of one label differ in (:func:`~llmpsych.runs.settings.differing`), and each run's settings."""
    from ..runs.settings import config_settings, differing

    configs = [stored_config(d) for d in run_dirs]
    settings = [config_settings(c) if c else {} for c in configs]
    groups: dict[str, list[dict[str, str]]] = {}
    for label, s, c in zip(_base_labels(run_dirs), settings, configs, strict=True):
        if c:
            groups.setdefault(label, []).append(s)
    keys = [k for runs in groups.values() for k in differing(runs, _LABELLED)]
    return list(dict.fromkeys(keys)), settings


def run_labels(run_dirs: list[Path]) -> list[str]:
    """Each run's :func:`run_label`, with its language (``gpt-4o · de``) when the runs' scales differ in
    language, and every other setting the runs of that label differ in (``gpt-4o · top_p 0.5``:
    :func:`~llmpsych.runs.settings.labels_by_settings`); a label met before gets the run folder's name
    added."""
    from ..runs.settings import labels_by_settings

    named, _ = labels_by_settings(
        _base_labels(run_dirs), [stored_config(d) or None for d in run_dirs], ignore=_LABELLED
    )
    labels: list[str] = []
    for label, run_dir in zip(named, run_dirs, strict=True):
        labels.append(f"{label} ({run_dir.name})" if label in labels else label)
    return labels


def settings_frame(run_dirs: list[Path], labels: list[str]) -> pd.DataFrame:
    """One row per run: its label in the tables and the settings that tell the runs apart."""
    from ..runs.settings import setting_value

    rows = []
    languages = run_languages(run_dirs)
    keys, settings = other_settings(run_dirs)
    for k, (run_dir, label) in enumerate(zip(run_dirs, labels, strict=True)):
        s = run_settings(run_dir)
        rows.append(
            {
                "run": label,
                "model": s["model"],
                "template": s["template"],
                "CoT": f"yes ({s['cot_wording']} wording)" if s["cot"] else "no",
                "system prompt": s["system_prompt"],
                "temperature": s["temperature"],
                "persona": s["persona"],
                "cipher": "yes" if s["cipher"] else "no",
                **({"language": languages[k]} if languages else {}),
                **{key: setting_value(key, settings[k]) for key in keys},
            }
        )
    return pd.DataFrame(rows)


def crowd_text(norms: pd.DataFrame, scale: str, subscale: str) -> str:
    """Every norm group of one subscale as ``label m ± sd``, separated by ``;`` (``–`` if none)."""
    if norms.empty:
        return "–"
    rows = norms[(norms["scale"] == scale) & (norms["subscale"] == subscale)]
    if rows.empty:
        return "–"
    if len(rows) == 1:
        return format_mean_sd(float(rows.iloc[0]["mean"]), float(rows.iloc[0]["sd"]))
    return "; ".join(
        f"{r['group']} {format_mean_sd(float(r['mean']), float(r['sd']))}" for _, r in rows.iterrows()
    )


def _bsri_cell(run_dir: Path) -> tuple[str, str] | None:
    """(count string, order key) of a run's BSRI classification, if it has one."""
    path = run_dir / "bsri.csv"
    if not path.is_file():
        return None
    from .analysis import load_settings

    order = load_settings(run_dir).bsri.label_order if (run_dir / STORE_FILE).is_file() else None
    order = order or list(bsri_mod.PAPER_ORDER)
    labels = pd.read_csv(path)["label"]
    return bsri_mod.count_string(labels, order), bsri_mod.order_key(order)


#: The columns compare reads from each run's tables; a missing column, a cell that is not a finite
#: number (blank = no score) or a repeated row is an error naming the file and row (docs/security.md §5).
_SUMMARY = ("scale", "subscale", "runs", "n", "mean", "sd")
_NORMS = ("scale", "subscale", "group", "mean", "sd", "n")


#: compare's significance level for a difference between two runs (the papers' alpha), after Holm.
ALPHA = 0.01
_SCORES = ("scale", "run", "subscale", "score")
BETWEEN_COLUMNS = [
    "scale",
    "subscale",
    "higher",
    "lower",
    "n_higher",
    "n_lower",
    "mean_higher",
    "mean_lower",
    "difference",
    "test",
    "t",
    "df",
    "p",
    "p_holm",
    "significant",
    "hedges_g",
    "note",
]


def _repeat_scores(run_dir: Path) -> pd.DataFrame:
    """A run's per-repeat subscale scores (``scores.csv``; empty when the run has none)."""
    path = run_dir / "scores.csv"
    if not path.is_file():
        return pd.DataFrame(columns=list(_SCORES))
    return checked_csv(path, _SCORES, ("score",))


def between_runs(tidy: pd.DataFrame, labels: list[str], run_dirs: list[Path]) -> pd.DataFrame:
    """One row per (scale, subscale) with a mean in two or more runs: the run with the highest mean against
    the one with the lowest, by Welch's t-test on their per-repeat scores, with each side's n, Hedges' g
    and Holm's correction over the rows (``significant``: ``p_holm`` <= :data:`ALPHA`). ``note`` says why
    there is no test (fewer than 2 scored repeats; every repeat of both runs the same score)."""
    scores = {label: _repeat_scores(d) for label, d in zip(labels, run_dirs, strict=True)}
    rows: list[dict[str, Any]] = []
    part = tidy[(tidy["kind"] == "subscale") & tidy["mean"].notna()]
    for (scale, subscale), group in part.groupby(["scale", "subscale"], sort=False):
        if len(group) < 2:
            continue
        high, low = group.iloc[group["mean"].argmax()], group.iloc[group["mean"].argmin()]
        values = {}
        for side in (high, low):
            frame = scores[side["model"]]
            match = (frame["scale"] == scale) & (frame["subscale"] == subscale)
            values[side["model"]] = frame.loc[match, "score"].dropna().astype(float).tolist()
        a, b = values[high["model"]], values[low["model"]]
        row: dict[str, Any] = dict.fromkeys(BETWEEN_COLUMNS, math.nan)
        row |= {
            "scale": scale,
            "subscale": subscale,
            "higher": high["model"],
            "lower": low["model"],
            "n_higher": len(a),
            "n_lower": len(b),
            "mean_higher": float(high["mean"]),
            "mean_lower": float(low["mean"]),
            "difference": float(high["mean"]) - float(low["mean"]),
            "test": "",
            "significant": False,
            "note": "",
        }
        if high["model"] == low["model"] or row["difference"] == 0:
            row["note"] = "the runs' means are equal"
        elif min(len(a), len(b)) < 2:
            row["note"] = f"no test possible: n = {min(len(a), len(b))} scored repeat(s) in one run, need 2"
        elif len(set(a)) == 1 and len(set(b)) == 1:
            row["note"] = (
                "no test possible: every repeat of each run gave the same score (log-prob mode or "
                "temperature 0: the repeats are copies, not samples)"
            )
        else:
            ga, gb = GroupStats.from_values(a, high["model"]), GroupStats.from_values(b, low["model"])
            welch = t_test_from_stats(ga, gb, equal_var=False)
            row |= {"test": "welch", "t": welch.t, "df": welch.df, "p": welch.p_value}
            row["hedges_g"] = hedges_g(ga, gb).g
        rows.append(row)
    frame = pd.DataFrame(rows, columns=BETWEEN_COLUMNS)
    if not frame.empty:
        frame["p_holm"] = holm_adjust(frame["p"].astype(float).tolist())
        frame["significant"] = frame["p_holm"].fillna(1.0) <= ALPHA
    return frame


def between_view(between: pd.DataFrame) -> pd.DataFrame:
    """The report's "Between runs" table."""
    rows = []
    for r in between.itertuples():
        if r.test:
            result = (
                f"t({r.df:.1f}) = {r.t:.2f}, p = {r.p:.3g}, Holm p = {r.p_holm:.3g}, g = {r.hedges_g:.2f}"
                + (" — **different**" if r.significant else " — not significant")
            )
        else:
            result = str(r.note)
        rows.append(
            {
                "Scale": r.scale,
                "Subscale": r.subscale,
                "higher (n)": f"{r.higher} {r.mean_higher:.2f} ({r.n_higher})",
                "lower (n)": f"{r.lower} {r.mean_lower:.2f} ({r.n_lower})",
                "Welch t-test": result,
            }
        )
    return pd.DataFrame(rows)


BETWEEN_EXPLAINED = (
    "For each row, the run with the highest mean against the one with the lowest: Welch's t-test on the two "
    "runs' per-repeat scores (n = each run's scored repeats), two-sided, Holm's correction over the rows "
    f"tested, alpha = {ALPHA:g}; g is Hedges' g. Repeats of one model are samples of its answers, not of "
    "people. No test is possible when a run has fewer than 2 scored repeats, or when every repeat of both "
    "runs gave the same score (log-prob mode, temperature 0): then the runs may differ, but their repeats "
    "cannot show it."
)


def comparison_frames(run_dirs: list[Path], *, marks: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(display table, tidy long table) of several analysed run directories; ``marks``: in a row whose
    highest and lowest means differ by :func:`between_runs`'s test, the highest bold and the lowest
    underlined (thesis 000:1186)."""
    display, tidy, _ = comparison_tables(run_dirs, marks=marks)
    return display, tidy


def comparison_tables(
    run_dirs: list[Path], *, marks: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(display table, tidy long table, :func:`between_runs` table) of several analysed run directories."""
    if not run_dirs:
        raise LlmpsychError("give at least one run directory")
    unique_labels = run_labels(run_dirs)
    labels: list[str] = []
    summaries: list[pd.DataFrame] = []
    norms_parts: list[pd.DataFrame] = []
    bsri: dict[str, tuple[str, str]] = {}
    for run_dir in run_dirs:
        summary_file = run_dir / "summary.csv"
        if not summary_file.is_file():
            raise LlmpsychError(
                f"{run_dir}: no summary.csv", f"analyse it first: `llmpsych analyze {run_dir}`"
            )
        label = unique_labels[len(labels)]
        labels.append(label)
        summary = checked_csv(summary_file, _SUMMARY, _SUMMARY[2:], unique=("scale", "subscale"))
        summary["kind"] = "subscale"
        groups_file = run_dir / "cabin_groups_summary.csv"
        if groups_file.is_file():
            groups = checked_csv(
                groups_file,
                ("scale", "grouping", "dimension", "n", "mean", "sd"),
                ("n", "mean", "sd"),
                unique=("scale", "grouping", "dimension"),
            )
            groups = groups.assign(
                scale=[f"{s} {g}" for s, g in zip(groups["scale"], groups["grouping"], strict=True)],
                subscale=groups["dimension"],
                runs=groups["n"],
                kind="grouping",
            )
            groups = groups[["scale", "subscale", "runs", "n", "mean", "sd", "kind"]]
            base = [i for i, name in enumerate(summary["scale"]) if str(name).upper() == "CABIN"]
            cut = base[-1] + 1 if base else len(summary)  # right after the 41 interests
            summary = pd.concat([summary.iloc[:cut], groups, summary.iloc[cut:]], ignore_index=True)
        summary["model"] = label
        summary["run_dir"] = str(run_dir)
        summaries.append(summary)
        if (run_dir / "norms.csv").is_file():
            norms_parts.append(checked_csv(run_dir / "norms.csv", _NORMS, ("mean", "sd", "n")))
        cell = _bsri_cell(run_dir)
        if cell is not None:
            bsri[label] = cell
    tidy = pd.concat(summaries, ignore_index=True)[
        ["model", "run_dir", "scale", "subscale", "kind", "runs", "n", "mean", "sd"]
    ]
    norms = (
        pd.concat(norms_parts, ignore_index=True).drop_duplicates(["scale", "subscale", "group"])
        if norms_parts
        else pd.DataFrame(columns=["scale", "subscale", "group", "mean", "sd", "n"])
    )
    between = between_runs(tidy, labels, run_dirs)
    different = {
        (r.scale, r.subscale) for r in between.itertuples() if r.significant
    }  # rows where a test backs the marks
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys(zip(tidy["scale"], tidy["subscale"], strict=True)))
    for scale, subscale in keys:
        row: dict[str, Any] = {"Scale": scale, "Subscale": subscale}
        means: list[float | None] = []
        for label in labels:
            hit = tidy[(tidy["model"] == label) & (tidy["scale"] == scale) & (tidy["subscale"] == subscale)]
            row[label] = (
                "–" if hit.empty else format_mean_sd(float(hit.iloc[0]["mean"]), float(hit.iloc[0]["sd"]))
            )
            means.append(None if hit.empty else round(float(hit.iloc[0]["mean"]), 1))  # as printed
        if marks and (scale, subscale) in different:
            for i, mark in extremes(means).items():
                row[labels[i]] = marked(row[labels[i]], mark)
        row["Crowd"] = crowd_text(norms, scale, subscale)
        rows.append(row)
        is_last_bsri = scale.upper() == "BSRI" and not any(
            k[0] == scale for k in keys[keys.index((scale, subscale)) + 1 :]
        )
        if bsri and is_last_bsri:
            orders = {order for _, order in bsri.values()}
            shared = orders.pop() if len(orders) == 1 else None
            conclusion: dict[str, Any] = {
                "Scale": scale,
                "Subscale": f"Conclusion (runs, {shared})" if shared else "Conclusion (runs)",
            }
            for label in labels:
                cell = bsri.get(label)
                conclusion[label] = "–" if cell is None else (cell[0] if shared else f"{cell[0]} ({cell[1]})")
            conclusion["Crowd"] = "–"
            rows.append(conclusion)
    return pd.DataFrame(rows), tidy, between


def comparison_charts(tidy: pd.DataFrame, norms: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One grouped bar chart per scale: every model and every human norm group, mean ± sd."""
    paths = []
    models = list(dict.fromkeys(tidy["model"]))
    for scale in dict.fromkeys(tidy[tidy["kind"] == "subscale"]["scale"]):
        part = tidy[(tidy["scale"] == scale) & tidy["mean"].notna()]
        subscales = list(dict.fromkeys(part["subscale"]))
        if not subscales:
            continue
        series: dict[str, list[Bar]] = {}
        for model in models:
            bars: list[Bar] = []
            for sub in subscales:
                hit = part[(part["model"] == model) & (part["subscale"] == sub)]
                bars.append(None if hit.empty else (float(hit.iloc[0]["mean"]), float(hit.iloc[0]["sd"])))
            series[model] = bars
        scale_norms = norms[norms["scale"] == scale]
        for group in dict.fromkeys(scale_norms["group"]):
            bars = []
            for sub in subscales:
                hit = scale_norms[(scale_norms["group"] == group) & (scale_norms["subscale"] == sub)]
                bars.append(None if hit.empty else (float(hit.iloc[0]["mean"]), float(hit.iloc[0]["sd"])))
            series[f"human: {group}"] = bars
        path = out_dir / f"comparison-{re.sub(r'[^A-Za-z0-9]+', '-', str(scale))}.png"
        chart = grouped_bar_chart(subscales, series, path, f"{scale}: mean ± sd")
        if chart is not None:
            paths.append(chart)
    return paths


def write_comparison(run_dirs: list[Path], out_dir: Path, *, marks: bool = True) -> list[Path]:
    """Write ``comparison.md``/``.html``, tidy ``comparison.csv`` (``.parquet``) and a chart per scale."""
    display, tidy, between = comparison_tables(run_dirs, marks=marks)
    output_dir(out_dir)
    models = dict(zip(map(Path, tidy["run_dir"]), tidy["model"], strict=True))
    quality = comparison_quality(models)
    quality_tables = [("comparison_quality", quality)] if not quality.empty else []
    outputs, parquet_note = write_tables(
        [("comparison", tidy), ("comparison_between", between), *quality_tables], out_dir
    )
    norms_parts = [
        checked_csv(d / "norms.csv", _NORMS, ("mean", "sd", "n"))
        for d in run_dirs
        if (d / "norms.csv").is_file()
    ]
    norms = (
        pd.concat(norms_parts, ignore_index=True).drop_duplicates(["scale", "subscale", "group"])
        if norms_parts
        else pd.DataFrame(columns=["scale", "subscale", "group", "mean", "sd", "n"])
    )
    charts = comparison_charts(tidy, norms, out_dir)
    reports = []
    for d in run_dirs:
        rel = Path(os.path.relpath(d / "report.md", out_dir)).as_posix()
        reports.append(rel)
    sources = "\n".join(
        f"- {run_label(d)}: `{d}` ([report]({rel}))" for d, rel in zip(run_dirs, reports, strict=True)
    )
    sections = [
        (
            "Scores",
            "Mean ± sd over each model's runs (ddof 1), layout of the thesis's Table 4.3. Crowd: every "
            'human norm group of the data file ("–": none). Tests against the norms (significance, '
            "Hedges' g, Holm) and the transcripts are in each run's report. BSRI conclusion: how many runs "
            "fell in each class, in the order given (U = Undifferentiated, M = Masculine, F = Feminine, "
            "A = Androgynous)."
            + (
                " The thesis marks every row's highest mean bold and its lowest underlined; here a row is "
                'marked (**bold**, <ins>underlined</ins>) only where the test in "Between runs" finds those '
                "two runs different, and a row without marks has no such finding (the crowd is not ranked)."
                if marks
                else ""
            )
            + "\n\n"
            + table(display),
        ),
        (
            "Between runs",
            BETWEEN_EXPLAINED
            + "\n\n"
            + (table(between_view(between)) if not between.empty else "No row has a mean in two runs."),
        ),
        (
            "Settings",
            "Each run's prompt variant (template v1 = the scale's own prompt; CoT; system prompt), "
            "temperature, persona and cipher"
            + (", and every other setting the runs differ in" if other_settings(run_dirs)[0] else "")
            + ", from its stored config.\n\n"
            + table(settings_frame(run_dirs, run_labels(run_dirs)), floatfmt="g"),
        ),
    ]
    if not quality.empty:
        sections.append(("Psychometric quality", comparison_quality_section(quality)))
    if charts:
        sections.append(
            (
                "Charts",
                "Every model and every human norm group, mean ± sd (error bars).\n\n"
                + "\n\n".join(f"![{c.stem}]({c.name})" for c in charts),
            )
        )
    sections.append(("Runs", sources + (f"\n\n{parquet_note}" if parquet_note else "")))
    report = write_report(out_dir / "comparison.md", "PsychoBench comparison", sections)
    html = write_html(report, md_links=reports, underline=marks)
    return [report, html, *outputs, *charts]
