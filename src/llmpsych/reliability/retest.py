"""Test-retest over time (thesis §3.3.4, Fig. 3.5, Table 3.7): one configuration measured at several dates.

Each measurement is a run directory (a PsychoBench run of the BFI, or a reliability run) or a released
save file. A run's date is when it was started (its manifest's ``created``); runs are put in date order,
and runs whose configurations differ in anything but the seed are refused, because their differences
would not be differences over time. Save files carry no date and keep the order given.

The statistics are the thesis's: for each BFI dimension, the measurement with the lowest and the one
with the highest mean, each against all measurements pooled, by Student's t-test (Table 3.7, "equal
mean?" when p > alpha); with them, llmpsych adds a one-way ANOVA across all measurements per dimension
(one p-value for "does the mean move over time at all").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import stats

from ..errors import ConfigError, LlmpsychError
from ..report.charts import pyplot
from ..report.files import save_figure
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.record import RunRecord, read_run
from ..runs.store import STORE_FILE
from ..runs.task import task_class
from .analysis import retest_extremes
from .published import DIMENSIONS
from .results import load_points

#: Config fields that must agree between the measurements (everything but the seed and where it ran).
SAME = ("task", "model", "models", "params", "options")


@dataclass(frozen=True)
class Measurement:
    """One dated measurement: its label (folder or file name), start time if known, and its points
    (one row per administration, a column per BFI dimension)."""

    label: str
    date: datetime | None
    points: pd.DataFrame
    cached: int = 0  # model calls answered from the response cache (a retest needs fresh answers)


def _identity(record: RunRecord) -> dict[str, Any]:
    stored = record.config.stored()
    fields = {key: stored.get(key) for key in SAME}
    options = task_class(record.config.task).validate_options(dict(stored.get("options") or {}))
    fields["options"] = options.model_dump(mode="json")
    return fields


def _psychobench_points(record: RunRecord) -> pd.DataFrame:
    """BFI dimension scores per PsychoBench run (unit), from the run record."""
    from ..psychobench.analysis import run_tables
    from ..psychobench.options import PsychoBenchResult

    task: Any = task_class("psychobench")(record.config)
    done = [unit.result for unit, _ in record.results(PsychoBenchResult) if unit.result]
    bfi = [r for r in done if str(r.get("scale", "")).upper() == "BFI"]
    if not bfi:
        raise LlmpsychError(f"{record.run_dir}: no finished BFI run", "test-retest reads BFI scores")
    scores = run_tables(task.all_scales, bfi)["scores"]
    wide = scores.pivot_table(index="run", columns="subscale", values="score")
    missing = [d for d in DIMENSIONS if d not in wide]
    if missing:
        raise LlmpsychError(f"{record.run_dir}: the BFI scores lack {', '.join(missing)}")
    return wide[list(DIMENSIONS)].reset_index(drop=True)


def load_measurements(paths: list[Path]) -> list[Measurement]:
    """The measurements of run directories and/or save files, run directories in date order."""
    if len(paths) < 2:
        raise LlmpsychError("give at least two dated runs (run directories or save files)")
    found: list[Measurement] = []
    first: tuple[Path, dict[str, Any]] | None = None
    for path in paths:
        if not (path.is_dir() and (path / STORE_FILE).is_file()):
            found.append(Measurement(path.stem if path.is_file() else path.name, None, load_points([path])))
            continue
        record = read_run(path)
        if record.config.task not in ("psychobench", "reliability"):
            raise LlmpsychError(
                f"{path} is a {record.config.task!r} run",
                "test-retest reads PsychoBench (BFI) or reliability runs",
            )
        identity = _identity(record)
        if first is None:
            first = (path, identity)
        elif identity != first[1]:
            differ = ", ".join(k for k in SAME if identity[k] != first[1][k])
            raise ConfigError(
                f"{path} and {first[0]} are not the same configuration (they differ in: {differ})",
                "test-retest compares one configuration over time; only the date and the seed may differ",
            )
        points = _psychobench_points(record) if record.config.task == "psychobench" else load_points([path])
        created = str(record.manifest.get("created") or "")
        try:
            date = datetime.fromisoformat(created) if created else None
        except ValueError:
            raise LlmpsychError(f"{path}: the manifest's date {created[:40]!r} is not a date") from None
        cached = sum(1 for call in record.calls if call.cached)
        found.append(Measurement(path.name, date, points, cached))
    dated = [m for m in found if m.date is not None]
    if len(dated) == len(found):
        found.sort(key=lambda m: (m.date or datetime.min, m.label))  # same second: by name
    return found


def per_measurement(measurements: list[Measurement]) -> pd.DataFrame:
    """Fig. 3.5's data: n, mean and sd of each dimension per measurement, in date order."""
    rows = []
    for order, m in enumerate(measurements, start=1):
        for dim in DIMENSIONS:
            values = pd.to_numeric(m.points[dim], errors="coerce").dropna()
            rows.append(
                {
                    "order": order,
                    "measurement": m.label,
                    "date": m.date.isoformat() if m.date else "",
                    "dimension": dim,
                    "n": len(values),
                    "mean": float(values.mean()) if len(values) else math.nan,
                    "sd": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
                }
            )
    return pd.DataFrame(rows)


def anova(measurements: list[Measurement]) -> pd.DataFrame:
    """One-way ANOVA of each dimension across the measurements (H0: one mean at every date)."""
    rows = []
    for dim in DIMENSIONS:
        groups = [pd.to_numeric(m.points[dim], errors="coerce").dropna() for m in measurements]
        usable = [g for g in groups if len(g) >= 1]
        if len(usable) < 2 or sum(len(g) for g in usable) <= len(usable):
            f, p = math.nan, math.nan
        else:
            result = stats.f_oneway(*usable)
            f, p = float(result.statistic), float(result.pvalue)
        rows.append({"dimension": dim, "measurements": len(usable), "F": f, "p": p})
    return pd.DataFrame(rows)


def extremes(measurements: list[Measurement], alpha: float = 0.05) -> pd.DataFrame:
    """Table 3.7: per dimension, the lowest and the highest measurement against all of them pooled."""
    labels = [m.label for m in measurements]
    if len(set(labels)) != len(labels):
        raise LlmpsychError("two measurements have the same name", "give each its own folder or file name")
    result = retest_extremes({m.label: m.points for m in measurements})
    result["equal_mean"] = [bool(p > alpha) if not math.isnan(p) else True for p in result["p"]]
    return result


def date_labels(dates: list[str], names: list[str]) -> list[str]:
    """The chart's label of each measurement: its ISO date and time to the minute (``2024-01-15 09:30``),
    to the second where two share a minute, and its name when it has no date (a save file). A day
    alone would give two measurements of one day the same label."""
    parsed = [datetime.fromisoformat(d) if d else None for d in dates]
    minutes = [p.strftime("%Y-%m-%d %H:%M") if p else "" for p in parsed]
    shared = {m for m in minutes if m and minutes.count(m) > 1}
    return [
        name if p is None else p.strftime("%Y-%m-%d %H:%M:%S") if minute in shared else minute
        for p, minute, name in zip(parsed, minutes, names, strict=True)
    ]


def retest_chart(per: pd.DataFrame, path: Path) -> Path | None:
    """Fig. 3.5: each dimension's mean over the measurements, with a ±sd band; None without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for dim in DIMENSIONS:
        part = per[per["dimension"] == dim].sort_values("order")
        x = list(range(len(part)))
        mean, sd = part["mean"].to_numpy(), part["sd"].fillna(0).to_numpy()
        ax.plot(x, mean, marker="o", label=dim)
        ax.fill_between(x, mean - sd, mean + sd, alpha=0.15)
    first = per[per["dimension"] == DIMENSIONS[0]].sort_values("order")
    ticks = date_labels(list(first["date"]), list(first["measurement"]))
    ax.set_xticks(range(len(ticks)), ticks, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("score (mean ± sd)")
    ax.set_title("BFI over time")
    ax.legend(fontsize=8, ncol=5, loc="lower center", bbox_to_anchor=(0.5, 1.08))
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_retest(measurements: list[Measurement], out: Path, alpha: float = 0.05) -> list[Path]:
    """``retest_measurements.csv``, ``retest_extremes.csv``, ``retest_anova.csv``, ``retest.png`` and
    ``retest.md`` (with its HTML page) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    per = per_measurement(measurements)
    ext = extremes(measurements, alpha)
    var = anova(measurements)
    chart = retest_chart(per, out / "retest.png")
    shown = ext.assign(
        average=[f"{m:.2f} ± {s:.2f}" for m, s in zip(ext["average"], ext["average_sd"], strict=True)],
        extreme=[f"{m:.2f} ± {s:.2f}" for m, s in zip(ext["extreme"], ext["extreme_sd"], strict=True)],
        p=[f"{p:.2f}" for p in ext["p"]],
        equal_mean=["Yes" if e else "No" for e in ext["equal_mean"]],
    )[["dimension", "average", "side", "run", "extreme", "p", "equal_mean"]]
    cached = [m.label for m in measurements if m.cached]
    n_text = ", ".join(f"{m.label}: n = {len(m.points)}" for m in measurements)
    sections = [
        (
            "Measurements",
            table(per.assign(date=[d[:19] for d in per["date"]]))
            + f"\n\nAdministrations per measurement: {n_text}.",
        ),
        (
            "Extremes against the average (Table 3.7)",
            table(shown)
            + f"\n\nStudent's t-test of the lowest (highest) measurement against all measurements "
            f"pooled; equal mean when p > {alpha:g}.",
        ),
        ("Across all measurements (one-way ANOVA)", table(var, floatfmt=".3f")),
    ]
    if cached:
        sections.append(
            (
                "Warning",
                f"{', '.join(cached)} took answers from the response cache, so they may repeat an earlier "
                "date's answers; run each measurement with --no-cache.",
            )
        )
    return write_run_report(
        out,
        "Test-retest over time",
        sections,
        tables=[("retest_measurements", per), ("retest_extremes", ext), ("retest_anova", var)],
        figures=[chart],
        name="retest.md",
    )
