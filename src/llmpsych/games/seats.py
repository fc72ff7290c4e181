"""Who sits at a game table: a model role, a fixed strategy, a Python callable or a human at the terminal.

Seat specs are short strings (``-O seats='[llm, fixed:91, human]'``):

``llm`` / ``llm:<role>``
    a model; ``<role>`` is a role of the run config (``model`` is ``subject``, ``models`` adds others).
``fixed:<v1>/<v2>/...``
    answers ``v1``, ``v2``, ... cyclically by round (e.g. ``fixed:91`` always bids 91; a pirate proposal is
    written ``fixed:96,0,1,0,1,0,1,0,1,0``; a battle-royale target ``fixed:player_9`` or ``fixed:null``).
``strategy:<name>``
    a built-in strategy of the game (``ne`` plays the equilibrium / optimal action of spec §2).
``python:<module>:<function>``
    ``function(decision)`` returns the value (or a dict of JSON fields); it may be async.
``human``
    shows the conversation on stderr and reads the answer value from stdin. Each typed answer is stored in
    the run store (role ``human``), so a resumed game replays it instead of asking again.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ConfigError, LlmpsychError, terminal_text
from ..models.types import Message

if TYPE_CHECKING:
    from .engine import Decision, Table


@dataclass
class Reply:
    """A seat's answer: raw text, and for non-model seats the JSON fields directly."""

    text: str
    data: dict[str, Any] | None = None


class Seat(ABC):
    """One player's decision maker."""

    kind: str = ""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    @abstractmethod
    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        """Answer ``decision``; ``messages`` is the player's conversation including the request."""


class LLMSeat(Seat):
    """A model role; the request is sent through the run context so it is recorded and resumable."""

    kind = "llm"

    def __init__(self, spec: str, role: str = "subject") -> None:
        super().__init__(spec)
        self.role = role

    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        result = await table.ctx.chat(
            messages, table.params, role=self.role, sample=f"{table.label}:p{decision.player}"
        )
        return Reply(result.text)


def _wrap(value: Any, decision: Decision) -> Reply:
    data = value if isinstance(value, dict) else {decision.primary: value}
    return Reply(str(value), data)


class FixedSeat(Seat):
    """Answers a fixed list of values, cycling by round."""

    kind = "fixed"

    def __init__(self, spec: str, values: list[str]) -> None:
        super().__init__(spec)
        if not values or not all(values):
            raise ConfigError(f"seat {spec!r}: give at least one value, e.g. fixed:50 or fixed:50/60")
        self.values = values

    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        value = self.values[(decision.round - 1) % len(self.values)]
        return _wrap(None if value.lower() in {"null", "none"} else value, decision)


class StrategySeat(Seat):
    """A strategy the game itself implements (e.g. ``ne``)."""

    kind = "strategy"

    def __init__(self, spec: str, name: str) -> None:
        super().__init__(spec)
        self.name = name

    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        rng = table.ctx.rng("strategy", self.name, decision.round, decision.player, decision.kind)
        return _wrap(table.game.strategy(self.name, decision, rng), decision)


class CallableSeat(Seat):
    """A user function ``module:function`` called with the :class:`Decision`."""

    kind = "python"

    def __init__(self, spec: str, target: str, load: bool = True) -> None:
        super().__init__(spec)
        module_name, _, attr = target.partition(":")
        self.function: Callable[..., Any] | None = None
        if not load:  # checking a config (re-analysis): nothing is imported
            if not module_name or not attr:
                raise ConfigError(f"seat {spec!r}: use python:<module>:<function>")
            return
        try:
            self.function = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"seat {spec!r}: cannot load {target!r} ({exc})") from None

    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        if self.function is None:
            raise ConfigError(f"seat {self.spec!r} was built without loading its code")
        value = self.function(decision)
        if inspect.isawaitable(value):
            value = await value
        return _wrap(value, decision)


class HumanInputClosed(LlmpsychError):
    """The terminal input of a human seat ended (EOF)."""


_TERMINAL: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _terminal_lock() -> asyncio.Lock:
    """One lock per event loop: one human answers at a time, even with several human seats or games."""
    loop = asyncio.get_running_loop()
    if loop not in _TERMINAL:
        _TERMINAL[loop] = asyncio.Lock()
    return _TERMINAL[loop]


class HumanSeat(Seat):
    """A person at the terminal: sees the conversation, types the value (e.g. ``42`` or ``go``).

    Answers are recorded in the run store as they are typed; on resume they are replayed, not asked again.
    The end of the input (stdin closed) is an error: the game stops there and can be resumed.
    """

    kind = "human"

    def __init__(self, spec: str, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        super().__init__(spec)
        self.stdin = stdin
        self.stdout = stdout

    async def reply(self, decision: Decision, messages: list[Message], table: Table) -> Reply:
        key = table.answer_key("human", decision)
        line = table.stored_answer(key)
        if line is None:
            async with _terminal_lock():
                line = await asyncio.to_thread(self._ask, decision, messages)
            table.store_answer(key, self, messages, line)
        return _wrap(line, decision)

    def _ask(self, decision: Decision, messages: list[Message]) -> str:
        out = self.stdout or sys.stderr
        inp = self.stdin or sys.stdin
        print(f"\n===== player {decision.player} ({decision.kind}), round {decision.round} =====", file=out)
        for message in messages:  # other seats' replies and the rules: shown inert (no terminal escapes)
            print(terminal_text(f"[{message['role']}]\n{message['content']}\n", markup=False), file=out)
        print(f"Please type your answer for {decision.primary}: ", end="", file=out, flush=True)
        line = inp.readline()
        if not line:
            raise HumanInputClosed(
                f"the input of seat {self.spec!r} ended before player {decision.player} answered "
                f"round {decision.round}",
                "answers given so far are saved; continue with `llmpsych run --resume <run dir>`",
            )
        return line.strip()


def parse_seat(spec: str, load: bool = True) -> Seat:
    """Build a seat from its spec string; ``load=False`` checks a ``python:`` seat without importing it."""
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind in {"llm", "model"}:
        return LLMSeat(spec, rest or "subject")
    if kind == "fixed":
        return FixedSeat(spec, rest.split("/"))
    if kind == "strategy":
        return StrategySeat(spec, rest or "ne")
    if kind == "python":
        return CallableSeat(spec, rest, load)
    if kind in {"human", "user"}:
        return HumanSeat(spec)
    raise ConfigError(
        f"unknown seat {spec!r}",
        "use llm[:role], fixed:<values>, strategy:ne, python:<module>:<function> or human",
    )


def build_seats(
    spec: list[str] | dict[int, str] | None, players: int, default: str = "llm", load: bool = True
) -> list[Seat]:
    """One seat per player from a list (one spec per player) or a {player index: spec} mapping
    (``load=False``: ``python:`` seats are checked, not imported)."""
    if not spec:
        specs = [default] * players
    elif isinstance(spec, dict):
        bad = [k for k in spec if not 0 <= int(k) < players]
        if bad:
            raise ConfigError(f"seats: player index {bad[0]} is outside 0..{players - 1}")
        specs = [spec.get(i, spec.get(str(i), default)) for i in range(players)]  # type: ignore[call-overload]
    else:
        if len(spec) != players:
            raise ConfigError(f"seats: {len(spec)} seats given for {players} players")
        specs = list(spec)
    return [parse_seat(s, load) for s in specs]
