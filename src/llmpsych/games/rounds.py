"""A game's rounds as they are stored: the typed records the engine produces and everything after it reads.

Each game declares its ``Round`` (a subclass of :class:`GameRound` naming the round's outcome fields);
:class:`AnswerRecord` is one player's answer inside a round. Below the engine and the stored results
(:mod:`llmpsych.games.result` parses stored rounds into these), so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AnswerRecord(BaseModel):
    """One player's answer as its round record keeps it: the action, the seat that gave it, how it came
    and how many asks it took, with the refused texts, the errors and whether it was the fallback.

    Stored as the mapping it was built from (:meth:`GameRound.stored`: the fields set, nothing added), so
    stores written before a field existed load with its default and are written back unchanged. Frozen,
    as the round holding it is: a record says what happened."""

    model_config = ConfigDict(extra="allow", frozen=True)

    player: int
    seat: str | None = None
    action: Any = None
    asks: int | None = None
    how: str | None = None
    response_s: int | float | None = None
    refused: list[Any] = Field(default_factory=list)
    fallback: bool = False
    errors: list[Any] = Field(default_factory=list)


@dataclass(frozen=True)
class Payoff:
    """What one round paid one player, where the game has such a payoff (None: it has not): whether the
    player won the round (Guess 2/3), the player's net gain and the tokens held after it (Public Goods).
    ``seats.csv`` sums these per seat."""

    won: bool | None = None
    gain: int | float | None = None
    tokens: int | float | None = None


class GameRound(BaseModel):
    """One round of a game as it is stored: each game declares its ``Round`` (a subclass naming the
    round's outcome fields), the engine produces it, and scoring, plots and exports read its attributes.

    A stored round is parsed into the game's ``Round`` where it is read
    (:meth:`~llmpsych.games.result.GamaBenchResult.rounds_as`); fields it does not declare are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    round: int

    def stored(self) -> dict[str, Any]:
        """The round as the run store keeps it: the fields that were set, in declaration order."""
        return self.model_dump(exclude_unset=True)

    def payoff(self, player: int) -> Payoff:
        """What this round paid ``player`` (nothing by default: a game with payoffs says which)."""
        return Payoff()


class SimultaneousRound(GameRound):
    """A round in which every player decided at once: ``decisions`` in player order, then the outcome."""

    decisions: list[AnswerRecord] = Field(default_factory=list)

    def actions(self) -> list[Any]:
        """The players' actions, in player order."""
        return [d.action for d in self.decisions]


__all__ = ["AnswerRecord", "GameRound", "Payoff", "SimultaneousRound"]
