"""Scores per seat and per model of a hosted session: so far (while it plays) and final (``seats.csv``).

The numbers come from the games analysis's own :func:`~llmpsych.games.analysis.seat_scores`, fed the
games' round records so far, so the monitor's live table and the final ``seats.csv`` agree. A participant
is shown only their own row, and only the columns that are payoffs their round reports already told them
(rounds won, total gain): nothing about another player.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LlmpsychError
from ..runs import parse_run_config
from . import store

#: The payoff columns of ``seats.csv`` a player may see of their own seat, and their wording for them.
#: (Not the tokens held: the Public Goods question names this round's fresh endowment, and a second
#: token count beside it confused.) A person's payoffs count their typed answers; those of the default
#: answers entered for them (deadline passed) are shown apart, and only when there were any.
OWN_SCORES = {
    "rounds won": "rounds won",
    "total gain": "total gain",
    "rounds won of default rounds": "rounds won by the default answers entered for you",
    "total gain of default rounds": "gain from the default answers entered for you",
}
#: The count of a person's default answers in ``seats.csv``.
_DEFAULTS = "default answers"
#: Columns renamed while the game is still going (``final tokens`` is not final yet).
SO_FAR_NAMES = {"final tokens": "tokens now"}


@dataclass(frozen=True)
class _Config:
    specs: dict[str, str]

    def role_specs(self) -> dict[str, str]:
        return self.specs


@dataclass(frozen=True)
class _Task:
    """The part of a task :func:`seat_scores` reads: the config's model per role."""

    config: _Config


def role_specs(run_dir: Path) -> dict[str, str]:
    """The model of each role of the run's stored config (read-only; empty while there is none)."""
    try:
        raw = store.read_meta(run_dir).get("config")
        return parse_run_config(raw, "stored config").role_specs() if raw else {}
    except LlmpsychError:
        return {}


def _rows(frame: Any) -> list[dict[str, Any]]:
    """A frame's rows; a missing cell (NaN, or pandas' NA in a whole-number column) as NaN."""
    import pandas as pd

    return [
        {str(k): math.nan if v is pd.NA else v for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def so_far(results: list[dict[str, Any]], specs: dict[str, str]) -> tuple[list[dict[str, Any]], ...]:
    """(per seat, per model or other seat) of partial game results, as rows for the monitor."""
    from ..games.analysis import seat_scores
    from ..games.result import GamaBenchResult

    # a game in play names its run by the unit id (``guessing-run01``); a stored result by its number
    started = [
        GamaBenchResult.model_validate({**r, "run": int(str(r.get("run")).rpartition("-run")[2])})
        for r in results
        if r.get("rounds")
    ]
    if not started:
        return [], []
    per_seat, per_who = seat_scores(started, _Task(_Config(specs)))  # type: ignore[arg-type]
    if not per_seat.empty:  # rows name the game's unit, as the seat pages and the monitor do
        per_seat["run"] = [
            f"{g}-run{int(n):02d}" for g, n in zip(per_seat["game"], per_seat["run"], strict=True)
        ]
    return _rows(per_seat.rename(columns=SO_FAR_NAMES)), _rows(per_who.rename(columns=SO_FAR_NAMES))


def _number(value: Any) -> Any:
    """A payoff as a person reads it: whole numbers whole ("1", not "1.0"), others to two decimals."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 2)
    return value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def own(rows: list[dict[str, Any]], unit: str, player: int) -> list[tuple[str, Any]]:
    """A player's own payoffs so far in one game (``unit``), worded for them (none if the game has none)."""
    for row in rows:
        if row.get("run") == unit and row.get("player") == player:
            count = row.get(_DEFAULTS)
            defaulted = isinstance(count, int | float) and not _missing(count) and count > 0
            return [
                (label, _number(row[column]))
                for column, label in OWN_SCORES.items()
                if column in row
                and not _missing(row[column])
                and (defaulted or not column.endswith("of default rounds"))
            ]
    return []


def own_final(rows: list[dict[str, Any]], player: int) -> list[tuple[str, list[tuple[str, Any]]]]:
    """A player's own final payoffs per game (title, worded payoffs) from ``seats.csv`` rows."""
    from ..games import registry

    out = []
    for row in rows:
        if row.get("player") != player:
            continue
        game = str(row.get("game"))
        title = registry.get(game).title if game in registry.names() else game
        unit = f"{game}-run{int(row.get('run', 0)):02d}"
        mine = own([{**row, "run": unit}], unit, player)
        if mine:
            out.append((title, mine))
    return out


def final(run_dir: Path) -> tuple[list[dict[str, Any]], ...]:
    """``seats.csv`` and ``seat_kinds.csv`` as rows (empty when the analysis wrote none)."""
    import pandas as pd

    out = []
    for name in ("seats.csv", "seat_kinds.csv"):
        path = run_dir / name
        out.append(_rows(pd.read_csv(path)) if path.is_file() else [])
    return tuple(out)
