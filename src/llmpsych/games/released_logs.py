"""The authors' released GAMA-Bench game logs (``GAMABench/raw_results``), read as scoring records.

Files are read at run time from the data directory (``llmpsych data fetch GAMABench``), never shipped.
Each log is one game played by ten agents: ``raw_results/<folder>/<model>_<game>_v1_<run>.json``, where
``<model>_`` is absent for gpt-3.5-turbo-0125, El Farol's folder is ``bar_game_implicit`` (or
``_explicit``) and the auction's is ``sealed_bid_auction/first_price`` (or ``second_price``).

The published leaderboard (thesis Tables 6.8 and 6.9; CUHK-ARISE/GAMABench README) is included as
numbers, with its citation, so a recomputation can be compared with it.

Every value is checked against its game before it is scored (``docs/security.md`` §5); a violation is a
one-line DataError naming the file, the round and the player. The rules hold for all 280 released logs:
a numeric answer is a JSON number (not text such as ``"50"``), finite and whole (hit rates and
parameters may be fractional); guesses lie in [min, max] (the reference enforced 0-100 at play time);
bids, contributions, valuations and plan shares are not negative; a plan's shares sum to the gold; El
Farol answers are ``go`` or ``stay``; each round of a simultaneous game answers for every one of
``meta.player_num`` players; hit rates lie in 0-100; and the log has the ``meta.round_id`` rounds it
says it played (Battle Royale excepted: its ``round_id`` counts something else). Answers *above* the
asked bound in Divide the Dollar, Public Goods and the auction are not errors: the reference accepted
them (its validation was ``int()`` only), the published scores include them, and the scorer counts them
(:func:`llmpsych.games.scoring.above_range`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..data.sources import dataset_path
from ..errors import DataError
from ..userfiles import MAX_DATA_FILE_BYTES, read_text, reason
from .scoring import (
    GAME_TITLES,
    GAMES,
    AuctionLog,
    BarLog,
    BattleLog,
    BattleTurn,
    DinerLog,
    DollarLog,
    GameLog,
    GoodsLog,
    GuessingLog,
    PirateLog,
    PirateRound,
    RunSummary,
    ScoringVersion,
    leaderboard_row,
    score,
    summarize,
)

DATASET = "GAMABench"
#: The model whose files carry no prefix.
DEFAULT_MODEL = "gpt-3.5-turbo-0125"
#: Folder (under raw_results) and file stem of each game's leaderboard logs.
LEADERBOARD_FILES: dict[str, tuple[str, str]] = {
    "guessing_game": ("guessing_game", "guessing_game"),
    "bar_game": ("bar_game_implicit", "bar_game_implicit"),
    "divide_dollar": ("divide_dollar", "divide_dollar"),
    "public_goods": ("public_goods", "public_goods"),
    "diner_dilemma": ("diner_dilemma", "diner_dilemma"),
    "sealed_bid_auction": ("sealed_bid_auction/first_price", "sealed_bid_auction"),
    "battle_royale": ("battle_royale", "battle_royale"),
    "pirate_game": ("pirate_game", "pirate_game"),
}

#: Published leaderboard, mean and sample SD over 5 runs: thesis Tables 6.8-6.9 (Huang, CUHK 2025,
#: ch. 6) = the CUHK-ARISE/GAMABench README at commit 41ebccf. Keys are the raw_results model prefixes.
PUBLISHED: dict[str, dict[str, tuple[float, float]]] = {
    "gpt-3.5-turbo-0613": {
        "guessing_game": (41.4, 0.5), "bar_game": (74.8, 4.5), "divide_dollar": (42.4, 7.7),
        "public_goods": (17.7, 1.7), "diner_dilemma": (67.0, 4.9), "sealed_bid_auction": (10.3, 0.2),
        "battle_royale": (19.5, 7.7), "pirate_game": (68.4, 19.9), "overall": (42.7, 2.0),
    },
    "gpt-3.5-turbo-1106": {
        "guessing_game": (68.5, 0.5), "bar_game": (64.3, 3.1), "divide_dollar": (70.3, 3.3),
        "public_goods": (43.5, 12.6), "diner_dilemma": (1.4, 1.3), "sealed_bid_auction": (7.6, 1.8),
        "battle_royale": (35.7, 6.8), "pirate_game": (69.5, 14.6), "overall": (45.1, 1.6),
    },
    "gpt-3.5-turbo-0125": {
        "guessing_game": (63.4, 3.4), "bar_game": (68.7, 2.7), "divide_dollar": (68.6, 2.4),
        "public_goods": (38.9, 8.1), "diner_dilemma": (2.8, 2.8), "sealed_bid_auction": (13.0, 1.5),
        "battle_royale": (28.6, 11.0), "pirate_game": (71.6, 7.7), "overall": (44.4, 2.1),
    },
    "gpt-4-0125-preview": {
        "guessing_game": (91.6, 0.6), "bar_game": (23.0, 8.0), "divide_dollar": (98.1, 1.9),
        "public_goods": (89.2, 1.8), "diner_dilemma": (0.9, 0.7), "sealed_bid_auction": (24.2, 1.1),
        "battle_royale": (86.8, 9.7), "pirate_game": (85.4, 8.7), "overall": (62.4, 2.7),
    },
    "gpt-4o": {
        "guessing_game": (94.3, 0.6), "bar_game": (70.0, 22.1), "divide_dollar": (95.2, 0.7),
        "public_goods": (90.9, 3.0), "diner_dilemma": (10.7, 8.3), "sealed_bid_auction": (20.8, 3.2),
        "battle_royale": (67.3, 14.8), "pirate_game": (84.4, 6.7), "overall": (66.7, 4.7),
    },
    "gemini-1.0-pro": {
        "guessing_game": (77.3, 6.2), "bar_game": (33.5, 10.3), "divide_dollar": (77.6, 3.6),
        "public_goods": (68.5, 7.6), "diner_dilemma": (3.1, 1.5), "sealed_bid_auction": (31.6, 12.2),
        "battle_royale": (16.5, 6.9), "pirate_game": (57.4, 14.3), "overall": (45.7, 3.4),
    },
    "gemini-1.5-pro": {
        "guessing_game": (95.4, 0.5), "bar_game": (37.2, 4.2), "divide_dollar": (93.8, 0.3),
        "public_goods": (100.0, 0.0), "diner_dilemma": (35.9, 5.3), "sealed_bid_auction": (26.9, 9.4),
        "battle_royale": (81.3, 7.7), "pirate_game": (87.9, 5.6), "overall": (69.8, 1.6),
    },
    "llama-3.1-8b": {
        "guessing_game": (85.5, 3.0), "bar_game": (75.7, 2.2), "divide_dollar": (56.4, 8.4),
        "public_goods": (19.6, 1.0), "diner_dilemma": (59.3, 2.4), "sealed_bid_auction": (37.1, 3.1),
        "battle_royale": (35.9, 12.1), "pirate_game": (78.3, 10.0), "overall": (56.0, 3.1),
    },
    "llama-3.1-70b": {
        "guessing_game": (84.0, 1.7), "bar_game": (59.7, 3.5), "divide_dollar": (87.0, 4.1),
        "public_goods": (90.6, 3.6), "diner_dilemma": (48.1, 5.7), "sealed_bid_auction": (15.7, 2.7),
        "battle_royale": (77.7, 26.0), "pirate_game": (64.0, 15.5), "overall": (65.9, 3.3),
    },
    "llama-3.1-405b": {
        "guessing_game": (94.3, 0.6), "bar_game": (20.5, 24.2), "divide_dollar": (94.9, 1.0),
        "public_goods": (97.0, 0.8), "diner_dilemma": (14.4, 4.5), "sealed_bid_auction": (14.7, 3.2),
        "battle_royale": (92.7, 10.1), "pirate_game": (65.6, 22.3), "overall": (61.8, 4.7),
    },
    "mixtral-8x7b": {
        "guessing_game": (91.8, 0.4), "bar_game": (66.8, 5.8), "divide_dollar": (1.2, 2.8),
        "public_goods": (27.6, 11.7), "diner_dilemma": (76.4, 7.1), "sealed_bid_auction": (3.1, 1.6),
        "battle_royale": (12.6, 9.4), "pirate_game": (67.3, 7.6), "overall": (43.4, 2.2),
    },
    "mixtral-8x22b": {
        "guessing_game": (83.6, 4.6), "bar_game": (39.3, 12.2), "divide_dollar": (79.0, 9.6),
        "public_goods": (83.7, 3.5), "diner_dilemma": (79.9, 5.8), "sealed_bid_auction": (13.2, 3.7),
        "battle_royale": (36.0, 21.0), "pirate_game": (84.3, 8.8), "overall": (62.4, 2.2),
    },
    "qwen2-72b": {
        "guessing_game": (93.2, 1.3), "bar_game": (17.0, 25.5), "divide_dollar": (91.9, 2.4),
        "public_goods": (81.3, 5.9), "diner_dilemma": (0.0, 0.0), "sealed_bid_auction": (2.5, 0.7),
        "battle_royale": (81.7, 9.6), "pirate_game": (86.1, 6.4), "overall": (56.7, 3.4),
    },
}  # fmt: skip

#: The arXiv v4 leaderboard (arXiv 2403.11807v4, Table 1; 12 models, no GPT-4o), scored with the
#: arXiv formulas (``version="arxiv_v4"``): only the Sealed-Bid Auction and Overall rows differ materially.
PUBLISHED_ARXIV: dict[str, dict[str, tuple[float, float]]] = {
    "gpt-3.5-turbo-0613": {
        "guessing_game": (41.4, 0.5), "bar_game": (74.8, 4.5), "divide_dollar": (42.4, 7.7),
        "public_goods": (17.8, 1.7), "diner_dilemma": (67.0, 4.9), "sealed_bid_auction": (4.2, 0.3),
        "battle_royale": (19.5, 7.7), "pirate_game": (68.4, 19.9), "overall": (41.9, 2.0),
    },
    "gpt-3.5-turbo-1106": {
        "guessing_game": (68.5, 0.5), "bar_game": (64.3, 3.1), "divide_dollar": (70.3, 3.3),
        "public_goods": (43.5, 12.6), "diner_dilemma": (1.4, 1.3), "sealed_bid_auction": (3.4, 1.0),
        "battle_royale": (35.7, 6.9), "pirate_game": (69.5, 14.6), "overall": (44.6, 1.5),
    },
    "gpt-3.5-turbo-0125": {
        "guessing_game": (63.4, 3.4), "bar_game": (68.7, 2.7), "divide_dollar": (68.6, 2.4),
        "public_goods": (38.8, 8.1), "diner_dilemma": (2.8, 2.8), "sealed_bid_auction": (5.5, 1.0),
        "battle_royale": (28.6, 11.0), "pirate_game": (71.6, 7.7), "overall": (43.5, 2.1),
    },
    "gpt-4-0125-preview": {
        "guessing_game": (91.6, 0.6), "bar_game": (23.0, 8.1), "divide_dollar": (98.1, 1.9),
        "public_goods": (89.2, 1.8), "diner_dilemma": (0.9, 0.7), "sealed_bid_auction": (8.7, 0.7),
        "battle_royale": (86.8, 9.7), "pirate_game": (85.4, 8.7), "overall": (60.5, 2.7),
    },
    "gemini-1.0-pro": {
        "guessing_game": (77.3, 6.2), "bar_game": (33.5, 10.3), "divide_dollar": (77.6, 3.6),
        "public_goods": (68.5, 7.6), "diner_dilemma": (3.1, 1.5), "sealed_bid_auction": (14.9, 6.6),
        "battle_royale": (16.5, 6.9), "pirate_game": (57.4, 14.3), "overall": (43.6, 3.1),
    },
    "gemini-1.5-pro": {
        "guessing_game": (95.4, 0.5), "bar_game": (37.2, 4.2), "divide_dollar": (93.8, 0.3),
        "public_goods": (100.0, 0.0), "diner_dilemma": (35.9, 5.3), "sealed_bid_auction": (13.3, 4.6),
        "battle_royale": (81.3, 7.7), "pirate_game": (87.9, 5.6), "overall": (68.1, 1.5),
    },
    "llama-3.1-8b": {
        "guessing_game": (85.5, 3.0), "bar_game": (75.7, 2.2), "divide_dollar": (56.4, 8.4),
        "public_goods": (19.6, 1.0), "diner_dilemma": (59.3, 2.4), "sealed_bid_auction": (16.9, 1.8),
        "battle_royale": (35.9, 12.1), "pirate_game": (78.3, 10.0), "overall": (53.4, 3.1),
    },
    "llama-3.1-70b": {
        "guessing_game": (84.0, 1.7), "bar_game": (59.7, 3.5), "divide_dollar": (87.0, 4.1),
        "public_goods": (90.6, 3.6), "diner_dilemma": (48.1, 5.7), "sealed_bid_auction": (4.5, 0.7),
        "battle_royale": (77.7, 26.0), "pirate_game": (64.0, 15.5), "overall": (64.5, 3.4),
    },
    "llama-3.1-405b": {
        "guessing_game": (94.3, 0.6), "bar_game": (20.5, 24.2), "divide_dollar": (94.9, 1.0),
        "public_goods": (96.9, 0.8), "diner_dilemma": (14.4, 4.5), "sealed_bid_auction": (4.2, 1.2),
        "battle_royale": (92.7, 10.1), "pirate_game": (65.6, 22.3), "overall": (60.4, 4.4),
    },
    "mixtral-8x7b": {
        "guessing_game": (91.8, 0.4), "bar_game": (66.8, 5.8), "divide_dollar": (1.2, 2.8),
        "public_goods": (27.7, 11.7), "diner_dilemma": (76.4, 7.1), "sealed_bid_auction": (0.8, 0.4),
        "battle_royale": (12.6, 9.5), "pirate_game": (67.3, 7.6), "overall": (43.1, 2.3),
    },
    "mixtral-8x22b": {
        "guessing_game": (83.6, 4.6), "bar_game": (39.3, 12.2), "divide_dollar": (79.0, 9.6),
        "public_goods": (83.7, 3.5), "diner_dilemma": (79.9, 5.8), "sealed_bid_auction": (5.2, 1.8),
        "battle_royale": (36.0, 21.0), "pirate_game": (84.3, 8.8), "overall": (61.4, 2.0),
    },
    "qwen2-72b": {
        "guessing_game": (93.2, 1.3), "bar_game": (17.0, 25.5), "divide_dollar": (91.9, 2.4),
        "public_goods": (81.3, 5.9), "diner_dilemma": (0.0, 0.0), "sealed_bid_auction": (0.9, 0.2),
        "battle_royale": (81.7, 9.6), "pirate_game": (86.1, 6.4), "overall": (56.5, 3.4),
    },
}  # fmt: skip


class _Malformed(Exception):
    """A structural problem in one log, turned into a DataError naming the file."""


def _num(value: Any, what: str) -> float:
    """A finite JSON number; text (``"50"``), booleans, null, NaN and infinities are malformed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "text" if isinstance(value, str) else type(value).__name__
        raise _Malformed(f"{what} is not a number: {_show(value)} ({kind})")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Malformed(f"{what} is not a finite number: {value!r}")
    return float(value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(value: Any, what: str, low: float | None = None, high: float | None = None) -> float:
    """A finite whole number within [low, high] (either bound optional)."""
    number = _num(value, what)
    if not number.is_integer():
        raise _Malformed(f"{what} is not a whole number: {_show(value)}")
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"{low:g}-{high:g}" if low is not None and high is not None else f">= {low:g}"
        problem = "is negative" if high is None and low == 0 else f"is outside {bounds}"
        raise _Malformed(f"{what} {_show(value)} {problem}")
    return number


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Malformed(f"{what} is not a list")
    return value


def _rounds(data: dict[str, Any]) -> list[dict[str, Any]]:
    rounds = _list(data.get("round_records"), "round_records")
    if not rounds or not all(isinstance(r, dict) for r in rounds):
        raise _Malformed("round_records is empty or not a list of objects")
    return rounds


def _field(record: dict[str, Any], key: str, j: int) -> Any:
    if key not in record:
        raise _Malformed(f"round {j} has no {key!r}")
    return record[key]


def _players(data: dict[str, Any]) -> int:
    return int(_whole(_meta(data, "player_num", 10), "meta player_num", 1))


def _complete(data: dict[str, Any], rounds: list[dict[str, Any]]) -> None:
    """A log that stops before the ``meta.round_id`` rounds it says it played is truncated."""
    meta = data.get("meta")
    if isinstance(meta, dict) and "round_id" in meta:
        expected = int(_whole(meta["round_id"], "meta round_id", 0))
        if len(rounds) != expected:
            raise _Malformed(f"meta.round_id says {expected} rounds but the log holds {len(rounds)}")


def _row(rec: dict[str, Any], key: str, j: int, players: int) -> list[Any]:
    row = _list(_field(rec, key, j), f"round {j} {key}")
    if len(row) != players:
        raise _Malformed(f"round {j} {key} has {len(row)} entries for {players} players")
    return row


def _numbers(
    data: dict[str, Any],
    key: str = "responses",
    what: str = "answer",
    low: float = 0,
    high: float | None = None,
) -> list[list[float]]:
    """Each round's whole-number answers of every player, within [low, high]."""
    rounds, players = _rounds(data), _players(data)
    _complete(data, rounds)
    return [
        [
            _whole(x, f"round {j} player {i}: {what}", low, high)
            for i, x in enumerate(_row(rec, key, j, players), 1)
        ]
        for j, rec in enumerate(rounds, 1)
    ]


def _strings(data: dict[str, Any], allowed: tuple[str, ...] | None = None) -> list[list[str]]:
    """Each round's text answers; with ``allowed``, each must be one of them (case and space ignored)."""
    rounds, players = _rounds(data), _players(data)
    _complete(data, rounds)
    out = []
    for j, rec in enumerate(rounds, 1):
        row = []
        for i, x in enumerate(_row(rec, "responses", j, players), 1):
            if not isinstance(x, str):
                raise _Malformed(f"round {j} player {i}: answer {_show(x)} is not text")
            if allowed is not None and x.strip().lower() not in allowed:
                raise _Malformed(f"round {j} player {i}: answer {_show(x)} is not {' or '.join(allowed)}")
            row.append(x)
        out.append(row)
    return out


def _meta(data: dict[str, Any], key: str, default: Any = None) -> Any:
    meta = data.get("meta")
    if not isinstance(meta, dict):
        raise _Malformed("no 'meta' object")
    if key in meta:
        return meta[key]
    if default is None:
        raise _Malformed(f"meta has no {key!r}")
    return default


def _guessing(data: dict[str, Any]) -> GuessingLog:
    low = _num(_meta(data, "min", 0), "meta min")
    high = _num(_meta(data, "max", 100), "meta max")
    return GuessingLog(
        choices=_numbers(data, what="guess", low=low, high=high),
        min_value=low,
        max_value=high,
        ratio=_num(_meta(data, "ratio"), "meta ratio"),
    )


def _bar(data: dict[str, Any]) -> BarLog:
    went = [[answer.strip().lower() == "go" for answer in row] for row in _strings(data, ("go", "stay"))]
    return BarLog(went=went, ratio=_num(_meta(data, "ratio"), "meta ratio"))


def _dollar(data: dict[str, Any]) -> DollarLog:
    return DollarLog(bids=_numbers(data, what="bid"), golds=_num(_meta(data, "golds"), "meta golds"))


def _goods(data: dict[str, Any]) -> GoodsLog:
    return GoodsLog(
        contributions=_numbers(data, what="contribution"),
        tokens=_num(_meta(data, "tokens"), "meta tokens"),
        ratio=_num(_meta(data, "ratio"), "meta ratio"),
    )


def _diner(data: dict[str, Any]) -> DinerLog:
    return DinerLog(
        dishes=_strings(data),  # variants such as "cheap_dish" are the scorer's documented reading
        cheap_price=_num(_meta(data, "cheap_cost", 10), "meta cheap_cost"),
        cheap_utility=_num(_meta(data, "cheap_utility", 15), "meta cheap_utility"),
        costly_price=_num(_meta(data, "exp_cost", 20), "meta exp_cost"),
        costly_utility=_num(_meta(data, "exp_utility", 20), "meta exp_utility"),
    )


def _auction(data: dict[str, Any]) -> AuctionLog:
    bids, valuations = _numbers(data, what="bid"), _numbers(data, "valuations", what="valuation")
    if any(len(b) != len(v) for b, v in zip(bids, valuations, strict=True)):
        raise _Malformed("a round has a different number of bids and valuations")
    second = str(_meta(data, "mode", "highest bid")).startswith("second")
    mode: Literal["first_price", "second_price"] = "second_price" if second else "first_price"
    return AuctionLog(valuations=valuations, bids=bids, mode=mode)


def _player_id(value: Any) -> str:
    """``"3"``, ``3`` or ``"player_3"`` -> ``"player_3"``."""
    text = str(value).strip()
    return text if text.startswith("player_") else f"player_{text}"


def _target(value: Any) -> str | None:
    """A shot's target as a player id; None for an intentional miss (``null``, ``None``, ``-1``)."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in {"null", "none", ""} or "-1" in text:
        return None
    return _player_id(text)


def _battle(data: dict[str, Any]) -> BattleLog:
    turns = []
    for j, rec in enumerate(_rounds(data), 1):
        responses = _list(_field(rec, "responses", j), f"round {j} responses")
        if not responses:
            raise _Malformed(f"round {j} has no response")
        survivors: dict[str, float] = {}
        for entry in _list(_field(rec, "initial_players", j), f"round {j} initial_players"):
            if not isinstance(entry, list) or len(entry) != 2:
                raise _Malformed(f"round {j} initial_players entry {entry!r} is not [id, hit rate]")
            survivors[_player_id(entry[0])] = _in_range(entry[1], f"round {j} hit rate of {entry[0]}", 0, 100)
        shooter = _player_id(_field(rec, "player_shooting", j))
        if shooter not in survivors:
            raise _Malformed(f"round {j}: shooter {shooter} is not among the survivors")
        turns.append(BattleTurn(shooter=shooter, survivors=survivors, target=_target(responses[-1])))
    return BattleLog(turns=turns)


def _vote(value: Any) -> bool | None:
    text = str(value).strip().lower()
    return {"accept": True, "reject": False}.get(text)


def _in_range(value: Any, what: str, low: float, high: float) -> float:
    number = _num(value, what)
    if not low <= number <= high:
        raise _Malformed(f"{what} {_show(value)} is outside {low:g}-{high:g}")
    return number


def _pirate(data: dict[str, Any]) -> PirateLog:
    gold = _num(_meta(data, "gold", 100), "meta gold")
    raw_rounds = _rounds(data)
    _complete(data, raw_rounds)
    rounds = []
    for j, rec in enumerate(raw_rounds, 1):
        shares = _list(_field(rec, "gold_distribution", j), f"round {j} plan")
        plan = [_whole(g, f"round {j} pirate {i}: share", 0) for i, g in enumerate(shares, 1)]
        if plan and sum(plan) != gold:
            raise _Malformed(f"round {j}: the plan's shares sum to {sum(plan):g}, not the {gold:g} gold")
        votes = [_vote(v) for v in _list(_field(rec, "responses", j), f"round {j} responses")]
        rounds.append(PirateRound(proposal=plan, votes=votes))
    players = _players(data)
    log = PirateLog(rounds=rounds, players=players, gold=gold)
    for j, rnd in enumerate(rounds):
        if len(rnd.proposal) != players - j or len(rnd.votes) != players - j:
            raise _Malformed(f"round {j + 1} does not cover the {players - j} surviving pirates")
    return log


_READERS: dict[str, Callable[[dict[str, Any]], GameLog]] = {
    "guessing_game": _guessing,
    "bar_game": _bar,
    "divide_dollar": _dollar,
    "public_goods": _goods,
    "diner_dilemma": _diner,
    "sealed_bid_auction": _auction,
    "battle_royale": _battle,
    "pirate_game": _pirate,
}
#: A round-record key that only one game's logs have.
_SIGNATURES = (
    ("mean_ratio", "guessing_game"),
    ("go_num", "bar_game"),
    ("total_proposal", "divide_dollar"),
    ("total_tokens", "public_goods"),
    ("cheap_player", "diner_dilemma"),
    ("valuations", "sealed_bid_auction"),
    ("player_shooting", "battle_royale"),
    ("gold_distribution", "pirate_game"),
)


def detect_game(data: Mapping[str, Any]) -> str:
    """The game a parsed log belongs to, from the fields of its round records."""
    rounds = data.get("round_records")
    first = rounds[0] if isinstance(rounds, list) and rounds and isinstance(rounds[0], dict) else {}
    for key, game in _SIGNATURES:
        if key in first:
            return game
    raise _Malformed("its round records match no GAMA-Bench game")


def read_log(path: Path, game: str | None = None) -> GameLog:
    """One released log file as scoring records; DataError (one line) if it is unreadable or malformed."""
    path = Path(path)
    if game is not None and game not in _READERS:
        raise DataError(f"unknown GAMA-Bench game {game!r}", f"use one of {', '.join(GAMES)}")
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
        return _READERS[game or detect_game(data)](data)
    except _Malformed as exc:
        raise DataError(f"GAMA-Bench log {path} is malformed: {exc}") from None


@dataclass(frozen=True)
class ReleasedRun:
    """One released log of the leaderboard: model, game, run number, file and its records."""

    model: str
    game: str
    run: int
    path: Path
    log: GameLog


def raw_results_dir(data_dir: Path | None = None) -> Path:
    """``<data dir>/GAMABench/raw_results``; DataError if it is absent."""
    folder = dataset_path(DATASET, data_dir) / "raw_results"
    if not folder.is_dir():
        raise DataError(
            f"{folder} not found", f"the {DATASET} folder is incomplete: run `llmpsych data fetch {DATASET}`"
        )
    return folder


def _run_files(root: Path, game: str, version: str = "v1") -> dict[str, dict[int, Path]]:
    """Leaderboard files of one game by model and run number."""
    folder, stem = LEADERBOARD_FILES[game]
    pattern = re.compile(rf"^(?:(.+)_)?{re.escape(stem)}_{re.escape(version)}_(\d+)\.json$")
    found: dict[str, dict[int, Path]] = {}
    directory = root / folder
    if not directory.is_dir():
        return found
    for path in sorted(directory.iterdir()):
        match = pattern.match(path.name)
        if match and path.is_file():
            found.setdefault(match.group(1) or DEFAULT_MODEL, {})[int(match.group(2))] = path
    return found


def released_models(data_dir: Path | None = None) -> list[str]:
    """Models with leaderboard logs (``_v1_<run>``) for at least one game, sorted."""
    root = raw_results_dir(data_dir)
    return sorted({model for game in GAMES for model in _run_files(root, game)})


def released_runs(
    game: str, model: str = DEFAULT_MODEL, data_dir: Path | None = None, version: str = "v1"
) -> list[ReleasedRun]:
    """The leaderboard runs of one model in one game, in run order (empty if none were released)."""
    if game not in LEADERBOARD_FILES:
        raise DataError(f"unknown GAMA-Bench game {game!r}", f"use one of {', '.join(GAMES)}")
    files = _run_files(raw_results_dir(data_dir), game, version).get(model, {})
    return [
        ReleasedRun(model=model, game=game, run=run, path=path, log=read_log(path, game))
        for run, path in sorted(files.items())
    ]


#: Runs per model and game in the released leaderboard logs (``<model>_<game>_v1_1.json`` … ``_5``).
RELEASED_RUNS = 5


def released_gaps(model: str, data_dir: Path | None = None) -> list[str]:
    """What of the released leaderboard design (the eight games, runs 1-:data:`RELEASED_RUNS` each) a
    model's logs in the data directory lack, one line each (empty when complete): a game without logs
    has no score and the model no overall; a missing run makes that game's n, and the overall's, smaller.
    """
    root = raw_results_dir(data_dir)
    gaps = []
    for game in GAMES:
        runs = set(_run_files(root, game).get(model, {}))
        absent = [r for r in range(1, RELEASED_RUNS + 1) if r not in runs]
        if len(absent) == RELEASED_RUNS:
            gaps.append(f"{model}: {GAME_TITLES[game]}: no logs (no score, no overall)")
        elif absent:
            gaps.append(
                f"{model}: {GAME_TITLES[game]}: {RELEASED_RUNS - len(absent)} of {RELEASED_RUNS} runs "
                f"(run {', '.join(map(str, absent))} missing)"
            )
    every = set.intersection(*(set(_run_files(root, g).get(model, {})) for g in GAMES))
    if gaps and every:
        gaps.append(f"{model}: Overall over run {', '.join(map(str, sorted(every)))} (those every game has)")
    return gaps


def _scored(run: ReleasedRun, version: ScoringVersion, published: bool) -> float:
    try:
        return score(run.log, version=version, published=published)
    except ValueError as exc:
        raise DataError(f"GAMA-Bench log {run.path} cannot be scored: {exc}") from None


def score_released(
    model: str = DEFAULT_MODEL,
    data_dir: Path | None = None,
    *,
    version: ScoringVersion = "thesis",
    published: bool = True,
) -> dict[str, RunSummary]:
    """A model's leaderboard row recomputed from its released logs: game -> mean ± SD, plus ``overall``
    when all eight games are present. ``published=True`` (default) reproduces the published scoring."""
    runs: dict[str, dict[int, float]] = {}
    for game in GAMES:
        found = released_runs(game, model, data_dir)
        if found:
            runs[game] = {r.run: _scored(r, version, published) for r in found}
    if not runs:
        raise DataError(f"no released GAMA-Bench logs for model {model!r}")
    # the overall pairs run i across games: only the run numbers every game has (released_gaps names the
    # others); each game's own cell keeps all its runs
    common = sorted(set.intersection(*(set(r) for r in runs.values())))
    row = leaderboard_row({g: [scores[r] for r in common] for g, scores in runs.items()}) if common else {}
    row.update({g: summarize(list(scores.values())) for g, scores in runs.items()})
    return row
