"""Tables and a report from a gamabench run store (never calls a model).

Writes ``rounds.csv`` (one row per game round), ``decisions.csv`` (one row per asked decision),
``games.csv`` (one row per game run with its raw summary and its 0-100 score, from the registered
game's scorer), ``plots/<game>.png`` with the plotted data in ``plots/<game>.csv``
(:mod:`llmpsych.games.plots`), ``transcripts/<game>-run<k>.md`` (every seat's conversation) and
``report.md``, which links the plots and transcripts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.files import atomic_write_text, output_dir, write_csv
from ..report.markdown import table
from ..report.run_report import write_run_report
from ..runs.store import RunStore
from . import registry, scoring
from .plots import write_plots
from .seats import LLMSeat, build_seats


def decision_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every decision of a game result: any round field holding a list of per-player answer records."""
    rows = []
    for record in result["rounds"]:
        for key, value in record.items():
            items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
            for item in items:
                if isinstance(item, dict) and "player" in item and "action" in item:
                    rows.append(
                        {
                            "game": result["game"],
                            "run": result["run"],
                            "round": record["round"],
                            "decision": key,
                            "player": item["player"],
                            "seat": item.get("seat"),
                            "action": _cell(item["action"]),
                            "asks": item.get("asks"),
                            "fallback": bool(item.get("fallback", False)),
                        }
                    )
    return rows


def round_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per round with its outcome fields (lists written as JSON)."""
    rows = []
    for record in result["rounds"]:
        row = {"game": result["game"], "run": result["run"]}
        for key, value in record.items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "asks" in value[0]:
                continue
            if isinstance(value, dict) and "asks" in value:
                continue
            row[key] = _cell(value)
        rows.append(row)
    return rows


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, list | dict) else value


def scoring_log(result: dict[str, Any], scoring: Any = None) -> Any:
    """The scoring record of one engine result, built by its registered game (``scoring`` is unused and
    kept for callers that pass the module)."""
    try:
        game = registry.get(result["game"])
    except KeyError:
        raise ValueError(f"no scoring record for game {result['game']!r}") from None
    return game.scoring_log(result)


def game_score(result: dict[str, Any], published: bool = False) -> float | None:
    """The paper's 0-100 score (thesis version) of one game result, or None when it cannot be scored
    (e.g. too few rounds); ``published=False`` applies llmpsych's documented corrections."""
    try:
        return float(scoring.score(scoring_log(result), published=published))
    except (ValueError, TypeError, ZeroDivisionError, KeyError):
        return None


def analyze_run(run_dir: Path, task: Any) -> list[Path]:
    """Write the tables and the report of a gamabench run."""
    store = RunStore.in_dir(run_dir)
    try:
        units = store.units()
        n_calls = store.call_count()
        manifest = store.get_meta("manifest") or {}
    finally:
        store.close()
    results = [u.result for u in units if u.status == "done"]
    failed = [u for u in units if u.status != "done"]
    decisions = pd.DataFrame([row for r in results for row in decision_rows(r)])
    rounds = pd.DataFrame([row for r in results for row in round_rows(r)])
    game_rows = []
    for r in results:
        n_dec = sum(1 for _ in decision_rows(r))
        first_try = sum(1 for d in decision_rows(r) if d["asks"] == 1 and not d["fallback"])
        game_rows.append(
            {
                "game": r["game"],
                "run": r["run"],
                "rounds_played": len(r["rounds"]),
                **{k: v for k, v in r["summary"].items() if not isinstance(v, list | dict)},
                "fallbacks": r["fallbacks"],
                "valid_first_try": first_try / n_dec if n_dec else math.nan,
                "score": game_score(r, task.options.published),
            }
        )
    games = pd.DataFrame(game_rows)
    seat_files = write_seat_scores(results, task, run_dir)  # per seat and per kind of seat (mixed tables)
    titles = {game: registry.get(game).title for game in task.params if game in registry.names()}
    plots = write_plots(results, run_dir / "plots", titles)
    transcripts = write_transcripts(results, run_dir / "transcripts", titles)
    # answers of human and python: seats are stored beside the model calls (so a resume replays them)
    human = sum(d["asks"] for r in results for d in decision_rows(r) if _recorded_seat(d["seat"]))
    sections = _sections(task, games, results, failed, n_calls - human, manifest, plots, transcripts)
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


def seat_scores(results: list[dict[str, Any]], task: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores per seat and per player kind in mixed tables (people and models at one table).

    Per seat (one row per game run and player): its seat, who it is (the model of a model seat, else the
    seat spec), decisions, fallbacks, mean numeric action, and the payoffs the game's round records give
    per player: rounds won (``winners``, Guess 2/3) and total gain and final tokens (``gain`` /
    ``tokens_after``, Public Goods). Per player: the same, averaged over that player's seats and runs.
    """
    specs = task.config.role_specs()
    rows = []
    for r in results:
        seats = r.get("seats") or []
        decisions = decision_rows(r)
        for player in range(int(r.get("players", len(seats)))):
            seat = str(seats[player]) if player < len(seats) else "?"
            mine = [d for d in decisions if d["player"] == player]
            numbers = [float(d["action"]) for d in mine if isinstance(d["action"], int | float)]
            kind, _, role = seat.partition(":")
            who = f"model {specs.get(role or 'subject', '?')}" if kind in ("llm", "model") else seat
            row: dict[str, Any] = {
                "game": r["game"],
                "run": r["run"],
                "player": player,
                "seat": seat,
                "who": who,
                "decisions": len(mine),
                "fallbacks": sum(d["fallback"] for d in mine),
                "mean action": sum(numbers) / len(numbers) if numbers else math.nan,
            }
            rounds = r["rounds"]
            if rounds and all("winners" in x for x in rounds):
                row["rounds won"] = sum(player in x["winners"] for x in rounds)
            if rounds and all(isinstance(x.get("gain"), list) for x in rounds):
                row["total gain"] = round(sum(x["gain"][player] for x in rounds), 2)
                row["final tokens"] = rounds[-1]["tokens_after"][player]
            rows.append(row)
    per_seat = pd.DataFrame(rows)
    if per_seat.empty:
        return per_seat, per_seat
    numeric = [c for c in per_seat.columns if c not in ("run", "player", "seat", "who", "game")]
    per_who = per_seat.groupby(["game", "who"], sort=False)[numeric].mean().reset_index()
    per_who.insert(2, "seats", per_seat.groupby(["game", "who"], sort=False).size().to_numpy())
    return per_seat, per_who


def write_seat_scores(results: list[dict[str, Any]], task: Any, run_dir: Path) -> list[Path]:
    """``seats.csv`` (per seat) and ``seat_kinds.csv`` (per model / other seat) of :func:`seat_scores`."""
    per_seat, per_who = seat_scores(results, task)
    if per_seat.empty:
        return []
    paths = [run_dir / "seats.csv", run_dir / "seat_kinds.csv"]
    write_csv(per_seat, paths[0])
    write_csv(per_who, paths[1])
    return paths


def players_text(task: Any) -> str:
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


def transcript_markdown(result: dict[str, Any], title: str) -> str:
    """Every seat's conversation in one game, as readable Markdown (one section per seat)."""
    seats = result.get("seats") or []
    lines = [f"# {title}, run {result['run']}", ""]
    lines.append(
        f"{result['players']} players; prompts {result.get('prompts', '?')}. Each seat's full conversation: "
        "the rules (system), each request, every answer given (re-asks included) and the round reports. "
        "The request is shown to the seat only while it decides; from round 21 on (11 in the Public Goods "
        "Game) the oldest turns drop out of what the seat is sent, but not out of this transcript."
    )
    lines.append("")
    lines += [f"- [player {i} ({seat})](#player-{i})" for i, seat in enumerate(seats)]
    for player, turns in enumerate(result.get("transcripts") or []):
        seat = seats[player] if player < len(seats) else "?"
        lines += ["", f'<a id="player-{player}"></a>', "", f"## Player {player} ({seat})", ""]
        current = None
        for turn in turns:
            if turn["round"] != current and turn["round"]:
                current = turn["round"]
                lines += [f"### Round {current}", ""]
            label = f"**{turn['role']}** · {turn['kind']}"
            if "error" in turn:
                label += f" · rejected: {turn['error']}"
            elif "action" in turn:
                label += f" · read as `{json.dumps(turn['action'])}`"
            lines += [label, ""]
            body = str(turn["content"]) or "(empty)"
            lines += [f"> {line}" if line else ">" for line in body.splitlines()] + [""]
    return "\n".join(lines)


def write_transcripts(
    results: list[dict[str, Any]], out_dir: Path, titles: dict[str, str]
) -> dict[str, list[Path]]:
    """``<game>-run<k>.md`` per finished game that recorded its transcripts; {game: [paths]}."""
    written: dict[str, list[Path]] = {}
    for result in results:
        if not result.get("transcripts"):
            continue
        output_dir(out_dir.parent, out_dir.name)  # RUN/transcripts: a link there is replaced by a folder
        path = out_dir / f"{result['game']}-run{result['run']:02d}.md"
        title = titles.get(result["game"], result["game"])
        atomic_write_text(path, transcript_markdown(result, title))
        written.setdefault(result["game"], []).append(path)
    return written


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


def _sections(
    task: Any,
    games: pd.DataFrame,
    results: list[dict[str, Any]],
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
    sections = [("What was measured", measured), ("Valid answers", valid)]
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
            body.append("Transcripts (every seat's conversation): " + ", ".join(links) + ".")
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
