"""GAMA-Bench scores: the paper's 0-100 score of each of the eight games, from a game's per-round records.

The formulas are Eq. 6.1 of the thesis version of GAMA-Bench (Huang et al., "How Far Are We on the
Decision-Making of LLMs? Evaluating LLMs' Gaming Ability in Multi-Agent Environments", arXiv 2403.11807;
thesis chapter 6), which the authors' leaderboard uses. Every score is 0-100, higher meaning closer to the
game's equilibrium (or, for the sequential games, optimal) play. ``version="arxiv_v4"`` gives the earlier
arXiv v4 formulas, which differ for Guess 2/3 at R=1, Public Goods with R/N > 1 and the Sealed-Bid
Auction.

Corrections. Where the paper, or the reference code that produced the published numbers, is wrong or
ambiguous, the scorers here follow the corrected reading by default; ``compat=True`` reproduces the
published numbers (see each scorer's docstring and ``docs/games.md``).

Records are plain frozen dataclasses, one per game; ``[round][player]`` nesting throughout. A run's
summary over repeated runs (mean ± sample SD) and the overall score are at the end of the module.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

ScoringVersion = Literal["thesis", "arxiv_v4"]
VERSIONS: tuple[ScoringVersion, ...] = ("thesis", "arxiv_v4")

#: The eight games, in the paper's order (names as in the authors' repository).
GAMES: tuple[str, ...] = (
    "guessing_game",
    "bar_game",
    "divide_dollar",
    "public_goods",
    "diner_dilemma",
    "sealed_bid_auction",
    "battle_royale",
    "pirate_game",
)
#: Display titles of the games.
GAME_TITLES: dict[str, str] = {
    "guessing_game": "Guess 2/3 of the Average",
    "bar_game": "El Farol Bar",
    "divide_dollar": "Divide the Dollar",
    "public_goods": "Public Goods Game",
    "diner_dilemma": "Diner's Dilemma",
    "sealed_bid_auction": "Sealed-Bid Auction",
    "battle_royale": "Battle Royale",
    "pirate_game": "Pirate Game",
}


# -- records ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GuessingLog:
    """Guess R of the Average: each player's integer in [min_value, max_value], per round."""

    choices: Sequence[Sequence[float]]
    min_value: float = 0
    max_value: float = 100
    ratio: float = 2 / 3
    game: str = field(default="guessing_game", init=False)


@dataclass(frozen=True)
class BarLog:
    """El Farol Bar: whether each player went to the bar (True) or stayed home, per round."""

    went: Sequence[Sequence[bool]]
    ratio: float = 0.6
    game: str = field(default="bar_game", init=False)


@dataclass(frozen=True)
class DollarLog:
    """Divide the Dollar: each player's bid for a share of ``golds``, per round."""

    bids: Sequence[Sequence[float]]
    golds: float = 100
    game: str = field(default="divide_dollar", init=False)


@dataclass(frozen=True)
class GoodsLog:
    """Public Goods Game: tokens each player put in the pot (of ``tokens`` held), pot multiplier ``ratio``."""

    contributions: Sequence[Sequence[float]]
    tokens: float = 20
    ratio: float = 2
    game: str = field(default="public_goods", init=False)


@dataclass(frozen=True)
class DinerLog:
    """Diner's Dilemma: each player's dish answer (``"cheap"`` or ``"costly"``), per round.

    Answers are kept as given, so the scorer can apply (or, with ``compat``, not apply) the reading of
    variants such as ``"cheap_dish"``. The prices and utilities do not enter the score.
    """

    dishes: Sequence[Sequence[str]]
    cheap_price: float = 10
    cheap_utility: float = 15
    costly_price: float = 20
    costly_utility: float = 20
    game: str = field(default="diner_dilemma", init=False)


@dataclass(frozen=True)
class AuctionLog:
    """Sealed-Bid Auction: each player's private valuation and bid, per round."""

    valuations: Sequence[Sequence[float]]
    bids: Sequence[Sequence[float]]
    mode: Literal["first_price", "second_price"] = "first_price"
    game: str = field(default="sealed_bid_auction", init=False)


@dataclass(frozen=True)
class BattleTurn:
    """One Battle Royale turn: who shot, who was alive (id -> hit rate), and the target (None: a miss)."""

    shooter: str
    survivors: Mapping[str, float]
    target: str | None


@dataclass(frozen=True)
class BattleLog:
    """Battle Royale: the turns played, one shot each."""

    turns: Sequence[BattleTurn]
    game: str = field(default="battle_royale", init=False)


@dataclass(frozen=True)
class PirateRound:
    """One Pirate Game round: the plan and the votes, both over the surviving pirates by rank.

    ``proposal[0]`` and ``votes[0]`` belong to the proposer (the most senior survivor). A vote is True
    (accept), False (reject) or None (an answer that was neither).
    """

    proposal: Sequence[float]
    votes: Sequence[bool | None]


@dataclass(frozen=True)
class PirateLog:
    """Pirate Game: the rounds played by ``players`` pirates dividing ``gold``."""

    rounds: Sequence[PirateRound]
    players: int = 10
    gold: float = 100
    game: str = field(default="pirate_game", init=False)


GameLog = GuessingLog | BarLog | DollarLog | GoodsLog | DinerLog | AuctionLog | BattleLog | PirateLog


# -- helpers ---------------------------------------------------------------------------------------
def _check_version(version: str) -> None:
    if version not in VERSIONS:
        raise ValueError(f"unknown scoring version {version!r} (use one of {', '.join(VERSIONS)})")


def _rounds(table: Sequence[Sequence[object]], what: str) -> None:
    if not table or any(len(row) == 0 for row in table):
        raise ValueError(f"no {what} to score: every round needs at least one player")


def _finite(
    table: Sequence[Sequence[float]], what: str, low: float | None = 0.0, high: float | None = None
) -> None:
    """Every value a finite number within [low, high] (a NaN would make the score NaN, an infinity or a
    negative bid any value at all)."""
    for j, row in enumerate(table, 1):
        for i, value in enumerate(row, 1):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"round {j} player {i}: {what} {value!r} is not a finite number")
            if (low is not None and value < low) or (high is not None and value > high):
                where = "negative" if high is None else f"outside {low:g}-{high:g}"
                raise ValueError(f"round {j} player {i}: {what} {value:g} is {where}")


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


# -- (1) Guess 2/3 of the Average -----------------------------------------------------------------
def guessing_score(log: GuessingLog, *, version: ScoringVersion = "thesis", compat: bool = False) -> float:
    """Guess R of the Average: how close the choices are to the equilibrium.

    S1 = mean over rounds and players of (C - MIN), D = MAX - MIN. Rescaled (thesis):
    R<1: (D - S1)/D*100 (equilibrium MIN); R>1: S1/D*100 (equilibrium MAX);
    R=1: (1 - |2*S1 - D|/D)*100. ``version="arxiv_v4"`` uses |2*S1 - D|/D*100 at R=1 (the complement).

    Correction: for R<1 the reference code computes (MAX - S1)/D, which equals the thesis formula only
    when MIN=0 (every published setting); ``compat=True`` uses the code's form.
    """
    _check_version(version)
    _rounds(log.choices, "choices")
    _finite(log.choices, "guess", log.min_value, log.max_value)
    span = log.max_value - log.min_value
    if span <= 0:
        raise ValueError("max_value must exceed min_value")
    s1 = _mean([c - log.min_value for row in log.choices for c in row])
    if math.isclose(log.ratio, 1.0):
        distance = abs(2 * s1 - span) / span * 100
        return distance if version == "arxiv_v4" else 100 - distance
    if log.ratio > 1:
        return s1 / span * 100
    if compat:
        return (log.max_value - s1) / span * 100
    return (span - s1) / span * 100


# -- (2) El Farol Bar ------------------------------------------------------------------------------
def bar_score(log: BarLog) -> float:
    """El Farol Bar: how close each round's share of goers is to the capacity R (the mixed equilibrium).

    S2 = mean over rounds of |share of goers - R|; score = (max(R, 1-R) - S2)/max(R, 1-R)*100. The
    leaderboard scores the implicit-information mode only.
    """
    _rounds(log.went, "decisions")
    if not 0 <= log.ratio <= 1:
        raise ValueError("the El Farol ratio is a share of players, between 0 and 1")
    s2 = _mean([abs(sum(bool(g) for g in row) / len(row) - log.ratio) for row in log.went])
    worst = max(log.ratio, 1 - log.ratio)
    return (worst - s2) / worst * 100


# -- (3) Divide the Dollar -------------------------------------------------------------------------
def dollar_score(log: DollarLog) -> float:
    """Divide the Dollar: how close the sum of bids is to G (everyone bidding G/N is the equilibrium).

    S3 = mean over rounds of |sum of bids - G|; score = max((G - S3)/G*100, 0). The arXiv v4 text
    prints no floor at 0, but its published table was computed with it (Mixtral-8x7B: 1.2±2.8 from runs
    of 6.2, 0, 0, 0, 0), so both versions use it.
    """
    _rounds(log.bids, "bids")
    _finite(log.bids, "bid")
    if log.golds <= 0:
        raise ValueError("golds must be positive")
    s3 = _mean([abs(math.fsum(row) - log.golds) for row in log.bids])
    return max((log.golds - s3) / log.golds * 100, 0.0)


# -- (4) Public Goods Game -------------------------------------------------------------------------
def goods_score(log: GoodsLog, *, version: ScoringVersion = "thesis") -> float:
    """Public Goods Game: how close contributions are to the equilibrium (0 when R/N <= 1).

    S4 = mean over rounds and players of the tokens contributed; score = (T - S4)/T*100 if R/N <= 1,
    else S4/T*100 (contributing everything is then optimal). ``version="arxiv_v4"`` (and the reference
    code) use the first branch always; the published settings all have R/N <= 1.
    """
    _check_version(version)
    _rounds(log.contributions, "contributions")
    _finite(log.contributions, "contribution")
    if log.tokens <= 0:
        raise ValueError("tokens must be positive")
    s4 = _mean([c for row in log.contributions for c in row])
    players = len(log.contributions[0])
    if version == "thesis" and log.ratio / players > 1:
        return s4 / log.tokens * 100
    return (log.tokens - s4) / log.tokens * 100


# -- (5) Diner's Dilemma ---------------------------------------------------------------------------
def read_dish(answer: str) -> bool | None:
    """True for the cheap dish, False for the costly one, None if the answer names neither.

    Accepts the two words in any case and the ``_dish`` variants some models answer with
    (``"cheap_dish"``); a placeholder echo such as ``"costly_or_cheap"`` names neither.
    """
    word = str(answer).strip().lower().removesuffix("_dish").removesuffix(" dish")
    return {"cheap": True, "costly": False}.get(word)


def diner_score(log: DinerLog, *, compat: bool = False) -> float:
    """Diner's Dilemma: the percentage of costly orders (everyone ordering costly is the equilibrium).

    S5 = share of cheap orders; score = (1 - S5)*100.

    Correction: the reference code counts any answer other than exactly ``"cheap"`` as costly, so
    ``"cheap_dish"`` (which Mixtral-8x7B often answers) counted as costly in the published numbers. By
    default answers are read with :func:`read_dish` and answers naming neither dish are left out;
    ``compat=True`` reproduces the reference.
    """
    _rounds(log.dishes, "dish answers")
    if compat:
        cheap = [str(d) == "cheap" for row in log.dishes for d in row]
    else:
        read = [read_dish(d) for row in log.dishes for d in row]
        cheap = [c for c in read if c is not None]
        if not cheap:
            raise ValueError("no answer names a dish")
    return (1 - _mean([float(c) for c in cheap])) * 100


# -- (6) Sealed-Bid Auction ------------------------------------------------------------------------
def auction_score(log: AuctionLog, *, version: ScoringVersion = "thesis") -> float:
    """Sealed-Bid Auction: how far bids are shaded below valuations (first-price play).

    Thesis: S6 = mean over rounds and players of max(0, (v - b)/max(v, 1)); score = S6*100. The guard
    max(v, 1) handles the valuation 0 the game can draw, and overbids count 0, as in the reference code.
    ``version="arxiv_v4"``: S6 = mean(v - b), score = S6/max(v)*100 over the observed valuations.

    The leaderboard scores first-price auctions only; the same formula applied to second-price logs
    (where bidding the valuation is the equilibrium) is descriptive, not the paper's score.
    """
    _check_version(version)
    _rounds(log.bids, "bids")
    if len(log.bids) != len(log.valuations) or any(
        len(b) != len(v) for b, v in zip(log.bids, log.valuations, strict=True)
    ):
        raise ValueError("bids and valuations must have the same shape")
    _finite(log.bids, "bid")
    _finite(log.valuations, "valuation")
    pairs = [
        (v, b)
        for vrow, brow in zip(log.valuations, log.bids, strict=True)
        for v, b in zip(vrow, brow, strict=True)
    ]
    if version == "arxiv_v4":
        top = max(v for v, _ in pairs)
        if top <= 0:
            raise ValueError("the arXiv auction score needs a positive valuation")
        return _mean([v - b for v, b in pairs]) / top * 100
    return _mean([max(0.0, (v - b) / max(v, 1)) for v, b in pairs]) * 100


# -- (7) Battle Royale -----------------------------------------------------------------------------
def best_target(turn: BattleTurn) -> set[str]:
    """The surviving player(s) other than the shooter with the highest hit rate."""
    others = {p: h for p, h in turn.survivors.items() if p != turn.shooter}
    if not others:
        return set()
    top = max(others.values())
    return {p for p, h in others.items() if h == top}


def battle_score(log: BattleLog) -> float:
    """Battle Royale: the percentage of turns whose shooter aimed at the strongest other survivor.

    S7 = (turns targeting the highest-hit-rate survivor other than the shooter) / k, k = turns played;
    score = S7*100. Intentional misses and targets that are not a surviving opponent count as wrong.

    Correction: the paper prints the normaliser 1/(N*k); every published value (e.g. GPT-3.5-0125's
    20.0 = 4/20 turns) is per turn, 1/k, which is also what the formula means, so that is used.
    """
    if not log.turns:
        raise ValueError("no Battle Royale turns to score")
    correct = sum(t.target is not None and t.target in best_target(t) for t in log.turns)
    return correct / len(log.turns) * 100


# -- (8) Pirate Game -------------------------------------------------------------------------------
def optimal_plan(survivors: int, gold: float) -> list[float]:
    """The equilibrium plan when ``survivors`` pirates remain: 1 gold to every second pirate below the
    proposer (same rank parity), nothing to the others, the rest to the proposer (Stewart 1999)."""
    if survivors < 1:
        raise ValueError("at least one pirate must survive")
    plan = [0.0] * survivors
    for i in range(2, survivors, 2):
        plan[i] = 1.0
    plan[0] = gold - sum(plan)
    if plan[0] < 0:
        raise ValueError(f"{gold} gold cannot buy the votes of {survivors} pirates")
    return plan


def vote_correct(share: float, offset: int, accept: bool | None, *, compat: bool = False) -> bool:
    """Whether a voter ``offset`` ranks below the proposer voted as the equilibrium requires.

    Accept if offered 2 or more, reject if offered 0; offered exactly 1, accept if the voter's rank has
    the proposer's parity (even ``offset``), else reject. With ``compat`` the reference code's rule: a
    reject of 1 gold from an opposite-parity proposer is never counted correct.
    """
    if accept is None:
        return False
    if share >= 2:
        return accept
    if share == 0:
        return not accept
    if share == 1:
        if offset % 2 == 0:
            return accept
        return False if compat else not accept
    return False  # a fractional share below 2 has no equilibrium answer (and never occurs with integers)


def pirate_parts(log: PirateLog, *, compat: bool = False) -> tuple[float, float, float]:
    """(S8P, S8V, scale): mean L1 distance of the plans to the optimum, vote accuracy, and 2G.

    With ``compat`` (the reference code) plans are first rescaled to 100 gold and compared with the
    100-gold optimum, so the scale is always 200.
    """
    if not log.rounds:
        raise ValueError("no Pirate Game rounds to score")
    if log.gold <= 0:
        raise ValueError("gold must be positive")
    if len(log.rounds) > log.players:
        raise ValueError(f"{len(log.rounds)} rounds cannot be played by {log.players} pirates")
    distances: list[float] = []
    correct = votes = 0
    for j, rnd in enumerate(log.rounds):
        survivors = log.players - j
        if len(rnd.proposal) != survivors or len(rnd.votes) != survivors:
            raise ValueError(f"round {j + 1}: plan and votes must cover the {survivors} surviving pirates")
        if compat:
            plan = [g / log.gold * 100 for g in rnd.proposal]
            target = optimal_plan(survivors, 100)
        else:
            plan, target = list(rnd.proposal), optimal_plan(survivors, log.gold)
        distances.append(math.fsum(abs(a - b) for a, b in zip(plan, target, strict=True)))
        for offset in range(1, survivors):
            correct += vote_correct(rnd.proposal[offset], offset, rnd.votes[offset], compat=compat)
            votes += 1
    accuracy = correct / votes if votes else 1.0
    return _mean(distances), accuracy, 200.0 if compat else 2 * log.gold


def pirate_score(log: PirateLog, *, compat: bool = False) -> float:
    """Pirate Game: closeness of the plans to the optimum and correctness of the votes.

    S8P = mean over rounds of the L1 distance between the plan and the optimal plan; S8V = share of
    correct votes (proposers excluded); score = (2G - S8P)/(2G)*50 + S8V*50.

    Corrections (``compat=True`` reproduces the reference code and the published numbers): the code
    rescales plans to 100 gold and compares them with the 100-gold optimum (identical at G=100, not for
    the G=4 or 5 variants), and never credits rejecting 1 gold offered by an opposite-parity proposer,
    which the paper's stated rule calls correct.
    """
    distance, accuracy, scale = pirate_parts(log, compat=compat)
    return (scale - distance) / scale * 50 + accuracy * 50


# -- dispatch, runs and the overall score ----------------------------------------------------------
def above_range(log: GameLog) -> list[str]:
    """Answers above the bound the prompt asked for, where the reference game accepted them anyway.

    Divide the Dollar bids above G, Public Goods contributions above the endowment and auction bids
    above the valuation: the reference validated with ``int()`` only, so its logs hold such answers
    (the 240 leaderboard logs: Mixtral-8x7B's bid of 187 of 100 golds and three contributions of 30 or
    35 of 20 tokens, and one auction bid of 10 for a valuation of 0) and the published scores include
    them. They are kept, as the
    reference kept them, and counted here so a report can say so. Each entry reads
    ``"round 5 player 3: bid 187 > 100"``.
    """
    if isinstance(log, DollarLog):
        rows = [
            (j, i, b, log.golds, "bid") for j, row in enumerate(log.bids, 1) for i, b in enumerate(row, 1)
        ]
    elif isinstance(log, GoodsLog):
        rows = [
            (j, i, c, log.tokens, "contribution")
            for j, row in enumerate(log.contributions, 1)
            for i, c in enumerate(row, 1)
        ]
    elif isinstance(log, AuctionLog):
        rows = [
            (j, i, b, v, "bid")
            for j, (brow, vrow) in enumerate(zip(log.bids, log.valuations, strict=True), 1)
            for i, (b, v) in enumerate(zip(brow, vrow, strict=True), 1)
        ]
    else:
        return []
    return [
        f"round {j} player {i}: {what} {value:g} > {bound:g}"
        for j, i, value, bound, what in rows
        if value > bound
    ]


def score(log: GameLog, *, version: ScoringVersion = "thesis", compat: bool = False) -> float:
    """The 0-100 score of any game's log (dispatching on its type).

    A score outside 0-100 (only answers far above the asked range can produce one, e.g. a Public Goods
    contribution of 1e300) is a ValueError, never a number; the arXiv v4 auction formula, which has no
    lower bound, must stay at or below 100.
    """
    value = _score(log, version=version, compat=compat)
    low = -math.inf if version == "arxiv_v4" and isinstance(log, AuctionLog) else 0.0
    if not (low <= value <= 100 + 1e-9):
        raise ValueError(
            f"the {log.game} score {value:g} is outside 0-100: the log holds answers far outside the "
            f"game's range ({'; '.join(above_range(log)[:3]) or 'see the log'})"
        )
    return value


def _score(log: GameLog, *, version: ScoringVersion = "thesis", compat: bool = False) -> float:
    _check_version(version)
    if isinstance(log, GuessingLog):
        return guessing_score(log, version=version, compat=compat)
    if isinstance(log, BarLog):
        return bar_score(log)
    if isinstance(log, DollarLog):
        return dollar_score(log)
    if isinstance(log, GoodsLog):
        return goods_score(log, version=version)
    if isinstance(log, DinerLog):
        return diner_score(log, compat=compat)
    if isinstance(log, AuctionLog):
        return auction_score(log, version=version)
    if isinstance(log, BattleLog):
        return battle_score(log)
    if isinstance(log, PirateLog):
        return pirate_score(log, compat=compat)
    raise TypeError(f"not a GAMA-Bench game log: {type(log).__name__}")


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
        return f"{self.mean:.1f}±{self.sd:.1f}"


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
