"""A GAMA-Bench leaderboard across run directories (``llmpsych gamabench leaderboard RUN_DIR...``).

Every finished game of the given ``gamabench`` runs is scored with :func:`llmpsych.games.scoring.score` on
the record :func:`llmpsych.games.analysis.scoring_log` builds (the scorer of the live games' report and of
``score-logs``), then summarised per model with :func:`llmpsych.games.score_logs.score_runs`: each game's
mean ± sample SD over runs, and the overall (mean of the eight games; SD over the per-run overall scores,
run *i* paired across games). Several directories of one model pool their runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import LlmpsychError
from ..report.charts import pyplot
from ..report.markdown import table, write_report
from ..runs.store import STORE_FILE, RunStore
from . import scoring
from .analysis import scoring_log
from .score_logs import GAME_KEYS, LogRun, ModelScores, score_runs, to_json
from .scoring import GAME_TITLES, GAMES, ScoringVersion

#: Engine game name -> scoring game name (``scoring.GAMES``).
SCORING_NAME: dict[str, str] = {
    "guessing": "guessing_game",
    "bar": "bar_game",
    "divide_dollar": "divide_dollar",
    "public_goods": "public_goods",
    "diner": "diner_dilemma",
    "auction": "sealed_bid_auction",
    "battle_royale": "battle_royale",
    "pirate": "pirate_game",
}


@dataclass(frozen=True)
class ScoredGame:
    """One finished game of a run directory with its 0-100 score (None when it cannot be scored)."""

    run_dir: Path
    model: str
    game: str  # engine name
    run: int
    score: float | None
    result: dict[str, Any]


@dataclass
class RunDirInfo:
    """What a run directory holds: its model label, settings and scored games."""

    run_dir: Path
    model: str
    temperature: Any
    options: dict[str, Any]
    games: list[ScoredGame] = field(default_factory=list)
    unfinished: int = 0

    def settings(self) -> str:
        """A one-line description of the non-default settings."""
        o = self.options
        parts = [f"temperature {self.temperature}"]
        for key, default in (("players", 10), ("rounds", 20), ("prompts", "builtin")):
            if key in o and o[key] != default:
                parts.append(f"{key} {o[key]}")
        for key in ("prompt_version", "persona", "cot", "seats"):
            if o.get(key) not in (None, 1 if key == "prompt_version" else None):
                parts.append(f"{key} {o[key]}")
        for game in SCORING_NAME:
            if o.get(game):
                parts.append(f"{game} {o[game]}")
        return ", ".join(parts)


def read_run_dir(run_dir: Path, *, version: ScoringVersion = "thesis", compat: bool = False) -> RunDirInfo:
    """Score every finished game of one ``gamabench`` run directory (never calls a model)."""
    run_dir = Path(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise LlmpsychError(f"no run found in {run_dir}", f"expected {run_dir / STORE_FILE}")
    store = RunStore.in_dir(run_dir)
    try:
        config = store.get_meta("config") or {}
        units = store.units()
    finally:
        store.close()
    if config.get("task") != "gamabench":
        raise LlmpsychError(f"{run_dir} is a {config.get('task', '?')!r} run, not a gamabench run")
    options = config.get("options") or {}
    model = str(config.get("model", "?"))
    if options.get("seats"):
        model += " (mixed seats)"
    info = RunDirInfo(run_dir, model, (config.get("params") or {}).get("temperature"), options)
    for unit in units:
        if unit.status != "done":
            info.unfinished += 1
            continue
        result = unit.result
        info.games.append(
            ScoredGame(
                run_dir,
                model,
                result["game"],
                int(result["run"]),
                game_score(result, version, compat),
                result,
            )
        )
    return info


def game_score(
    result: dict[str, Any], version: ScoringVersion = "thesis", compat: bool = False
) -> float | None:
    """The 0-100 score of one engine game result, or None when it cannot be scored (e.g. no rounds)."""
    try:
        return float(scoring.score(scoring_log(result, scoring), version=version, compat=compat))
    except (ValueError, TypeError, ZeroDivisionError, KeyError):
        return None


def log_runs(infos: Sequence[RunDirInfo], label: Mapping[Path, str] | None = None) -> list[LogRun]:
    """The scored games as :class:`LogRun` records for :func:`score_runs`, grouped by model (or ``label``).

    Run numbers are made unique per group: run ``r`` of the ``k``-th directory of a group becomes the
    ``(k, r)``-th run, so runs pair across games within a directory, and directories add runs.
    """
    keys: dict[str, dict[tuple[int, int], int]] = {}
    dirs: dict[str, dict[Path, int]] = {}
    runs = []
    for info in infos:
        name = label[info.run_dir] if label else info.model
        seen = dirs.setdefault(name, {})
        k = seen.setdefault(info.run_dir, len(seen))
        for g in info.games:
            if g.score is None or g.game not in SCORING_NAME:
                continue
            numbers = keys.setdefault(name, {})
            number = numbers.setdefault((k, g.run), len(numbers) + 1)
            log = scoring_log(g.result, scoring)
            runs.append(LogRun(name, SCORING_NAME[g.game], number, g.run_dir, log, g.score))
    return runs


def leaderboard(
    run_dirs: Iterable[Path], *, version: ScoringVersion = "thesis", compat: bool = False
) -> tuple[dict[str, ModelScores], list[RunDirInfo]]:
    """Per model: each game's mean ± SD over runs and the overall, from the given run directories."""
    infos = [read_run_dir(Path(d), version=version, compat=compat) for d in run_dirs]
    return score_runs(log_runs(infos)), infos


def _fmt(mean: float | None, sd: float | None) -> str:
    if mean is None or math.isnan(mean):
        return "-"
    return f"{mean:.1f}" if sd is None or math.isnan(sd) else f"{mean:.1f} ± {sd:.1f}"


def leaderboard_frame(scores: Mapping[str, ModelScores], first_column: str = "model") -> pd.DataFrame:
    """One row per model (or label): ``mean ± sd`` per game (thesis order), runs, overall; best overall
    first."""
    rows = []
    for name, s in scores.items():
        row: dict[str, Any] = {first_column: name}
        for g in GAMES:
            summary = s.games.get(g)
            row[GAME_TITLES[g]] = "-" if summary is None else _fmt(summary.mean, summary.sd)
        counts = sorted({v.n for v in s.games.values()})
        row["runs"] = (
            "-" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        )
        row["Overall"] = _fmt(s.overall_mean, s.overall_sd)
        row["_sort"] = -1.0 if s.overall_mean is None else s.overall_mean
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values("_sort", ascending=False, kind="stable").drop(columns="_sort")


def leaderboard_chart(scores: Mapping[str, ModelScores], path: Path, title: str) -> Path | None:
    """Grouped bars (games and overall on the x axis, one bar per model, ± SD) as PNG; None without
    matplotlib (``pip install 'llmpsych[plots]'``)."""
    plt = pyplot()
    if plt is None:
        return None
    groups = [*GAMES, "overall"]
    names = list(scores)
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(8.0, 0.8 * len(groups) + 0.2 * len(groups) * len(names)), 4.2))
    for i, name in enumerate(names):
        s = scores[name]
        means, sds = [], []
        for g in groups:
            if g == "overall":
                means.append(math.nan if s.overall_mean is None else s.overall_mean)
                sds.append(0.0 if s.overall_sd is None else s.overall_sd)
            else:
                summary = s.games.get(g)
                means.append(math.nan if summary is None else summary.mean)
                sds.append(0.0 if summary is None or math.isnan(summary.sd) else summary.sd)
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, means, width, yerr=sds, capsize=2, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([GAME_TITLES.get(g, "Overall") for g in groups], rotation=25, ha="right")
    ax.set_ylim(0, 100 + 8 * ((len(names) + 2) // 3))  # room for the legend
    ax.set_ylabel("score (0-100)")
    ax.set_title(title)
    ax.legend(fontsize="small", ncols=min(3, max(1, len(names))), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_leaderboard(
    scores: Mapping[str, ModelScores],
    infos: Sequence[RunDirInfo],
    out: Path,
    *,
    title: str = "GAMA-Bench leaderboard",
    scoring_note: str = "thesis scoring, llmpsych's corrected Pirate/Diner rules",
    first_column: str = "model",
    extra: Sequence[tuple[str, str]] = (),
) -> list[Path]:
    """Write ``leaderboard.md`` (with the chart), ``leaderboard.csv``, ``leaderboard.json`` and
    ``leaderboard.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    frame = leaderboard_frame(scores, first_column)
    paths = [out / "leaderboard.csv", out / "leaderboard.json"]
    frame.to_csv(paths[0], index=False)
    paths[1].write_text(json.dumps(to_json(scores), indent=1), encoding="utf-8")
    chart = leaderboard_chart(scores, out / "leaderboard.png", title)
    notes = [s.note for s in scores.values() if s.note]
    runs_table = pd.DataFrame(
        [
            {
                "run directory": str(i.run_dir),
                first_column: i.model,
                "games scored": sum(g.score is not None for g in i.games),
                "not scored": sum(g.score is None for g in i.games),
                "unfinished": i.unfinished,
                "settings": i.settings(),
            }
            for i in infos
        ]
    )
    measured = (
        f"Each game's 0-100 score (higher is closer to equilibrium play; {scoring_note}) as mean ± sample "
        "SD (ddof = 1) over runs; Overall is the mean of the eight game scores, its SD that of the per-run "
        "overall scores (run i paired across games; spec §1.3). Games scored with `llmpsych.games.scoring`, "
        "the scorer of the live report and of `score-logs`."
    )
    sections = [("What is shown", measured), ("Scores", table(frame))]
    if chart:
        sections.append(("Chart", f"![leaderboard]({chart.name})"))
        paths.append(chart)
    sections.extend(extra)
    if notes:
        sections.append(("Notes", "\n".join(f"- {n}" for n in notes)))
    sections.append(("Run directories", table(runs_table)))
    paths.append(write_report(out / "leaderboard.md", title, sections))
    return paths


__all__ = [
    "GAME_KEYS",
    "SCORING_NAME",
    "RunDirInfo",
    "ScoredGame",
    "game_score",
    "leaderboard",
    "leaderboard_chart",
    "leaderboard_frame",
    "log_runs",
    "read_run_dir",
    "write_leaderboard",
]
