"""Tables and a report from a gamabench run record (never calls a model, never opens the store).

Writes ``rounds.csv`` (one row per game round), ``decisions.csv`` (one row per asked decision),
``games.csv`` (one row per game run with its raw summary and its 0-100 score, from the registered
game's scorer), ``plots/<game>.png`` with the plotted data in ``plots/<game>.csv``
(:mod:`llmpsych.games.plots`), ``transcripts/<game>-run<k>.md`` (every model seat's conversation, from
the stored calls: :mod:`llmpsych.games.transcripts`) and ``report.md``, which links the plots and
transcripts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from ..errors import DataError
from ..report.files import write_csv
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.provenance import DEFAULTED
from . import registry, scoring
from .engine import GameRound
from .plots import write_plots
from .result import GamaBenchResult, answers_text, as_result, stored_results
from .seats import LLMSeat, build_seats
from .transcripts import write_transcripts

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..runs.config import RunConfig
    from ..runs.record import RunRecord


class GamaBenchRunOptions(Protocol):
    """The options of the run that the analysis reads (the task's own options model)."""

    @property
    def runs(self) -> int: ...
    @property
    def players(self) -> int: ...
    @property
    def rounds(self) -> int: ...
    @property
    def seats(self) -> list[str] | dict[int, str] | None: ...
    @property
    def prompts(self) -> str: ...
    @property
    def prompt_version(self) -> int: ...
    @property
    def persona(self) -> int | None: ...
    @property
    def cot(self) -> int | None: ...
    @property
    def published(self) -> bool: ...


class GamaBenchTask(Protocol):
    """What the analysis reads of the task that ran (the task itself; analysis never builds one), so the
    analysis does not import the task module that calls it."""

    config: RunConfig
    params: dict[str, BaseModel]

    @property
    def options(self) -> GamaBenchRunOptions: ...


def decision_rows(result: GamaBenchResult | Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every decision of a game result (:meth:`GamaBenchResult.decisions`)."""
    return as_result(result).decisions()


def round_rows(result: GamaBenchResult | Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per round with its outcome fields (:meth:`GamaBenchResult.round_rows`)."""
    return as_result(result).round_rows()


def scoring_log(result: GamaBenchResult | Mapping[str, Any], scoring: Any = None) -> Any:
    """The scoring record of one engine result, built by its registered game (``scoring`` is unused and
    kept for callers that pass the module)."""
    typed = as_result(result)
    try:
        game = registry.get(typed.game)
    except KeyError:
        raise ValueError(f"no scoring record for game {typed.game!r}") from None
    return game.scoring_log(typed)


def game_score(result: GamaBenchResult | Mapping[str, Any], published: bool = False) -> float | None:
    """The paper's 0-100 score (thesis version) of one game result, or None when it cannot be scored
    (e.g. too few rounds); ``published=False`` applies llmpsych's documented corrections."""
    try:
        return float(scoring.score(scoring_log(result), published=published))
    except (ValueError, TypeError, ZeroDivisionError, KeyError, DataError):
        return None


def analyze_record(record: RunRecord, task: GamaBenchTask) -> list[Path]:
    """Write the tables and the report of a gamabench run from its record (the store is not opened)."""
    run_dir = record.run_dir
    results = [result for _, result in stored_results(record)]
    failed = [u for u in record.units if u.status != "done"]
    decisions = pd.DataFrame([row for r in results for row in r.decisions()])
    rounds = pd.DataFrame([row for r in results for row in r.round_rows()])
    game_rows = []
    for r in results:
        mine = r.answers()
        first_try = sum(1 for d in mine if d.answer.asks == 1 and not d.answer.fallback)
        game_rows.append(
            {
                "game": r.game,
                "run": r.run,
                "rounds_played": len(r.rounds),
                **{k: v for k, v in r.summary.items() if not isinstance(v, list | dict)},
                "fallbacks": r.fallbacks,
                "valid_first_try": first_try / len(mine) if mine else math.nan,
                "score": game_score(r, task.options.published),
            }
        )
    games = pd.DataFrame(game_rows)
    seat_files = write_seat_scores(results, task, run_dir)  # per seat and per kind (mixed tables)
    titles = {game: registry.get(game).title for game in task.params if game in registry.names()}
    plots = write_plots(results, run_dir / "plots", titles)
    transcripts = write_transcripts(record, run_dir / "transcripts", titles)
    # answers of human and python: seats are stored beside the model calls (so a resume replays them)
    human = sum(d.answer.asks or 0 for r in results for d in r.answers() if _recorded_seat(d.answer.seat))
    n_calls = len(record.calls)
    sections = _sections(task, games, results, failed, n_calls - human, record.manifest, plots, transcripts)
    people = people_text(results, task)
    if people:
        sections.insert(2, ("Answers of people", people))
    return write_run_report(
        run_dir,
        "llmpsych GAMA-Bench report",
        sections,
        tables=[("decisions", decisions), ("rounds", rounds), ("games", games)],
        files=[
            *seat_files,
            *(path for files in plots.values() for path in files.values()),
            *(path for paths in transcripts.values() for path in paths),
        ],
    )


def _recorded_seat(spec: Any) -> bool:
    """Whether a seat's answers are stored beside the model calls (``human`` and ``python:`` seats)."""
    return str(spec).partition(":")[0].strip().lower() in {"human", "user", "python", "web"}


#: The columns of ``seats.csv`` / ``seat_kinds.csv`` when people sat at the tables (``human`` or ``web``
#: seats): their answers by how they came (the payoffs and the mean action of a person count typed answers
#: only; the defaults entered for them are reported beside, never mixed in).
ANSWERS = "answers"
TYPED = "typed answers"
DEFAULTS = "default answers"
DEADLINE = "deadline defaults"
EXPERIMENTER = "experimenter defaults"
SKIPPED_N = "skipped answers"
REPEATED_N = "repeated answers"
STAND_IN_N = "stand-in answers"
NEVER_JOINED = "never joined defaults"
UNKNOWN_HOW = "answers of unrecorded origin"
#: The count column of each way a person's answer came (``seats.csv``), in the provenance's order.
HOW_COLUMNS = {
    "typed": TYPED,
    "deadline": DEADLINE,
    "default": EXPERIMENTER,
    "skipped": SKIPPED_N,
    "repeated": REPEATED_N,
    "stand-in": STAND_IN_N,
    "never joined": NEVER_JOINED,
    "unknown": UNKNOWN_HOW,
}
#: Count columns: totals (not means) over a model's or person's seats in ``seat_kinds.csv``.
COUNTS = ("mean action n", TYPED, DEFAULTS, *list(HOW_COLUMNS.values())[1:])


def _payoffs(rounds: Sequence[GameRound], player: int, kept: set[Any] | None) -> dict[str, Any]:
    """A player's payoffs from the typed rounds (:meth:`GameRound.payoff`): rounds won, total gain and
    final tokens, where every round of the game has them; with ``kept``, over those rounds only (final
    tokens only when every round is kept: they carry every earlier round)."""
    out: dict[str, Any] = {}
    paid = [x.payoff(player) for x in rounds]
    chosen = [p for x, p in zip(rounds, paid, strict=True) if kept is None or x.round in kept]
    if paid and all(p.won is not None for p in paid):
        out["rounds won"] = sum(bool(p.won) for p in chosen)
    if paid and all(p.gain is not None for p in paid):
        out["total gain"] = round(sum(p.gain or 0 for p in chosen), 2)
        whole = kept is None or len(chosen) == len(rounds)
        out["final tokens"] = paid[-1].tokens if whole else math.nan
    return out


def seat_scores(results: Sequence[GamaBenchResult], task: GamaBenchTask) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores per seat and per player kind in mixed tables (people and models at one table).

    Per seat (one row per game run and player): its seat, who it is (the model of a model seat, else the
    seat spec), decisions, fallbacks, mean numeric action (and its n), and the payoffs the game's round
    records give per player: rounds won (``winners``, Guess 2/3) and total gain and final tokens
    (``gain`` / ``tokens_after``, Public Goods).

    When people sat at the tables (``human`` / ``web`` seats), a person's mean action and payoffs count
    the answers they typed only (rounds in which every answer of theirs was typed); beside them, ``answers``
    says ``typed 2 of 5 (3 deadline defaults)``, with the counts by how they came and the payoffs of the
    defaulted rounds (``... of default rounds``). Per player: the same averaged over that player's seats
    and runs, the answer counts totalled.
    """
    specs = task.config.role_specs()
    people = any(seat.person for r in results for seat in r.seat_info(specs))
    rows = []
    for r in results:
        decisions = r.answers()
        rounds = registry.rounds_of(r)
        for seat in r.seat_info(specs):
            player = seat.player
            mine = [d for d in decisions if d.answer.player == player]
            counted = [d for d in mine if d.how == "typed"] if seat.person else mine
            numbers = [float(d.answer.action) for d in counted if isinstance(d.answer.action, int | float)]
            row: dict[str, Any] = {
                "game": r.game,
                "run": r.run,
                "player": player,
                "seat": seat.spec,
                "who": seat.who,
                "decisions": len(mine),
                "fallbacks": sum(d.answer.fallback for d in mine),
                "mean action": sum(numbers) / len(numbers) if numbers else math.nan,
                "mean action n": len(numbers),
            }
            if seat.person:
                untyped = {d.round for d in mine if d.how != "typed"}
                typed_rounds = {d.round for d in mine} - untyped
                row.update(_payoffs(rounds, player, typed_rounds))
            else:
                row.update(_payoffs(rounds, player, None))
            if people:
                hows = Counter(d.how for d in mine)
                row[ANSWERS] = answers_text(hows) if seat.person else ""
                if seat.person:
                    row[TYPED] = hows["typed"]
                    row[DEFAULTS] = sum(hows[h] for h in DEFAULTED)
                    for how, column in list(HOW_COLUMNS.items())[1:]:
                        row[column] = hows[how]
                    defaulted = _payoffs(rounds, player, untyped)
                    for name in ("rounds won", "total gain"):
                        if name in defaulted:
                            row[f"{name} of default rounds"] = defaulted[name]
            rows.append(row)
    per_seat = pd.DataFrame(rows)
    if per_seat.empty:
        return per_seat, per_seat
    keys = ["game", "who"]
    counts = [c for c in COUNTS if c in per_seat.columns]
    whole = [*counts, *(c for c in ("rounds won of default rounds",) if c in per_seat.columns)]
    per_seat[whole] = per_seat[whole].astype("Int64")  # whole counts; empty for a seat of no person
    numeric = [c for c in per_seat.columns if c not in ("run", "player", "seat", "who", "game", ANSWERS)]
    grouped = per_seat.groupby(keys, sort=False)
    per_who = grouped[numeric].mean().reset_index()
    if counts:  # counts of answers are totals over the seats (``min_count``: a model's row stays empty)
        per_who[counts] = grouped[counts].sum(min_count=1).reset_index(drop=True).astype("Int64")
    if ANSWERS in per_seat.columns:
        texts = []
        columns = HOW_COLUMNS
        for record in per_who.to_dict("records"):
            known = not pd.isna(record.get(TYPED))
            texts.append(answers_text({k: int(record[c]) for k, c in columns.items()}) if known else "")
        per_who.insert(2, ANSWERS, texts)
    per_who.insert(2, "seats", grouped.size().to_numpy())
    return per_seat, per_who


def write_seat_scores(results: Sequence[GamaBenchResult], task: GamaBenchTask, run_dir: Path) -> list[Path]:
    """``seats.csv`` (per seat) and ``seat_kinds.csv`` (per model / other seat) of :func:`seat_scores`."""
    per_seat, per_who = seat_scores(results, task)
    if per_seat.empty:
        return []
    paths = [run_dir / "seats.csv", run_dir / "seat_kinds.csv"]
    write_csv(per_seat, paths[0])
    write_csv(per_who, paths[1])
    return paths


def people_text(results: Sequence[GamaBenchResult], task: GamaBenchTask) -> str:
    """How the answers of people's seats came ("" when no person sat at a table): typed, or a default
    entered for them."""
    specs = task.config.role_specs()
    hows: Counter[str] = Counter()
    for r in results:
        persons = {seat.player for seat in r.seat_info(specs) if seat.person}
        hows.update(d.how for d in r.answers() if d.answer.player in persons)
    if not hows:
        return ""
    return (
        f"Seats of people (human and web): answers {answers_text(hows)}. A default is the game's "
        "equilibrium action entered when the deadline passed or the seat was never opened (or by the "
        "experimenter, from the monitor); a skipped answer is the game's action for a missing answer, a "
        "repeated one the person's previous answer, a stand-in's a model's reply; a person's mean "
        "action and payoffs in `seats.csv` count typed answers only, the defaults are counted beside them, "
        "and `decisions.csv` says how each answer came (`how`), its seconds (`response_s`) and the entries "
        "refused before it (`refused`, `refused_texts`)."
    )


def players_text(task: GamaBenchTask) -> str:
    """Who played: the models of the model seats (by role), and the other seats; never a model of the
    config that no seat used."""
    seats = build_seats(task.options.seats, task.options.players, load=False)
    specs = task.config.role_specs()
    roles = dict.fromkeys(seat.role for seat in seats if isinstance(seat, LLMSeat))
    models = [
        f"`{specs.get(role, '?')}`" + ("" if role == "subject" else f" (role {role})") for role in roles
    ]
    others = list(dict.fromkeys(seat.spec for seat in seats if not isinstance(seat, LLMSeat)))
    text = f"model {', '.join(models)}" if models else "no model seats"
    return text + (f"; other seats: {', '.join(others)}" if others else "")


def _summary(games: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd of each game's score over runs; with all eight games, the overall score too.

    The overall score of a run is the mean of its eight game scores; its ± is the sd over runs (spec §1.3).
    """
    rows = []
    for name, group in games.groupby("game", sort=False):
        scores = group["score"].dropna()
        rows.append(
            {
                "game": name,
                "runs": len(group),
                "scored": len(scores),  # runs whose stored answers the scorer rejected are not averaged
                "score mean": scores.mean() if len(scores) else math.nan,
                "score sd": scores.std(ddof=1) if len(scores) > 1 else math.nan,
                "fallbacks": int(group["fallbacks"].sum()),
                "valid first try": group["valid_first_try"].mean(),
            }
        )
    scored = games.dropna(subset=["score"])
    per_run = scored.pivot_table(index="run", columns="game", values="score")
    if per_run.shape[1] == 8 and not per_run.isna().any().any():
        overall = per_run.mean(axis=1)
        rows.append(
            {
                "game": "overall",
                "runs": len(overall),
                "scored": len(overall),
                "score mean": overall.mean(),
                "score sd": overall.std(ddof=1) if len(overall) > 1 else math.nan,
                "fallbacks": int(games["fallbacks"].sum()),
                "valid first try": games["valid_first_try"].mean(),
            }
        )
    return pd.DataFrame(rows)


def _language_text(options: Any) -> str:
    """The report's line on the run's language (from its template set; the built-in prompts are English)."""
    from ..runs.languages import language_name

    language = options.language or "en"
    name = language_name(language)
    source = (
        f"template set {options.template_set.label}"
        if options.template_set
        else "built-in prompts"
        if options.prompts == "builtin"
        else "official prompts"
    )
    shown = f"{name} (`{language}`)" if name != language else f"`{language}`"
    return (
        f"{shown}, the language of the {source}; persona and CoT sentences and the JSON answer "
        "instruction are in English. "
        "`gamabench leaderboard` and `gamabench overlay` label runs by language when they differ."
    )


def _sections(
    task: GamaBenchTask,
    games: pd.DataFrame,
    results: Sequence[GamaBenchResult],
    failed: list[Any],
    n_calls: int,
    manifest: dict[str, Any],
    plots: dict[str, dict[str, Path]] | None = None,
    transcripts: dict[str, list[Path]] | None = None,
) -> list[tuple[str, str]]:
    """The report's sections: what was measured, valid answers, per game and run, plots, transcripts."""
    o = task.options
    config = manifest.get("config", {})
    temperature = config.get("params", {}).get("temperature", "?")
    measured = (
        f"GAMA-Bench games {', '.join(task.params)} with {o.players} players, up to {o.rounds} rounds, "
        f"{o.runs} run(s) each; prompts {o.prompts} v{o.prompt_version}"
        f"{f', persona {o.persona}' if o.persona else ''}{f', CoT {o.cot}' if o.cot else ''}; "
        f"{players_text(task)}; temperature {temperature} "
        "(the paper used 1.0). Scores are the paper's 0-100 scale (higher is better), "
        + (
            "scored as the published code did (`--corrected` applies llmpsych's documented corrections "
            "to Pirate votes and Diner answers)"
            if o.published
            else "with llmpsych's documented corrections to Pirate votes and Diner answers (`--published` "
            "scores as the published code did)"
        )
        + "; n = number of runs."
    )
    valid = (
        f"{len(results)} game(s) finished, {len(failed)} not finished; {n_calls} model calls (stored "
        "answers of human and python: seats not counted). "
        "A decision that stayed unreadable after the re-asks got the game's fallback action (counted "
        "under fallbacks)."
    )
    sections = [("What was measured", measured), ("Valid answers", valid), ("Language", _language_text(o))]
    if not games.empty:
        sections.append(("Per game (mean ± sd over runs, ddof = 1)", table(_summary(games))))
        sections.append(("Per run", table(games)))
    for game, files in (plots or {}).items():
        title = files.get("png", files["csv"]).stem
        body = [
            f"![{title}](plots/{files['png'].name})"
            if "png" in files
            else "_(no PNG: pip install 'llmpsych[plots]')_"
        ]
        body.append(f"Plotted data: [plots/{files['csv'].name}](plots/{files['csv'].name}).")
        links = [
            f"[run {int(p.stem.rsplit('run', 1)[1])}](transcripts/{p.name})"
            for p in (transcripts or {}).get(game, [])
        ]
        if links:
            body.append("Transcripts (every model seat's conversation): " + ", ".join(links) + ".")
        sections.append((f"Game: {game}", "\n\n".join(body)))
    sections.append(
        (
            "Files",
            "rounds.csv (one row per round), decisions.csv (one row per decision), games.csv (one row per "
            "game run), plots/ (one PNG per game with its data as CSV), transcripts/ (one Markdown file per "
            "game run), run.sqlite (every request and answer, and every answer typed by a human seat).",
        )
    )
    return sections
