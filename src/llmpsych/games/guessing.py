"""(1) Guess 2/3 of the Average — cooperative (spec §2.1).

Rules: each of N players picks an integer in [MIN, MAX]; the target is R × the mean of all picks; the
player(s) whose pick is closest to the target win. Players see the mean, the target and the winning number,
not the other picks. Defaults: N=10, K=20, MIN=0, MAX=100, R=2/3.

Nash equilibrium: for R < 1 everyone picks MIN (a collective win); the scoring treats R > 1 as "pick MAX".

Ties: when two *different* values are equally close to the target the reference code lets only the first
one (in answer order) win; by default we let all of them win (``tie_rule="all"``, a logged deviation), and
``tie_rule="first"`` reproduces the reference.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import ConfigError
from .engine import Decision, DecisionInfo, Payoff, PlotAdd, SimultaneousGame, SimultaneousRound
from .parsing import as_int
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, check_version, every_round, finite, mean

BUILTIN = {
    "description": """@5

This is a game for @0 players that lasts @1 rounds.

How it works:
- In every round, each player picks a whole number from @2 up to @3 (both ends allowed).
- When all picks are in, we average them and multiply the average by @4 to get the target.
- Whoever picked the number nearest that target wins the round; several players can win together.""",
    "report": (
        """Round @0 is over. The picks averaged @1; @2 of that \
gives a target of @3, and the winning number was @4.

What did you pick?""",
        echo(chosen_number="@5"),
        """@6.""",
    ),
    "request": """Round @0 begins.

Pick the number you expect to land nearest to @1 of the average of everyone's picks, yours \
included.

@4""",
}


def ratio_text(ratio: float) -> str:
    """How the reference prompts print a ratio: ``"2/3"``, or ``"100.0%"`` for whole numbers."""
    if float(ratio).is_integer():
        return f"{ratio * 100:.1f}%"
    fraction = Fraction(ratio).limit_denominator(12)
    return f"{fraction.numerator}/{fraction.denominator}"


def number_text(value: float) -> str:
    """A number as a report shows it: ``50`` or ``54.5`` (at most 2 decimals)."""
    return str(int(value)) if float(value).is_integer() else f"{round(value, 2)}"


#: The explicit-information sentences, added after the rules (our wording; ``{ne}`` is the equilibrium).
OPPONENTS = {
    "smart-ne": "About the other players: they are all smart, and every one of them will always choose {ne}.",
    "smart": "About the other players: they are all smart.",
    "random": "About the other players: they are not smart, and every one of them picks a number at random.",
}


class GuessingParams(BaseModel):
    """Parameters of Guess 2/3 of the Average."""

    model_config = ConfigDict(extra="forbid")

    min: int = 0
    max: int = 100
    ratio: float = 2 / 3
    ratio_str: str | None = None  # printed ratio; default derived from ``ratio``
    tie_rule: Literal["all", "first"] = "all"
    #: What each player is told about the others (thesis §6.6.1 settings a-c, 000:2561-2567); the thesis
    #: prints no wording, so the sentences (:data:`OPPONENTS`) are ours.
    opponents: Literal["smart-ne", "smart", "random"] | None = None

    @field_validator("ratio", mode="before")
    @classmethod
    def _fraction(cls, value: Any) -> Any:
        return float(Fraction(value)) if isinstance(value, str) else value


def resolve_guesses(
    choices: list[int], ratio: float, tie_rule: Literal["all", "first"] = "all"
) -> dict[str, Any]:
    """Mean, target, winning number(s) and winners of one round."""
    mean = sum(choices) / len(choices)
    target = ratio * mean
    if tie_rule == "first":
        winning = [min(choices, key=lambda c: abs(c - target))]
    else:
        best = min(abs(c - target) for c in choices)
        winning = sorted({c for c in choices if abs(abs(c - target) - best) < 1e-9})
    winners = [i for i, c in enumerate(choices) if c in winning]
    return {"choices": choices, "mean": mean, "target": target, "winning": winning, "winners": winners}


class GuessingRound(SimultaneousRound):
    """One round of Guess R of the Average: the picks, their mean, the target, the winning number(s) and
    the winners (players, 0-based)."""

    choices: list[int | float]
    mean: int | float
    target: int | float
    winning: list[int | float]
    winners: list[int]

    def payoff(self, player: int) -> Payoff:
        return Payoff(won=player in self.winners)


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GuessingLog:
    """Guess R of the Average: each player's integer in [min_value, max_value], per round."""

    choices: Sequence[Sequence[float]]
    min_value: float = 0
    max_value: float = 100
    ratio: float = 2 / 3
    game: str = field(default="guessing_game", init=False)


def guessing_score(log: GuessingLog, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
    """Guess R of the Average: how close the choices are to the equilibrium.

    S1 = mean over rounds and players of (C - MIN), D = MAX - MIN. Rescaled (thesis):
    R<1: (D - S1)/D*100 (equilibrium MIN); R>1: S1/D*100 (equilibrium MAX);
    R=1: (1 - |2*S1 - D|/D)*100. ``version="arxiv_v4"`` uses |2*S1 - D|/D*100 at R=1 (the complement).

    Correction: for R<1 the reference code computes (MAX - S1)/D, which equals the thesis formula only
    when MIN=0 (every published setting); ``published=True`` uses the code's form.
    """
    check_version(version)
    every_round(log.choices, "choices")
    finite(log.choices, "guess", log.min_value, log.max_value)
    span = log.max_value - log.min_value
    if span <= 0:
        raise ValueError("max_value must exceed min_value")
    s1 = mean([c - log.min_value for row in log.choices for c in row])
    if math.isclose(log.ratio, 1.0):
        distance = abs(2 * s1 - span) / span * 100
        return distance if version == "arxiv_v4" else 100 - distance
    if log.ratio > 1:
        return s1 / span * 100
    if published:
        return (log.max_value - s1) / span * 100
    return (span - s1) / span * 100


@dataclass(frozen=True, eq=False)
class GuessInfo(DecisionInfo):
    """What a guesser may look at: the range of the numbers and the ratio of the average to aim at."""

    min: int
    max: int
    ratio: float


class GuessingGame(SimultaneousGame[GuessingRound]):
    """Guess R × the average."""

    name = "guessing"
    folder = "guessing_game"
    Params = GuessingParams
    Round = GuessingRound
    builtin = BUILTIN
    title = "Guess 2/3 of the Average"
    scoring_name = "guessing_game"
    json_key = "guess_2_3"
    in_overall = True
    panels = {"choices": ("Choices, group mean and winning number", "round", "number")}
    p: GuessingParams

    def check(self) -> None:
        if self.p.min > self.p.max:
            raise ConfigError(f"guessing: min {self.p.min} is above max {self.p.max}")

    @property
    def ratio_str(self) -> str:
        """The ratio as printed in the prompts."""
        return self.p.ratio_str or ratio_text(self.p.ratio)

    def info(self) -> dict[str, Any]:
        return {**self.p.model_dump(), "ratio_str": self.ratio_str}

    def description(self, player: int) -> str:
        p = self.p
        rules = self.prompts.text(
            "description", [self.players, self.rounds, p.min, p.max, self.ratio_str, self.role_text]
        )
        if p.opponents is None:
            return rules
        return f"{rules}\n\n{OPPONENTS[p.opponents].format(ne=p.max if p.ratio > 1 else p.min)}"

    def decision(self, player: int, round_no: int) -> Decision:
        p = self.p
        fields = {"chosen_number": f"integer_between_{p.min}_and_{p.max}"}
        request = self.prompts.text("request", [round_no, self.ratio_str, p.min, p.max, self.fmt(fields)])
        return Decision(
            player=player,
            round=round_no,
            kind="number",
            request=request,
            fields=list(fields),
            validate=lambda data: as_int(data["chosen_number"], p.min, p.max),
            fallback=(p.min + p.max) // 2,
            info=GuessInfo(min=p.min, max=p.max, ratio=p.ratio),
        )

    def resolve(self, round_no: int, actions: list[Any]) -> GuessingRound:
        return GuessingRound(round=round_no, **resolve_guesses(actions, self.p.ratio, self.p.tie_rule))

    def report(self, player: int, round_no: int, actions: list[Any], outcome: GuessingRound) -> list[str]:
        won = player in outcome.winners
        winning = ", ".join(str(w) for w in outcome.winning)
        inputs = [
            round_no,
            number_text(outcome.mean),
            self.ratio_str,
            f"{outcome.target:.2f}",
            winning,
            actions[player],
            "You won this round" if won else "You did not win this round",
        ]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            return self.p.max if self.p.ratio > 1 else self.p.min
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        means = [r.mean for r in self.records]
        return {"mean_choice": sum(means) / len(means) if means else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> GuessingLog:
        p = result.params
        rounds = result.rounds_as(GuessingRound)
        return GuessingLog([r.actions() for r in rounds], p["min"], p["max"], p["ratio"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return guessing_score(log, version=version, published=published)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        for r in result.rounds_as(GuessingRound):
            j = r.round
            for i, c in enumerate(r.choices):
                add("choices", "choice", j, c, i)
            add("choices", "mean", j, r.mean)
            add("choices", "target", j, r.target)
            for w in r.winning:
                add("choices", "winning", j, w)
