"""Official GAMA-Bench log files (the ``raw_results`` format) scored as finished games
(``llmpsych gamabench rescore PATHS``).

Each ``.json`` log is one finished game played by ten agents. Files and folders (searched recursively)
are collected, each log is read with :mod:`llmpsych.games.released_logs` (the game is detected from its
round records) and scored with :func:`llmpsych.games.scoring.score`, the scorer of the live games.

Which files count. Leaderboard runs (thesis §6.4: five ``v1`` runs per model and game with the
default parameters) are files named ``[<model>_]<game>_v1_<run>.json`` whose ``meta`` holds the default
parameters of its game (10 players; El Farol in the implicit mode; the first-price auction; ...). The
other logs the authors released in the same format (prompt versions ``v2``-``v5``, temperatures
``_t<i>``, generalisation sweeps ``_r<i>``/``_g<i>``/..., ``_cot1``, ``_role<i>``, jailbreaks, the
explicit El Farol and second-price auction) are variant logs: each is read and scored the same way and
grouped by its setting (:mod:`llmpsych.games.variant_logs`). ``.json`` files whose name does not follow
the convention are skipped with a note. A log that cannot be read or lacks a field its scorer needs is an
error naming the file. A value outside its game's rules (see :mod:`llmpsych.games.released_logs`) is an
error naming the file, the round and the player; answers above the asked bound that the reference game
accepted are kept and counted per model and game (``above_range`` in the JSON, a note on stderr).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..userfiles import MAX_DATA_FILE_BYTES, read_text, reason
from . import registry
from .released_logs import _READERS, DEFAULT_MODEL, _Malformed, detect_game
from .scoring import (
    GAMES,
    GameLog,
    RunSummary,
    ScoringVersion,
    above_range,
    leaderboard_row,
    score,
    summarize,
)
from .variant_logs import Setting, VariantRun, classify

#: The output key of each registered game in ``leaderboard.json`` (scoring name -> key).
GAME_KEYS = registry.JSON_KEYS
#: File-name stems of each game's logs (``bar_game_implicit`` etc.).
_STEMS: dict[str, str] = {
    "guessing_game": "guessing_game",
    "bar_game_implicit": "bar_game",
    "bar_game_explicit": "bar_game",
    "bar_game": "bar_game",
    "divide_dollar": "divide_dollar",
    "public_goods": "public_goods",
    "diner_dilemma": "diner_dilemma",
    "sealed_bid_auction": "sealed_bid_auction",
    "battle_royale": "battle_royale",
    "pirate_game": "pirate_game",
}
_NAME = re.compile(
    r"^(?:(?P<model>.+?)_)?(?P<stem>"
    + "|".join(sorted((re.escape(s) for s in _STEMS), key=len, reverse=True))
    + r")_(?P<version>v\d+)(?:_(?P<tag>.+))?\.json$"
)
#: The default (leaderboard) parameters in each game's ``meta``; an absent key means the default.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "guessing_game": {"min": 0, "max": 100, "ratio": 2 / 3},
    "bar_game": {"min": 0, "max": 10, "home": 5, "ratio": 0.6, "mode": "implicit"},
    "divide_dollar": {"golds": 100},
    "public_goods": {"tokens": 20, "ratio": 2, "token_initialization": "fixed"},
    "diner_dilemma": {"cheap_cost": 10, "cheap_utility": 15, "exp_cost": 20, "exp_utility": 20},
    "sealed_bid_auction": {"valuation_min": 0, "valuation_max": 200, "interval": 10, "mode": "highest bid"},
    "battle_royale": {"base_hit_rate": 35, "interval": 5},
    "pirate_game": {"gold": 100},
}


@dataclass(frozen=True)
class LogRun:
    """One leaderboard run read from a log file."""

    model: str
    game: str
    run: int
    path: Path
    log: GameLog
    score: float
    above_range: tuple[str, ...] = ()


@dataclass
class Collected:
    """The leaderboard runs found, the variant logs (every other released setting), the skipped files
    with their reasons, unreadable files (with ``skip_malformed``), and variant logs the scorer refuses
    (valid logs the chosen formula cannot score, e.g. Guess 2/3 with MIN > 0 under the published
    formula: the released ``guessing_game_v1_m4``/``m6``; ``--corrected`` scores them)."""

    runs: list[LogRun] = field(default_factory=list)
    variants: list[VariantRun] = field(default_factory=list)
    unscored: list[DataError] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    malformed: list[DataError] = field(default_factory=list)


def find_files(paths: Iterable[Path]) -> list[Path]:
    """The given files, and every ``*.json`` under the given folders (recursively), once each, sorted."""
    found: dict[Path, None] = {}
    for path in paths:
        path = Path(path)
        if path.is_dir():
            for child in sorted(path.rglob("*.json")):
                if child.is_file():
                    found.setdefault(child, None)
        elif path.is_file():
            found.setdefault(path, None)
        else:
            raise DataError(f"{path} not found", "give GAMA-Bench log files or folders holding them")
    seen: set[Path] = set()
    unique = []
    for path in found:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _load(path: Path) -> tuple[dict[str, Any], str, GameLog]:
    """(parsed JSON, game, scoring record); DataError naming the file if it is unreadable or malformed."""
    try:
        data = json.loads(read_text(path, "GAMA-Bench log", MAX_DATA_FILE_BYTES))
    except OSError as exc:
        raise DataError(f"cannot read GAMA-Bench log {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"GAMA-Bench log {path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise DataError(f"GAMA-Bench log {path} is nested too deeply to be a log") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise DataError(f"GAMA-Bench log {path} is not valid JSON: {reason(exc)}") from None
    try:
        if not isinstance(data, dict):
            raise _Malformed("the top level is not an object")
        game = detect_game(data)
        return data, game, _READERS[game](data)
    except _Malformed as exc:
        raise DataError(f"GAMA-Bench log {path} is malformed: {exc}") from None


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, str):
        return str(value).strip().lower() == default
    try:
        return math.isclose(float(value), float(default), rel_tol=1e-9, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def _variant(game: str, meta: Mapping[str, Any], path: Path) -> str | None:
    """Why a log's parameters are not the leaderboard's, or None when they are the defaults."""
    defaults = {"player_num": 10, **DEFAULT_PARAMS[game]}
    if "mode" in defaults and "mode" not in meta:  # older logs: the folder says the mode
        text = "/".join(path.parts[-3:])
        if "explicit" in text or "second_price" in text:
            return "El Farol explicit mode" if game == "bar_game" else "second-price auction"
    differing = [f"{k}={meta[k]}" for k, v in defaults.items() if k in meta and not _same(meta[k], v)]
    if not differing:
        return None
    if game == "bar_game" and "mode" in meta and not _same(meta["mode"], "implicit"):
        return "El Farol explicit mode"
    if game == "sealed_bid_auction" and "mode" in meta and not _same(meta["mode"], "highest bid"):
        return "second-price auction"
    return "non-default parameters " + ", ".join(differing)


def collect(
    paths: Iterable[Path],
    *,
    version: ScoringVersion = "thesis",
    published: bool = True,
    skip_malformed: bool = False,
) -> Collected:
    """Read and score (:func:`scoring.score`) the leaderboard runs and variant logs among the given files
    and folders.

    Files whose name does not follow ``[<model>_]<game>_v<k>[_<tag>].json`` are skipped unread; the
    others are read (a malformed one raises a one-line DataError naming it, or with ``skip_malformed``
    is recorded and skipped); ``v1_<run>`` files with the default parameters are leaderboard runs, the
    others variant logs grouped by setting. A leaderboard log the scorer rejects counts as malformed; a
    variant log it rejects is recorded in ``unscored``. Two files for the same model, game and run, or
    the same model, game and variant setting, are an error.
    """
    out = Collected()
    owners: dict[tuple[str, str, int], Path] = {}
    variant_owners: dict[tuple[str, ...], Path] = {}
    for path in find_files(paths):
        match = _NAME.match(path.name)
        if match is None:
            out.skipped.append((path, "file name is not [<model>_]<game>_v<k>_<run>.json"))
            continue
        try:
            data, game, log = _load(path)
            named = _STEMS[match["stem"]]
            if named != game:
                raise DataError(
                    f"GAMA-Bench log {path} is malformed: its name says {named} "
                    f"but its round records are {game}'s"
                )
        except DataError as exc:
            if not skip_malformed:
                raise
            out.malformed.append(exc)
            continue
        tag = match["tag"]
        raw_meta = data.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        model = match["model"] or DEFAULT_MODEL
        setting = classify(game, match["version"], tag, meta, path)
        leaderboard = setting.family == "runs" and _variant(game, meta, path) is None
        try:
            value = score(log, version=version, published=published)
        except ValueError as exc:
            error = DataError(f"GAMA-Bench log {path} cannot be scored: {exc}")
            if not leaderboard:  # a valid log the chosen formula cannot score: counted, not fatal
                out.unscored.append(error)
                continue
            if not skip_malformed:
                raise error from None
            out.malformed.append(error)
            continue
        if not leaderboard:
            if setting.family == "runs" and setting.mode == "default":
                setting = Setting("other", f"{_variant(game, meta, path)}, run {tag}", 1e6)
            where = (model, game, setting.family, setting.mode, setting.column)
            if where in variant_owners:
                raise DataError(
                    f"two logs for {model} {game} {setting.family} {setting.column} ({setting.mode}): "
                    f"{variant_owners[where]} and {path}",
                    "give each setting once",
                )
            variant_owners[where] = path
            out.variants.append(VariantRun(model, game, setting, path, value, tuple(above_range(log))))
            continue
        key = (model, game, int(tag))
        if key in owners:
            raise DataError(
                f"two logs for {model} {game} run {int(tag)}: {owners[key]} and {path}",
                "give each run once",
            )
        owners[key] = path
        out.runs.append(LogRun(model, game, int(tag), path, log, value, above_range=tuple(above_range(log))))
    return out


@dataclass(frozen=True)
class ModelScores:
    """One model's per-game summaries (``scoring.GAMES`` names) and the overall (None if not computable),
    with a note when the overall is missing or has no SD."""

    games: dict[str, RunSummary]
    overall_mean: float | None
    overall_sd: float | None
    note: str | None = None
    above_range: dict[str, int] = field(default_factory=dict)


def score_runs(runs: Iterable[LogRun]) -> dict[str, ModelScores]:
    """Each model's leaderboard row: game mean ± sample SD over runs and the overall score.

    The overall is the mean of the eight game scores; its SD is that of the per-run overall scores
    (run i paired across games, :func:`scoring.leaderboard_row`, as in the published leaderboard), so it
    needs the same run numbers in every game; otherwise the overall SD is None. Without all eight games
    there is no overall.
    """
    by_model: dict[str, dict[str, dict[int, float]]] = {}
    kept: dict[str, dict[str, int]] = {}
    for r in runs:
        by_model.setdefault(r.model, {}).setdefault(r.game, {})[r.run] = r.score
        if r.above_range:
            kept.setdefault(r.model, {}).setdefault(r.game, 0)
            kept[r.model][r.game] += len(r.above_range)
    result = {}
    for model in sorted(by_model):
        games = by_model[model]
        order = [*GAMES, *(g.scoring_name for g in registry.games() if g.scoring_name not in GAMES)]
        ordered = {g: [games[g][i] for i in sorted(games[g])] for g in order if g in games}
        missing = [g for g in GAMES if g not in games]
        if missing:
            row = {g: summarize(v) for g, v in ordered.items()}
            absent = ", ".join(GAME_KEYS[g] for g in missing)
            note = f"{model}: no overall score, no leaderboard runs of {absent}"
            result[model] = ModelScores(row, None, None, note, kept.get(model, {}))
            continue
        if len({tuple(sorted(games[g])) for g in GAMES}) == 1:
            row = leaderboard_row(ordered)
            overall = row.pop("overall")
            row.update({g: summarize(v) for g, v in ordered.items() if g not in row})
            sd = None if math.isnan(overall.sd) else overall.sd
            result[model] = ModelScores(row, overall.mean, sd, None, kept.get(model, {}))
            continue
        row = {g: summarize(v) for g, v in ordered.items()}
        mean = math.fsum(row[g].mean for g in GAMES) / len(GAMES)
        note = f"{model}: the games have different run numbers, so the overall score has no SD"
        result[model] = ModelScores(row, mean, None, note, kept.get(model, {}))
    return result


def _std(summary: RunSummary) -> float | None:
    return None if math.isnan(summary.sd) else summary.sd


def to_json(scores: Mapping[str, ModelScores]) -> dict[str, Any]:
    """``{model: {game key: {mean, std, runs, above_range}, ..., "overall": {mean, std} | None}}``; a
    single run's std (and an overall std that cannot be computed) is None; ``above_range`` counts the
    kept answers above the asked bound (:func:`llmpsych.games.scoring.above_range`)."""
    out: dict[str, Any] = {}
    for model, s in scores.items():
        entry: dict[str, Any] = {
            GAME_KEYS[g]: {
                "mean": v.mean,
                "std": _std(v),
                "runs": v.n,
                "above_range": s.above_range.get(g, 0),
            }
            for g, v in s.games.items()
        }
        entry["overall"] = None if s.overall_mean is None else {"mean": s.overall_mean, "std": s.overall_sd}
        out[model] = entry
    return out
