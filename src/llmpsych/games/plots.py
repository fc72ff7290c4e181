"""Per-game plots of a gamabench run, in the manner of thesis Fig. 6.2/6.3, and the data behind them.

:func:`plot_data` turns the finished games of one game name (all its runs) into a long table — one row per
plotted point: ``panel``, ``series``, ``run``, ``x``, ``y`` (and ``player`` where it applies). The PNG
(matplotlib, the ``plots`` extra) draws exactly that table, and the table is written next to it as CSV,
so what a plot shows can be checked without looking at pixels.

Series per game (x is the round unless said otherwise):

- guessing — every player's choice, the group mean, the target (ratio × mean) and the winning number(s);
- bar — how many went, against the capacity (ratio × N);
- divide_dollar — every bid, the mean bid and the equal split G/N; the sum of the bids against G;
- public_goods — every contribution and the mean; the mean net gain from the pot and mean tokens after;
- diner — the share of cheap and of costly orders;
- auction — bids against valuations (x = valuation, with bid = valuation); mean bid / valuation per round;
- battle_royale — players left after each shot; each shot's target (hit, missed) or the shooter of an
  intentional miss, and the strongest other survivor (the scored choice);
- pirate — per proposal (x = proposer rank): gold the proposer keeps, the optimal amount, L1 distance to
  the optimal plan; votes for the plan (proposer included) against the votes needed; each voter's
  ``accept`` / ``reject`` (y = voter rank).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.charts import pyplot
from ..report.files import output_dir, save_figure, write_csv
from .pirate import optimal_plan

COLUMNS = ["panel", "series", "run", "x", "y", "player"]

#: panel -> (title, x label, y label), per game
PANELS: dict[str, dict[str, tuple[str, str, str]]] = {
    "guessing": {"choices": ("Choices, group mean and winning number", "round", "number")},
    "bar": {"attendance": ("Attendance against capacity", "round", "players at the bar")},
    "divide_dollar": {
        "bids": ("Bids", "round", "golds"),
        "total": ("Sum of bids against the pot", "round", "golds"),
    },
    "public_goods": {
        "contributions": ("Contributions", "round", "tokens"),
        "gains": ("Gain from the pot and tokens after the round", "round", "tokens"),
    },
    "diner": {"orders": ("Cheap and costly orders", "round", "share of players")},
    "auction": {
        "bids": ("Bids against valuations", "valuation", "bid"),
        "shading": ("Mean bid / valuation", "round", "bid / valuation"),
    },
    "battle_royale": {
        "survivors": ("Players left", "shot", "players"),
        "shots": ("Shots", "shot", "player"),
    },
    "pirate": {
        "proposals": ("Proposals", "proposer rank", "golds"),
        "votes": ("Votes for the plan", "proposer rank", "pirates"),
        "ballots": ("Each pirate's vote", "proposer rank", "voter rank"),
    },
}

#: how a series is drawn: points, a line per run, or a black dashed reference line
STYLE: dict[str, str] = {
    "choice": "points",
    "bid": "points",
    "contribution": "points",
    "winning": "marks",
    "hit": "marks",
    "missed": "marks",
    "accept": "marks",
    "reject": "marks",
    "intentional miss": "marks",
    "strongest other": "faint",
    "capacity": "reference",
    "equal split": "reference",
    "pot": "reference",
    "bid = valuation": "reference",
    "optimal keeps": "reference",
}


def _rows(panel: str, series: str, run: Any, x: Any, y: Any, player: Any = None) -> dict[str, Any]:
    return {"panel": panel, "series": series, "run": run, "x": x, "y": y, "player": player}


def plot_data(game: str, results: list[dict[str, Any]]) -> pd.DataFrame:
    """Every plotted point of ``game`` over its runs (``results``: the unit results of that game)."""
    rows: list[dict[str, Any]] = []
    add = rows.append
    for result in sorted(results, key=lambda r: r["run"]):
        run, p, n = result["run"], result["params"], result["players"]
        for r in result["rounds"]:
            j = r["round"]
            if game == "guessing":
                for i, c in enumerate(r["choices"]):
                    add(_rows("choices", "choice", run, j, c, i))
                add(_rows("choices", "mean", run, j, r["mean"]))
                add(_rows("choices", "target", run, j, r["target"]))
                for w in r["winning"]:
                    add(_rows("choices", "winning", run, j, w))
            elif game == "bar":
                add(_rows("attendance", "went", run, j, r["go"]))
                add(_rows("attendance", "capacity", run, j, p["ratio"] * n))
            elif game == "divide_dollar":
                for i, b in enumerate(r["bids"]):
                    add(_rows("bids", "bid", run, j, b, i))
                add(_rows("bids", "mean", run, j, r["total"] / n))
                add(_rows("bids", "equal split", run, j, p["golds"] / n))
                add(_rows("total", "sum of bids", run, j, r["total"]))
                add(_rows("total", "pot", run, j, p["golds"]))
            elif game == "public_goods":
                for i, c in enumerate(r["contributions"]):
                    add(_rows("contributions", "contribution", run, j, c, i))
                add(_rows("contributions", "mean", run, j, sum(r["contributions"]) / n))
                add(_rows("gains", "mean gain", run, j, sum(r["gain"]) / n))
                add(_rows("gains", "mean tokens after", run, j, sum(r["tokens_after"]) / n))
            elif game == "diner":
                add(_rows("orders", "cheap", run, j, r["cheap"] / n))
                add(_rows("orders", "costly", run, j, r["costly"] / n))
            elif game == "auction":
                for i, (v, b) in enumerate(zip(r["valuations"], r["bids"], strict=True)):
                    add(_rows("bids", "bid", run, v, b, i))
                ratios = [b / v for v, b in zip(r["valuations"], r["bids"], strict=True) if v > 0]
                add(_rows("shading", "mean", run, j, sum(ratios) / len(ratios) if ratios else math.nan))
            elif game == "battle_royale":
                if j == 1:
                    add(_rows("survivors", "players left", run, 0, len(r["survivors_before"])))
                add(_rows("survivors", "players left", run, j, len(r["survivors"])))
                if r["target"] is None:
                    add(_rows("shots", "intentional miss", run, j, r["shooter"], r["shooter"]))
                else:
                    series = "hit" if r["hit"] else "missed"
                    add(_rows("shots", series, run, j, r["target"], r["shooter"]))
                if r["strongest_other"] is not None:
                    add(_rows("shots", "strongest other", run, j, r["strongest_other"], r["shooter"]))
            elif game == "pirate":
                proposer, plan = r["proposer"], r["plan"]
                best = optimal_plan(proposer, n, p["gold"])
                add(_rows("proposals", "proposer keeps", run, proposer, plan[0], proposer - 1))
                add(_rows("proposals", "optimal keeps", run, proposer, best[0]))
                distance = sum(abs(a - b) for a, b in zip(plan, best, strict=True))
                add(_rows("proposals", "L1 distance to optimal", run, proposer, distance))
                add(_rows("votes", "for the plan", run, proposer, r["accepted_count"]))
                add(_rows("votes", "needed", run, proposer, math.ceil(r["pirates"] / 2)))
                for vote in r["votes"]:
                    rank = vote["player"] + 1
                    add(_rows("ballots", vote["action"], run, proposer, rank, vote["player"]))
        if game == "auction":  # the diagonal, once per run over the valuations seen
            values = sorted({v for r in result["rounds"] for v in r["valuations"]})
            if values:
                add(_rows("bids", "bid = valuation", run, values[0], values[0]))
                add(_rows("bids", "bid = valuation", run, values[-1], values[-1]))
    return pd.DataFrame(rows, columns=COLUMNS)


def draw(game: str, data: pd.DataFrame, path: Path, title: str) -> Path | None:
    """Draw ``data`` (from :func:`plot_data`): one PNG, a panel per ``panel``; None without matplotlib."""
    plt = pyplot()
    if plt is None or data.empty:
        return None
    from matplotlib.ticker import MaxNLocator

    panels = [name for name in PANELS[game] if name in set(data["panel"])]
    runs = sorted(data["run"].dropna().unique())
    colours = plt.get_cmap("tab10")
    colour = {run: colours(k % 10) for k, run in enumerate(runs)}
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        heading, xlabel, ylabel = PANELS[game][panel]
        frame = data[data["panel"] == panel]
        series_names = list(dict.fromkeys(frame["series"]))
        markers = dict(zip(series_names, "o^sDvP*X", strict=False))
        linestyles = dict(zip(series_names, ["-", "--", ":", "-."] * 3, strict=False))
        for series in series_names:
            part = frame[frame["series"] == series]
            style = STYLE.get(series, "line")
            if style == "reference":
                first = part[part["run"] == part["run"].iloc[0]].sort_values("x")
                ax.plot(first["x"], first["y"], "k--", lw=1.2, label=series, zorder=3)
                continue
            for run in runs:
                sub = part[part["run"] == run].sort_values("x")
                if sub.empty:
                    continue
                label = f"{series}, run {run}" if len(runs) > 1 else series
                if style == "points":
                    ax.scatter(sub["x"], sub["y"], s=10, alpha=0.35, color=colour[run], label=label, zorder=1)
                elif style == "marks":
                    ax.scatter(
                        sub["x"],
                        sub["y"],
                        s=34,
                        marker=markers[series],
                        color=colour[run],
                        label=label,
                        zorder=4,
                    )
                elif style == "faint":
                    ax.plot(
                        sub["x"], sub["y"], color="0.6", lw=0.8, drawstyle="steps-mid", label=label, zorder=0
                    )
                else:
                    ax.plot(
                        sub["x"],
                        sub["y"],
                        linestyles[series],
                        marker=".",
                        color=colour[run],
                        lw=1.4,
                        label=label,
                        zorder=2,
                    )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if panel in {"survivors", "shots", "ballots", "attendance", "votes"}:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(heading, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        if len(unique) <= 14:
            ax.legend(unique.values(), unique.keys(), fontsize=7, loc="best")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_plots(
    results: list[dict[str, Any]], out_dir: Path, titles: dict[str, str]
) -> dict[str, dict[str, Path]]:
    """For each game in ``results``: ``<game>.csv`` (the plotted data) and ``<game>.png`` when possible."""
    output_dir(out_dir.parent, out_dir.name)  # RUN/plots: a link there is replaced by a folder
    written: dict[str, dict[str, Path]] = {}
    for game in dict.fromkeys(r["game"] for r in results):
        if game not in PANELS:
            continue
        data = plot_data(game, [r for r in results if r["game"] == game])
        files = {"csv": out_dir / f"{game}.csv"}
        write_csv(data, files["csv"])
        png = draw(game, data, out_dir / f"{game}.png", titles.get(game, game))
        if png is not None:
            files["png"] = png
        written[game] = files
    return written
