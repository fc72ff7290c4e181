"""(7) Battle Royale — sequential (spec §2.7).

Rules: an N-player truel. Players have hit rates base, base+interval, ... (player_0 the lowest) and shoot
one at a time in order of increasing hit rate, cycling over the survivors. On their turn a player names a
target or ``null`` (an intentional miss); a shot hits with the shooter's hit rate (a seeded draw — the
reference did not seed it) and eliminates the target. Bullets are unlimited; the last survivor wins. Each
"round" is one shot; the game stops when one player is left or after ``rounds`` shots (20 by default, the
reference cap). Defaults: N=10, hit rates 35%..80% in steps of 5.

Only the shooter is asked. A target must be another surviving player (validated and re-asked; the
reference let a shot at a non-player pass with no effect). The shooter gets the three-turn report of their
own shot, every other survivor a one-line report.

Equilibrium: known for infinite truels but intractable for large N; the paper scores whether the shooter
aims at the strongest other survivor, which is what the ``ne`` strategy does.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from .engine import AnswerRecord, Decision, DecisionInfo, Game, GameRound, PlotAdd, Table
from .parsing import InvalidAnswer
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion

BUILTIN = {
    "description": """@5

This is a game for @0 players.

How it works:
- It is a last-one-standing contest: only a single survivor wins.
- Players shoot one at a time in a fixed order, from the lowest hit rate to the highest.
- The players and their hit rates, in shooting order: @1. You are @2, your hit rate is \
@3%, and your place in the shooting order is @4.
- Ammunition never runs out.
- When it is your turn you may also miss on purpose.""",
    "report": """Round @0 is over: @1 @2
Players still in the game: @3.""",
    "report2": (
        """Round @0 is over. What did you do?""",
        echo(action="@1", target="@2"),
        """@3
Players still in the game: @4.""",
    ),
    "request": """Round @0 begins, and it is your turn.

Your aim is to knock the others out and be the last one left. Players still in the game, in shooting \
order: @1. You are @2, your hit rate is @3%, and your place in the shooting \
order is @4. Choose a player to shoot at, or miss on purpose.

@5""",
}


class BattleRoyaleParams(BaseModel):
    """Parameters of Battle Royale."""

    model_config = ConfigDict(extra="forbid")

    base_hit_rate: int = Field(default=35, ge=0, le=100)
    interval: int = Field(default=5, ge=0)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def player_id(index: int) -> str:
    """``player_3``."""
    return f"player_{index}"


def read_target(value: Any, shooter: int, survivors: list[int]) -> int | None:
    """The target's index, or None for an intentional miss; InvalidAnswer if it is not a valid target."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in {"", "null", "none", "miss", "nobody"} or "-1" in text:
        return None
    digits = re.findall(r"[0-9]+", text)  # ASCII: "player_٣" names nobody
    if len(digits) != 1:
        raise InvalidAnswer(f"target {value!r} names no single player")
    target = int(digits[0])
    if target == shooter:
        raise InvalidAnswer("a player cannot shoot at themselves")
    if target not in survivors:
        raise InvalidAnswer(f"player_{target} is not in the game")
    return target


def strongest_other(shooter: int, survivors: list[int], hit_rates: list[int]) -> int | None:
    """The surviving player with the highest hit rate other than the shooter."""
    others = [s for s in survivors if s != shooter]
    return max(others, key=lambda s: hit_rates[s]) if others else None


def next_shooter(current: int, survivors: list[int]) -> int:
    """The next survivor after ``current`` in shooting order (cyclic)."""
    later = [s for s in survivors if s > current]
    return later[0] if later else survivors[0]


# -- scoring ---------------------------------------------------------------------------------------
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


class BattleRound(GameRound):
    """One turn of Battle Royale: who shot, their answer, the target (None: an intentional miss), whether
    it hit, who was eliminated, the survivors before the shot, the strongest other survivor (the
    optimal target) and the survivors after."""

    shooter: int
    shot: AnswerRecord
    target: int | None
    hit: bool | None
    eliminated: int | None
    survivors_before: list[int]
    strongest_other: int | None
    survivors: list[int]


@dataclass(frozen=True, eq=False)
class ShotInfo(DecisionInfo):
    """What a shooter may look at: the survivors in shooting order and every player's hit rate (percent;
    empty: the rates the game's options give)."""

    survivors: list[int]
    hit_rates: list[int] = field(default_factory=list)


class BattleRoyaleGame(Game[BattleRound]):
    """Battle Royale."""

    name = "battle_royale"
    folder = "battle_royale"
    Params = BattleRoyaleParams
    Round = BattleRound
    builtin = BUILTIN
    title = "Battle Royale"
    scoring_name = "battle_royale"
    json_key = "battle_royale"
    in_overall = True
    panels = {
        "survivors": ("Players left", "shot", "players"),
        "shots": ("Shots", "shot", "player"),
    }
    p: BattleRoyaleParams

    def check(self) -> None:
        top = self.p.base_hit_rate + (self.players - 1) * self.p.interval
        if top > 100:
            raise ConfigError(
                f"battle_royale: the strongest of {self.players} players would hit {top}% > 100%"
            )

    @property
    def hit_rates(self) -> list[int]:
        """Hit rate (percent) per player."""
        return [self.p.base_hit_rate + i * self.p.interval for i in range(self.players)]

    def player_list(self, players: list[int]) -> str:
        """The players and hit rates in shooting order, as a JSON array."""
        rates = self.hit_rates
        if self.prompts.source == "official":  # the reference code's rendering
            items = [
                {f"The {ordinal(k + 1)} player to shot": player_id(p), "hit_rate": f"{rates[p]}%"}
                for k, p in enumerate(players)
            ]
        else:
            items = [{"player": player_id(p), "hit_rate": f"{rates[p]}%"} for p in players]
        return json.dumps(items)

    def description(self, player: int) -> str:
        everyone = list(range(self.players))
        inputs = [
            self.players,
            self.player_list(everyone),
            player_id(player),
            self.hit_rates[player],
            player + 1,
            self.role_text,
        ]
        return self.prompts.text("description", inputs)

    def decision(self, shooter: int, round_no: int, survivors: list[int]) -> Decision:
        fields = {"action": "shoot_or_miss", "target": "playerID_or_null"}
        inputs = [
            round_no,
            self.player_list(survivors),
            player_id(shooter),
            self.hit_rates[shooter],
            survivors.index(shooter) + 1,
            self.fmt(fields),
        ]
        return Decision(
            player=shooter,
            round=round_no,
            kind="shoot",
            request=self.prompts.text("request", inputs),
            fields=["target", "action"],
            validate=lambda data: read_target(data.get("target"), shooter, survivors),
            fallback=None,
            info=ShotInfo(survivors=list(survivors), hit_rates=self.hit_rates),
        )

    async def play(self, table: Table) -> None:
        table.start([self.description(p) for p in range(self.players)])
        survivors = list(range(self.players))
        shooter = survivors[0]
        rates = self.hit_rates
        for round_no in range(1, self.rounds + 1):
            if len(survivors) < 2:
                break
            before = list(survivors)
            (answer,) = await table.ask([self.decision(shooter, round_no, before)])
            target = answer.action
            hit = None if target is None else self.rng("hit", round_no).random() < rates[shooter] / 100
            if hit:
                survivors.remove(target)
            self._report(table, round_no, shooter, target, hit, survivors)
            table.end_round(round_no)
            self.records.append(
                BattleRound(
                    round=round_no,
                    shooter=shooter,
                    shot=answer.record(shooter, table.seats[shooter]),
                    target=target,
                    hit=hit,
                    eliminated=target if hit else None,
                    survivors_before=before,
                    strongest_other=strongest_other(shooter, before, rates),
                    survivors=list(survivors),
                )
            )
            if len(survivors) >= 2:
                shooter = next_shooter(shooter, survivors)

    def _report(
        self,
        table: Table,
        round_no: int,
        shooter: int,
        target: int | None,
        hit: bool | None,
        survivors: list[int],
    ) -> None:
        left = len(survivors)
        if target is None:
            mine, theirs = "You chose to miss on purpose.", "chose to miss on purpose."
        elif hit:
            t = player_id(target)
            mine = f"You shot at {t} and hit; {t} is out of the game."
            theirs = f"shot at {t} and hit; {t} is out of the game."
        else:
            t = player_id(target)
            mine, theirs = f"You shot at {t} and missed.", f"shot at {t} and missed."
        action = "miss" if target is None else "shoot"
        target_text = "null" if target is None else player_id(target)
        for player in survivors:
            if player == shooter:
                parts = self.prompts.parts("report2", [round_no, action, target_text, mine, left])
            else:
                parts = [self.prompts.text("report", [round_no, player_id(shooter), theirs, left])]
            table.report(player, parts)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            target = strongest_other(decision.player, ShotInfo.of(decision.info).survivors, self.hit_rates)
            return "null" if target is None else player_id(target)
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        k = len(self.records)
        correct = sum(1 for r in self.records if r.target is not None and r.target == r.strongest_other)
        survivors = self.records[-1].survivors if self.records else list(range(self.players))
        return {
            "turns": k,
            "strongest_target_rate": correct / k if k else None,
            "winner": survivors[0] if len(survivors) == 1 else None,
        }

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> BattleLog:
        p = result.params
        rates = [p["base_hit_rate"] + i * p["interval"] for i in range(result.players)]
        turns = [
            BattleTurn(
                f"player_{r.shooter}",
                {f"player_{s}": rates[s] for s in r.survivors_before},
                None if r.target is None else f"player_{r.target}",
            )
            for r in result.rounds_as(BattleRound)
        ]
        return BattleLog(turns)

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return battle_score(log)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        for r in result.rounds_as(BattleRound):
            j = r.round
            if j == 1:
                add("survivors", "players left", 0, len(r.survivors_before))
            add("survivors", "players left", j, len(r.survivors))
            if r.target is None:
                add("shots", "intentional miss", j, r.shooter, r.shooter)
            else:
                add("shots", "hit" if r.hit else "missed", j, r.target, r.shooter)
            if r.strongest_other is not None:
                add("shots", "strongest other", j, r.strongest_other, r.shooter)
