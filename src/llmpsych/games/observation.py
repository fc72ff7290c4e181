"""What a seat is given when its player must decide: an :class:`Observation` (as TextArena's agents are).

A seat sees what its player is entitled to see, never the table: the rules (its system message), the
round reports so far, the question, the answers the game accepts and, for model seats, the exact
conversation to send. :class:`SeatContext` is what a seat may use to answer: the unit's recorded model
calls, recorded non-model answers and seeded randomness (the run's unit context provides it).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, Self

from ..models.types import ChatResult, GenerationParams, Message

#: The model-facing JSON-format instruction of :func:`llmpsych.games.prompts.format_instruction`.
_INSTRUCTION = re.compile(
    r"(?:Reply with a single JSON object only, without markdown, like this"
    r"|Write out your reasoning and your answer as a single JSON object like this): (\{[^\n]*\})"
)


class SeatContext(Protocol):
    """What a seat may use: recorded model calls and non-model answers, seeded randomness."""

    async def chat(
        self,
        messages: list[Message],
        params: GenerationParams | None = ...,
        role: str = ...,
        sample: Any = ...,
    ) -> ChatResult: ...

    async def recorded(
        self,
        role: str,
        key: str,
        source: str,
        request: dict[str, Any],
        produce: Callable[[], Awaitable[str]],
        meta: dict[str, Any] | None = ...,
    ) -> str: ...

    def rng(self, *labels: Any) -> random.Random: ...

    def prompting(self) -> AbstractContextManager[None]: ...


@dataclass(frozen=True, eq=False)
class DecisionInfo(Mapping[str, Any]):
    """What a strategy, a ``python:`` seat and a person's page may look at when a player decides (the
    auction's valuation, the survivors of a battle royale, the plan a pirate votes on): each game declares
    its own as a subclass in its module, read by attribute (``info.valuation``); a game that has nothing to
    add gives this empty one.

    Also a read-only mapping of its fields (``info["valuation"]``, ``dict(info)``, ``info == {...}``), so
    ``python:`` seats written against the mapping keep working. Declare a subclass as this class is,
    ``@dataclass(frozen=True, eq=False)``: the mapping's equality, not the dataclass's."""

    def __getitem__(self, key: str) -> Any:
        if key in self._names():
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Self:
        """``values`` (a decision's info as a plain mapping) as this info: the keys it declares, the rest
        left out; a field absent takes its default (one without a default: ``TypeError``)."""
        if isinstance(values, cls):
            return values
        names = set(cls._names())
        return cls(**{key: value for key, value in values.items() if key in names})


@dataclass
class Observation:
    """One decision as one player sees it."""

    player: int
    round: int
    kind: str  # e.g. "number", "vote", "propose", "shoot"
    rules: str  # the player's system message (persona and rules)
    history: list[Message]  # the round reports so far, as the player's model is sent them
    request: str  # the request turn as a model gets it (with the JSON-format instruction)
    fields: list[str]  # JSON fields; the first is the one fixed and human answers fill
    info: DecisionInfo = field(default_factory=DecisionInfo)  # what a strategy may look at (the game's own)
    cot: str = ""  # the chain-of-thought sentence the game put before the format instruction
    attempt: int = 0  # 0 for the first ask, then 1, 2, ... for re-asks
    last_error: str = ""  # why the previous answer to this decision could not be used (re-asks only)
    messages: list[Message] = field(default_factory=list)  # exactly what a model seat sends
    sample: str = ""  # distinguishes this player's model calls (``<unit>:p<player>``)
    params: GenerationParams | None = None  # the game's sampling parameters
    key: str = ""  # names this decision for recorded answers (``<unit>:p<player>:r<round>:<kind>``)
    #: the game's built-in strategies for this decision: ``strategy(name, rng)`` -> value
    strategy: Callable[[str, random.Random], Any] | None = None
    #: the game's own check of the JSON fields: returns the action or raises ``InvalidAnswer`` (a form
    #: refuses an unusable answer with the game's message before anything is stored)
    check: Callable[[dict[str, Any]], Any] | None = None
    title: str = ""  # the game's title ("Guess 2/3 of the Average")
    rounds: int = 0  # the rounds the game plays (0: not known)
    #: the game so far as a partial result (``game``, ``run``, ``players``, ``seats``, ``params``,
    #: ``rounds``): for the host's monitor and a participant's page, never shown to a model
    progress: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def primary(self) -> str:
        """The main JSON field."""
        return self.fields[0]

    @property
    def question(self) -> str:
        """The request without the model-facing JSON-format instruction (what a person is asked)."""
        match = _INSTRUCTION.search(self.request)
        if match is None:
            return self.request.strip()
        start = match.start()
        if self.cot and self.request[:start].rstrip().endswith(self.cot):
            start = self.request[:start].rstrip().rindex(self.cot)
        text = self.request[:start] + self.request[match.end() :]
        return re.sub(r"\n{3,}", "\n\n", text).strip()

    @property
    def answer_format(self) -> dict[str, Any]:
        """Each asked JSON field and the description of its value (``{"bid": "integer_between_0_and_8"}``)."""
        match = _INSTRUCTION.search(self.request)
        try:
            shape = json.loads(match.group(1)) if match else {}
        except ValueError:
            shape = {}
        shape = shape if isinstance(shape, dict) else {}
        shape.pop("explanation", None)
        return shape or {name: "a value" for name in self.fields}

    @property
    def valid(self) -> str:
        """The answers the game accepts for :attr:`primary`, in words (``integer between 0 and 100``)."""
        described = self.answer_format.get(self.primary, "a value")
        if isinstance(described, dict):
            keys = ", ".join(str(k) for k in described)
            return f"one whole number for each of {keys}, separated by commas"
        return str(described).replace("_", " ")
