"""(2) El Farol Bar — cooperative (spec §2.2).

Rules: each round every player decides, without communicating, whether to go to the bar. If at most a
share R of the players goes, goers get MAX (more fun than home); otherwise goers get MIN. Stayers get HOME.
Defaults: N=10, K=20, MIN=0, MAX=10, HOME=5, R=60%.

Feedback: ``explicit`` tells everyone how many went; ``implicit`` (scored in the paper) tells only the goers,
while stayers learn just their own payoff — the reference code's reading of the paper's note.

Nash equilibrium: no pure one; the mixed equilibrium is to go with probability R.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .engine import Decision, DecisionInfo, PlotAdd, SimultaneousGame, SimultaneousRound
from .guessing import number_text
from .parsing import as_choice
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, every_round, mean

BUILTIN = {
    "description": """@6

This is a game for @0 players that lasts @1 rounds.

How it works:
- Each round, every player decides alone, without talking to anyone, whether to go out to a bar or stay in.
- If the share of players at the bar is at most @2, the bar is pleasant and each visitor gets a \
utility of @3.
- If more than @2 of the players show up, the bar is crowded and each visitor gets a utility of \
@4.
- A player who stays in gets a utility of @5.""",
    "report_explicit": (
        """Round @0 is over. @1 players went out and @2 stayed in.
That is @1/@3 of the players, @4 than the @6 limit, so going out was \
@5 enjoyable than staying in this round.

What did you do?""",
        echo(decision="@7"),
        """Your utility this round: @8.""",
    ),
    "report_implicit": (
        """Round @0 is over.

What did you do?""",
        echo(decision="@1"),
        """Your utility this round: @2.""",
    ),
    "request": """Round @0 begins.

You want as much enjoyment as possible: go out if you expect fewer than @1 of the players to go, \
otherwise stay in.

@2""",
}


class BarParams(BaseModel):
    """Parameters of the El Farol Bar game."""

    model_config = ConfigDict(extra="forbid")

    min: float = 0
    max: float = 10
    home: float = 5
    ratio: float = Field(default=0.6, ge=0, le=1)
    ratio_str: str | None = None  # default "60%"
    mode: Literal["implicit", "explicit"] = "implicit"


def resolve_bar(decisions: list[str], ratio: float, low: float, high: float, home: float) -> dict[str, Any]:
    """Who went, whether going paid off, and every player's utility."""
    go = sum(1 for d in decisions if d == "go")
    go_ratio = go / len(decisions)
    good = go_ratio <= ratio + 1e-12
    utility = [(high if good else low) if d == "go" else home for d in decisions]
    return {"choices": decisions, "go": go, "go_ratio": go_ratio, "good": good, "utility": utility}


class BarRound(SimultaneousRound):
    """One round of El Farol: each player's choice (``go`` / ``stay``), how many went and what fraction,
    whether going paid off, and each player's utility."""

    choices: list[str]
    go: int
    go_ratio: int | float
    good: bool
    utility: list[int | float]


# -- scoring ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BarLog:
    """El Farol Bar: whether each player went to the bar (True) or stayed home, per round."""

    went: Sequence[Sequence[bool]]
    ratio: float = 0.6
    game: str = field(default="bar_game", init=False)


def bar_score(log: BarLog) -> float:
    """El Farol Bar: how close each round's share of goers is to the capacity R (the mixed equilibrium).

    S2 = mean over rounds of |share of goers - R|; score = (max(R, 1-R) - S2)/max(R, 1-R)*100. The
    leaderboard scores the implicit-information mode only.
    """
    every_round(log.went, "decisions")
    if not 0 <= log.ratio <= 1:
        raise ValueError("the El Farol ratio is a share of players, between 0 and 1")
    s2 = mean([abs(sum(bool(g) for g in row) / len(row) - log.ratio) for row in log.went])
    worst = max(log.ratio, 1 - log.ratio)
    return (worst - s2) / worst * 100


@dataclass(frozen=True, eq=False)
class BarInfo(DecisionInfo):
    """What a player may look at: the share of the players above which the bar is crowded."""

    ratio: float


class BarGame(SimultaneousGame[BarRound]):
    """El Farol Bar."""

    name = "bar"
    folder = "bar_game"
    Params = BarParams
    Round = BarRound
    builtin = BUILTIN
    title = "El Farol Bar"
    scoring_name = "bar_game"
    json_key = "el_farol"
    in_overall = True
    panels = {"attendance": ("Attendance against capacity", "round", "players at the bar")}
    p: BarParams

    @property
    def ratio_str(self) -> str:
        """The ratio as printed (``60%``)."""
        return self.p.ratio_str or f"{self.p.ratio * 100:g}%"

    def info(self) -> dict[str, Any]:
        return {**self.p.model_dump(), "ratio_str": self.ratio_str}

    def description(self, player: int) -> str:
        p = self.p
        inputs = [self.players, self.rounds, self.ratio_str, _n(p.max), _n(p.min), _n(p.home), self.role_text]
        return self.prompts.text("description", inputs)

    def decision(self, player: int, round_no: int) -> Decision:
        fields = {"decision": "go_or_stay"}
        request = self.prompts.text("request", [round_no, self.ratio_str, self.fmt(fields)])
        return Decision(
            player=player,
            round=round_no,
            kind="go_or_stay",
            request=request,
            fields=list(fields),
            validate=lambda data: as_choice(data["decision"], ("go", "stay")),
            fallback="stay",
            info=BarInfo(ratio=self.p.ratio),
        )

    def resolve(self, round_no: int, actions: list[Any]) -> BarRound:
        p = self.p
        return BarRound(round=round_no, **resolve_bar(actions, p.ratio, p.min, p.max, p.home))

    def report(self, player: int, round_no: int, actions: list[Any], outcome: BarRound) -> list[str]:
        choice = actions[player]
        gained = _n(outcome.utility[player])
        if self.p.mode == "implicit" and choice == "stay":
            return self.prompts.parts("report_implicit", [round_no, choice, gained])
        go = outcome.go
        inputs = [
            round_no,
            go,
            self.players - go,
            self.players,
            "equal or less" if outcome.good else "more",
            "more" if outcome.good else "less",
            self.ratio_str,
            choice,
            gained,
        ]
        return self.prompts.parts("report_explicit", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":  # the mixed equilibrium
            return "go" if rng.random() < self.p.ratio else "stay"
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        ratios = [r.go_ratio for r in self.records]
        return {"mean_go_ratio": sum(ratios) / len(ratios) if ratios else None}

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> BarLog:
        went = [[a == "go" for a in r.actions()] for r in result.rounds_as(BarRound)]
        return BarLog(went, result.params["ratio"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return bar_score(log)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        for r in result.rounds_as(BarRound):
            add("attendance", "went", r.round, r.go)
            add("attendance", "capacity", r.round, result.params["ratio"] * result.players)


def _n(value: float) -> str:
    return number_text(value)
