"""A GAMA-Bench leaderboard across run directories (``llmpsych gamabench leaderboard RUN_DIR...``).

Every finished game of the given ``gamabench`` runs is scored with :func:`llmpsych.games.scoring.score` on
the record :func:`llmpsych.games.analysis.scoring_log` builds (the scorer of the live games' report and of
``rescore PATHS``), then summarised per model with :func:`llmpsych.games.score_logs.score_runs`: each game's
mean ± sample SD over runs, and the overall (mean of the eight games; SD over the per-run overall scores,
run *i* paired across games). Several directories of one model and setting pool their runs; runs of one
model made with different settings are separate rows, each naming its settings
(:func:`llmpsych.runs.settings.labels_by_settings`), unless ``--pool-settings`` pools them, and then the
report says under the table which settings each row pools.

A game that is not counted is never dropped silently: every unfinished unit, every stored result that is
not a readable game record and every game the scorer refuses (no rounds, answers that put the score
outside 0-100, a game without a scoring record) is recorded in ``RunDirInfo.left_out`` with its reason,
and :func:`left_out_frame` counts them per model, game and reason for the report, ``left_out.csv``, the
``left out`` column of the score table and the command's notes.

A run where people sat at the tables (``human`` or ``web`` seats, e.g. a ``gamabench host`` session) has a
row of its own, named by its run directory (:func:`own_row`): never pooled into a model's row.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ..errors import DataError, LlmpsychError
from ..report.charts import pyplot
from ..report.files import atomic_write_text, output_dir, save_figure, write_csv
from ..report.html import html_beside
from ..report.markdown import table, write_report
from ..runs.record import RunRecord, read_run
from ..runs.store import STORE_FILE
from . import registry, scoring
from .analysis import scoring_log
from .result import GamaBenchResult
from .score_logs import GAME_KEYS, LogRun, ModelScores, score_runs, to_json
from .scoring import GAME_TITLES, GAMES, ScoringVersion
from .seats import HumanSeat, LLMSeat, WebSeat, build_seats

#: Engine game name -> scoring game name, of every registered game.
SCORING_NAME = registry.SCORING_NAMES


def score_columns(scores: Mapping[str, ModelScores]) -> list[str]:
    """The games a leaderboard shows (scoring names): the paper's eight, then any other registered game
    some model has scores for."""
    scored = {g for s in scores.values() for g in s.games}
    return [*GAMES, *(g.scoring_name for g in registry.games() if g.scoring_name in scored - set(GAMES))]


#: Longest reason kept in a report: a scorer's message can quote a hostile answer of any size.
REASON_CHARS = 160
#: Exceptions that mean "this stored game cannot be scored" (anything else is a bug and propagates).
#: (DataError: a stored round that does not fit its game's ``Round``)
UNSCORABLE = (
    ValueError,
    TypeError,
    ZeroDivisionError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    DataError,
)


@dataclass(frozen=True)
class ScoredGame:
    """One finished game of a run directory with its 0-100 score (None when it cannot be scored, and
    then ``reason`` says why) and its stored result, typed (its rounds read through the game's ``Round``:
    :func:`~llmpsych.games.registry.rounds_of`); None when the stored mapping does not parse as a game
    result (and is then never scored)."""

    run_dir: Path
    model: str
    game: str  # engine name
    run: int
    score: float | None
    result: GamaBenchResult | None
    reason: str | None = None


@dataclass(frozen=True)
class LeftOut:
    """One unit of a run directory that the leaderboard does not count, and why."""

    run_dir: Path
    game: str  # engine name, or "?" when the stored unit does not say
    reason: str


@dataclass
class RunDirInfo:
    """What a run directory holds: its model label, settings and scored games."""

    run_dir: Path
    model: str
    temperature: Any
    options: dict[str, Any]
    games: list[ScoredGame] = field(default_factory=list)
    unfinished: int = 0
    left_out: list[LeftOut] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # the stored run config

    @property
    def language(self) -> str:
        """The run's language (:func:`run_language`)."""
        return run_language(self.options)

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
        if o.get("cipher"):
            parts.append(f"cipher jailbreak (shift {o.get('cipher_shift', 3)})")
        if self.language != "en":
            parts.append(f"language {self.language}")
        if isinstance(o.get("template_set"), dict):  # its name, not its texts
            parts.append(f"template set {o['template_set'].get('path')}#{o['template_set'].get('version')}")
        for game in SCORING_NAME:
            if o.get(game):
                parts.append(f"{game} {o[game]}")
        return ", ".join(parts)


def run_language(options: Mapping[str, Any]) -> str:
    """A gamabench run's language from its stored options: its ``language``, else (a run stored before the
    option existed) its template set's, else English (the built-in and official prompts)."""
    from ..runs.languages import OFFICIAL_LANGUAGE

    language = options.get("language")
    template_set = options.get("template_set")
    if not isinstance(language, str) and isinstance(template_set, Mapping):
        language = template_set.get("language")
    return language if isinstance(language, str) and language.strip() else OFFICIAL_LANGUAGE


def by_settings(infos: Sequence[RunDirInfo], *, pool: bool = False) -> list[str]:
    """One row per model and setting: when the runs differ in a setting (temperature, persona, cipher,
    template set, language, ...; :func:`~llmpsych.runs.settings.labels_by_settings`), each run's model
    label names every differing one (``gpt-4o · temperature 0.7``, ``gpt-4o · de``). With ``pool`` the
    labels stay and the returned lines name what was pooled (also written under the table by
    :func:`write_leaderboard`)."""
    from ..runs.settings import labels_by_settings

    labels, notes = labels_by_settings([i.model for i in infos], [i.config for i in infos], pool=pool)
    for info, label in zip(infos, labels, strict=True):
        if label != info.model:
            info.model = label
            info.games = [dataclasses.replace(g, model=label) for g in info.games]
    return notes


def pooled_settings(infos: Sequence[RunDirInfo], label: Mapping[Path, str] | None = None) -> list[str]:
    """The lines that say which settings a row pools (none when every row holds one setting)."""
    from ..runs.settings import config_settings, pooled_notes

    names = [label[i.run_dir] if label else i.model for i in infos]
    return pooled_notes(names, [config_settings(i.config) for i in infos])


def read_run_dir(run_dir: Path, *, version: ScoringVersion = "thesis", published: bool = False) -> RunDirInfo:
    """Score every finished game of one ``gamabench`` run directory (never calls a model)."""
    run_dir = Path(run_dir)
    if not (run_dir / STORE_FILE).is_file():
        raise LlmpsychError(f"no run found in {run_dir}", f"expected {run_dir / STORE_FILE}")
    return run_info(read_run(run_dir), version=version, published=published)


def run_info(record: RunRecord, *, version: ScoringVersion = "thesis", published: bool = False) -> RunDirInfo:
    """Score every finished game of one ``gamabench`` run record. A stored result that is not a game
    record is left out with the reason (a leaderboard of many runs still shows the others)."""
    run_dir, units = record.run_dir, record.units
    config = record.meta.get("config") or {}
    if config.get("task") != "gamabench":
        raise LlmpsychError(f"{run_dir} is a {config.get('task', '?')!r} run, not a gamabench run")
    options = config.get("options") or {}
    model = own_row(model_label(config, options), options, run_dir)
    info = RunDirInfo(run_dir, model, (config.get("params") or {}).get("temperature"), options, config=config)
    seen: set[tuple[str, int]] = set()
    for unit in units:
        payload = unit.payload if isinstance(unit.payload, dict) else {}
        result = unit.result
        named = result.get("game") if isinstance(result, dict) else payload.get("game")
        game = named if isinstance(named, str) and named else "?"
        if unit.status != "done":
            info.unfinished += 1
            info.left_out.append(LeftOut(run_dir, game, f"unfinished (status {_one_line(unit.status)})"))
            continue
        run = result.get("run") if isinstance(result, dict) else None
        if not isinstance(run, int) or isinstance(run, bool) or not isinstance(result.get("game"), str):
            info.left_out.append(
                LeftOut(run_dir, game, "stored result is not a game record with game and run")
            )
            continue
        if (result["game"], run) in seen:
            # two results claiming one run would overwrite each other in the per-run pairing
            info.left_out.append(LeftOut(run_dir, result["game"], f"run {run} of this game stored twice"))
            continue
        seen.add((result["game"], run))
        typed = _parsed(result)
        score, reason = score_or_reason(result if typed is None else typed, version, published)
        info.games.append(ScoredGame(run_dir, model, result["game"], run, score, typed, reason))
        if score is None:
            info.left_out.append(LeftOut(run_dir, result["game"], reason or "cannot be scored"))
    return info


def model_label(config: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """Who a run's scores belong to: its model, marked ``(mixed seats)`` when seats were set; a table of
    human, fixed or python: seats only names no model (it is labelled by its seats)."""
    model = str(config.get("model", "?"))
    if not options.get("seats"):
        return model
    try:
        seats = build_seats(options["seats"], int(options.get("players", 10)), load=False)
    except (LlmpsychError, TypeError, ValueError):
        return model + " (mixed seats)"
    roles_table = config.get("models")
    models: Mapping[str, Any] = roles_table if isinstance(roles_table, Mapping) else {}
    roles = dict.fromkeys(s.role for s in seats if isinstance(s, LLMSeat))
    if not roles:
        return "no model (seats " + ", ".join(dict.fromkeys(s.spec for s in seats)) + ")"
    names = [
        model if role == "subject" else str(_role_model(models.get(role)) or f"role {role}") for role in roles
    ]
    return ", ".join(names) + " (mixed seats)"


def own_row(label: str, options: Mapping[str, Any], run_dir: Path) -> str:
    """``label``, or for a run where people sat at the tables (``human`` / ``web`` seats) a label of its
    own naming the run directory: a session with people is never pooled into a model's row (nor with
    another session), since its scores measure the people's answers (and the defaults entered for them)
    as much as the model's."""
    return f"{label} · with people, {run_dir}" if with_people(options) else label


def with_people(options: Mapping[str, Any]) -> bool:
    """Whether a run's stored options seat a person (``human`` or ``web``) at its tables."""
    try:
        seats = build_seats(options.get("seats"), int(options.get("players", 10)), load=False)
    except (LlmpsychError, TypeError, ValueError):
        return False
    return any(isinstance(seat, HumanSeat | WebSeat) for seat in seats)


def _role_model(value: Any) -> Any:
    return value.get("model") if isinstance(value, Mapping) else value


def _parsed(result: Mapping[str, Any]) -> GamaBenchResult | None:
    """A stored game result typed, or None when it does not parse (the scorer then says why)."""
    try:
        return GamaBenchResult.model_validate(result)
    except ValidationError:
        return None


def game_score(
    result: GamaBenchResult | Mapping[str, Any], version: ScoringVersion = "thesis", published: bool = False
) -> float | None:
    """The 0-100 score of one engine game result, or None when it cannot be scored (e.g. no rounds)."""
    return score_or_reason(result, version, published)[0]


def score_or_reason(
    result: GamaBenchResult | Mapping[str, Any], version: ScoringVersion = "thesis", published: bool = False
) -> tuple[float | None, str | None]:
    """``(score, None)``, or ``(None, reason)`` with the scorer's message on one line (at most
    ``REASON_CHARS`` characters) when the game cannot be scored (a stored mapping is parsed first: one
    that does not parse as a game result is a reason too)."""
    game = result.game if isinstance(result, GamaBenchResult) else result.get("game")
    if game not in SCORING_NAME:
        return None, f"not a GAMA-Bench game: {_one_line(repr(game))}"
    try:
        return float(scoring.score(scoring_log(result, scoring), version=version, published=published)), None
    except UNSCORABLE as error:
        return None, f"cannot be scored: {_one_line(f'{type(error).__name__}: {error}')}"


def _one_line(text: str) -> str:
    """``text`` on one line, at most ``REASON_CHARS`` characters, safe inside a Markdown table cell."""
    flat = " ".join(str(text).split()).replace("|", "/")
    return flat if len(flat) <= REASON_CHARS else flat[: REASON_CHARS - 1] + "…"


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
            if g.score is None or g.result is None or g.game not in SCORING_NAME:
                continue
            numbers = keys.setdefault(name, {})
            number = numbers.setdefault((k, g.run), len(numbers) + 1)
            log = scoring_log(g.result, scoring)
            runs.append(LogRun(name, SCORING_NAME[g.game], number, g.run_dir, log, g.score))
    return runs


def left_out_frame(
    infos: Sequence[RunDirInfo], label: Mapping[Path, str] | None = None, first_column: str = "model"
) -> pd.DataFrame:
    """Runs not counted, per model (or ``label``), game and reason: ``first_column``, ``game``,
    ``runs left out``, ``reason``, ``run directories`` (empty frame with these columns when none)."""
    counts: dict[tuple[str, str, str], list[str]] = {}
    for info in infos:
        name = label[info.run_dir] if label else info.model
        for item in info.left_out:
            scoring_name = SCORING_NAME.get(item.game)
            game = GAME_TITLES[scoring_name] if scoring_name else _one_line(item.game)
            counts.setdefault((name, game, item.reason), []).append(str(info.run_dir))
    columns = [first_column, "game", "runs left out", "reason", "run directories"]
    rows = [
        [name, game, len(dirs), reason, ", ".join(dict.fromkeys(dirs))]
        for (name, game, reason), dirs in counts.items()
    ]
    return pd.DataFrame(rows, columns=columns)


def left_out_notes(
    left_out: pd.DataFrame, first_column: str = "model", limit: int | None = None
) -> list[str]:
    """One line per model, game and reason: ``MODEL: GAME: N run(s) left out: REASON``; past ``limit``
    lines (hostile answers make many distinct reasons) one more line says how many are in the table."""
    lines = [
        f"{r[first_column]}: {r['game']}: {r['runs left out']} run(s) left out: {r['reason']}"
        for r in left_out.to_dict("records")
    ]
    if limit is not None and len(lines) > limit:
        rest = lines[limit:]
        runs = int(left_out["runs left out"].iloc[limit:].sum())
        lines = [*lines[:limit], f"{len(rest)} more reason(s), {runs} run(s): see left_out.csv"]
    return lines


def leaderboard(
    run_dirs: Iterable[Path],
    *,
    version: ScoringVersion = "thesis",
    published: bool = False,
    pool_settings: bool = False,
) -> tuple[dict[str, ModelScores], list[RunDirInfo]]:
    """Per model and setting (:func:`by_settings`; ``pool_settings``: per model, the pooled settings
    named by :func:`pooled_settings`): each game's mean ± SD over runs and the overall, from the given
    run directories."""
    infos = [read_run_dir(Path(d), version=version, published=published) for d in run_dirs]
    by_settings(infos, pool=pool_settings)
    return score_runs(log_runs(infos)), infos


def _fmt(mean: float | None, sd: float | None) -> str:
    from ..stats import format_mean_sd  # scipy loads on first use

    return "-" if mean is None else format_mean_sd(mean, sd)


def leaderboard_frame(
    scores: Mapping[str, ModelScores], first_column: str = "model", left_out: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per model (or label): ``mean ± sd`` per game (thesis order), runs, overall; best overall
    first. With ``left_out`` (:func:`left_out_frame`) a ``left out`` column counts the runs not scored,
    and a model none of whose runs could be scored still has its row (all ``-``)."""
    rows = []
    columns = score_columns(scores)
    missing = {} if left_out is None else {n: None for n in left_out[first_column] if n not in scores}
    for name, s in [*scores.items(), *((n, ModelScores({}, None, None)) for n in missing)]:
        row: dict[str, Any] = {first_column: name}
        for g in columns:
            summary = s.games.get(g)
            row[GAME_TITLES[g]] = "-" if summary is None else _fmt(summary.mean, summary.sd)
        counts = sorted({v.n for v in s.games.values()})
        row["runs"] = (
            "-" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        )
        row["Overall"] = _fmt(s.overall_mean, s.overall_sd)
        if left_out is not None:
            row["left out"] = int(left_out.loc[left_out[first_column] == name, "runs left out"].sum())
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
    groups = [*score_columns(scores), "overall"]
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
    save_figure(fig, path, dpi=120)
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
    label: Mapping[Path, str] | None = None,
) -> list[Path]:
    """Write ``leaderboard.md`` (with the chart and the runs left out), ``leaderboard.csv``,
    ``leaderboard.json``, ``left_out.csv`` and ``leaderboard.png`` into ``out``."""
    output_dir(out)
    left_out = left_out_frame(infos, label, first_column)
    frame = leaderboard_frame(scores, first_column, left_out)
    paths = [out / "leaderboard.csv", out / "leaderboard.json", out / "left_out.csv"]
    write_csv(frame, paths[0])
    write_csv(left_out, paths[2])
    atomic_write_text(paths[1], json.dumps(to_json(scores), indent=1))
    chart = leaderboard_chart(scores, out / "leaderboard.png", title)
    notes = [s.note for s in scores.values() if s.note]
    runs_table = pd.DataFrame(
        [
            {
                "run directory": str(i.run_dir),
                first_column: i.model,
                "games scored": sum(g.score is not None for g in i.games),
                "not scored": len(i.left_out) - i.unfinished,
                "unfinished": i.unfinished,
                "settings": i.settings(),
            }
            for i in infos
        ]
    )
    measured = (
        f"Each game's 0-100 score (higher is closer to equilibrium play; {scoring_note}) as mean ± sample "
        "SD (ddof = 1) over runs; Overall is the mean of the eight game scores, its SD that of the per-run "
        "overall scores (run i paired across games). Games scored with `llmpsych.games.scoring`, "
        "the scorer of the live report and of `rescore PATHS`."
    )
    pooled = pooled_settings(infos, label)
    scores_text = table(frame)
    if pooled:
        scores_text += "\n\nRows pooling runs made with different settings:\n\n" + "\n".join(
            f"- {line}" for line in pooled
        )
    sections = [("What is shown", measured), ("Scores", scores_text)]
    if chart:
        sections.append(("Chart", f"![leaderboard]({chart.name})"))
        paths.append(chart)
    sections.extend(extra)
    if notes:
        sections.append(("Notes", "\n".join(f"- {n}" for n in notes)))
    counted = (
        "Every run the scores above do not count, per game and reason (also in `left_out.csv`): "
        "unfinished units, stored results that are not game records, and games the scorer refuses."
    )
    sections.append(("Left out", counted + "\n\n" + (table(left_out) if not left_out.empty else "none")))
    sections.append(("Run directories", table(runs_table)))
    paths.append(write_report(out / "leaderboard.md", title, sections))
    return html_beside(paths)


__all__ = [
    "GAME_KEYS",
    "SCORING_NAME",
    "LeftOut",
    "RunDirInfo",
    "ScoredGame",
    "by_settings",
    "game_score",
    "leaderboard",
    "leaderboard_chart",
    "leaderboard_frame",
    "left_out_frame",
    "left_out_notes",
    "log_runs",
    "pooled_settings",
    "read_run_dir",
    "run_language",
    "score_or_reason",
    "write_leaderboard",
]
