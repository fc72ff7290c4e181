"""PsychoBench analysis: per-run scores, valid-answer rates, mean ± sd over runs, and tests against norms.

Reads only the run store and the data file (for keys and norms). Every subscale with at least two scored
runs is compared with every human norm group of the data file by the paper's procedure (F-test, then
Student's or Welch's t-test, alpha 0.01 by default) through :mod:`llmpsych.stats`, with Hedges' g and its
95 % CI, and Holm's correction across the whole family of comparisons in the run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..instruments.scale import Scale
from ..report.markdown import bar_chart, table, write_report
from ..runs.store import RunStore
from ..stats import GroupStats, apply_holm, compare_with_norm, comparisons_frame, summarize, valid_rate
from .logprob import ItemDistribution, weighted_scores

if TYPE_CHECKING:
    from .task import PsychoBenchTask


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
            subscores = weighted_scores(scale, values)
            n_valid = len(values)
        else:
            subscores = scale.score(given)
            n_valid = len(given)
        for name, value in subscores.items():
            scores.append({"scale": scale.name, "run": run, "subscale": name, "score": value})
        row = {
            "scale": scale.name,
            "run": run,
            "items": scale.n_items,
            "valid": n_valid,
            "valid_rate": n_valid / scale.n_items,
            "asks": result.get("asks", 0),
            "refused": bool(result.get("refused", False)),
        }
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
                }
            )
    return pd.DataFrame(rows)


def norm_comparisons(
    scales: dict[str, Scale], summary: pd.DataFrame, *, model_label: str, alpha: float, method: str
) -> tuple[pd.DataFrame, list[str]]:
    """Every (scale, subscale, norm group) test, Holm-adjusted over all of them; and what was skipped."""
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
                    method=method,  # type: ignore[arg-type]
                    scale=row["scale"],
                    subscale=row["subscale"],
                )
            )
    return comparisons_frame(apply_holm(comparisons)), skipped


def analyze_run_dir(task: PsychoBenchTask, run_dir: Path) -> list[Path]:
    """Write answers/scores/valid/summary/comparisons CSVs and ``report.md``; return the paths."""
    store = RunStore.in_dir(run_dir)
    try:
        units = store.units()
        n_calls = store.call_count()
    finally:
        store.close()
    done = [u.result for u in units if u.status == "done" and u.result]
    scales = {s.name: s for s in task.scales if any(r["scale"] == s.name for r in done)}
    tables = run_tables(task.all_scales, done)
    n_runs = {name: sum(1 for r in done if r["scale"] == name) for name in scales}
    scores = tables["scores"]
    if scores.empty:
        scores = pd.DataFrame(columns=["scale", "run", "subscale", "score"])
    summary = summary_table(scales, scores, n_runs)
    model = task.config.model
    comparisons, skipped = norm_comparisons(
        scales, summary, model_label=model, alpha=task.options.alpha, method=task.options.method
    )
    norms = norms_table(scales)
    outputs = []
    frames = (*tables.items(), ("summary", summary), ("comparisons", comparisons), ("norms", norms))
    for name, frame in frames:
        path = run_dir / f"{name}.csv"
        frame.to_csv(path, index=False)
        outputs.append(path)
    failed = [u.unit_id for u in units if u.status == "failed"]
    charts = [c for c in (_chart(scale, summary, run_dir) for scale in scales.values()) if c is not None]
    outputs.append(
        _report(task, run_dir, tables["valid"], summary, comparisons, skipped, failed, n_calls, charts)
    )
    outputs.extend(charts)
    return outputs


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
def _report(
    task: PsychoBenchTask,
    run_dir: Path,
    valid: pd.DataFrame,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    skipped: list[str],
    failed: list[str],
    n_calls: int,
    charts: list[Path],
) -> Path:
    options, config = task.options, task.config
    if options.mode == "logprob":
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
        f"Model `{config.model}` answered {names} of PsychoBench "
        f"({options.runs} run(s) per scale, each with its own item order; seed {config.seed}, temperature "
        f"{config.params.temperature:g}). Persona: {task.persona.name}; Caesar cipher: "
        f"{'on (shift ' + str(options.cipher_shift) + ')' if options.cipher else 'off'}; {mode}. "
        "Prompts and norms are read from the official questionnaires.json (with llmpsych's documented "
        "corrections)."
    )
    what_n = (
        "**n** for the model is the number of runs whose subscale could be scored (every item validly "
        "answered); a run is one complete administration in its own item order. The runs are repeated "
        "samples from one model, not a sample of people: the tests ask whether the model's run-to-run "
        "distribution could come from the human population, and at temperature 0 the SD over runs mostly "
        "reflects item order. Human n is the norm sample's size as given in the data file. "
        f"Tests: F-test for equal variances, then Student's or Welch's t-test (method `{options.method}`), "
        f"two-sided, alpha = {options.alpha:g}; Hedges' g (model − human, pooled SD) with a 95 % CI; "
        f"Holm's correction over all {len(comparisons)} comparisons of this run."
    )
    if options.mode == "logprob":
        what_n += (
            " In logprob mode every statement is asked on its own, so item order cannot matter: runs differ "
            "only through sampling of the tokens before the score, and at temperature 0 they coincide "
            "(SD ≈ 0), which makes the t-tests degenerate; read the means and the option distributions."
        )
    sections = [("What was measured", measured), ("What n is", what_n)]
    sections.append(("Scores (mean ± sd over runs, ddof = 1)", table(_scores_view(summary))))
    if not comparisons.empty:
        sections.append(("Comparison with human norms", table(_comparison_view(comparisons), floatfmt=".3g")))
    if not comparisons.empty and (comparisons["model_sd"] == 0).any():
        constant = int((comparisons["model_sd"] == 0).sum())
        sections.append(
            (
                "Caution: identical runs",
                f"{constant} comparison(s) have a model SD of 0 (every run gave the same score). The t-test "
                "then only asks whether the human mean differs from a constant, so with a large norm sample "
                "its p-value is tiny whatever the difference; read Hedges' g and its CI instead.",
            )
        )
    if charts:
        sections.append(("Charts", "\n\n".join(f"![{c.stem}]({c.name})" for c in charts)))
    if skipped:
        sections.append(("Not tested", "\n".join(f"- {line}" for line in skipped)))
    sections.append(("Valid answers", _valid_text(valid, n_calls, failed)))
    sections.append(
        (
            "Files",
            "answers.csv (scale, run, item), scores.csv (scale, run, subscale), valid.csv (scale, run), "
            "summary.csv (scale, subscale), comparisons.csv (one row per test), run.sqlite (every request "
            "and answer; `llmpsych export` writes the transcripts).",
        )
    )
    return write_report(run_dir / "report.md", "PsychoBench report", sections)


def _chart(scale: Scale, summary: pd.DataFrame, run_dir: Path) -> Path | None:
    """Mean ± sd bars of one scale's scored subscales (PNG; None without matplotlib, scores, or for CABIN)."""
    rows = summary[(summary["scale"] == scale.name) & (summary["n"] > 0)]
    if rows.empty or len(rows) > 12:  # 41 CABIN bars do not make a readable chart; see summary.csv
        return None
    values = {
        str(r["subscale"]): (float(r["mean"]), 0.0 if math.isnan(r["sd"]) else float(r["sd"]))
        for _, r in rows.iterrows()
    }
    ranges = [scale.subscale_range(name) for name in values]
    limits = (min(low for low, _ in ranges), max(high for _, high in ranges))
    path = run_dir / f"chart-{re.sub(r'[^A-Za-z0-9]+', '-', scale.name)}.png"
    return bar_chart(values, path, f"{scale.name}: mean ± sd over runs", limits)


def _scores_view(summary: pd.DataFrame) -> pd.DataFrame:
    view = summary[["scale", "subscale", "runs", "n"]].copy()
    view["mean ± sd"] = [_mean_sd(m, s) for m, s in zip(summary["mean"], summary["sd"], strict=True)]
    view["95% CI of mean"] = [
        "" if math.isnan(lo) else f"{lo:.2f} – {hi:.2f}"
        for lo, hi in zip(summary["ci_low"], summary["ci_high"], strict=True)
    ]
    return view


def _comparison_view(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, c in frame.iterrows():
        rows.append(
            {
                "scale": c["scale"],
                "subscale": c["subscale"],
                "human group": c["human_label"],
                "model (n)": f"{_mean_sd(c['model_mean'], c['model_sd'])} ({c['model_n']})",
                "human (n)": f"{_mean_sd(c['human_mean'], c['human_sd'])} ({c['human_n']})",
                "test": c["test"],
                "t": c["t_statistic"],
                "p": c["t_p_value"],
                "p (Holm)": c["p_holm"],
                "g [95% CI]": "n/a"
                if math.isnan(c["hedges_g"])
                else f"{c['hedges_g']:.2f} [{c['g_ci_low']:.2f}, {c['g_ci_high']:.2f}]",
                "result": c["direction"] if c["significant_holm"] else "no difference (Holm)",
            }
        )
    return pd.DataFrame(rows)


def _valid_text(valid: pd.DataFrame, n_calls: int, failed: list[str]) -> str:
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
    lines = [
        f"{int(valid['valid'].sum())} of {int(valid['items'].sum())} items answered validly (parsed, in "
        f"range, not contradicted) after re-asking; {n_calls} model calls. Per run: valid.csv.",
    ]
    if "from_logprobs" in valid and int(valid["from_text"].sum()):
        lines.append(
            f"{int(valid['from_text'].sum())} item(s) had no usable top_logprobs and were scored from the "
            "written number instead."
        )
    if failed:
        lines.append(f"{len(failed)} unit(s) failed and are not scored: {', '.join(failed)}.")
    return "\n\n".join([*lines, table(per_scale)])


def _mean_sd(mean: float, sd: float) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.2f}" if math.isnan(sd) else f"{mean:.2f} ± {sd:.2f}"
