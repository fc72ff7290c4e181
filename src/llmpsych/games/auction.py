"""(6) Sealed-Bid Auction — betraying (spec §2.6).

Rules: each round every player gets a private valuation of an item and submits a sealed bid; the highest
bid wins (ties broken uniformly at random, seeded) and pays its own bid (``first`` price, scored in the
paper) or the second-highest bid (``second`` price, Vickrey). The winner's utility is valuation − price,
everyone else's 0. Defaults: N=10, K=20, valuations from 0..200 in steps of 10.

Valuations are drawn as in the reference code so every model sees the same ones: in round j,
``random.Random(seed + j - 1).sample(range(vmin, vmax + interval, interval), N)`` with seed 42 — N distinct
multiples of the interval, and 0 is possible. Bids are validated to 0..valuation.

Nash equilibrium: bid the valuation in the second-price auction; shade below it in the first-price one
(the ``ne`` strategy bids v·(N−1)/N, the risk-neutral equilibrium for uniform valuations).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from .engine import Decision, DecisionInfo, PlotAdd, SimultaneousGame, SimultaneousRound
from .parsing import as_int
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, above_bound, check_version, every_round, finite, mean

BUILTIN = {
    "description": """@3

This is a game for @0 players that lasts @1 rounds.

How it works:
- In every round one item is sold, and each player privately learns how much the item is worth to them.
- Each player hands in one sealed bid, without seeing anyone else's bid or value.
- The item goes to the player with the top bid, who pays the @2.
- The winner's utility for the round is their value minus the price they pay; everyone else gets zero.""",
    "report": (
        """Round @0 is over. The item was worth @1 to you.
What did you bid?""",
        echo(bid="@2"),
        """The top bid was @3 and the winner paid @4.
You @5; your utility this round is @6.""",
    ),
    "request": """Round @0 begins.

Your aim is the largest total utility over the game. This round the item is worth @1 to you.

@2""",
}


class AuctionParams(BaseModel):
    """Parameters of the Sealed-Bid Auction."""

    model_config = ConfigDict(extra="forbid")

    valuation_min: int = Field(default=0, ge=0)
    valuation_max: int = Field(default=200, ge=1)
    interval: int = Field(default=10, ge=1)
    mode: Literal["first", "second"] = "first"
    seed: int = 42


def draw_valuations(round_no: int, players: int, p: AuctionParams) -> list[int]:
    """The reference draw: seed + round − 1, N distinct multiples of the interval."""
    values = range(p.valuation_min, p.valuation_max + p.interval, p.interval)
    return random.Random(p.seed + round_no - 1).sample(values, players)


def resolve_auction(
    bids: list[int], valuations: list[int], mode: Literal["first", "second"], rng: random.Random
) -> dict[str, Any]:
    """Winner (random among tied top bids), price and utilities."""
    top = max(bids)
    tied = [i for i, b in enumerate(bids) if b == top]
    winner = tied[0] if len(tied) == 1 else rng.choice(tied)
    price = top if mode == "first" else sorted(bids, reverse=True)[1] if len(bids) > 1 else top
    utility = [valuations[i] - price if i == winner else 0 for i in range(len(bids))]
    return {
        "valuations": valuations,
        "bids": bids,
        "winner": winner,
        "tied": tied,
        "winning_bid": top,
        "price": price,
        "utility": utility,
    }


class AuctionRound(SimultaneousRound):
    """One round of the sealed-bid auction: the valuations and bids, the winner (drawn among ``tied``
    top bidders), the winning bid, the price paid and each player's utility."""

    valuations: list[int | float]
    bids: list[int | float]
    winner: int
    tied: list[int]
    winning_bid: int | float
    price: int | float
    utility: list[int | float]


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuctionLog:
    """Sealed-Bid Auction: each player's private valuation and bid, per round."""

    valuations: Sequence[Sequence[float]]
    bids: Sequence[Sequence[float]]
    mode: Literal["first_price", "second_price"] = "first_price"
    game: str = field(default="sealed_bid_auction", init=False)


def auction_score(log: AuctionLog, *, version: ScoringVersion = "thesis") -> float:
    """Sealed-Bid Auction: how far bids are shaded below valuations (first-price play).

    Thesis: S6 = mean over rounds and players of max(0, (v - b)/max(v, 1)); score = S6*100. The guard
    max(v, 1) handles the valuation 0 the game can draw, and overbids count 0, as in the reference code.
    ``version="arxiv_v4"``: S6 = mean(v - b), score = S6/max(v)*100 over the observed valuations.

    The leaderboard scores first-price auctions only; the same formula applied to second-price logs
    (where bidding the valuation is the equilibrium) is descriptive, not the paper's score.
    """
    check_version(version)
    every_round(log.bids, "bids")
    if len(log.bids) != len(log.valuations) or any(
        len(b) != len(v) for b, v in zip(log.bids, log.valuations, strict=True)
    ):
        raise ValueError("bids and valuations must have the same shape")
    finite(log.bids, "bid")
    finite(log.valuations, "valuation")
    pairs = [
        (v, b)
        for vrow, brow in zip(log.valuations, log.bids, strict=True)
        for v, b in zip(vrow, brow, strict=True)
    ]
    if version == "arxiv_v4":
        top = max(v for v, _ in pairs)
        if top <= 0:
            raise ValueError("the arXiv auction score needs a positive valuation")
        return mean([v - b for v, b in pairs]) / top * 100
    return mean([max(0.0, (v - b) / max(v, 1)) for v, b in pairs]) * 100


@dataclass(frozen=True, eq=False)
class BidInfo(DecisionInfo):
    """What a bidder may look at: their valuation this round and the auction's price rule."""

    valuation: int
    mode: Literal["first", "second"]


class AuctionGame(SimultaneousGame[AuctionRound]):
    """Sealed-Bid Auction."""

    name = "auction"
    folder = "sealed_bid_auction"
    Params = AuctionParams
    Round = AuctionRound
    builtin = BUILTIN
    title = "Sealed-Bid Auction"
    scoring_name = "sealed_bid_auction"
    json_key = "sealed_bid_auction"
    in_overall = True
    panels = {
        "bids": ("Bids against valuations", "valuation", "bid"),
        "shading": ("Mean bid / valuation", "round", "bid / valuation"),
    }
    p: AuctionParams

    def check(self) -> None:
        p = self.p
        n_values = len(range(p.valuation_min, p.valuation_max + p.interval, p.interval))
        if n_values < self.players:
            raise ConfigError(f"auction: only {n_values} distinct valuations for {self.players} players")

    def valuations(self, round_no: int) -> list[int]:
        """This round's valuations."""
        return draw_valuations(round_no, self.players, self.p)

    def description(self, player: int) -> str:
        paid = "highest bid" if self.p.mode == "first" else "second highest bid"
        return self.prompts.text("description", [self.players, self.rounds, paid, self.role_text])

    def decision(self, player: int, round_no: int) -> Decision:
        value = self.valuations(round_no)[player]
        fields = {"bid": f"integer_between_0_and_{value}"}
        request = self.prompts.text("request", [round_no, value, self.fmt(fields)])
        return Decision(
            player=player,
            round=round_no,
            kind="bid",
            request=request,
            fields=list(fields),
            validate=lambda data: as_int(data["bid"], 0, value),
            fallback=0,
            info=BidInfo(valuation=value, mode=self.p.mode),
        )

    def resolve(self, round_no: int, actions: list[Any]) -> AuctionRound:
        rng = self.rng("auction-tie", round_no)
        outcome = resolve_auction(actions, self.valuations(round_no), self.p.mode, rng)
        return AuctionRound(round=round_no, **outcome)

    def report(self, player: int, round_no: int, actions: list[Any], outcome: AuctionRound) -> list[str]:
        won = outcome.winner == player
        inputs = [
            round_no,
            outcome.valuations[player],
            actions[player],
            outcome.winning_bid,
            outcome.price,
            "won" if won else "lost",
            outcome.utility[player],
        ]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            value = BidInfo.of(decision.info).valuation
            return value if self.p.mode == "second" else value * (self.players - 1) // self.players
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        terms = [
            max(0.0, (v - b) / max(v, 1))
            for r in self.records
            for v, b in zip(r.valuations, r.bids, strict=True)
        ]
        return {"mean_relative_shading": sum(terms) / len(terms) if terms else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> AuctionLog:
        rounds = result.rounds_as(AuctionRound)
        mode: Literal["first_price", "second_price"] = (
            "first_price" if result.params["mode"] == "first" else "second_price"
        )
        return AuctionLog([r.valuations for r in rounds], [r.actions() for r in rounds], mode)

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return auction_score(log, version=version)

    @classmethod
    def score_bounds(cls, version: ScoringVersion) -> tuple[float, float]:
        """The arXiv v4 auction formula has no lower bound."""
        return (-math.inf if version == "arxiv_v4" else 0.0, 100.0)

    @staticmethod
    def above_range(log: Any) -> list[str]:
        return above_bound(
            (j, i, b, v, "bid")
            for j, (brow, vrow) in enumerate(zip(log.bids, log.valuations, strict=True), 1)
            for i, (b, v) in enumerate(zip(brow, vrow, strict=True), 1)
        )

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        rounds = result.rounds_as(AuctionRound)
        for r in rounds:
            for i, (v, b) in enumerate(zip(r.valuations, r.bids, strict=True)):
                add("bids", "bid", v, b, i)
            ratios = [b / v for v, b in zip(r.valuations, r.bids, strict=True) if v > 0]
            add("shading", "mean", r.round, sum(ratios) / len(ratios) if ratios else math.nan)
        values = sorted({v for r in rounds for v in r.valuations})
        if values:  # the diagonal, once per run over the valuations seen
            add("bids", "bid = valuation", values[0], values[0])
            add("bids", "bid = valuation", values[-1], values[-1])
