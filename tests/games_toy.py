"""Lowest Number: a whole game in one module (the worked example of docs/games-engine.md)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llmpsych.games.engine import Decision, Payoff, PlotAdd, SimultaneousGame, SimultaneousRound
from llmpsych.games.parsing import as_int
from llmpsych.games.prompts import echo
from llmpsych.games.result import GamaBenchResult
from llmpsych.games.scorekit import every_round, finite, mean


class LowestParams(BaseModel):
    """The game's options (``-O lowest.max=20``)."""

    model_config = ConfigDict(extra="forbid")

    max: int = Field(default=10, ge=1)


class LowestRound(SimultaneousRound):
    """One round as it is stored (after ``round`` and the ``decisions``): the picks, the lowest, who won."""

    picks: list[int]
    lowest: int
    winners: list[int]

    def payoff(self, player: int) -> Payoff:
        return Payoff(won=player in self.winners)  # "rounds won" in seats.csv


@dataclass(frozen=True)
class LowestLog:
    """What the score needs: every player's number, per round."""

    picks: list[list[int]]
    max: int
    game: str = field(default="lowest_number", init=False)


def lowest_score(log: LowestLog) -> float:
    """100 when everyone always picks 0 (the equilibrium), 0 when everyone picks the maximum."""
    every_round(log.picks, "picks")
    finite(log.picks, "pick", 0, log.max)
    return (log.max - mean([p for row in log.picks for p in row])) / log.max * 100


class LowestGame(SimultaneousGame[LowestRound]):
    """Each round every player picks a whole number from 0 to ``max``; the lowest number wins."""

    name = "lowest"
    title = "Lowest Number"
    scoring_name = "lowest_number"
    folder = "lowest_number"
    Params = LowestParams
    Round = LowestRound
    builtin = {
        "description": "A game for @0 players over @1 rounds. Each round everyone picks a whole number "
        "from 0 to @2, and the lowest number wins.",
        "request": "Round @0 begins. Pick your number.\n\n@1",
        "report": ("Round @0 is over: the lowest number was @1.", echo(number="@2"), "@3"),
    }
    panels = {"picks": ("Picks and the lowest number", "round", "number")}
    p: LowestParams

    def description(self, player: int) -> str:
        return self.prompts.text("description", [self.players, self.rounds, self.p.max])

    def decision(self, player: int, round_no: int) -> Decision:
        fields = {"number": f"integer_between_0_and_{self.p.max}"}
        request = self.prompts.text("request", [round_no, self.fmt(fields)])
        top = self.p.max
        return Decision(
            player=player,
            round=round_no,
            kind="number",
            request=request,
            fields=list(fields),
            validate=lambda data: as_int(data["number"], 0, top),
            fallback=top,
        )

    def resolve(self, round_no: int, actions: list[Any]) -> LowestRound:
        lowest = min(actions)
        winners = [i for i, a in enumerate(actions) if a == lowest]
        return LowestRound(round=round_no, picks=actions, lowest=lowest, winners=winners)

    def report(self, player: int, round_no: int, actions: list[Any], outcome: LowestRound) -> list[str]:
        verdict = "You won." if player in outcome.winners else "You did not win."
        return self.prompts.parts("report", [round_no, outcome.lowest, actions[player], verdict])

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        return 0 if name == "ne" else super().strategy(name, decision, rng)

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> LowestLog:
        return LowestLog([r.actions() for r in result.rounds_as(LowestRound)], result.params["max"])

    @staticmethod
    def score_log(log: Any, *, version: str = "thesis", published: bool = False) -> float:
        return lowest_score(log)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        for r in result.rounds_as(LowestRound):
            for player, pick in enumerate(r.picks):
                add("picks", "pick", r.round, pick, player)
            add("picks", "lowest", r.round, r.lowest)
