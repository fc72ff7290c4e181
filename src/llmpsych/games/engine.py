"""The game engine: N seats, one conversation each, simultaneous or sequential rounds, bounded re-asks.

Conversation protocol (spec §1.4): each player's history starts with a system message (persona + rules);
after each round the game appends that player's report turns (user / assistant / user); at decision time
the request is appended *temporarily* as the last user turn. All decisions of a simultaneous round are
asked concurrently. An unreadable or invalid answer is asked again, at most ``max_reasks`` times (the
original code retried forever, a recorded deviation), then the game's fallback action is used and logged.

A seat is given an :class:`~llmpsych.games.observation.Observation` of its decision (never the table)
and the unit context; human and ``python:`` answers are recorded by the context like model calls.

Everything is deterministic given the answers and ``ctx.rng`` draws, so a resumed run replays its stored
answers and continues from the last finished round.
"""

from __future__ import annotations

import asyncio
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from ..models.chat_context import ChatContext, ChatRequest
from ..models.types import ChatResult, GenerationParams, Message
from ..runs.provenance import SKIPPED, UNKNOWN
from .observation import DecisionInfo as DecisionInfo  # re-exported: a game declares its info from it
from .observation import Observation
from .parsing import InvalidAnswer, extract_fields
from .prompts import Builtin, PromptSet, format_instruction
from .rounds import AnswerRecord as AnswerRecord  # the round records, re-exported: the games' API
from .rounds import GameRound as GameRound
from .rounds import Payoff as Payoff
from .rounds import SimultaneousRound as SimultaneousRound
from .scorekit import ScoringVersion
from .seats import Seat


@dataclass(kw_only=True)
class Decision:
    """One thing one player is asked to decide (keyword arguments only: eight fields, three of them ints
    or lists that a positional call could swap unnoticed)."""

    player: int
    round: int
    kind: str  # e.g. "number", "vote", "propose", "shoot"
    request: str  # the full request turn (rules reminder + JSON format instruction)
    fields: list[str]  # JSON fields; the first is the one fixed and human answers fill
    validate: Callable[[dict[str, Any]], Any]  # JSON fields -> action, or raise InvalidAnswer
    fallback: Any  # the action used when every ask failed
    info: DecisionInfo = field(default_factory=DecisionInfo)  # what a strategy may look at (the game's own)

    @property
    def primary(self) -> str:
        """The main JSON field."""
        return self.fields[0]


#: Longest refused text kept in a decision's record (a model's whole reply is in its stored call; a web
#: form's entry is at most 200 characters).
REFUSED_CHARS = 200


@dataclass
class Answer:
    """The outcome of asking one decision: the action, how the answer came (:mod:`llmpsych.runs.provenance`:
    ``typed``, ``deadline``, ``default``, ``skipped`` (the decision's no-answer action, its ``fallback``),
    ``repeated``, ``stand-in``, ``never joined``, ``bot``, ``model``, ``strategy``, ``python``), the seconds
    from the question being shown to the answer (summed over re-asks; None when it was never asked of
    anyone) and every refused text (a form's refused entries, then the answers the game could not use)."""

    action: Any
    asks: int
    fallback: bool = False
    raw: str = ""
    errors: list[str] = field(default_factory=list)
    how: str = UNKNOWN
    response_s: float | None = None
    refused: list[str] = field(default_factory=list)

    def record(self, player: int, seat: Seat) -> AnswerRecord:
        """The record of this answer kept in its round (how it came travels with it)."""
        out: dict[str, Any] = {"player": player, "seat": seat.spec, "action": self.action, "asks": self.asks}
        out["how"] = self.how
        out["response_s"] = None if self.response_s is None else round(self.response_s, 3)
        if self.refused:
            out["refused"] = self.refused
        if self.fallback:
            out["fallback"] = True
        if self.errors:
            out["errors"] = self.errors
        return AnswerRecord.model_validate(out)


RoundT = TypeVar("RoundT", bound=GameRound)
SimRoundT = TypeVar("SimRoundT", bound=SimultaneousRound)


if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..models.client import ModelClient
    from .result import GamaBenchResult


@runtime_checkable
class TableContext(ChatContext, Protocol):
    """A :class:`ChatContext` that also records non-model answers (fixed, human, browser seats) as it
    records model calls, and pauses progress output while a person types: what a game table needs."""

    async def recorded(
        self,
        role: str,
        key: str,
        source: str,
        request: dict[str, Any],
        produce: Callable[[], Awaitable[str]],
        meta: dict[str, Any] | None = None,
    ) -> str:
        """The answer ``produce`` gives, recorded (and replayed on resume) under ``key``, with ``meta``
        (how it came, its response time, refused attempts) stored beside it and filled on replay."""
        ...

    def prompting(self) -> AbstractContextManager[None]:
        """A block during which a person is asked (progress output paused)."""
        ...


def table_context(ctx: ChatContext) -> TableContext:
    """``ctx`` as a :class:`TableContext`, or a clear error for a context that cannot record answers."""
    if not isinstance(ctx, TableContext):
        raise TypeError(f"a game table needs a context that records answers; {type(ctx).__name__} does not")
    return ctx


class Table:
    """The seats, their conversations and the asking machinery of one game."""

    def __init__(
        self,
        game: Game[Any],
        seats: list[Seat],
        ctx: TableContext,
        params: GenerationParams,
        label: str,
        max_reasks: int = 10,
        reask: Literal["repeat", "feedback"] = "repeat",
        truncate_after: int | None = 20,
    ) -> None:
        self.game = game
        self.seats = seats
        self.ctx = ctx
        self.params = params
        self.label = label
        self.max_reasks = max_reasks
        self.reask = reask
        self.truncate_after = truncate_after
        self.histories: list[list[Message]] = [[] for _ in seats]
        #: every turn each seat saw or gave, never truncated: requests, every answer (re-asks too), reports
        self.transcripts: list[list[dict[str, Any]]] = [[] for _ in seats]
        self.round = 0
        self.fallbacks = 0

    def start(self, descriptions: list[str]) -> None:
        """Open every conversation with its system message."""
        self.histories = [[{"role": "system", "content": text}] for text in descriptions]
        self.transcripts = [[self._turn("system", text, "rules")] for text in descriptions]

    def _turn(self, role: str, content: str, kind: str, **extra: Any) -> dict[str, Any]:
        return {"round": self.round, "role": role, "kind": kind, "content": content, **extra}

    def report(self, player: int, parts: list[str]) -> None:
        """Append a round report: one user turn, or user / assistant / user turns."""
        roles = ["user", "assistant", "user"] if len(parts) == 3 else ["user"] * len(parts)
        for role, text in zip(roles, parts, strict=True):
            self.histories[player].append({"role": role, "content": text})
            self.transcripts[player].append(self._turn(role, text, "report"))

    def end_round(self, round_no: int) -> None:
        """After ``truncate_after`` rounds, drop the oldest non-system message per round (reference code)."""
        if self.truncate_after is not None and round_no > self.truncate_after:
            for history in self.histories:
                if len(history) > 2:
                    del history[1]

    def observe(
        self, decision: Decision, messages: list[Message], attempt: int = 0, last_error: str = ""
    ) -> Observation:
        """What the player of ``decision`` is given to decide: its rules, reports so far and the question."""
        history = self.histories[decision.player]
        has_rules = bool(history) and history[0]["role"] == "system"
        game = self.game
        return Observation(
            player=decision.player,
            round=decision.round,
            kind=decision.kind,
            rules=history[0]["content"] if has_rules else "",
            history=history[1:] if has_rules else list(history),
            request=decision.request,
            fields=decision.fields,
            info=decision.info,
            cot=game.cot_text,
            attempt=attempt,
            last_error=last_error,
            messages=messages,
            sample=f"{self.label}:p{decision.player}",
            params=self.params,
            key=f"{self.label}:p{decision.player}:r{decision.round}:{decision.kind}",
            strategy=lambda name, rng: game.strategy(name, decision, rng),
            check=decision.validate,
            title=game.title,
            rounds=game.rounds,
            progress=self.so_far,
        )

    def so_far(self) -> dict[str, Any]:
        """The game so far in the shape of a unit result (the round records finished until now)."""
        return {
            "game": self.game.name,
            "run": self.label,
            "players": len(self.seats),
            "seats": [seat.spec for seat in self.seats],
            "params": self.game.info(),
            "rounds": self.game.stored_rounds(),
        }

    async def ask(self, decisions: list[Decision]) -> list[Answer]:
        """Ask all decisions concurrently; each is re-asked on its own until valid or out of tries."""
        if decisions:
            self.round = decisions[0].round
        return list(await asyncio.gather(*(self._ask_one(d) for d in decisions)))

    async def _ask_one(self, decision: Decision) -> Answer:
        seat = self.seats[decision.player]
        log = self.transcripts[decision.player]
        messages = [*self.histories[decision.player], {"role": "user", "content": decision.request}]
        log.append(self._turn("user", decision.request, "request"))
        errors: list[str] = []
        refused: list[str] = []
        seconds: list[float] = []
        raw, how = "", UNKNOWN
        for attempt in range(self.max_reasks + 1):
            if attempt and (self.reask == "repeat" or log[-1]["kind"] != "feedback"):
                log.append(self._turn("user", decision.request, "re-ask"))
            last_error = errors[-1] if errors else ""
            reply = await seat.reply(self.observe(decision, messages, attempt, last_error), self.ctx)
            raw, how = reply.text, reply.how
            refused += reply.refused
            if reply.response_s is not None:
                seconds.append(reply.response_s)
            if how == SKIPPED:  # a person's seat sat this round out: the game's no-answer action, flagged
                log.append(self._turn("note", f"skipped; the no-answer action {decision.fallback!r}", "skip"))
                took = sum(seconds) if seconds else None
                return Answer(
                    decision.fallback, attempt + 1, raw=raw, how=how, response_s=took, refused=refused
                )
            try:
                data = reply.data if reply.data is not None else extract_fields(reply.text, decision.fields)
                action = decision.validate(data)
            except InvalidAnswer as exc:
                errors.append(str(exc))
                refused.append(raw if len(raw) <= REFUSED_CHARS else raw[: REFUSED_CHARS - 1] + "…")
                log.append(self._turn("assistant", raw, "answer", seat=seat.spec, error=errors[-1]))
            else:
                log.append(self._turn("assistant", raw, "answer", seat=seat.spec, action=action))
                took = sum(seconds) if seconds else None
                return Answer(
                    action, attempt + 1, raw=raw, errors=errors, how=how, response_s=took, refused=refused
                )
            if self.reask == "feedback" and reply.data is None:
                feedback = f"That answer could not be used ({errors[-1]}). Please try again."
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": feedback},
                ]
                log.append(self._turn("user", feedback, "feedback"))
        self.fallbacks += 1
        log.append(
            self._turn("note", f"no usable answer; the fallback {decision.fallback!r} was used", "fallback")
        )
        took = sum(seconds) if seconds else None
        return Answer(
            decision.fallback,
            self.max_reasks + 1,
            fallback=True,
            raw=raw,
            errors=errors,
            how=how,
            response_s=took,
            refused=refused,
        )


#: ``add(panel, series, x, y, player=None)``: one plotted point of a game's result
PlotAdd = Callable[..., None]


class Game(ABC, Generic[RoundT]):
    """A game: everything about it lives in its class, registered by :func:`.registry.register`.

    Required (checked at registration): ``name``, ``title``, ``scoring_name``, ``folder``, ``Params``
    (its options), ``builtin`` (its prompts), ``Round`` (its round record), :meth:`play` (its rules),
    :meth:`scoring_log` and :meth:`score_log` (its 0-100 score), ``panels`` and :meth:`plot_points` (its
    plot).
    """

    name: ClassVar[str]
    #: display title, e.g. "Guess 2/3 of the Average"
    title: ClassVar[str]
    #: the name in scores, logs and leaderboards (the authors' folder name for the eight paper games)
    scoring_name: ClassVar[str]
    #: the key of the game in ``leaderboard.json`` (default: ``scoring_name``)
    json_key: ClassVar[str] = ""
    #: one of the paper's eight games, whose mean is the overall score
    in_overall: ClassVar[bool] = False
    folder: ClassVar[str]  # the official template folder
    Params: ClassVar[type[BaseModel]]
    #: the record of one round (the game's ``GameRound`` subclass), what ``play`` appends to ``records``
    Round: ClassVar[type[GameRound]]
    builtin: ClassVar[Mapping[str, Builtin]]
    #: plot panels: panel name -> (title, x label, y label), in drawing order
    panels: ClassVar[dict[str, tuple[str, str, str]]] = {}
    #: the reference code's history truncation starts after this round
    truncate_after: ClassVar[int] = 20

    @classmethod
    def scoring_log(cls, result: GamaBenchResult) -> Any:
        """The scoring record (a frozen dataclass with a ``game`` field = ``scoring_name``) of a result."""
        raise NotImplementedError

    @staticmethod
    def score_log(log: Any, *, version: ScoringVersion = "thesis", published: bool = False) -> float:
        """The 0-100 score of a scoring record (``published``: the published numbers' reading)."""
        raise NotImplementedError

    @classmethod
    def score_bounds(cls, version: ScoringVersion) -> tuple[float, float]:
        """The range a score must fall in (a score outside it means answers far outside the game's range)."""
        return (0.0, 100.0)

    @staticmethod
    def above_range(log: Any) -> list[str]:
        """Answers above the asked bound that the reference game accepted (``"round 5 player 3: bid 187 >
        100"``); none by default."""
        return []

    @classmethod
    def plot_points(cls, result: GamaBenchResult, add: PlotAdd) -> None:
        """Call ``add(panel, series, x, y, player=None)`` for every plotted point of one game result."""
        raise NotImplementedError

    def __init__(
        self,
        params: BaseModel,
        players: int,
        rounds: int,
        prompts: PromptSet,
        rng: Callable[..., random.Random],
        persona: int | None = None,
        cot: int | None = None,
    ) -> None:
        self.p = params
        self.players = players
        self.rounds = rounds
        self.prompts = prompts
        self.rng = rng
        self.role_text = prompts.persona(persona)
        self.cot_text = prompts.cot(cot)
        self.records: list[RoundT] = []
        self.check()

    def check(self) -> None:
        """Validate the parameters against the number of players (raise ConfigError)."""
        return None

    def fmt(self, fields: Mapping[str, object]) -> str:
        """The JSON-format instruction for ``fields``."""
        return format_instruction(fields, self.cot_text)

    def info(self) -> dict[str, Any]:
        """Parameters recorded with the result."""
        return self.p.model_dump()

    @abstractmethod
    async def play(self, table: Table) -> None:
        """Play the whole game at ``table``, appending one record per round to ``self.records``."""

    def stored_rounds(self) -> list[dict[str, Any]]:
        """The rounds played so far as the run store keeps them (:meth:`GameRound.stored`)."""
        return [record.stored() for record in self.records]

    def strategy(self, name: str, decision: Decision, rng: random.Random) -> Any:
        """A built-in strategy's value for ``decision`` (``ne``: the equilibrium / optimal play)."""
        raise InvalidAnswer(f"game {self.name} has no strategy {name!r}")

    def summary(self) -> dict[str, Any]:
        """Headline numbers of the finished game (raw, unscaled)."""
        return {}


class SimultaneousGame(Game[SimRoundT]):
    """A game of K rounds in which every player decides at once, then sees a report."""

    @abstractmethod
    def description(self, player: int) -> str:
        """The system message of ``player``."""

    @abstractmethod
    def decision(self, player: int, round_no: int) -> Decision:
        """What ``player`` is asked in ``round_no``."""

    @abstractmethod
    def resolve(self, round_no: int, actions: list[Any]) -> SimRoundT:
        """The round's outcome from every player's action, as the game's ``Round`` without its decisions
        (pure; tested on hand-made rounds)."""

    @abstractmethod
    def report(self, player: int, round_no: int, actions: list[Any], outcome: SimRoundT) -> list[str]:
        """The report turns ``player`` receives after the round."""

    async def play(self, table: Table) -> None:
        table.start([self.description(p) for p in range(self.players)])
        for round_no in range(1, self.rounds + 1):
            answers = await table.ask([self.decision(p, round_no) for p in range(self.players)])
            actions = [a.action for a in answers]
            outcome = self.resolve(round_no, actions)
            for player in range(self.players):
                table.report(player, self.report(player, round_no, actions, outcome))
            table.end_round(round_no)
            decisions = [a.record(i, table.seats[i]) for i, a in enumerate(answers)]
            self.records.append(outcome.model_copy(update={"decisions": decisions}))


class OfflineContext:
    """A stand-in for the run context when no seat is a model (fixed strategies, callables, humans)."""

    def __init__(self, seed: int = 0, label: str = "offline") -> None:
        self.seed = seed
        self.label = label

    @property
    def unit_id(self) -> str:
        """The label, standing for the unit id."""
        return self.label

    @property
    def clients(self) -> Mapping[str, ModelClient]:
        """No models offline."""
        return {}

    def rng(self, *labels: Any) -> random.Random:
        """Seeded randomness, as the run context gives it."""
        from ..runs.context import derived_seed

        return random.Random(derived_seed(self.seed, self.label, *labels))

    async def chat(
        self,
        messages: list[Message],
        params: GenerationParams | None = None,
        role: str = "subject",
        sample: int | str = 0,
    ) -> ChatResult:
        """No model to ask: an offline game has no model seats."""
        raise RuntimeError("an offline game has no model seats")

    async def chat_all(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """No model to ask: an offline game has no model seats."""
        raise RuntimeError("an offline game has no model seats")

    async def recorded(
        self,
        role: str,
        key: str,
        source: str,
        request: dict[str, Any],
        produce: Callable[[], Awaitable[str]],
        meta: dict[str, Any] | None = None,
    ) -> str:
        """A non-model answer, asked now (an offline game records nothing)."""
        return await produce()

    def prompting(self) -> AbstractContextManager[None]:
        """Nothing to pause offline."""
        return nullcontext()


def play_offline(game: Game[Any], seats: list[Seat], seed: int = 0, max_reasks: int = 10) -> Table:
    """Play ``game`` to the end without the run engine (no model seats); returns the table."""
    ctx = OfflineContext(seed)
    game.rng = ctx.rng
    table = Table(game, seats, ctx, GenerationParams(), "offline", max_reasks, "repeat", game.truncate_after)
    asyncio.run(game.play(table))
    return table
