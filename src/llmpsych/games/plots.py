"""Per-game plots of a gamabench run, in the manner of thesis Fig. 6.2/6.3, and the data behind them.

:func:`plot_data` turns the finished games of one game name (all its runs) into a long table — one row per
plotted point: ``panel``, ``series``, ``run``, ``x``, ``y`` (and ``player`` where it applies). The PNG
(matplotlib, the ``plots`` extra) draws exactly that table, and the table is written next to it as CSV,
so what a plot shows can be checked without looking at pixels. The points of people's seats (``human``,
``web``) are marked (``person`` column; a black star, legend "person"), so a plot of a session with people
never passes their answers off as a model's.

Each game's panels and series are defined in its module (``panels`` and ``plot_points``); for the
eight paper games (x is the round unless said otherwise):

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

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.charts import pyplot
from ..report.files import output_dir, save_figure, write_csv
from . import registry
from .result import PERSON_KINDS, GamaBenchResult, as_result

COLUMNS = ["panel", "series", "run", "x", "y", "player", "person"]
#: The legend label of the points of people's seats (``human`` / ``web``), drawn over the others.
PERSON = "person"


class _Panels(Mapping[str, dict[str, tuple[str, str, str]]]):
    """Each registered game's plot panels (a live view of the games' ``panels``)."""

    def __getitem__(self, game: str) -> dict[str, tuple[str, str, str]]:
        return registry.get(game).panels

    def __iter__(self) -> Iterator[str]:
        return iter(registry.names())

    def __len__(self) -> int:
        return len(registry.names())


#: game -> {panel: (title, x label, y label)}
PANELS: Mapping[str, dict[str, tuple[str, str, str]]] = _Panels()

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


def plot_data(game: str, results: Sequence[GamaBenchResult | Mapping[str, Any]]) -> pd.DataFrame:
    """Every plotted point of ``game`` over its runs (``results``: the unit results of that game), from the
    registered game's :meth:`~llmpsych.games.engine.Game.plot_points`; ``person`` is true for a point of a
    person's seat (``human`` / ``web``)."""
    cls = registry.get(game)
    rows: list[dict[str, Any]] = []
    for result in sorted((as_result(r) for r in results), key=lambda r: r.run):
        run = result.run
        seats = [str(s).partition(":")[0].strip().lower() for s in result.seats]
        people = {i for i, kind in enumerate(seats) if kind in PERSON_KINDS}

        def add(
            panel: str, series: str, x: Any, y: Any, player: Any = None, run: Any = run, people: Any = people
        ) -> None:
            person = player in people if isinstance(player, int) else False
            row = {"panel": panel, "series": series, "run": run, "x": x, "y": y, "player": player}
            rows.append({**row, "person": person})

        cls.plot_points(result, add)
    return pd.DataFrame(rows, columns=COLUMNS)


def draw(game: str, data: pd.DataFrame, path: Path, title: str) -> Path | None:
    """Draw ``data`` (from :func:`plot_data`): one PNG, a panel per ``panel``; None without matplotlib."""
    plt = pyplot()
    if plt is None or data.empty:
        return None
    from matplotlib.ticker import MaxNLocator

    spec = registry.get(game).panels
    panels = [name for name in spec if name in set(data["panel"])]
    runs = sorted(data["run"].dropna().unique())
    colours = plt.get_cmap("tab10")
    colour = {run: colours(k % 10) for k, run in enumerate(runs)}
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        heading, xlabel, ylabel = spec[panel]
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
        mine = frame[frame["person"].astype(bool)] if "person" in frame else frame.iloc[0:0]
        if not mine.empty:  # people's seats: marked over whatever the series drew
            ax.scatter(
                mine["x"],
                mine["y"],
                s=70,
                marker="*",
                facecolors="none",
                edgecolors="k",
                lw=0.9,
                label=PERSON,
                zorder=5,
            )
        values = pd.to_numeric(frame["y"], errors="coerce")
        if values.notna().any() and values.min() >= 0:
            # counts, amounts and shares start at zero, so no gap is exaggerated; all-zero data keeps a scale
            ax.set_ylim(0, None if values.max() > 0 else 1)
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
    results: Sequence[GamaBenchResult | Mapping[str, Any]], out_dir: Path, titles: dict[str, str]
) -> dict[str, dict[str, Path]]:
    """For each game in ``results``: ``<game>.csv`` (the plotted data) and ``<game>.png`` when possible."""
    output_dir(out_dir.parent, out_dir.name)  # RUN/plots: a link there is replaced by a folder
    written: dict[str, dict[str, Path]] = {}
    typed = [as_result(r) for r in results]
    for game in dict.fromkeys(r.game for r in typed):
        if game not in registry.names():
            continue
        data = plot_data(game, [r for r in typed if r.game == game])
        files = {"csv": out_dir / f"{game}.csv"}
        write_csv(data, files["csv"])
        png = draw(game, data, out_dir / f"{game}.png", titles.get(game, game))
        if png is not None:
            files["png"] = png
        written[game] = files
    return written
