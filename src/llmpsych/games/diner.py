"""(5) Diner's Dilemma — betraying (spec §2.5).

Rules: each of N diners orders a costly dish (price P_h, utility U_h) or a cheap one (P_l, U_l); the bill
is split equally. With U_h − P_h < U_l − P_l (cheap is better alone) and U_h − P_h/N > U_l − P_l/N (costly
is better when splitting), ordering costly is the Nash equilibrium although all-cheap is better for all.
Defaults: N=10, K=20, P_h=20, U_h=20, P_l=10, U_l=15. Answers are validated to {costly, cheap} (the
reference treated anything but "cheap" as costly).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from .engine import Decision, PlotAdd, SimultaneousGame, SimultaneousRound
from .guessing import number_text
from .parsing import as_choice
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, every_round, mean

BUILTIN = {
    "description": """@6

This is a game for @0 players that lasts @1 rounds.

How it works:
- Each round, every player orders one of two dishes: the costly dish or the cheap dish.
- The costly dish has a price of @2 and is worth @3 to you; the cheap dish has a price of \
@4 and is worth @5 to you.
- The costly dish tastes better, but if you paid for it on your own it would not be worth the extra money.
- After each round the whole bill is shared equally by all players.""",
    "report": (
        """Round @0 is over. @1 players ordered the costly dish and @2 \
ordered the cheap dish.
The bill came to @3, so your share is @4.

Which dish did you order?""",
        echo(chosen_dish="@5"),
        """Your utility this round: @6.""",
    ),
    "request": """Round @0 begins.

Aim for the best overall satisfaction, weighing how good your dish is against your share of the bill.

@1""",
}


class DinerParams(BaseModel):
    """Parameters of the Diner's Dilemma."""

    model_config = ConfigDict(extra="forbid")

    cheap_cost: float = 10
    cheap_utility: float = 15
    exp_cost: float = 20
    exp_utility: float = 20


def resolve_diner(dishes: list[str], p: DinerParams) -> dict[str, Any]:
    """The bill, each player's share and utility."""
    n = len(dishes)
    costly = sum(1 for d in dishes if d == "costly")
    cheap = n - costly
    total = costly * p.exp_cost + cheap * p.cheap_cost
    share = total / n
    utility = [(p.exp_utility if d == "costly" else p.cheap_utility) - share for d in dishes]
    return {
        "dishes": dishes,
        "costly": costly,
        "cheap": cheap,
        "total": total,
        "share": share,
        "utility": utility,
    }


class DinerRound(SimultaneousRound):
    """One round of the Diner's Dilemma: each player's dish, how many ordered each, the bill, each
    player's share of it and each player's utility."""

    dishes: list[str]
    costly: int
    cheap: int
    total: int | float
    share: int | float
    utility: list[int | float]


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DinerLog:
    """Diner's Dilemma: each player's dish answer (``"cheap"`` or ``"costly"``), per round.

    Answers are kept as given, so the scorer can apply (or, with ``published``, not apply) the reading of
    variants such as ``"cheap_dish"``. The prices and utilities do not enter the score.
    """

    dishes: Sequence[Sequence[str]]
    cheap_price: float = 10
    cheap_utility: float = 15
    costly_price: float = 20
    costly_utility: float = 20
    game: str = field(default="diner_dilemma", init=False)


def read_dish(answer: str) -> bool | None:
    """True for the cheap dish, False for the costly one, None if the answer names neither.

    Accepts the two words in any case and the ``_dish`` variants some models answer with
    (``"cheap_dish"``); a placeholder echo such as ``"costly_or_cheap"`` names neither.
    """
    word = str(answer).strip().lower().removesuffix("_dish").removesuffix(" dish")
    return {"cheap": True, "costly": False}.get(word)


def diner_score(log: DinerLog, *, published: bool = False) -> float:
    """Diner's Dilemma: the percentage of costly orders (everyone ordering costly is the equilibrium).

    S5 = share of cheap orders; score = (1 - S5)*100.

    Correction: the reference code counts any answer other than exactly ``"cheap"`` as costly, so
    ``"cheap_dish"`` (which Mixtral-8x7B often answers) counted as costly in the published numbers. By
    default answers are read with :func:`read_dish` and answers naming neither dish are left out;
    ``published=True`` reproduces the reference.
    """
    every_round(log.dishes, "dish answers")
    if published:
        cheap = [str(d) == "cheap" for row in log.dishes for d in row]
    else:
        read = [read_dish(d) for row in log.dishes for d in row]
        cheap = [c for c in read if c is not None]
        if not cheap:
            raise ValueError("no answer names a dish")
    return (1 - mean([float(c) for c in cheap])) * 100


class DinerGame(SimultaneousGame[DinerRound]):
    """Diner's Dilemma."""

    name = "diner"
    folder = "diner_dilemma"
    Params = DinerParams
    Round = DinerRound
    builtin = BUILTIN
    title = "Diner's Dilemma"
    scoring_name = "diner_dilemma"
    json_key = "diners_dilemma"
    in_overall = True
    panels = {"orders": ("Cheap and costly orders", "round", "share of players")}
    p: DinerParams

    def description(self, player: int) -> str:
        p = self.p
        inputs = [
            self.players,
            self.rounds,
            number_text(p.exp_cost),
            number_text(p.exp_utility),
            number_text(p.cheap_cost),
            number_text(p.cheap_utility),
            self.role_text,
        ]
        return self.prompts.text("description", inputs)

    def decision(self, player: int, round_no: int) -> Decision:
        fields = {"chosen_dish": "costly_or_cheap"}
        request = self.prompts.text("request", [round_no, self.fmt(fields)])
        return Decision(
            player=player,
            round=round_no,
            kind="dish",
            request=request,
            fields=list(fields),
            validate=lambda data: as_choice(data["chosen_dish"], ("costly", "cheap")),
            fallback="cheap",
        )

    def resolve(self, round_no: int, actions: list[Any]) -> DinerRound:
        return DinerRound(round=round_no, **resolve_diner(actions, self.p))

    def report(self, player: int, round_no: int, actions: list[Any], outcome: DinerRound) -> list[str]:
        p, n = self.p, self.players
        dish = actions[player]
        own = p.exp_utility if dish == "costly" else p.cheap_utility
        total = number_text(outcome.total)
        inputs = [
            round_no,
            outcome.costly,
            outcome.cheap,
            f"{outcome.costly} * {number_text(p.exp_cost)} + {outcome.cheap} * "
            f"{number_text(p.cheap_cost)} = {total}",
            number_text(outcome.share),
            dish,
            f"{number_text(own)} - {total}/{n} = {outcome.utility[player]:.2f}",
        ]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            return "costly"
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        n = sum(len(r.dishes) for r in self.records)
        cheap = sum(r.cheap for r in self.records)
        return {"cheap_rate": cheap / n if n else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> DinerLog:
        p = result.params
        dishes = [r.actions() for r in result.rounds_as(DinerRound)]
        return DinerLog(dishes, p["cheap_cost"], p["cheap_utility"], p["exp_cost"], p["exp_utility"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return diner_score(log, published=published)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        n = result.players
        for r in result.rounds_as(DinerRound):
            add("orders", "cheap", r.round, r.cheap / n)
            add("orders", "costly", r.round, r.costly / n)
