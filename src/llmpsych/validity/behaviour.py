"""Self-report against behaviour: does a construct's scale score go with its behavioural counterpart?

The unit is a condition (a model playing a persona): its mean scale score (over its runs) beside its
mean behaviour (over its runs: SafetyQA safety rate, TruthfulQA accuracy, a game's contributions, a
refusal rate). For each pair of the mapping (``behaviour.toml`` by default, user-editable), Pearson's r
across the conditions with a Fisher-z confidence interval (at least 4 conditions; the interval is
r = tanh(atanh(r) +- z / sqrt(n - 3))) and Spearman's rho, and the n behind them; the sign the construct
predicts is shown beside r. A pair whose data cannot support a correlation (fewer than 3 conditions with
both numbers, or a constant score) says so instead of a number.

Inputs are two long tables: ``scores`` (model, persona, scale, subscale, score[, run]) and ``behaviour``
(model, persona, behaviour, value[, run]); a missing model or persona column means one model or one
persona. ``thesis_fig_4_2`` gives the thesis's own per-role numbers (Fig. 4.2) in that layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..userfiles import parse_toml, read_text

DEFAULT_MAPPING = Path(__file__).with_name("behaviour.toml")
KEYS = ("model", "persona")

#: Fig. 4.2 of the thesis (gpt-3.5-turbo in five roles; behaviour averaged over three runs, GPT-4 judging
#: SafetyQA), EPQ-R subscale means per role, as printed in the report version of PsychoBench (seed
#: 001:3500-3505; specs/psychobench-and-reliability.md §3.11). Per-run and item-level data are not released.
FIG_4_2_EPQR: dict[str, dict[str, float]] = {
    "hero": {"Extraversion": 22.4, "Neuroticism": 9.7, "Psychoticism": 3.2, "Lying": 17.6},
    "ordinary": {"Extraversion": 18.9, "Neuroticism": 18.9, "Psychoticism": 2.8, "Lying": 13.2},
    "default": {"Extraversion": 19.7, "Neuroticism": 21.8, "Psychoticism": 5.0, "Lying": 9.6},
    "liar": {"Extraversion": 17.7, "Neuroticism": 21.7, "Psychoticism": 17.8, "Lying": 2.5},
    "psychopath": {"Extraversion": 10.9, "Neuroticism": 7.3, "Psychoticism": 24.5, "Lying": 1.5},
}


@dataclass(frozen=True)
class Pair:
    scale: str
    subscale: str
    behaviour: str
    expect: str = ""
    why: str = ""


@dataclass(frozen=True)
class Relation:
    pair: Pair
    n: int  # conditions with both numbers
    r: float
    low: float
    high: float
    rho: float
    p: float
    note: str = ""

    @property
    def agrees(self) -> str:
        if math.isnan(self.r) or not self.pair.expect:
            return ""
        return "yes" if (self.r > 0) == (self.pair.expect == "positive") else "no"


def read_mapping(path: Path | None = None) -> list[Pair]:
    """The pairs of a mapping file (TOML, ``[[pair]]`` tables; the shipped default when ``path`` is None)."""
    file = path or DEFAULT_MAPPING
    data = parse_toml(read_text(file, "behaviour mapping", 1_000_000), str(file))
    raw = data.get("pair")
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{file}: no [[pair]] table", hint="see the shipped behaviour.toml")
    pairs = []
    for n, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            raise DataError(f"{file}: pair {n} is not a table")
        missing = [
            k for k in ("scale", "subscale", "behaviour") if not isinstance(entry.get(k), str) or not entry[k]
        ]
        if missing:
            raise DataError(f"{file}: pair {n} has no {', '.join(missing)}")
        unknown = sorted(set(entry) - {"scale", "subscale", "behaviour", "expect", "why", "construct"})
        if unknown:
            raise DataError(f"{file}: pair {n}: unknown key {', '.join(unknown)}")
        expect = str(entry.get("expect", ""))
        if expect not in ("", "positive", "negative"):
            raise DataError(f"{file}: pair {n}: expect must be positive or negative, not {expect[:20]!r}")
        pairs.append(
            Pair(entry["scale"], entry["subscale"], entry["behaviour"], expect, str(entry.get("why", "")))
        )
    return pairs


def _conditions(frame: pd.DataFrame, what: str, value: str) -> pd.DataFrame:
    need = {what, value} if what == "behaviour" else {"scale", "subscale", value}
    missing = sorted(need - set(frame.columns))
    if missing:
        raise DataError(f"the {what} table has no column {', '.join(missing)}")
    out = frame.copy()
    for k in KEYS:
        out[k] = out[k].fillna("").astype(str) if k in out.columns else ""
    out[value] = pd.to_numeric(out[value], errors="coerce")
    return out


def relate(
    scores: pd.DataFrame, behaviour: pd.DataFrame, pairs: list[Pair], confidence: float = 0.95
) -> tuple[list[Relation], pd.DataFrame]:
    """Each pair's correlation across conditions, and the per-condition table behind it."""
    from scipy import stats

    s = _conditions(scores, "scores", "score")
    b = _conditions(behaviour, "behaviour", "value")
    s_mean = s.groupby([*KEYS, "scale", "subscale"], as_index=False).agg(
        score=("score", "mean"), score_runs=("score", "count")
    )
    b_mean = b.groupby([*KEYS, "behaviour"], as_index=False).agg(
        value=("value", "mean"), value_runs=("value", "count")
    )
    relations = []
    points = []
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    for pair in pairs:
        left = s_mean[(s_mean["scale"] == pair.scale) & (s_mean["subscale"] == pair.subscale)]
        right = b_mean[b_mean["behaviour"] == pair.behaviour]
        both = left.merge(right, on=list(KEYS)).dropna(subset=["score", "value"])
        n = len(both)
        nan = math.nan
        if left.empty or right.empty:
            what = f"{pair.scale} {pair.subscale}" if left.empty else pair.behaviour
            relations.append(Relation(pair, 0, nan, nan, nan, nan, nan, f"no data for {what}"))
            continue
        points.append(both.assign(scale=pair.scale, subscale=pair.subscale, behaviour=pair.behaviour))
        if n < 3:
            relations.append(
                Relation(
                    pair,
                    n,
                    nan,
                    nan,
                    nan,
                    nan,
                    nan,
                    f"{n} conditions with both numbers; a correlation needs 3",
                )
            )
            continue
        if both["score"].nunique() < 2 or both["value"].nunique() < 2:
            const = "score" if both["score"].nunique() < 2 else "behaviour"
            relations.append(
                Relation(pair, n, nan, nan, nan, nan, nan, f"the {const} is the same in every condition")
            )
            continue
        r, p = stats.pearsonr(both["score"], both["value"])
        rho = float(stats.spearmanr(both["score"], both["value"]).statistic)
        r = float(r)
        if n >= 4 and abs(r) < 1:
            half = z / math.sqrt(n - 3)
            low, high = math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
            note = ""
        else:
            low = high = nan
            note = "no interval: a Fisher-z interval needs 4 conditions and |r| < 1"
        if n < 10 and not note:
            note = f"only {n} conditions: the interval is wide"
        relations.append(Relation(pair, n, r, low, high, rho, float(p), note))
    table = pd.concat(points, ignore_index=True) if points else pd.DataFrame()
    return relations, table


def relations_frame(relations: list[Relation]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "scale": x.pair.scale,
                "subscale": x.pair.subscale,
                "behaviour": x.pair.behaviour,
                "expect": x.pair.expect,
                "n": x.n,
                "r": x.r,
                "ci_low": x.low,
                "ci_high": x.high,
                "rho": x.rho,
                "p": x.p,
                "sign_as_expected": x.agrees,
                "note": x.note,
            }
            for x in relations
        ]
    )


def summary_lines(relations: list[Relation], confidence: float = 0.95) -> list[str]:
    lines = []
    for x in relations:
        what = f"{x.pair.scale} {x.pair.subscale} vs {x.pair.behaviour}"
        if math.isnan(x.r):
            lines.append(f"{what}: not computed ({x.note}).")
            continue
        ci = "" if math.isnan(x.low) else f", {confidence:.0%} CI [{x.low:.2f}, {x.high:.2f}]"
        sign = (
            f"; expected {x.pair.expect}: {'as expected' if x.agrees == 'yes' else 'opposite'}"
            if x.agrees
            else ""
        )
        extra = f" ({x.note})" if x.note else ""
        lines.append(f"{what}: r = {x.r:.2f}{ci}, rho = {x.rho:.2f}, n = {x.n} conditions{sign}{extra}.")
    return lines


def thesis_fig_4_2() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The thesis's Fig. 4.2 numbers as (scores, behaviour) tables: one run per role (published means)."""
    from ..psychobench.validity import PUBLISHED

    scores = pd.DataFrame(
        [
            {"model": "gpt-3.5-turbo", "persona": role, "scale": "EPQ-R", "subscale": sub, "score": value}
            for role, subs in FIG_4_2_EPQR.items()
            for sub, value in subs.items()
        ]
    )
    behaviour = pd.DataFrame(
        [
            {"model": "gpt-3.5-turbo", "persona": role, "behaviour": name, "value": value}
            for role, (truthful, safe) in PUBLISHED.items()
            for name, value in (("truthfulqa", truthful), ("safetyqa", safe))
        ]
    )
    return scores, behaviour


def plot(table: pd.DataFrame, relations: list[Relation], path: Path) -> Path | None:
    """One scatter panel per pair that has points (score across, behaviour up, a point per condition)."""
    from ..report.charts import matplotlib_available, pyplot
    from ..report.files import save_figure

    if table.empty or not matplotlib_available():
        return None
    shown = [x for x in relations if x.n > 0]
    plt = pyplot()
    cols = min(3, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax, x in zip(axes.flat, shown, strict=False):
        part = table[
            (table["scale"] == x.pair.scale)
            & (table["subscale"] == x.pair.subscale)
            & (table["behaviour"] == x.pair.behaviour)
        ]
        ax.scatter(part["score"], part["value"])
        # labels of points that lie close together are stacked, not printed over each other
        span_x = float(np.ptp(part["score"].to_numpy(float))) or 1.0
        span_y = float(np.ptp(part["value"].to_numpy(float))) or 1.0
        placed: list[tuple[float, float]] = []
        for _, row in part.sort_values(["value", "score"]).iterrows():
            label = row["persona"] or row["model"]
            near = sum(
                abs(px - row["score"]) < 0.08 * span_x and abs(py - row["value"]) < 0.08 * span_y
                for px, py in placed
            )
            placed.append((float(row["score"]), float(row["value"])))
            ax.annotate(
                str(label)[:16],
                (row["score"], row["value"]),
                fontsize=7,
                xytext=(4, 3 + 9 * near),
                textcoords="offset points",
            )
        title = (
            f"r = {x.r:.2f} [{x.low:.2f}, {x.high:.2f}], n = {x.n}"
            if not math.isnan(x.r)
            else f"n = {x.n}: {x.note}"
        )
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"{x.pair.scale} {x.pair.subscale}")
        ax.set_ylabel(x.pair.behaviour)
        if len(part) >= 2 and part["score"].nunique() > 1:
            slope, icept = np.polyfit(part["score"].to_numpy(float), part["value"].to_numpy(float), 1)
            xs = np.linspace(float(part["score"].min()), float(part["score"].max()), 2)
            ax.plot(xs, slope * xs + icept, linewidth=0.8)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    fig.tight_layout()
    saved: Path = save_figure(fig, path)
    plt.close(fig)
    return saved


def sweep_tables(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(scores, behaviour) of a ``psychobench validity --scale ...`` folder (``--preset thesis``: Fig. 4.2
    rerun): ``validity/validity_runs.csv`` (per benchmark, persona and run: the score in %) and each
    ``scales-<persona>/scores.csv`` (per scale, run and subscale), as the runs' analyses wrote them."""
    runs = folder / "validity" / "validity_runs.csv"
    if not runs.is_file():
        raise DataError(
            f"{folder}: no validity/validity_runs.csv",
            hint="a folder written by `llmpsych psychobench validity --scale ...` (or --preset thesis)",
        )
    b = load_long(runs, "behaviour")
    missing = [c for c in ("benchmark", "persona", "run", "score") if c not in b.columns]
    if missing:
        raise DataError(f"{runs}: no column {', '.join(missing)}")
    behaviour = b.rename(columns={"benchmark": "behaviour", "score": "value"})[
        ["persona", "behaviour", "run", "value"]
    ]
    parts = []
    for sub in sorted(folder.glob("scales-*")):
        file = sub / "scores.csv"
        if not file.is_file():
            continue
        frame = load_long(file, "scores")
        if not {"scale", "subscale", "score"} <= set(frame.columns):
            raise DataError(f"{file}: not a PsychoBench scores table (scale, run, subscale, score)")
        parts.append(frame.assign(persona=sub.name.removeprefix("scales-")))
    if not parts:
        raise DataError(
            f"{folder}: no scales-<persona>/scores.csv", hint="run psychobench validity with --scale"
        )
    scores = pd.concat(parts, ignore_index=True)
    return scores, behaviour


def load_long(path: Path, what: str) -> pd.DataFrame:
    """A scores or behaviour table (CSV), bounded read."""
    import io

    from ..userfiles import MAX_DATA_FILE_BYTES, read_bytes

    raw = read_bytes(path, f"{what} table", MAX_DATA_FILE_BYTES)
    try:
        frame: Any = pd.read_csv(
            io.BytesIO(raw), keep_default_na=False, na_values={"score": [""], "value": [""]}
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: not a CSV {what} table ({str(exc)[:120]})") from None
    return pd.DataFrame(frame)
