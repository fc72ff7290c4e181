"""(4) Public Goods Game — betraying (spec §2.4).

Rules: each round every player secretly puts some of their T tokens into a pot; the pot is multiplied by R
(1 < R < N) and shared equally; unspent tokens are kept. Players see everyone's contributions and
holdings. Defaults: N=10, K=20, R=2, T=20, and every round starts again from T tokens (``reset``, as in the
reference); ``reset=false`` carries balances forward, ``endowment="random"`` draws each player's T from
``rand_min``..T (seeded). Contributions are validated to 0..current tokens.

Nash equilibrium: contribute nothing (each token returns R/N − 1 < 0); if R > N, contribute everything.
The reference code starts trimming histories after round 10 in this game.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .engine import Decision, DecisionInfo, Payoff, PlotAdd, SimultaneousGame, SimultaneousRound, Table
from .guessing import number_text
from .parsing import as_int
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, above_bound, check_version, every_round, finite, mean

BUILTIN = {
    "description": """@3

This is a game for @0 players that lasts @1 rounds.

How it works:
- Each round you hold some private tokens and secretly choose how many of them to put into a shared pot.
- The pot is multiplied by @2, and the result is split evenly among all players, no matter how \
much each of them put in.
- Whatever you keep out of the pot stays yours.""",
    "report": (
        """Round @0 is over.
Everyone's contributions, in player order: @1
How many tokens did you put in?""",
        echo(tokens_contributed="@2"),
        """The pot held @3 tokens.
Your net gain from the pot: @4
You now have @5 tokens.
Everyone's tokens, in player order: @6""",
    ),
    "request": """Round @0 begins.

You want to finish the game with as many tokens as possible. You hold @1 tokens right now; \
decide how many of them go into the shared pot.

@2""",
}


class PublicGoodsParams(BaseModel):
    """Parameters of the Public Goods Game."""

    model_config = ConfigDict(extra="forbid")

    tokens: int = Field(default=20, ge=1)
    ratio: float = Field(default=2.0, ge=0)
    reset: bool = True
    endowment: Literal["fixed", "random"] = "fixed"
    rand_min: int = Field(default=11, ge=0)


def resolve_goods(contributions: list[int], holdings: list[float], ratio: float) -> dict[str, Any]:
    """The pot, each player's share, net gain and tokens after the round."""
    n = len(contributions)
    pot = sum(contributions)
    share = pot * ratio / n
    after = [round(h - c + share, 2) for h, c in zip(holdings, contributions, strict=True)]
    gain = [round(share - c, 2) for c in contributions]
    return {"contributions": contributions, "pot": pot, "share": share, "gain": gain, "tokens_after": after}


class GoodsRound(SimultaneousRound):
    """One round of Public Goods: the contributions, the pot, each player's share of it, each player's
    net gain and tokens after the round."""

    contributions: list[int | float]
    pot: int | float
    share: int | float
    gain: list[int | float]
    tokens_after: list[int | float]

    def payoff(self, player: int) -> Payoff:
        return Payoff(gain=self.gain[player], tokens=self.tokens_after[player])


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoodsLog:
    """Public Goods Game: tokens each player put in the pot (of ``tokens`` held), pot multiplier ``ratio``."""

    contributions: Sequence[Sequence[float]]
    tokens: float = 20
    ratio: float = 2
    game: str = field(default="public_goods", init=False)


def goods_score(log: GoodsLog, *, version: ScoringVersion = "thesis") -> float:
    """Public Goods Game: how close contributions are to the equilibrium (0 when R/N <= 1).

    S4 = mean over rounds and players of the tokens contributed; score = (T - S4)/T*100 if R/N <= 1,
    else S4/T*100 (contributing everything is then optimal). ``version="arxiv_v4"`` (and the reference
    code) use the first branch always; the published settings all have R/N <= 1.
    """
    check_version(version)
    every_round(log.contributions, "contributions")
    finite(log.contributions, "contribution")
    if log.tokens <= 0:
        raise ValueError("tokens must be positive")
    s4 = mean([c for row in log.contributions for c in row])
    players = len(log.contributions[0])
    if version == "thesis" and log.ratio / players > 1:
        return s4 / log.tokens * 100
    return (log.tokens - s4) / log.tokens * 100


@dataclass(frozen=True, eq=False)
class ContributionInfo(DecisionInfo):
    """What a contributor may look at: the whole tokens they hold and the pot's multiplier."""

    tokens: int
    ratio: float


class PublicGoodsGame(SimultaneousGame[GoodsRound]):
    """Public Goods Game."""

    name = "public_goods"
    folder = "public_goods"
    Params = PublicGoodsParams
    Round = GoodsRound
    builtin = BUILTIN
    title = "Public Goods Game"
    scoring_name = "public_goods"
    json_key = "public_goods"
    in_overall = True
    panels = {
        "contributions": ("Contributions", "round", "tokens"),
        "gains": ("Gain from the pot and tokens after the round", "round", "tokens"),
    }
    truncate_after = 10
    p: PublicGoodsParams

    async def play(self, table: Table) -> None:
        p = self.p
        if p.endowment == "random":
            rng = self.rng("endowment")
            self.initial = [rng.randint(min(p.rand_min, p.tokens), p.tokens) for _ in range(self.players)]
        else:
            self.initial = [p.tokens] * self.players
        self.balance: list[float] = list(self.initial)
        await super().play(table)

    def holding(self, player: int) -> float:
        """Tokens ``player`` holds at the start of the coming round."""
        return self.initial[player] if self.p.reset else self.balance[player]

    def description(self, player: int) -> str:
        return self.prompts.text(
            "description", [self.players, self.rounds, number_text(self.p.ratio), self.role_text]
        )

    def decision(self, player: int, round_no: int) -> Decision:
        current = int(self.holding(player))
        fields = {"tokens_contributed": f"integer_between_0_and_{current}"}
        request = self.prompts.text(
            "request", [round_no, number_text(self.holding(player)), self.fmt(fields)]
        )
        return Decision(
            player=player,
            round=round_no,
            kind="contribution",
            request=request,
            fields=list(fields),
            validate=lambda data: as_int(data["tokens_contributed"], 0, current),
            fallback=0,
            info=ContributionInfo(tokens=current, ratio=self.p.ratio),
        )

    def resolve(self, round_no: int, actions: list[Any]) -> GoodsRound:
        holdings = [self.holding(i) for i in range(self.players)]
        outcome = GoodsRound(round=round_no, **resolve_goods(actions, holdings, self.p.ratio))
        self.balance = list(outcome.tokens_after)
        return outcome

    def report(self, player: int, round_no: int, actions: list[Any], outcome: GoodsRound) -> list[str]:
        inputs = [
            round_no,
            list(actions),
            actions[player],
            outcome.pot,
            number_text(outcome.gain[player]),
            number_text(outcome.tokens_after[player]),
            [float(t) if not float(t).is_integer() else int(t) for t in outcome.tokens_after],
        ]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            return ContributionInfo.of(decision.info).tokens if self.p.ratio > self.players else 0
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        values = [c for r in self.records for c in r.contributions]
        return {"mean_contribution": sum(values) / len(values) if values else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> GoodsLog:
        p = result.params
        return GoodsLog([r.actions() for r in result.rounds_as(GoodsRound)], p["tokens"], p["ratio"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return goods_score(log, version=version)

    @staticmethod
    def above_range(log: Any) -> list[str]:
        return above_bound(
            (j, i, c, log.tokens, "contribution")
            for j, row in enumerate(log.contributions, 1)
            for i, c in enumerate(row, 1)
        )

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        n = result.players
        for r in result.rounds_as(GoodsRound):
            j = r.round
            for i, c in enumerate(r.contributions):
                add("contributions", "contribution", j, c, i)
            add("contributions", "mean", j, sum(r.contributions) / n)
            add("gains", "mean gain", j, sum(r.gain) / n)
            add("gains", "mean tokens after", j, sum(r.tokens_after) / n)
