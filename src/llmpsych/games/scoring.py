"""GAMA-Bench scores: the paper's 0-100 score of each of the eight games, from a game's per-round records.

The formulas are Eq. 6.1 of the thesis version of GAMA-Bench (Huang et al., "How Far Are We on the
Decision-Making of LLMs? Evaluating LLMs' Gaming Ability in Multi-Agent Environments", arXiv 2403.11807;
thesis chapter 6), which the authors' leaderboard uses. Every score is 0-100, higher meaning closer to the
game's equilibrium (or, for the sequential games, optimal) play. ``version="arxiv_v4"`` gives the earlier
arXiv v4 formulas, which differ for Guess 2/3 at R=1, Public Goods with R/N > 1 and the Sealed-Bid
Auction.

Corrections. Where the paper, or the reference code that produced the published numbers, is wrong or
ambiguous, the scorers here follow the corrected reading by default; ``published=True`` reproduces the
published numbers (see each scorer's docstring and ``docs/games.md``).

Each game's record (a plain frozen dataclass; ``[round][player]`` nesting throughout) and formula live
in the game's module and are re-exported here; :func:`score` dispatches through the game registry. A
run's summary over repeated runs (mean ± sample SD) and the overall score are at the end of the module.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import registry
from .auction import AuctionLog, auction_score
from .bar import BarLog, bar_score
from .battle_royale import BattleLog, BattleTurn, battle_score, best_target
from .diner import DinerLog, diner_score, read_dish
from .divide_dollar import DollarLog, dollar_score
from .engine import Game
from .guessing import GuessingLog, guessing_score
from .pirate import PirateLog, PirateRound, pirate_parts, pirate_score, vote_correct
from .pirate import optimal_shares as optimal_plan
from .public_goods import GoodsLog, goods_score
from .scorekit import VERSIONS, ScoringVersion, check_version
from .scorekit import mean as _mean

#: The eight games, in the paper's order (names as in the authors' repository).
GAMES: tuple[str, ...] = registry.PAPER_GAMES
#: Display titles of the registered games (scoring name -> title).
GAME_TITLES = registry.TITLES

GameLog = GuessingLog | BarLog | DollarLog | GoodsLog | DinerLog | AuctionLog | BattleLog | PirateLog


def _game(log: object) -> type[Game[Any]]:
    try:
        return registry.by_scoring_name(getattr(log, "game", ""))
    except KeyError:
        raise TypeError(f"not a registered game's log: {type(log).__name__}") from None


# -- dispatch, runs and the overall score ----------------------------------------------------------
def above_range(log: Any) -> list[str]:
    """Answers above the bound the prompt asked for, where the reference game accepted them anyway.

    Divide the Dollar bids above G, Public Goods contributions above the endowment and auction bids
    above the valuation: the reference validated with ``int()`` only, so its logs hold such answers
    (the 240 leaderboard logs: Mixtral-8x7B's bid of 187 of 100 golds and three contributions of 30 or
    35 of 20 tokens, and one auction bid of 10 for a valuation of 0) and the published scores include
    them. They are kept, as the
    reference kept them, and counted here so a report can say so. Each entry reads
    ``"round 5 player 3: bid 187 > 100"``.
    """
    return _game(log).above_range(log)


def score(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
    """The 0-100 score of any game's log (dispatching on its type).

    A score outside 0-100 (only answers far above the asked range can produce one, e.g. a Public Goods
    contribution of 1e300) is a ValueError, never a number; the arXiv v4 auction formula, which has no
    lower bound, must stay at or below 100.
    """
    check_version(version)
    game = _game(log)
    value = game.score_log(log, version=version, published=published)
    low, high = game.score_bounds(version)
    if not (low <= value <= high + 1e-9):
        raise ValueError(
            f"the {log.game} score {value:g} is outside 0-100: the log holds answers far outside the "
            f"game's range ({'; '.join(above_range(log)[:3]) or 'see the log'})"
        )
    return value


@dataclass(frozen=True)
class RunSummary:
    """Scores of repeated runs: mean ± sample SD (ddof=1, as published; NaN for a single run)."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        """Number of runs."""
        return len(self.values)

    @property
    def mean(self) -> float:
        """Mean over runs."""
        return _mean(self.values)

    @property
    def sd(self) -> float:
        """Sample standard deviation over runs (NaN for one run)."""
        return statistics.stdev(self.values) if self.n > 1 else math.nan

    def __str__(self) -> str:
        from ..stats import format_mean_sd  # scipy loads on first use

        return format_mean_sd(self.mean, self.sd, sep="±")


def summarize(values: Sequence[float]) -> RunSummary:
    """Mean ± sample SD of one game's scores over its runs."""
    if not values:
        raise ValueError("no runs to summarize")
    return RunSummary(tuple(float(v) for v in values))


def overall_score(scores: Mapping[str, float]) -> float:
    """The overall score: the unweighted mean of the eight games' scores."""
    missing = [g for g in GAMES if g not in scores]
    if missing:
        raise ValueError(f"the overall score needs all eight games; missing {', '.join(missing)}")
    return _mean([scores[g] for g in GAMES])


def leaderboard_row(runs: Mapping[str, Sequence[float]]) -> dict[str, RunSummary]:
    """Per-game and overall mean ± SD from each game's per-run scores (run i paired across games).

    The overall SD is that of the per-run overall scores (the mean of the eight games in run i), as in
    the published leaderboard; the overall mean equals the mean of the eight game means.
    """
    row = {g: summarize(runs[g]) for g in GAMES if g in runs}
    if len(row) == len(GAMES):
        counts = {len(runs[g]) for g in GAMES}
        if len(counts) != 1:
            raise ValueError("the overall score pairs runs across games: every game needs the same runs")
        per_run = [overall_score({g: runs[g][i] for g in GAMES}) for i in range(counts.pop())]
        row["overall"] = summarize(per_run)
    return row


__all__ = [
    "GAMES",
    "GAME_TITLES",
    "VERSIONS",
    "AuctionLog",
    "BarLog",
    "BattleLog",
    "BattleTurn",
    "DinerLog",
    "DollarLog",
    "GameLog",
    "GoodsLog",
    "GuessingLog",
    "PirateLog",
    "PirateRound",
    "RunSummary",
    "ScoringVersion",
    "above_range",
    "auction_score",
    "bar_score",
    "battle_score",
    "best_target",
    "diner_score",
    "dollar_score",
    "goods_score",
    "guessing_score",
    "leaderboard_row",
    "optimal_plan",
    "overall_score",
    "pirate_parts",
    "pirate_score",
    "read_dish",
    "score",
    "summarize",
    "vote_correct",
]
