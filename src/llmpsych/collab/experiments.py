"""The paper's experiments as presets, and the comparison tables (Tables 7.2-7.7 layout) across runs.

* relative drop (%) = 100 · (clean − faulty) / clean;
* recovery (%) = 100 · (defended − faulty) / (clean − faulty).

By structure (7.2): per structure, the mean over tasks of the mean over that structure's systems. By task
(7.3): per task, the mean over systems. Both are computed from whatever runs are given.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.markdown import table, write_report
from .reference import PAPER_BY_STRUCTURE, PAPER_BY_TASK

ALL_SYSTEMS = ("metagpt", "selfcollab", "camel", "spp", "mad", "agentverse")
GENERAL_SYSTEMS = ("metagpt", "camel", "mad", "agentverse")
TASKS = ("humaneval", "ciar", "commonmt", "faireval")
CLEAN: dict[str, Any] = {"fault": "none"}
AT: dict[str, Any] = {"fault": "autotransform"}
AI: dict[str, Any] = {"fault": "autoinject", "p_m": 1.0, "p_e": 0.2, "error_type": "semantic"}
RATES = ((0.2, 0.2), (0.2, 0.4), (0.2, 0.6), (0.4, 0.2), (0.6, 0.2), (0.2, 1.0), (0.4, 1.0), (0.6, 1.0))
PRESETS = ("main", "error-rates", "error-types", "defences")


def _name(system: str, task: str, options: dict[str, Any]) -> str:
    parts = [system, task, options.get("fault", "none")]
    if options.get("fault") == "autoinject":
        parts.append(f"pe{options['p_e']}-pm{options['p_m']}-{options.get('error_type', 'semantic')}")
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
    """Run (or resume, or skip when finished) every run of a plan, then write the comparison."""
    from ..runs import parse_run_config, resume_run, start_run
    from ..runs.store import STORE_FILE

    dirs = []
    for run_name, options in plan:
        run_dir = out / run_name
        dirs.append(run_dir)
        if (run_dir / "summary.json").exists():
            continue
        if (run_dir / STORE_FILE).exists():
            resume_run(run_dir, show_progress)
            continue
        extra = {k: v for k, v in {"items": items, "max_tokens": max_tokens}.items() if v is not None}
        config = {"task": "mas", "model": model, "options": {**options, **extra}}
        if base_url:
            config["base_url"] = base_url
        if data_dir:
            config["data_dir"] = str(data_dir)
        start_run(parse_run_config(config, run_name), run_dir, show_progress)
    return compare_runs(dirs, out)


def load_summaries(run_dirs: list[Path]) -> pd.DataFrame:
    """One row per finished run."""
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
                "system": s["system"],
                "structure": s["structure"],
                "task": "humaneval" if s["dataset"] == "humaneval50" else s["dataset"],
                "fault": o["fault"],
                "p_m": o["p_m"] if o["fault"] == "autoinject" else None,
                "p_e": o["p_e"] if o["fault"] == "autoinject" else None,
                "error_type": o["error_type"] if o["fault"] == "autoinject" else None,
                "defence": "+".join(o.get("defence") or []) or "none",
                "n": s["n_items"],
                "score": s["score"],
            }
        )
    return pd.DataFrame(rows)


def relative_drop(clean: float, faulty: float) -> float:
    """100 · (clean − faulty) / clean."""
    return 100 * (clean - faulty) / clean if clean else math.nan


def recovery(clean: float, faulty: float, defended: float) -> float:
    """100 · (defended − faulty) / (clean − faulty)."""
    return 100 * (defended - faulty) / (clean - faulty) if clean != faulty else math.nan


def _conditions(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the main conditions (clean, AutoTransform, default AutoInject), with any defence."""
    default_ai = (frame.fault == "autoinject") & (frame.p_m == 1.0) & (frame.p_e == 0.2)
    default_ai &= frame.error_type == "semantic"
    names = {"none": "clean", "autotransform": "AutoTransform", "autoinject": "AutoInject"}
    picked = frame[(frame.fault != "autoinject") | default_ai]
    return picked.assign(condition=picked.fault.map(names))


def _main_conditions(frame: pd.DataFrame) -> pd.DataFrame:
    picked = _conditions(frame)
    return picked[picked.defence == "none"]


def by_structure(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.2 layout: condition × structure, mean over tasks of the mean over the structure's systems."""
    main = _main_conditions(frame)
    if main.empty:
        return pd.DataFrame()
    per_task = main.groupby(["condition", "structure", "task"])["score"].mean()
    out = per_task.groupby(["condition", "structure"]).mean().unstack("structure")
    return _ordered(out, ["linear", "flat", "hierarchical"])


def by_task(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.3 layout: condition × task, mean over systems."""
    main = _main_conditions(frame)
    if main.empty:
        return pd.DataFrame()
    out = main.groupby(["condition", "task"])["score"].mean().unstack("task")
    return _ordered(out, list(TASKS))


def _ordered(out: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = out[[c for c in columns if c in out.columns]]
    rows = [r for r in ("clean", "AutoTransform", "AutoInject") if r in out.index]
    return out.loc[rows]


def drops(levels: pd.DataFrame) -> pd.DataFrame:
    """Relative drop (%) of each faulty row against the clean row."""
    if "clean" not in levels.index:
        return pd.DataFrame()
    rows = {
        name: [relative_drop(levels.loc["clean", c], levels.loc[name, c]) for c in levels.columns]
        for name in levels.index
        if name != "clean"
    }
    return pd.DataFrame(rows, index=levels.columns).T


def error_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.5 layout: (P_e, P_m) settings × systems, code, semantic errors."""
    code = frame[(frame.task == "humaneval") & (frame.defence == "none")]
    clean = code[code.fault == "none"].assign(setting="vanilla")
    ai = code[(code.fault == "autoinject") & (code.error_type == "semantic")]
    ai = ai.assign(setting=[f"P_e={e}, P_m={m}" for e, m in zip(ai.p_e, ai.p_m, strict=True)])
    both = pd.concat([clean, ai])
    if both.empty:
        return pd.DataFrame()
    out = both.pivot_table(index="setting", columns="system", values="score")
    out["average"] = out.mean(axis=1)
    return out


def error_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7.6 layout: vanilla / semantic / syntactic × systems (P_e=0.2, P_m=1.0)."""
    code = frame[(frame.task == "humaneval") & (frame.defence == "none")]
    default = (code.p_e == 0.2) & (code.p_m == 1.0)
    picked = code[(code.fault == "none") | ((code.fault == "autoinject") & default)]
    if picked.empty:
        return pd.DataFrame()
    picked = picked.assign(setting=picked.error_type.fillna("vanilla"))
    out = picked.pivot_table(index="setting", columns="system", values="score")
    out["average"] = out.mean(axis=1)
    return out


def defences(frame: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Table 7.7 layout per system: condition × defence scores, and the recovery (%) of lost performance."""
    out = {}
    main = _conditions(frame)
    for system, rows in main[main.task == "humaneval"].groupby("system"):
        if rows.defence.nunique() < 2:
            continue
        scores = rows.pivot_table(index="condition", columns="defence", values="score")
        scores = _ordered(scores, ["none", "challenger", "inspector", "challenger+inspector"])
        rec = {}
        if "clean" in scores.index and "none" in scores.columns:
            for cond in scores.index.drop("clean"):
                base_clean, faulty = scores.loc["clean", "none"], scores.loc[cond, "none"]
                rec[cond] = {
                    d: recovery(base_clean, faulty, scores.loc[cond, d])
                    for d in scores.columns
                    if d != "none"
                }
        out[system] = (scores, pd.DataFrame(rec).T)
    return out


def _chart(values: pd.Series, path: Path, title: str) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    values = values.dropna()
    if values.empty:
        return None
    fig, ax = plt.subplots(figsize=(1.2 * len(values) + 2.5, 3.2))
    ax.bar([str(i) for i in values.index], values.values, color="#c44e52")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("relative drop (%)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _fmt(frame: pd.DataFrame) -> str:
    return table(frame.reset_index()) if not frame.empty else "_(no runs for this table)_"


def compare_runs(run_dirs: list[Path], out: Path) -> list[Path]:
    """Write comparison.md (+ runs.csv and charts) from finished runs."""
    out.mkdir(parents=True, exist_ok=True)
    frame = load_summaries(run_dirs)
    outputs = [out / "runs.csv"]
    frame.to_csv(outputs[0], index=False)
    if frame.empty:
        outputs.append(write_report(out / "comparison.md", "MAS-Resilience comparison", [("Runs", "none")]))
        return outputs
    structure, task = by_structure(frame), by_task(frame)
    s_drop, t_drop = drops(structure), drops(task)
    sections = [
        ("Runs", _fmt(frame.set_index("run"))),
        ("Performance by structure (Table 7.2 layout)", _fmt(structure)),
        ("Relative drop by structure (%)", _fmt(s_drop)),
        ("Paper, GPT-3.5 (Table 7.2, thesis)", _fmt(PAPER_BY_STRUCTURE)),
        ("Performance by task (Table 7.3 layout)", _fmt(task)),
        ("Relative drop by task (%)", _fmt(t_drop)),
        ("Paper, GPT-3.5 (Table 7.3, thesis)", _fmt(PAPER_BY_TASK)),
        ("Error rates, code (Table 7.5 layout)", _fmt(error_rates(frame))),
        ("Error types, code (Table 7.6 layout)", _fmt(error_types(frame))),
    ]
    for system, (scores, rec) in defences(frame).items():
        sections.append((f"Defences, {system} (Table 7.7 layout)", _fmt(scores)))
        sections.append((f"Recovery of lost performance, {system} (%)", _fmt(rec)))
    for name, drop in (("structure", s_drop), ("task", t_drop)):
        if not drop.empty:
            for condition in drop.index:
                chart = _chart(
                    drop.loc[condition],
                    out / f"drop-by-{name}-{condition}.png",
                    f"{condition}: relative drop by {name}",
                )
                if chart:
                    outputs.append(chart)
                    sections.append((f"Chart: {condition} drop by {name}", f"![drop]({chart.name})"))
    outputs.append(write_report(out / "comparison.md", "MAS-Resilience comparison", sections))
    return outputs
