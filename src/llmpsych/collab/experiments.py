"""The paper's experiments as presets, and the comparison tables (Tables 7.2-7.7 layout) across runs.

* relative drop (%) = 100 · (clean − faulty) / clean, where clean is the undefended clean run of the same
  system × task × model (the drop of an average is the drop of the average score against the average
  clean score);
* recovery (%) = 100 · (defended − faulty) / (clean − faulty).

By structure (7.2): per structure, the mean over tasks of the mean over that structure's systems. By task
(7.3): per task, the mean over systems; each column names the metric read from the run summaries (e.g.
``commonmt (chrF, substitute for BLEURT-20)``). Both are computed from whatever runs are given. Table 7.4
lists the settings where a faulty agent raised the score. Runs of different models are never averaged
together: the comparison has one set of tables per model, and the table builders refuse mixed models.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.charts import pyplot
from ..report.files import output_dir, save_figure, write_csv
from ..report.html import html_beside
from ..report.markdown import table, write_report
from .probes import error_records, kept_share, rounds, taxonomy_table, unit_results
from .reference import (
    HEADLINE_DROPS,
    PAPER_BY_STRUCTURE,
    PAPER_BY_TASK,
    PAPER_ROUNDS,
    PAPER_SINGLE_AGENT_APPROX,
)

ALL_SYSTEMS = ("metagpt", "selfcollab", "camel", "spp", "mad", "agentverse")
GENERAL_SYSTEMS = ("metagpt", "camel", "mad", "agentverse")
TASKS = ("humaneval", "ciar", "commonmt", "faireval")
CLEAN: dict[str, Any] = {"fault": "none"}
AT: dict[str, Any] = {"fault": "autotransform"}
AI: dict[str, Any] = {"fault": "autoinject", "p_m": 1.0, "p_e": 0.2, "error_type": "semantic"}
RATES = ((0.2, 0.2), (0.2, 0.4), (0.2, 0.6), (0.4, 0.2), (0.6, 0.2), (0.2, 1.0), (0.4, 1.0), (0.6, 1.0))
PRESETS = ("main", "error-rates", "error-types", "defences", "single-agent", "distraction", "rounds")


def _name(system: str, task: str, options: dict[str, Any]) -> str:
    parts = [system, task, options.get("fault", "none")]
    if options.get("fault") == "autoinject":
        parts.append(f"pe{options['p_e']}-pm{options['p_m']}-{options.get('error_type', 'semantic')}")
    if options.get("distraction"):
        parts.append("distraction")
    if options.get("defence"):
        parts.append("+".join(options["defence"]))
    return "_".join(parts)


def expand_preset(
    name: str, systems: list[str] | None = None, tasks: list[str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The runs of a preset: (run name, task options)."""
    plan: list[tuple[str, dict[str, Any]]] = []

    def add(system: str, task: str, condition: dict[str, Any]) -> None:
        if systems and system not in systems:
            return
        if tasks and task not in tasks:
            return
        options = {"system": system, "dataset": task, **condition}
        plan.append((_name(system, task, options), options))

    if name == "main":
        for task in TASKS:
            for system in ALL_SYSTEMS if task == "humaneval" else GENERAL_SYSTEMS:
                for condition in (CLEAN, AT, AI):
                    add(system, task, condition)
    elif name == "error-rates":
        for system in ALL_SYSTEMS:
            add(system, "humaneval", CLEAN)
            for p_e, p_m in RATES:
                add(system, "humaneval", {**AI, "p_e": p_e, "p_m": p_m})
    elif name == "error-types":
        for system in ALL_SYSTEMS:
            for condition in (CLEAN, AI, {**AI, "error_type": "syntactic"}):
                add(system, "humaneval", condition)
    elif name == "defences":
        for system in ("selfcollab", "camel"):
            for condition in (CLEAN, AT, AI):
                for defence in ([], ["challenger"], ["inspector"], ["challenger", "inspector"]):
                    add(system, "humaneval", {**condition, "defence": defence})
    elif name == "single-agent":  # Fig. 7.4's single-agent bars (compare with the main preset's runs)
        for task in TASKS:
            add("single", task, CLEAN)
    elif name == "distraction":  # Fig. 7.6b: corrupted lines, bare and marked as corrected
        for system in ALL_SYSTEMS:
            for condition in (CLEAN, AI, {**AI, "distraction": True}):
                add(system, "humaneval", condition)
    elif name == "rounds":  # section 7.4.6: Camel's messages, passed vs failed (first 50 problems)
        for condition in (CLEAN, AI):
            add("camel", "humaneval50", condition)
    return plan


def run_preset(
    plan: list[tuple[str, dict[str, Any]]],
    out: Path,
    model: str,
    base_url: str | None = None,
    data_dir: Path | None = None,
    items: int | None = None,
    max_tokens: int | None = None,
    show_progress: bool = True,
) -> list[Path]:
    """Run every run of a plan through the one sweep runner (:mod:`llmpsych.runs.sweep`: a folder holding
    the same run is resumed, a finished one sends nothing, a different one is refused), then write the
    comparison. The library form of ``llmpsych mas preset`` (:mod:`llmpsych.collab.presets`), for a plan
    of one's own."""
    from ..runs import parse_run_config
    from ..runs.sweep import PlannedRun, run_sweep

    extra = {k: v for k, v in {"items": items, "max_tokens": max_tokens}.items() if v is not None}
    planned = []
    for run_name, options in plan:
        config: dict[str, Any] = {"task": "mas", "model": model, "options": {**options, **extra}}
        if base_url:
            config["base_url"] = base_url
        if data_dir:
            config["data_dir"] = str(data_dir)
        planned.append(PlannedRun(run_name, parse_run_config(config, run_name)))
    run_sweep(planned, out, progress=show_progress)
    return compare_runs([out / run.directory for run in planned], out)


def _metric_name(label: str | None, option: str | None) -> str:
    """A short metric name from a summary's metric label, e.g. ``chrF, substitute for BLEURT-20``."""
    if not label:
        return {"chrf": "chrF", "bleurt": "BLEURT"}.get(option or "", option or "metric unknown")
    name = re.split(r"[ (:,]", label.strip(), maxsplit=1)[0]
    substitute = re.search(r"substitute for ([\w.-]+)", label)
    return f"{name}, substitute for {substitute.group(1)}" if substitute else name


#: Options that are columns of the comparison's tables: named there, so never added to the model's label.
_COLUMN_OPTIONS = (
    "system",
    "dataset",
    "fault",
    "p_m",
    "p_e",
    "error_type",
    "defence",
    "distraction",
    "metric",
)


def settings_labels(
    frame: pd.DataFrame, run_dirs: list[Path], pool: bool = False
) -> tuple[list[str], list[str]]:
    """Each row's model, with every other setting its runs of one system and task differ in (``gpt-4o ·
    temperature 0.7``: :func:`~llmpsych.runs.settings.labels_by_settings`), so that no table pools two
    settings (a setting that goes with the system, e.g. Camel's ``max_messages`` and MAD's
    ``max_rounds``, is part of the system column); with ``pool`` the models as they are, and the lines
    that say what each pools."""
    from ..runs.settings import labels_by_settings, stored_config

    configs = [stored_config(path) for path in _paths(frame, run_dirs)]
    within = list(zip(frame["system"], frame["task"], strict=True))  # a system's own limits go with it
    return labels_by_settings(list(frame["model"]), configs, pool=pool, ignore=_COLUMN_OPTIONS, within=within)


def load_summaries(run_dirs: list[Path], pool_settings: bool = False) -> pd.DataFrame:
    """One row per finished run, with its model (and the settings the runs differ in, unless
    ``pool_settings``: :func:`settings_labels`) and (short) metric name."""
    rows = []
    for run_dir in run_dirs:
        path = Path(run_dir) / "summary.json"
        if not path.exists():
            continue
        s = json.loads(path.read_text())
        o = s["options"]
        rows.append(
            {
                "run": Path(run_dir).name,
                "model": s.get("model") or "unknown",
                "system": s["system"],
                "structure": s["structure"],
                "task": "humaneval" if s["dataset"] == "humaneval50" else s["dataset"],
                "metric": _metric_name(s.get("metric"), o.get("metric")),
                "metric_label": s.get("metric") or "",
                "fault": o["fault"],
                "p_m": o["p_m"] if o["fault"] == "autoinject" else None,
                "p_e": o["p_e"] if o["fault"] == "autoinject" else None,
                "error_type": o["error_type"] if o["fault"] == "autoinject" else None,
                "defence": "+".join(o.get("defence") or []) or "none",
                "distraction": bool(o.get("distraction")),
                "n": s["n_items"],
                "score": s["score"],
            }
        )
    frame = pd.DataFrame(rows)
    if not frame.empty and not pool_settings:
        frame["model"] = settings_labels(frame, run_dirs)[0]
    return frame


def relative_drop(clean: float, faulty: float) -> float:
    """100 · (clean − faulty) / clean."""
    return 100 * (clean - faulty) / clean if clean else math.nan


def recovery(clean: float, faulty: float, defended: float) -> float:
    """100 · (defended − faulty) / (clean − faulty)."""
    return 100 * (defended - faulty) / (clean - faulty) if clean != faulty else math.nan


def models(frame: pd.DataFrame) -> list[str]:
    """The models of the runs, in order of first appearance."""
    return list(dict.fromkeys(frame["model"])) if "model" in frame else []


def _one_model(frame: pd.DataFrame) -> None:
    if len(models(frame)) > 1:
        raise ValueError(
            f"runs of several models ({', '.join(models(frame))}): "
            "select one model's rows (frame[frame.model == m]) before building a table"
        )


def _with_clean(frame: pd.DataFrame) -> pd.DataFrame:
    """Each row with ``clean``: the mean score of the undefended clean runs of its system × task × model."""
    keys = [k for k in ("model", "system", "task", "metric") if k in frame]
    clean = frame[(frame.fault == "none") & (frame.defence == "none")]
    clean = clean.groupby(keys)["score"].mean().rename("clean").reset_index()
    return frame.drop(columns="clean", errors="ignore").merge(clean, on=keys, how="left")


def _task_label(frame: pd.DataFrame) -> pd.Series:
    """``task (metric)``, as in the thesis's Table 7.3 header (e.g. ``commonmt (chrF, substitute ...)``)."""
    if "metric" not in frame:
        return frame.task
    return frame.task + " (" + frame.metric + ")"


def standard(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs the paper's main tables hold: multi-agent systems, without the distraction probe."""
    keep = pd.Series(True, index=frame.index)
    if "structure" in frame:
        keep &= frame.structure != "single"
    if "distraction" in frame:
        keep &= ~frame.distraction.astype(bool)
    return frame[keep]


def _conditions(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the main conditions (clean, AutoTransform, default AutoInject), with any defence."""
    frame = standard(frame)
    default_ai = (frame.fault == "autoinject") & (frame.p_m == 1.0) & (frame.p_e == 0.2)
    default_ai &= frame.error_type == "semantic"
    names = {"none": "clean", "autotransform": "AutoTransform", "autoinject": "AutoInject"}
    picked = frame[(frame.fault != "autoinject") | default_ai]
    return picked.assign(condition=picked.fault.map(names))


def _main_conditions(frame: pd.DataFrame) -> pd.DataFrame:
    picked = _conditions(frame)
    return picked[picked.defence == "none"]


def by_structure(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.2 layout (one model): condition × structure, mean over tasks of the mean over systems."""
    _one_model(frame)
    main = _main_conditions(frame)
    if main.empty:
        return pd.DataFrame()
    main = main.assign(task=_task_label(main))
    per_task = main.groupby(["condition", "structure", "task"])["score"].mean()
    out = per_task.groupby(["condition", "structure"]).mean().unstack("structure")
    return _ordered(out, ["linear", "flat", "hierarchical"])


def by_task(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.3 layout (one model): condition × task, mean over systems; columns name the metric."""
    _one_model(frame)
    main = _main_conditions(frame)
    if main.empty:
        return pd.DataFrame()
    main = main.assign(label=_task_label(main))
    out = main.groupby(["condition", "label"])["score"].mean().unstack("label")
    labels = main.drop_duplicates("label")
    ranks = {label: (_task_rank(t), label) for label, t in zip(labels.label, labels.task, strict=True)}
    return _ordered(out, sorted(ranks, key=ranks.__getitem__))


def _ordered(out: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = out[[c for c in columns if c in out.columns]]
    rows = [r for r in ("clean", "AutoTransform", "AutoInject") if r in out.index]
    return out.loc[rows]


def drops(levels: pd.DataFrame) -> pd.DataFrame:
    """Relative drop (%) of each faulty row against the clean row."""
    if "clean" not in levels.index:
        return pd.DataFrame()
    rows = {
        name: [relative_drop(levels[c]["clean"], levels[c][name]) for c in levels.columns]
        for name in levels.index
        if name != "clean"
    }
    return pd.DataFrame(rows, index=levels.columns).T


def improvements(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.4 layout: per task and fault method, the systems (and models) a faulty agent improved.

    A setting counts when the undefended AutoTransform or default AutoInject (P_m=1.0, P_e=0.2, semantic)
    run of a system × task × model scores above the clean run of the same system × task × model. A cell
    lists ``system (model +gain, ...)``, ``not observed`` when every compared setting dropped or tied, and
    ``not run`` when there is no faulty run with a clean counterpart. Empty when nothing can be compared.
    """
    main = _with_clean(_main_conditions(frame))
    faulty = main[(main.fault != "none") & main.clean.notna()]
    if faulty.empty:
        return pd.DataFrame()
    per = faulty.groupby(["task", "condition", "system", "model"], sort=False)[["score", "clean"]].mean()
    per = per.reset_index()
    rows = {}
    for task in sorted(per.task.unique(), key=_task_rank):
        cells = {}
        for condition in ("AutoTransform", "AutoInject"):
            rows_ = per[(per.task == task) & (per.condition == condition)]
            better = rows_[rows_.score > rows_.clean]
            if rows_.empty:
                cells[condition] = "not run"
            elif better.empty:
                cells[condition] = "not observed"
            else:
                cells[condition] = "; ".join(
                    f"{system} ({_gains(g)})"
                    for system, g in sorted(better.groupby("system"), key=lambda x: _system_rank(x[0]))
                )
        rows[task] = cells
    out = pd.DataFrame(rows).T
    out.index.name = "task"
    return out


def _gains(rows: pd.DataFrame) -> str:
    return ", ".join(f"{m} +{s - c:.2f}" for m, s, c in zip(rows.model, rows.score, rows.clean, strict=True))


def _task_rank(task: str) -> tuple[int, str]:
    return (TASKS.index(task) if task in TASKS else len(TASKS), task)


def _system_rank(system: str) -> tuple[int, str]:
    return (ALL_SYSTEMS.index(system) if system in ALL_SYSTEMS else len(ALL_SYSTEMS), system)


def improved_any(table: pd.DataFrame) -> bool:
    """Whether an :func:`improvements` table lists at least one setting."""
    return bool((~table.isin(["not run", "not observed"])).to_numpy().any()) if not table.empty else False


def _sweep(rows: pd.DataFrame, order: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores and relative drops (setting × system, plus average) of rows that carry a ``setting``.

    The drop of a faulty cell is against the clean run of the same system × task × model. The average
    drop is the drop of the average score against the average clean score of the same systems (as the
    thesis's averages: 100·(64.73 − 39.15)/64.73 = 39.5%).
    """
    if rows.empty:
        return pd.DataFrame(), pd.DataFrame()
    scores = rows.pivot_table(index="setting", columns="system", values="score")
    systems = sorted(scores.columns, key=_system_rank)
    scores = scores[systems]
    scores["average"] = scores.mean(axis=1)
    settings = [s for s in order if s in scores.index] + sorted(set(scores.index) - set(order))
    scores = scores.loc[settings]
    faulty = _with_clean(rows)
    faulty = faulty[(faulty.setting != "vanilla") & faulty.clean.notna()]
    if faulty.empty:
        return scores, pd.DataFrame()
    per = faulty.groupby(["setting", "system"])[["score", "clean"]].mean().reset_index()
    per = per.assign(drop=[relative_drop(c, s) for c, s in zip(per.clean, per.score, strict=True)])
    drop = per.pivot_table(index="setting", columns="system", values="drop")
    systems = sorted(drop.columns, key=_system_rank)
    drop = drop[systems]
    means = per.groupby("setting")[["clean", "score"]].mean()
    drop["average"] = [relative_drop(means["clean"][s], means["score"][s]) for s in drop.index]
    return scores, drop.loc[[s for s in settings if s in drop.index]]


def _rate_setting(p_e: float, p_m: float) -> str:
    return f"P_e={p_e}, P_m={p_m}"


def _rate_rows(frame: pd.DataFrame) -> pd.DataFrame:
    _one_model(frame)
    frame = standard(frame)
    code = frame[(frame.task == "humaneval") & (frame.defence == "none")]
    clean = code[code.fault == "none"].assign(setting="vanilla")
    ai = code[(code.fault == "autoinject") & (code.error_type == "semantic")]
    ai = ai.assign(setting=[_rate_setting(e, m) for e, m in zip(ai.p_e, ai.p_m, strict=True)])
    return pd.concat([clean, ai])


RATE_ORDER = ["vanilla"] + [_rate_setting(e, m) for e, m in RATES]


def error_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.5 layout (one model): (P_e, P_m) settings × systems, code, semantic errors."""
    return _sweep(_rate_rows(frame), RATE_ORDER)[0]


def error_rate_drops(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.5's relative drops (%): each cell against the clean run of its system × task × model."""
    return _sweep(_rate_rows(frame), RATE_ORDER)[1]


def _type_rows(frame: pd.DataFrame) -> pd.DataFrame:
    _one_model(frame)
    frame = standard(frame)
    code = frame[(frame.task == "humaneval") & (frame.defence == "none")]
    default = (code.p_e == 0.2) & (code.p_m == 1.0)
    picked = code[(code.fault == "none") | ((code.fault == "autoinject") & default)]
    return picked.assign(setting=picked.error_type.fillna("vanilla"))


TYPE_ORDER = ["vanilla", "semantic", "syntactic"]


def error_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.6 layout (one model): vanilla / semantic / syntactic × systems (code, P_e=0.2, P_m=1.0)."""
    return _sweep(_type_rows(frame), TYPE_ORDER)[0]


def error_type_drops(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.6's relative drops (%): each cell against the clean run of its system × task × model."""
    return _sweep(_type_rows(frame), TYPE_ORDER)[1]


def defences(frame: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Table 7.7 layout per system (one model): condition × defence scores, and the recovery (%)."""
    _one_model(frame)
    out: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}
    main = _conditions(frame)
    for system, rows in main[main.task == "humaneval"].groupby("system"):
        if rows.defence.nunique() < 2:
            continue
        scores = rows.pivot_table(index="condition", columns="defence", values="score")
        scores = _ordered(scores, ["none", "challenger", "inspector", "challenger+inspector"])
        rec = {}
        if "clean" in scores.index and "none" in scores.columns:
            for cond in scores.index.drop("clean"):
                base_clean, faulty = scores["none"]["clean"], scores["none"][cond]
                rec[cond] = {
                    d: recovery(base_clean, faulty, scores[d][cond]) for d in scores.columns if d != "none"
                }
        out[str(system)] = (scores, pd.DataFrame(rec).T)
    return out


def single_vs_systems(frame: pd.DataFrame) -> pd.DataFrame:
    """Fig. 7.4 layout (one model): per task, the single agent's clean score next to the systems' means
    (clean, AutoTransform, default AutoInject). Empty without a single-agent run."""
    _one_model(frame)
    single = frame[(frame.structure == "single") & (frame.fault == "none")]
    if single.empty:
        return pd.DataFrame()
    single = single.assign(label=_task_label(single))
    out = single.groupby("label")["score"].mean().rename("single agent").to_frame()
    systems = by_task(frame)
    for condition in systems.index:
        out[f"systems, {condition} (mean)"] = systems.loc[condition]
    out["single − systems clean"] = out["single agent"] - out.get("systems, clean (mean)", math.nan)
    tasks = dict(zip(single.label, single.task, strict=True))
    out = out.loc[sorted(out.index, key=lambda label: _task_rank(str(tasks.get(label, label))))]
    out.index.name = "task"
    return out


def condition_name(row: Any) -> str:
    """A short condition name for a summary row, e.g. ``autoinject(pe=0.2,pm=1.0,semantic)+distraction``."""
    name = str(row.fault)
    if row.fault == "autoinject":
        name += f"(pe={row.p_e},pm={row.p_m},{row.error_type})"
    if getattr(row, "distraction", False):
        name += "+distraction"
    if row.defence != "none":
        name += f"+{row.defence}"
    return name


def distraction(frame: pd.DataFrame, results: dict[Any, list[dict[str, Any]]]) -> pd.DataFrame:
    """Fig. 7.6b probe (one model): per system, the score and the share of items whose result kept an
    injected line, with the corrupted lines bare (AutoInject) and marked as corrected (+ comment).

    A distraction run is set against the clean run (undefended) and the AutoInject run of the same system
    with the same P_e, P_m, error type and defences. Empty without a distraction run.
    """
    _one_model(frame)
    code = frame[frame.task == "humaneval"]
    rows = []
    for probe in code[code.distraction.astype(bool)].itertuples():
        same = code[code.system == probe.system]
        plain = same[
            (same.fault == "autoinject")
            & ~same.distraction.astype(bool)
            & (same.p_e == probe.p_e)
            & (same.p_m == probe.p_m)
            & (same.error_type == probe.error_type)
            & (same.defence == probe.defence)
        ]
        clean = same[(same.fault == "none") & (same.defence == "none")]
        kept_plain, n_plain = kept_share([r for i in plain.index for r in results.get(i, [])])
        kept_probe, n_probe = kept_share(results.get(probe.Index, []))
        rows.append(
            {
                "system": probe.system,
                "setting": f"P_e={probe.p_e}, P_m={probe.p_m}, {probe.error_type}",
                "defence": probe.defence,
                "clean": clean.score.mean() if len(clean) else None,
                "AutoInject": plain.score.mean() if len(plain) else None,
                "AutoInject + comment": probe.score,
                "result kept an injected line (%)": kept_plain,
                "... with the comment (%)": kept_probe,
                "items with an injected line": f"{n_plain} / {n_probe}",
            }
        )
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows)
    return out.iloc[sorted(range(len(out)), key=lambda i: _system_rank(out.system[i]))].set_index("system")


def _chart(values: pd.Series, path: Path, title: str) -> Path | None:
    """Bars of the relative drop per structure or task; the title wraps to the figure (it was cut off at
    one or two bars), and a lone bar is not stretched across the whole figure."""
    plt = pyplot()
    if plt is None:
        return None
    values = values.dropna()
    if values.empty:
        return None
    width = max(4.5, 1.4 * len(values) + 2.5)
    fig, ax = plt.subplots(figsize=(width, 3.6))
    ax.bar(
        [str(i).replace(" (", "\n(") for i in values.index],
        values.values,
        color="#c44e52",
        width=0.6 if len(values) > 2 else 0.4,
    )
    ax.set_xlim(-0.5 - 0.3 * (len(values) < 3), len(values) - 0.5 + 0.3 * (len(values) < 3))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("relative drop (%)")
    ax.set_title(textwrap.fill(title, width=int(width * 9)), fontsize=10)
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def _fmt(frame: pd.DataFrame) -> str:
    return table(frame.reset_index()) if not frame.empty else "_(no runs for this table)_"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "model"


#: Table 7.4 of the thesis (specs/mas-resilience.md §8.5, reconstructed): settings where a faulty agent
#: improved the score (main conditions), per task and fault method.
PAPER_IMPROVED = pd.DataFrame(
    {
        "AutoTransform": ["not observed", "not observed", "not observed", "MAD (4o)"],
        "AutoInject": [
            "MAD (4o)",
            "MAD (3.5)",
            "Camel (4o), MAD (4o), AgentVerse (3.5, 4o)",
            "Camel (3.5, 4o), MAD (3.5, 4o)",
        ],
    },
    index=pd.Index(list(TASKS), name="task"),
)


def _metrics_section(frame: pd.DataFrame) -> str:
    rows = frame.drop_duplicates(["task", "metric", "metric_label"])[["task", "metric", "metric_label"]]
    return table(rows.rename(columns={"metric_label": "metric (run summary)"}))


def _model_sections(
    frame: pd.DataFrame, model: str, out: Path, results: dict[Any, list[dict[str, Any]]]
) -> tuple[list[tuple[str, str]], list[Path]]:
    """The Table 7.2-7.7 and Fig. 7.4 / 7.6b layouts and the drop charts of one model's runs."""
    structure, task = by_structure(frame), by_task(frame)
    s_drop, t_drop = drops(structure), drops(task)
    sections = [
        (f"{model}: performance by structure (Table 7.2 layout)", _fmt(structure)),
        (f"{model}: relative drop by structure (%)", _fmt(s_drop)),
        (f"{model}: performance by task (Table 7.3 layout)", _fmt(task)),
        (f"{model}: relative drop by task (%)", _fmt(t_drop)),
        (f"{model}: error rates, code (Table 7.5 layout)", _fmt(error_rates(frame))),
        (f"{model}: error rates, relative drop vs the clean run (%)", _fmt(error_rate_drops(frame))),
        (f"{model}: error types, code (Table 7.6 layout)", _fmt(error_types(frame))),
        (f"{model}: error types, relative drop vs the clean run (%)", _fmt(error_type_drops(frame))),
    ]
    for system, (scores, rec) in defences(frame).items():
        sections.append((f"{model}: defences, {system} (Table 7.7 layout)", _fmt(scores)))
        sections.append((f"{model}: recovery of lost performance, {system} (%)", _fmt(rec)))
    single = single_vs_systems(frame)
    if not single.empty:
        sections.append((f"{model}: single agent vs the systems, by task (Fig. 7.4 layout)", _fmt(single)))
    probe = distraction(frame, results)
    if not probe.empty:
        sections.append((f"{model}: distraction-comment probe, code (Fig. 7.6b)", _fmt(probe)))
    charts = []
    for name, drop in (("structure", s_drop), ("task", t_drop)):
        for condition in drop.index:
            chart = _chart(
                drop.loc[condition],
                out / f"drop-by-{name}-{condition}-{_slug(model)}.png",
                f"{model}, {condition}: relative drop by {name}",
            )
            if chart:
                charts.append(chart)
                sections.append((f"{model}: chart, {condition} drop by {name}", f"![drop]({chart.name})"))
    return sections, charts


def _paths(frame: pd.DataFrame, run_dirs: list[Path]) -> list[Path]:
    """The folder of each row of :func:`load_summaries` (rows follow the folders that hold a summary)."""
    return [Path(d) for d in run_dirs if (Path(d) / "summary.json").exists()][: len(frame)]


def compare_runs(run_dirs: list[Path], out: Path, pool_settings: bool = False) -> list[Path]:
    """Write comparison.md (+ runs.csv and charts) from finished runs, one set of tables per model and
    setting (``pool_settings``: per model, the pooled settings named under the runs table)."""
    output_dir(out)
    frame = load_summaries(run_dirs, pool_settings)
    outputs = [write_csv(frame, out / "runs.csv")]
    skipped = [Path(d) for d in run_dirs if not (Path(d) / "summary.json").exists()]
    left_out = (
        f"\n\nLeft out, {len(skipped)} of {len(run_dirs)} folders given (no summary.json: an unfinished "
        "run, or not a MAS-Resilience run): " + ", ".join(f"`{d}`" for d in skipped)
        if skipped
        else ""
    )
    if frame.empty:
        outputs.append(
            write_report(out / "comparison.md", "MAS-Resilience comparison", [("Runs", "none" + left_out)])
        )
        return outputs
    improved = improvements(frame)
    if improved.empty:
        improved_body = "_(no faulty run with a clean run of the same system, task and model)_"
    elif improved_any(improved):
        improved_body = _fmt(improved)
    else:
        improved_body = (
            "None: no faulty setting scored above the clean run of the same system, task and model.\n\n"
            + _fmt(improved)
        )
    pooled = settings_labels(frame, run_dirs, pool=True)[1] if pool_settings else []
    runs_text = _fmt(frame.drop(columns="metric_label").set_index("run")) + left_out
    if pooled:
        runs_text += "\n\nModels pooling runs made with different settings:\n\n" + "\n".join(
            f"- {line}" for line in pooled
        )
    sections = [
        ("Runs", runs_text),
        ("Metrics", _metrics_section(frame)),
        ("Settings where the faulty agent improved the score (Table 7.4 layout)", improved_body),
        ("Paper (Table 7.4, thesis; GPT-3.5 and GPT-4o)", _fmt(PAPER_IMPROVED)),
    ]
    # keyed by the frame's row (two folders may share a run name)
    results = {i: unit_results(path) for i, path in zip(frame.index, _paths(frame, run_dirs), strict=True)}
    for model in models(frame):
        model_sections, charts = _model_sections(frame[frame.model == model], model, out, results)
        sections += model_sections
        outputs += charts
    teams = frame[frame.structure != "single"]  # a single agent sends no messages
    turns = rounds(teams.assign(condition=[condition_name(r) for r in teams.itertuples()]), results)
    sections.append(("Rounds: messages per item, passed vs failed (section 7.4.6)", _fmt(turns)))
    records = error_records(standard(frame), results)
    if not records.empty:
        outputs.append(write_csv(records, out / "injected-errors.csv"))
        n_code = int(records["code"].astype(bool).sum())
        sections.append(
            (
                "Injected code errors by category (Table 7.8 layout)",
                f"{n_code} edits of code lines in the semantic AutoInject code runs, "
                "sorted by llmpsych's rule-based classifier (`llmpsych.collab.taxonomy`; the thesis does not "
                f"say how it sorted its 80); {len(records) - n_code} edits of lines that "
                "are not code (fences, review lines such as `Correctness: 1`, prose) are left out of the "
                "categories and the total. Each edit, whether it was code, and its category are in "
                "injected-errors.csv.\n\n" + _fmt(taxonomy_table(records)),
            )
        )
    sections += [
        ("Paper (Table 7.2, thesis; GPT-3.5 and GPT-4o)", _fmt(PAPER_BY_STRUCTURE)),
        ("Paper (Table 7.3, thesis; GPT-3.5 and GPT-4o)", _fmt(PAPER_BY_TASK)),
        (
            "Paper: headline relative drop by structure (%), thesis vs ICML 2025 paper",
            "The two versions of the study state different headline drops; both are shown, labelled. "
            "Ours are in the relative-drop-by-structure tables above.\n\n" + _fmt(HEADLINE_DROPS),
        ),
        (
            "Paper (Fig. 7.4): single agent, APPROXIMATE",
            "The thesis prints no numbers for the single-agent bars. These are approximate (±1.5 points), "
            "read off the figure of the paper version, whose other bars differ from the thesis's "
            "Table 7.3.\n\n" + _fmt(PAPER_SINGLE_AGENT_APPROX),
        ),
        ("Paper: rounds analysis (Camel, HumanEval, GPT-3.5)", _fmt(PAPER_ROUNDS)),
    ]
    outputs.append(write_report(out / "comparison.md", "MAS-Resilience comparison", sections))
    return html_beside(outputs)
