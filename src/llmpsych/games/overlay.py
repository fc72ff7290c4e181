"""Per-round overlays across gamabench runs (thesis Figs 6.5-6.11): several run folders in one picture.

Each run folder is read once, read-only (:func:`~llmpsych.runs.read_run`); nothing is re-run. For every game
the runs played, the per-round series the game declares for its own plot (``plot_points``: the group mean,
the target, attendance, the mean bid, ...; single players' points, marks and reference lines are left out)
are averaged over that folder's games, and drawn one line per folder (never pooled), labelled by model
and setting: every setting the folders differ in is named (:mod:`llmpsych.runs.settings`), and ``with
people`` marks a run where a person had a seat (its lines are not the model's alone). The
value axes start at zero (:func:`~llmpsych.report.charts.value_axis`). ``overlay.csv`` holds every point
drawn, so a figure can be checked without looking at pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import LlmpsychError
from ..report.charts import pyplot, value_axis
from ..report.files import output_dir, save_figure, write_csv
from ..report.markdown import table, write_report
from ..runs.record import RunRecord, read_run
from . import registry
from .plots import STYLE, plot_data

COLUMNS = ["label", "game", "panel", "series", "x", "y", "games"]
#: Options that say how a run was played, named in its label when they differ from the default.
_SETTING_KEYS = ("prompts", "prompt_version", "persona", "cot", "cipher", "seats")


def setting_label(record: RunRecord) -> str:
    """A run's setting in a few words: temperature, prompts, persona, CoT, jailbreak, seats, game params."""
    from .task import GamaBenchOptions

    options: dict[str, Any] = dict(record.config.options)
    defaults = GamaBenchOptions().model_dump()
    parts = []
    if record.config.params.temperature is not None:
        parts.append(f"T={record.config.params.temperature:g}")
    for key in _SETTING_KEYS:
        if key in options and options[key] != defaults.get(key):
            parts.append("jailbreak" if key == "cipher" and options[key] is True else f"{key}={options[key]}")
    template_set = options.get("template_set")
    if isinstance(template_set, dict):
        parts.append(
            f"template set {Path(str(template_set.get('path', ''))).name} v{template_set.get('version')}"
        )
    for game in registry.names():
        for key, value in sorted((options.get(game) or {}).items()):
            parts.append(f"{game}.{key}={value}")
    return ", ".join(parts) or "default"


def _shown_by_setting_label(key: str) -> bool:
    """Whether :func:`setting_label` already names this setting (of :mod:`llmpsych.runs.settings`)."""
    return key in {"temperature", "template_set", *_SETTING_KEYS} or key.split(".")[0] in registry.names()


def _labels(records: Sequence[RunRecord]) -> list[str]:
    """``model | setting`` per run, with every other setting the runs differ in (``model · de |
    setting``, ``model · top_p 0.5 | setting``; :func:`~llmpsych.runs.settings.labels_by_settings`), the
    folder name added to a label met twice."""
    from ..runs.settings import config_settings, labels_by_settings
    from .leaderboard import with_people

    configs = [dict(r.meta.get("config") or {}) for r in records]
    keys = {k for c in configs for k in config_settings(c)}
    names, _ = labels_by_settings(
        [r.config.model for r in records], configs, ignore=[k for k in keys if _shown_by_setting_label(k)]
    )
    people = [" · with people" if with_people(r.config.options) else "" for r in records]
    labels = [  # a run where people played says so: its lines are not the model's alone
        f"{name}{mark} | {setting_label(r)}" for name, mark, r in zip(names, people, records, strict=True)
    ]
    return [
        f"{label} ({r.run_dir.name})" if labels.count(label) > 1 else label
        for label, r in zip(labels, records, strict=True)
    ]


def read_gamabench_runs(run_dirs: Sequence[Path]) -> list[RunRecord]:
    """Each folder's run record; a folder that holds no gamabench run is one clear error."""
    records = []
    for run_dir in run_dirs:
        record = read_run(run_dir)
        if record.config.task != "gamabench":
            raise LlmpsychError(f"{run_dir} holds a run of task {record.config.task!r}, not a gamabench run")
        records.append(record)
    return records


def overlay_frame(records: Sequence[RunRecord], each_run: bool = False) -> pd.DataFrame:
    """Every drawn point: per run label, game, panel and line series, the mean over that run's games at
    each x (``games``: how many games the mean is over); ``each_run``: a line per game played instead
    (thesis Fig. 6.5, five runs of one setting), labelled ``... run k``."""
    frames = []
    for label, record in zip(_labels(records), records, strict=True):
        results = [r for _, r in record.results(dict) if r.get("game") in registry.names()]
        for game in dict.fromkeys(r["game"] for r in results):
            data = plot_data(game, [r for r in results if r["game"] == game])
            lines = data[[STYLE.get(s, "line") == "line" for s in data["series"]]].copy()
            if lines.empty:
                continue
            lines["y"] = pd.to_numeric(lines["y"], errors="coerce")
            lines["label"] = [f"{label} run {k}" for k in lines["run"]] if each_run else label
            grouped = (
                lines.groupby(["label", "panel", "series", "x"], sort=False)
                .agg(y=("y", "mean"), games=("run", "nunique"))
                .reset_index()
            )
            grouped.insert(1, "game", game)
            frames.append(grouped)
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def draw_game(game: str, frame: pd.DataFrame, path: Path) -> Path | None:
    """One game's overlay: a panel per plot panel, a line per run label and series; None without
    matplotlib."""
    plt = pyplot()
    if plt is None or frame.empty:
        return None
    from matplotlib.ticker import MaxNLocator

    spec = registry.get(game).panels
    panels = [p for p in spec if p in set(frame["panel"])]
    labels = list(dict.fromkeys(frame["label"]))
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        heading, xlabel, ylabel = spec[panel]
        part = frame[frame["panel"] == panel]
        series_names = list(dict.fromkeys(part["series"]))
        styles = dict(zip(series_names, ["-", "--", ":", "-."] * 4, strict=False))
        for k, label in enumerate(labels):
            for series in series_names:
                line = part[(part["label"] == label) & (part["series"] == series)].sort_values("x")
                if line.empty:
                    continue
                name = label if len(series_names) == 1 else f"{label}: {series}"
                ax.plot(line["x"], line["y"], styles[series], marker=".", color=colours(k % 10), label=name)
        values = part["y"].dropna()
        if not values.empty and values.min() >= 0:
            ax.set_ylim(*value_axis((0.0, float(values.max()) or 1.0), []))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(heading, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{registry.get(game).title}: runs overlaid", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_overlay(run_dirs: Sequence[Path], out: Path, each_run: bool = False) -> list[Path]:
    """``overlay.csv``, one PNG per game and ``report.md`` in ``out``; returns the files written."""
    records = read_gamabench_runs(run_dirs)
    frame = overlay_frame(records, each_run)
    if frame.empty:
        raise LlmpsychError(
            "no finished game in " + ", ".join(str(d) for d in run_dirs), "finish or resume the runs first"
        )
    folder = output_dir(out)
    paths = [write_csv(frame, folder / "overlay.csv")]
    runs = pd.DataFrame(
        [
            {
                "label": label,
                "model": r.config.model,
                "setting": setting_label(r),
                "games": ", ".join(dict.fromkeys(str(x.get("game")) for _, x in r.results(dict))),
                "games finished": len(r.done()),
                "run folder": str(r.run_dir),
            }
            for label, r in zip(_labels(records), records, strict=True)
        ]
    )
    sections = [
        (
            "Runs",
            (
                "Each line is one game played (`run k` of a folder)."
                if each_run
                else "Each line is one run folder: a series averaged over the games it played (the "
                "`games` column of overlay.csv says over how many)."
            )
            + "\n\n"
            + table(runs),
        )
    ]
    for game in dict.fromkeys(frame["game"]):
        png = draw_game(game, frame[frame["game"] == game], folder / f"{game}.png")
        title = registry.get(game).title
        if png is not None:
            paths.append(png)
            sections.append((title, f"![{title}]({png.name})"))
        else:
            sections.append((title, "(no chart: install the `plots` extra; the points are in overlay.csv)"))
    paths.append(write_report(folder / "report.md", "GAMA-Bench per-round overlays", sections))
    return paths
