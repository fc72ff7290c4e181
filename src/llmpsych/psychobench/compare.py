"""Several PsychoBench runs side by side, in the layout of the thesis's Table 4.3 (report Table 11).

Rows are (scale, subscale); there is one ``mean ± sd`` column per run and one ``Crowd`` column with every
human norm group of the data file. Only the files a run's analysis wrote are read (``summary.csv`` and
``norms.csv``) plus the run's stored config for the column label, so no model and no data file is needed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import LlmpsychError
from ..report.markdown import table, write_report
from ..runs.store import STORE_FILE, RunStore


def run_label(run_dir: Path) -> str:
    """The model of a run, with its persona and ``-JB`` for the cipher, from the stored config."""
    config: dict[str, Any] = {}
    if (run_dir / STORE_FILE).exists():
        store = RunStore.in_dir(run_dir)
        try:
            config = store.get_meta("config") or {}
        finally:
            store.close()
    label = str(config.get("model") or run_dir.name)
    options = config.get("options") or {}
    persona = str(options.get("persona") or "default")
    if persona != "default":
        label += f" [{persona if len(persona) <= 24 else persona[:21] + '...'}]"
    if options.get("cipher"):
        label += "-JB"
    return label


def _mean_sd(mean: float, sd: float) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean:.1f}" if sd is None or math.isnan(sd) else f"{mean:.1f} ± {sd:.1f}"


def crowd_text(norms: pd.DataFrame, scale: str, subscale: str) -> str:
    """Every norm group of one subscale as ``label m ± sd``, separated by ``;`` (``–`` if none)."""
    if norms.empty:
        return "–"
    rows = norms[(norms["scale"] == scale) & (norms["subscale"] == subscale)]
    if rows.empty:
        return "–"
    if len(rows) == 1:
        return _mean_sd(float(rows.iloc[0]["mean"]), float(rows.iloc[0]["sd"]))
    return "; ".join(f"{r['group']} {_mean_sd(float(r['mean']), float(r['sd']))}" for _, r in rows.iterrows())


def comparison_frames(run_dirs: list[Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(display table, tidy long table) of several analysed run directories."""
    if not run_dirs:
        raise LlmpsychError("give at least one run directory")
    labels: list[str] = []
    summaries: list[pd.DataFrame] = []
    norms_parts: list[pd.DataFrame] = []
    for run_dir in run_dirs:
        summary_file = run_dir / "summary.csv"
        if not summary_file.is_file():
            raise LlmpsychError(
                f"{run_dir}: no summary.csv", f"analyse it first: `llmpsych analyze {run_dir}`"
            )
        label = run_label(run_dir)
        if label in labels:
            label = f"{label} ({run_dir.name})"
        labels.append(label)
        summary = pd.read_csv(summary_file)
        summary["model"] = label
        summary["run_dir"] = str(run_dir)
        summaries.append(summary)
        if (run_dir / "norms.csv").is_file():
            norms_parts.append(pd.read_csv(run_dir / "norms.csv"))
    tidy = pd.concat(summaries, ignore_index=True)[
        ["model", "run_dir", "scale", "subscale", "runs", "n", "mean", "sd"]
    ]
    norms = (
        pd.concat(norms_parts, ignore_index=True).drop_duplicates(["scale", "subscale", "group"])
        if norms_parts
        else pd.DataFrame(columns=["scale", "subscale", "group", "mean", "sd", "n"])
    )
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys(zip(tidy["scale"], tidy["subscale"], strict=True)))
    for scale, subscale in keys:
        row: dict[str, Any] = {"Scale": scale, "Subscale": subscale}
        for label in labels:
            hit = tidy[(tidy["model"] == label) & (tidy["scale"] == scale) & (tidy["subscale"] == subscale)]
            row[label] = "–" if hit.empty else _mean_sd(float(hit.iloc[0]["mean"]), float(hit.iloc[0]["sd"]))
        row["Crowd"] = crowd_text(norms, scale, subscale)
        rows.append(row)
    return pd.DataFrame(rows), tidy


def write_comparison(run_dirs: list[Path], out_dir: Path) -> list[Path]:
    """Write ``comparison.md`` and ``comparison.csv`` (tidy: one row per model, scale, subscale)."""
    display, tidy = comparison_frames(run_dirs)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "comparison.csv"
    tidy.to_csv(csv_path, index=False)
    sources = "\n".join(f"- {run_label(d)}: `{d}`" for d in run_dirs)
    report = write_report(
        out_dir / "comparison.md",
        "PsychoBench comparison",
        [
            (
                "Scores",
                "Mean ± sd over each model's runs (ddof 1), layout of the thesis's Table 4.3. Crowd: every "
                'human norm group of the data file ("–": none). Tests against the norms are in each run\'s '
                "report.\n\n" + table(display),
            ),
            ("Runs", sources),
        ],
    )
    return [report, csv_path]
