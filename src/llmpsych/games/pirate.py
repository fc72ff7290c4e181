"""(8) Pirate Game — sequential (spec §2.8).

Rules: N pirates ranked 1..N (1 most senior) share G gold. The most senior pirate still aboard proposes a
split among the survivors; everyone aboard votes, the proposer counting as accepting. With at least half
accepting (ties pass, as in the reference code) the plan is carried out and the game ends; otherwise the
proposer goes overboard and the next in rank proposes. Priorities: survive, then gold, then seeing
others thrown overboard. Defaults: N=10, G=100.

A proposal must give one non-negative integer to every pirate aboard and sum to G (re-asked otherwise).
Voters are asked at once (they never see each other's votes). Each pirate's report states *their own*
share (the reference told everyone the proposer's share; ``report_own_share=false`` reproduces that).

Optimal play (Stewart 1999): the proposer of rank p gives 1 gold to each pirate aboard whose rank has p's
parity (p+2, p+4, ...), 0 to the others, and keeps the rest — for N=10, G=100: [96,0,1,0,1,0,1,0,1,0]. A
voter accepts 2 or more, rejects 0, and accepts exactly 1 iff their rank has the proposer's parity.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .battle_royale import ordinal
from .engine import Answer, AnswerRecord, Decision, DecisionInfo, Game, GameRound, PlotAdd, Table
from .parsing import InvalidAnswer, as_int_list
from .prompts import echo
from .result import GamaBenchResult
from .scorekit import ScoringVersion, mean

BUILTIN = {
    "description": """@3

This is a game for @0 players.

How it works:
- You and the others are a pirate crew that has dug up @1 gold coins and must agree how to share them.
- Pirates act strictly by seniority. Your seniority rank is @2 (rank 1 is the most senior).
- The most senior pirate still on board proposes how to split the @1 coins.
- Every pirate on board, the proposer included, then votes for or against the proposal.
- If at least half vote for it, the coins are shared exactly as proposed.
- Otherwise the proposer walks the plank, and the pirate next in rank makes a fresh proposal.
- The game is over once a proposal passes or a single pirate is left.""",
    "report": (
        """The pirate of rank @0 proposed this split: @1.
@2 of the @3 pirates on board voted for it.

How did you vote?""",
        echo(decision="@4"),
        """@5 than half of the crew voted for the plan.
@6""",
    ),
    "request1": """The pirate of rank @0 has made a proposal.

Above all you want to stay alive. Once that is safe, you want as many coins as possible, and if it costs \
you nothing you would rather see another pirate thrown overboard.

The proposal is @1. It gives you @2 golds.

@3""",
    "request2": """It is your turn, as the pirate of rank @0, to propose a split.

Above all you want to stay alive. Once that is safe, you want as many coins as possible, and if it costs \
you nothing you would rather see another pirate thrown overboard.

Split @1 golds among the pirates still on board: whole numbers, none below zero, adding up to \
exactly @1.

@2""",
}


class PirateParams(BaseModel):
    """Parameters of the Pirate Game."""

    model_config = ConfigDict(extra="forbid")

    gold: int = Field(default=100, ge=1)
    report_own_share: bool = True


def optimal_plan(proposer: int, players: int, gold: int) -> list[int]:
    """The optimal split for ranks ``proposer``..``players`` (1-based ranks)."""
    plan = [1 if (r - proposer) % 2 == 0 and r != proposer else 0 for r in range(proposer, players + 1)]
    plan[0] = gold - sum(plan)
    return plan


def optimal_vote(rank: int, proposer: int, share: int) -> str:
    """The optimal vote of ``rank`` on a plan giving it ``share``."""
    if share >= 2:
        return "accept"
    if share == 0:
        return "reject"
    return "accept" if (rank - proposer) % 2 == 0 else "reject"


def read_plan(value: Any, n: int, gold: int) -> list[int]:
    """A proposal: n non-negative integers summing to ``gold``."""
    plan = as_int_list(value)
    if len(plan) != n:
        raise InvalidAnswer(f"the plan has {len(plan)} shares for {n} pirates")
    if any(g < 0 for g in plan):
        raise InvalidAnswer("a share is negative")
    if sum(plan) != gold:
        raise InvalidAnswer(f"the shares sum to {sum(plan)}, not {gold}")
    return plan


def read_vote(value: Any) -> str:
    """``accept`` or ``reject`` (any text containing exactly one of them)."""
    text = str(value).lower()
    found = [word for word in ("accept", "reject") if word in text]
    if len(found) != 1:
        raise InvalidAnswer(f"{value!r} is neither accept nor reject")
    return found[0]


def tally(votes: list[str], pirates: int) -> tuple[int, bool]:
    """Accepting pirates (the proposer included) and whether that is at least half of ``pirates``."""
    accepted = 1 + sum(1 for v in votes if v == "accept")
    return accepted, accepted / pirates >= 0.5


# -- scoring ---------------------------------------------------------------------------------------
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


def optimal_shares(survivors: int, gold: float) -> list[float]:
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


def vote_correct(share: float, offset: int, accept: bool | None, *, published: bool = False) -> bool:
    """Whether a voter ``offset`` ranks below the proposer voted as the equilibrium requires.

    Accept if offered 2 or more, reject if offered 0; offered exactly 1, accept if the voter's rank has
    the proposer's parity (even ``offset``), else reject. With ``published`` the reference code's rule: a
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
        return False if published else not accept
    return False  # a fractional share below 2 has no equilibrium answer (and never occurs with integers)


def pirate_parts(log: PirateLog, *, published: bool = False) -> tuple[float, float, float]:
    """(S8P, S8V, scale): mean L1 distance of the plans to the optimum, vote accuracy, and 2G.

    With ``published`` (the reference code) plans are first rescaled to 100 gold and compared with the
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
        if published:
            plan = [g / log.gold * 100 for g in rnd.proposal]
            target = optimal_shares(survivors, 100)
        else:
            plan, target = list(rnd.proposal), optimal_shares(survivors, log.gold)
        distances.append(math.fsum(abs(a - b) for a, b in zip(plan, target, strict=True)))
        for offset in range(1, survivors):
            correct += vote_correct(rnd.proposal[offset], offset, rnd.votes[offset], published=published)
            votes += 1
    accuracy = correct / votes if votes else 1.0
    return mean(distances), accuracy, 200.0 if published else 2 * log.gold


def pirate_score(log: PirateLog, *, published: bool = False) -> float:
    """Pirate Game: closeness of the plans to the optimum and correctness of the votes.

    S8P = mean over rounds of the L1 distance between the plan and the optimal plan; S8V = share of
    correct votes (proposers excluded); score = (2G - S8P)/(2G)*50 + S8V*50.

    Corrections (``published=True`` reproduces the reference code and the published numbers): the code
    rescales plans to 100 gold and compares them with the 100-gold optimum (identical at G=100, not for
    the G=4 or 5 variants), and never credits rejecting 1 gold offered by an opposite-parity proposer,
    which the paper's stated rule calls correct.
    """
    distance, accuracy, scale = pirate_parts(log, published=published)
    return (scale - distance) / scale * 50 + accuracy * 50


class PirateGameRound(GameRound):
    """One proposal of the Pirate Game (``round`` = the proposer's rank): the proposal answer, the plan
    it gave (golds by rank, proposer first), every later pirate's vote, how many accepted (the proposer
    included), how many pirates were left and whether the plan passed."""

    proposer: int
    proposal: AnswerRecord
    plan: list[int]
    votes: list[AnswerRecord]
    accepted_count: int
    pirates: int
    accepted: bool


@dataclass(frozen=True, eq=False)
class ProposalInfo(DecisionInfo):
    """What a proposer may look at: their rank (``proposer`` = ``rank``), the gold and the crew's size."""

    proposer: int
    rank: int
    gold: int
    players: int


@dataclass(frozen=True, eq=False)
class VoteInfo(DecisionInfo):
    """What a voter may look at: the proposer's rank, their own, the plan (golds by rank, proposer first)
    and their share of it."""

    proposer: int
    rank: int
    share: int
    plan: list[int]


class PirateGame(Game[PirateGameRound]):
    """Pirate Game. ``rounds`` is not used: the game lasts until a plan passes (at most N proposals)."""

    name = "pirate"
    folder = "pirate_game"
    Params = PirateParams
    Round = PirateGameRound
    builtin = BUILTIN
    title = "Pirate Game"
    scoring_name = "pirate_game"
    json_key = "pirate"
    in_overall = True
    panels = {
        "proposals": ("Proposals", "proposer rank", "golds"),
        "votes": ("Votes for the plan", "proposer rank", "pirates"),
        "ballots": ("Each pirate's vote", "proposer rank", "voter rank"),
    }
    p: PirateParams

    def plan_text(self, proposer: int, plan: list[int]) -> str:
        """A plan as the prompts show it: ``{"rank_3": 50, ...}``."""
        return json.dumps(
            {f"rank_{r}": g for r, g in zip(range(proposer, self.players + 1), plan, strict=True)}
        )

    def description(self, player: int) -> str:
        return self.prompts.text("description", [self.players, self.p.gold, player + 1, self.role_text])

    def proposal(self, proposer: int) -> Decision:
        """Ask the pirate of rank ``proposer`` (1-based) for a plan."""
        n, gold = self.players - proposer + 1, self.p.gold
        shape = {"proposal": {f"rank_{r}": f"g_{r}" for r in range(proposer, self.players + 1)}}
        request = self.prompts.text("request2", [proposer, gold, self.fmt(shape)])
        equal = [gold // n] * n
        equal[0] += gold - sum(equal)
        return Decision(
            player=proposer - 1,
            round=proposer,
            kind="propose",
            request=request,
            fields=["proposal"],
            validate=lambda data: read_plan(data["proposal"], n, gold),
            fallback=equal,
            info=ProposalInfo(proposer=proposer, rank=proposer, gold=gold, players=self.players),
        )

    def vote(self, rank: int, proposer: int, plan: list[int]) -> Decision:
        """Ask the pirate of rank ``rank`` to vote on ``plan``."""
        share = plan[rank - proposer]
        fields = {"decision": "accept_or_reject"}
        request = self.prompts.text(
            "request1", [proposer, self.plan_text(proposer, plan), share, self.fmt(fields)]
        )
        return Decision(
            player=rank - 1,
            round=proposer,
            kind="vote",
            request=request,
            fields=list(fields),
            validate=lambda data: read_vote(data["decision"]),
            fallback="reject",
            info=VoteInfo(proposer=proposer, rank=rank, share=share, plan=list(plan)),  # its own copy
        )

    async def play(self, table: Table) -> None:
        table.start([self.description(p) for p in range(self.players)])
        for proposer in range(1, self.players + 1):
            (proposal,) = await table.ask([self.proposal(proposer)])
            plan: list[int] = proposal.action
            voters = list(range(proposer + 1, self.players + 1))
            answers: list[Answer] = await table.ask([self.vote(r, proposer, plan) for r in voters])
            votes = [a.action for a in answers]
            pirates = self.players - proposer + 1
            accepted_count, accepted = tally(votes, pirates)
            for rank in range(proposer, self.players + 1):
                own = "accept" if rank == proposer else votes[rank - proposer - 1]
                table.report(
                    rank - 1, self._report(rank, proposer, plan, own, accepted_count, pirates, accepted)
                )
            table.end_round(proposer)
            self.records.append(
                PirateGameRound(
                    round=proposer,
                    proposer=proposer,
                    proposal=proposal.record(proposer - 1, table.seats[proposer - 1]),
                    plan=plan,
                    votes=[a.record(r - 1, table.seats[r - 1]) for r, a in zip(voters, answers, strict=True)],
                    accepted_count=accepted_count,
                    pirates=pirates,
                    accepted=accepted,
                )
            )
            if accepted:
                break

    def _report(
        self, rank: int, proposer: int, plan: list[int], own: str, count: int, pirates: int, accepted: bool
    ) -> list[str]:
        share = plan[rank - proposer] if self.p.report_own_share else plan[0]
        who = f"the {ordinal(proposer)} most senior pirate"
        if accepted and rank == proposer:
            result = f"Your plan passed and the game is over. You get {share} golds."
        elif accepted:
            result = f"The plan of {who} passed and the game is over. You get {share} golds."
        elif rank == proposer:
            result = "Your plan failed. You are thrown overboard and get nothing."
        else:
            result = (
                f"{who[0].upper()}{who[1:]} was thrown overboard and is out of the game. The game goes on."
            )
        comparison = "Not fewer" if accepted else "Fewer"
        inputs = [proposer, self.plan_text(proposer, plan), count, pirates, own, comparison, result]
        return self.prompts.parts("report", inputs)

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        if name == "ne":
            if decision.kind == "propose":
                return optimal_plan(ProposalInfo.of(decision.info).proposer, self.players, self.p.gold)
            vote = VoteInfo.of(decision.info)
            return optimal_vote(vote.rank, vote.proposer, vote.share)
        return super().strategy(name, decision, rng)

    def summary(self) -> dict[str, Any]:
        distances, correct, votes = [], 0, 0
        for r in self.records:
            best = optimal_plan(r.proposer, self.players, self.p.gold)
            distances.append(sum(abs(a - b) for a, b in zip(r.plan, best, strict=True)))
            for v in r.votes:
                rank = v.player + 1
                share = r.plan[rank - r.proposer]
                correct += v.action == optimal_vote(rank, r.proposer, share)
                votes += 1
        return {
            "proposals": len(self.records),
            "mean_plan_distance": sum(distances) / len(distances) if distances else None,
            "vote_accuracy": correct / votes if votes else None,
        }

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> PirateLog:
        rounds = [
            PirateRound(r.plan, [True, *[v.action == "accept" for v in r.votes]])
            for r in result.rounds_as(PirateGameRound)
        ]
        return PirateLog(rounds, result.players, result.params["gold"])

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        return pirate_score(log, published=published)

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        n, gold = result.players, result.params["gold"]
        for r in result.rounds_as(PirateGameRound):
            proposer, plan = r.proposer, r.plan
            best = optimal_plan(proposer, n, gold)
            add("proposals", "proposer keeps", proposer, plan[0], proposer - 1)
            add("proposals", "optimal keeps", proposer, best[0])
            distance = sum(abs(a - b) for a, b in zip(plan, best, strict=True))
            add("proposals", "L1 distance to optimal", proposer, distance)
            add("votes", "for the plan", proposer, r.accepted_count)
            add("votes", "needed", proposer, math.ceil(r.pirates / 2))
            for vote in r.votes:
                add("ballots", vote.action, proposer, vote.player + 1, vote.player)
