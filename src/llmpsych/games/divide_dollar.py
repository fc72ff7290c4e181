"""(3) Divide the Dollar — cooperative (spec §2.3).

Rules: each round every player privately bids for part of G golds. If the bids sum to at most G everyone
receives their bid, otherwise nobody receives anything. Players see the sum, not the individual bids.
Defaults: N=10, K=20, G=100. Bids are validated to 0..G (the reference only checked for an integer).

Nash equilibrium: every player bids G/N.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .engine import Decision, DecisionInfo, PlotAdd, SimultaneousGame, SimultaneousRound
from .parsing import as_int
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, above_bound, every_round, finite, mean

BUILTIN = {
    "description": """@3

This is a game for @0 players that lasts @1 rounds.

How it works:
- A pot of @2 golds is up for division. Each round, every player privately asks for an amount of it.
- If all the requests add up to @2 or less, everybody gets exactly what they asked for.
- If the requests add up to more than @2, nobody gets anything that round.""",
    "report": (
        """Round @0 is over.

How much did you ask for?""",
        echo(bid_amount="@1"),
        """All requests together came to @2, which @3 @4.
You got @5 golds.""",
    ),
    "request": """Round @0 begins.

Try to get as much as you can for yourself while keeping the total of all requests within @1 golds.

@2""",
}


class DivideDollarParams(BaseModel):
    """Parameters of Divide the Dollar."""

    model_config = ConfigDict(extra="forbid")

    golds: int = Field(default=100, ge=1)


def resolve_dollar(bids: list[int], golds: int) -> dict[str, Any]:
    """The sum of bids and what each player receives."""
    total = sum(bids)
    ok = total <= golds
    return {"bids": bids, "total": total, "within": ok, "received": [b if ok else 0 for b in bids]}


class DollarRound(SimultaneousRound):
    """One round of Divide the Dollar: the bids, their total, whether it stayed within the golds and
    what each player received."""

    bids: list[int | float]
    total: int | float
    within: bool
    received: list[int | float]


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DollarLog:
    """Divide the Dollar: each player's bid for a share of ``golds``, per round."""

    bids: Sequence[Sequence[float]]
    golds: float = 100
    game: str = field(default="divide_dollar", init=False)


def dollar_score(log: DollarLog) -> float:
    """Divide the Dollar: how close the sum of bids is to G (everyone bidding G/N is the equilibrium).

    S3 = mean over rounds of |sum of bids - G|; score = max((G - S3)/G*100, 0). The arXiv v4 text
    prints no floor at 0, but its published table was computed with it (Mixtral-8x7B: 1.2±2.8 from runs
    of 6.2, 0, 0, 0, 0), so both versions use it.
    """
    every_round(log.bids, "bids")
    finite(log.bids, "bid")
    if log.golds <= 0:
        raise ValueError("golds must be positive")
    s3 = mean([abs(math.fsum(row) - log.golds) for row in log.bids])
    return max((log.golds - s3) / log.golds * 100, 0.0)


@dataclass(frozen=True, eq=False)
class DollarInfo(DecisionInfo):
    """What a bidder may look at: the golds to divide."""

    golds: int


class DivideDollarGame(SimultaneousGame[DollarRound]):
    """Divide the Dollar."""

    name = "divide_dollar"
    folder = "divide_dollar"
    Params = DivideDollarParams
    Round = DollarRound
    builtin = BUILTIN
    title = "Divide the Dollar"
    scoring_name = "divide_dollar"
    json_key = "divide_dollar"
    in_overall = True
    panels = {
        "bids": ("Bids", "round", "golds"),
        "total": ("Sum of bids against the pot", "round", "golds"),
    }
    p: DivideDollarParams

    def description(self, player: int) -> str:
        return self.prompts.text("description", [self.players, self.rounds, self.p.golds, self.role_text])

    def decision(self, player: int, round_no: int) -> Decision:
        golds = self.p.golds
        fields = {"bid_amount": f"integer_between_0_and_{golds}"}
        request = self.prompts.text("request", [round_no, golds, self.fmt(fields)])
        return Decision(
            player=player,
            round=round_no,
            kind="bid",
            request=request,
            fields=list(fields),
            validate=lambda data: as_int(data["bid_amount"], 0, golds),
            fallback=0,
            info=DollarInfo(golds=golds),
        )

    def resolve(self, round_no: int, actions: list[Any]) -> DollarRound:
        return DollarRound(round=round_no, **resolve_dollar(actions, self.p.golds))

    def report(self, player: int, round_no: int, actions: list[Any], outcome: DollarRound) -> list[str]:
        inputs = [
            round_no,
            actions[player],
            outcome.total,
            "does not exceed" if outcome.within else "exceeds",
            self.p.golds,
            outcome.received[player],
        ]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            return self.p.golds // self.players
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        totals = [r.total for r in self.records]
        return {"mean_total_bid": sum(totals) / len(totals) if totals else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> DollarLog:
        return DollarLog([r.actions() for r in result.rounds_as(DollarRound)], result.params["golds"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return dollar_score(log)

    @staticmethod
    def above_range(log: Any) -> list[str]:
        return above_bound(
            (j, i, b, log.golds, "bid") for j, row in enumerate(log.bids, 1) for i, b in enumerate(row, 1)
        )

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        golds, n = result.params["golds"], result.players
        for r in result.rounds_as(DollarRound):
            j = r.round
            for i, b in enumerate(r.bids):
                add("bids", "bid", j, b, i)
            add("bids", "mean", j, r.total / n)
            add("bids", "equal split", j, golds / n)
            add("total", "sum of bids", j, r.total)
            add("total", "pot", j, golds)
