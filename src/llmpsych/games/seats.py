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
    ``function(observation)`` returns the value (or a dict of JSON fields); it may be async. The
    :class:`~llmpsych.games.observation.Observation` has ``player``, ``round``, ``kind``, ``info``, the
    ``question`` and the ``history``. Each answer is stored in the run store (role ``python``), so a
    resumed game replays it instead of calling the function again.
``human``
    shows the rules, the round reports and the question with the answers it accepts on stderr, and reads
    the answer value from stdin. Each typed answer is stored in the run store (role ``human``), so a
    resumed game replays it instead of asking again. Ctrl-C at the prompt stops the run at once (resume
    it with ``llmpsych run --resume``).
``web`` / ``web:<name>``
    a participant in a browser (``llmpsych gamabench host``): the question is shown on the seat's page and
    the answer comes from its form. Answers are stored (role ``web``) and replayed on resume, like
    ``human``. Only a run hosted by ``gamabench host`` can seat one. What a question nobody answers in
    time gets is the session's deadline policy (``--on-deadline``): the game's default action, the seat
    skipped this round (the game's no-answer action), the seat's last answer repeated, or a model
    standing in; each such answer says so in its ``how``.

A seat is given an :class:`~llmpsych.games.observation.Observation` (what its player may see) and the
unit's :class:`~llmpsych.games.observation.SeatContext`, and returns a :class:`Reply`; it never sees the
table, the game or the store.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import sys
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from ..errors import ConfigError, LlmpsychError, terminal_text
from ..runs.provenance import UNKNOWN
from .observation import Observation, SeatContext


@dataclass
class Reply:
    """A seat's answer: raw text, and for non-model seats the JSON fields directly; how it came (the
    vocabulary of :mod:`llmpsych.runs.provenance`), seconds from the question being shown to the answer
    (None for a seat that was never asked: ``bot``, ``strategy``, ``never joined``) and the texts refused
    before it (a web form's unusable answers)."""

    text: str
    data: dict[str, Any] | None = None
    how: str = UNKNOWN
    response_s: float | None = None
    refused: list[str] = field(default_factory=list)


class Seat(ABC):
    """One player's decision maker."""

    kind: str = ""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    @abstractmethod
    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        """Answer the decision ``observation`` describes."""


class LLMSeat(Seat):
    """A model role; the request is sent through the run context so it is recorded and resumable."""

    kind = "llm"

    def __init__(self, spec: str, role: str = "subject") -> None:
        super().__init__(spec)
        self.role = role

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        result = await ctx.chat(
            observation.messages, observation.params, role=self.role, sample=observation.sample
        )
        return Reply(result.text, how="model", response_s=result.latency_s)


def _wrap(value: Any, observation: Observation, how: str, meta: dict[str, Any] | None = None) -> Reply:
    """A non-model seat's value as a reply; ``meta``: what :meth:`SeatContext.recorded` stored with it."""
    data = value if isinstance(value, dict) else {observation.primary: value}
    meta = meta or {}
    seconds = meta.get("response_s")
    refused = meta.get("refused")
    return Reply(
        str(value),
        data,
        how=str(meta.get("how", how)),
        response_s=float(seconds) if isinstance(seconds, int | float) else None,
        refused=[str(t) for t in refused] if isinstance(refused, list) else [],
    )


class FixedSeat(Seat):
    """Answers a fixed list of values, cycling by round."""

    kind = "fixed"

    def __init__(self, spec: str, values: list[str]) -> None:
        super().__init__(spec)
        if not values or not all(values):
            raise ConfigError(f"seat {spec!r}: give at least one value, e.g. fixed:50 or fixed:50/60")
        self.values = values

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        value = self.values[(observation.round - 1) % len(self.values)]
        return _wrap(None if value.lower() in {"null", "none"} else value, observation, "bot")


class StrategySeat(Seat):
    """A strategy the game itself implements (e.g. ``ne``)."""

    kind = "strategy"

    def __init__(self, spec: str, name: str) -> None:
        super().__init__(spec)
        self.name = name

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        o, strategy = observation, observation.strategy
        if strategy is None:
            raise ConfigError(f"seat {self.spec!r}: this game offers no strategies")
        rng = ctx.rng("strategy", self.name, o.round, o.player, o.kind)
        return _wrap(strategy(self.name, rng), o, "strategy")


class CallableSeat(Seat):
    """A user function ``module:function`` called with the :class:`Observation`; its answers are recorded,
    so a resumed game replays them instead of calling it again."""

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

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        function = self.function
        if function is None:
            raise ConfigError(f"seat {self.spec!r} was built without loading its code")

        meta: dict[str, Any] = {}

        async def call() -> str:
            started = time.monotonic()
            value = function(observation)
            if inspect.isawaitable(value):
                value = await value
            meta.update(how="python", response_s=round(time.monotonic() - started, 3))
            return json.dumps(value, default=str)

        request = {"question": observation.question}
        text = await ctx.recorded("python", f"python:{observation.key}", self.spec, request, call, meta)
        return _wrap(json.loads(text), observation, "python", meta)


class HumanInputClosed(LlmpsychError):
    """The terminal input of a human seat ended (EOF)."""


_TERMINAL: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
#: bytes read from an input file descriptor past the last line returned (several answers piped at once)
_PENDING: dict[int, bytearray] = {}


def _terminal_lock() -> asyncio.Lock:
    """One lock per event loop: one human answers at a time, even with several human seats or games."""
    loop = asyncio.get_running_loop()
    if loop not in _TERMINAL:
        _TERMINAL[loop] = asyncio.Lock()
    return _TERMINAL[loop]


async def read_line(stream: TextIO) -> str:
    """One line of ``stream`` ("" at its end), read without blocking the event loop.

    A terminal or pipe is read when the event loop sees input on it, so Ctrl-C (which cancels the run)
    stops the wait at once; a stream without a file descriptor the loop can watch (a regular file, a
    StringIO) is read directly.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream.readline()
    loop = asyncio.get_running_loop()
    pending = _PENDING.setdefault(fd, bytearray())
    while b"\n" not in pending:
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(fd, _wake, ready)
        except (NotImplementedError, PermissionError, OSError):  # e.g. stdin redirected from a file
            return stream.readline() if not pending else _take(pending, b"")
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        chunk = os.read(fd, 65536)
        if not chunk:
            return _take(pending, b"") if pending else ""
        pending += chunk
    return _take(pending, b"\n")


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _take(pending: bytearray, end: bytes) -> str:
    """The first line of ``pending`` (all of it when ``end`` is empty), removed from it."""
    cut = pending.index(end) + len(end) if end else len(pending)
    line = bytes(pending[:cut]).decode("utf-8", errors="replace")
    del pending[:cut]
    return line


def _shown(message: dict[str, Any]) -> str:
    """A history turn as a person reads it: the player's own JSON answers as their values."""
    content = str(message["content"])
    if message["role"] == "assistant":
        try:
            data = json.loads(content)
        except ValueError:
            data = None
        if isinstance(data, dict):
            values = ", ".join(f"{k} {v}" for k, v in data.items() if k != "explanation")
            return f"(your answer: {values})"
    return content


class HumanSeat(Seat):
    """A person at the terminal: sees the rules, the round reports and the question with the answers it
    accepts, types the value (e.g. ``42`` or ``go``).

    Answers are recorded in the run store as they are typed; on resume they are replayed, not asked again.
    The end of the input (stdin closed) is an error: the game stops there and can be resumed.
    """

    kind = "human"

    def __init__(self, spec: str, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        super().__init__(spec)
        self.stdin = stdin
        self.stdout = stdout

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        meta: dict[str, Any] = {}

        async def ask() -> str:
            async with _terminal_lock():
                with ctx.prompting():
                    started = time.monotonic()  # the question is on the screen from here
                    line = await self._ask(observation)
                    meta.update(how="typed", response_s=round(time.monotonic() - started, 3))
                    return line

        request = {"question": observation.question, "valid": observation.valid}
        line = await ctx.recorded("human", f"human:{observation.key}", self.spec, request, ask, meta)
        return _wrap(line, observation, UNKNOWN, meta)  # an old store's answer: how it came is unknown

    async def _ask(self, o: Observation) -> str:
        out = self.stdout or sys.stderr
        inp = self.stdin or sys.stdin

        def show(text: str) -> None:  # the rules and other seats' replies: shown inert (no terminal escapes)
            print(terminal_text(text, markup=False), file=out)

        print(f"\n===== player {o.player} ({o.kind}), round {o.round} =====", file=out)
        show(f"[rules]\n{o.rules}\n")
        if o.history:
            show("[so far]\n" + "\n\n".join(_shown(m) for m in o.history) + "\n")
        show(f"[question]\n{o.question}\n")
        show(
            f"Answer with {o.primary}: {o.valid}"
            + (
                f" (the last answer could not be used: {o.last_error or 'no reason given'})"
                if o.attempt
                else ""
            )
        )
        print(f"Please type your answer for {o.primary}: ", end="", file=out, flush=True)
        line = await read_line(inp)
        if not line:
            raise HumanInputClosed(
                f"the input of seat {self.spec!r} ended before player {o.player} answered round {o.round}",
                "answers given so far are saved; continue with `llmpsych run --resume <run dir>`",
            )
        return line.strip()


@dataclass(frozen=True)
class WebAnswer:
    """A browser seat's answer as the session took it: the text, how (``typed``, ``deadline``, ``default``,
    ``skipped``, ``repeated``, ``stand-in``, ``never joined``), seconds from the question being shown to the
    answer (None: never shown) and the texts the form refused before it; for ``stand-in`` the model role
    that answers instead (the seat asks it), and the default action should it give no usable answer."""

    text: str
    how: str
    response_s: float | None = None
    refused: tuple[str, ...] = ()
    role: str = ""
    #: how the default action ``text`` is flagged when the stand-in gives no usable answer
    otherwise: str = "deadline"


class WebBroker(Protocol):
    """Where a web seat's question goes and its answer comes from (the hosted session)."""

    async def answer(self, seat: WebSeat, observation: Observation) -> WebAnswer:
        """The answer to ``observation`` and how it was given."""
        ...

    def saved(self, observation: Observation) -> None:
        """The answer to ``observation`` is durable in the run store."""

    @property
    def stand_in(self) -> str | None:
        """The model role that answers for a seat whose deadline passed (None: no model stands in)."""
        ...


#: the session of ``llmpsych gamabench host`` (None: no run in this process may seat a ``web`` player)
_WEB_BROKER: list[WebBroker] = []


def set_web_broker(broker: WebBroker | None) -> None:
    """Install (or remove, with None) the broker that answers ``web`` seats in this process."""
    _WEB_BROKER.clear()
    if broker is not None:
        _WEB_BROKER.append(broker)


def stand_in_roles() -> set[str]:
    """The model role the hosted session's deadline policy asks (opened with the run's model seats)."""
    role = _WEB_BROKER[0].stand_in if _WEB_BROKER else None
    return {role} if role else set()


#: Model asks a stand-in gets for one decision before the default action is entered instead.
STAND_IN_TRIES = 3


class WebSeat(Seat):
    """A participant in a browser; the answer is typed in the seat's page of a hosted session.

    Answers are recorded in the run store (role ``web``) as they are given, with how (``how``: ``typed``,
    ``deadline`` for the default action after the deadline, ``never joined`` for a seat nobody opened),
    the response time and the texts the form refused; on resume they are replayed, not asked again.
    """

    kind = "web"

    def __init__(self, spec: str, name: str = "") -> None:
        super().__init__(spec)
        self.name = name

    async def reply(self, observation: Observation, ctx: SeatContext) -> Reply:
        request: dict[str, Any] = {"question": observation.question, "valid": observation.valid}
        meta: dict[str, Any] = {}

        async def ask() -> str:
            if not _WEB_BROKER:
                raise ConfigError(
                    f"seat {self.spec!r} is a browser seat",
                    "play it with `llmpsych gamabench host` (it serves the seats' pages)",
                )
            given = await _WEB_BROKER[0].answer(self, observation)
            # stored with the answer: ctx.recorded writes after produce returns
            meta.update(how=given.how, response_s=given.response_s, refused=list(given.refused))
            if given.how == "stand-in":
                return await self._stand_in(observation, ctx, given, meta)
            return given.text

        line = await ctx.recorded("web", f"web:{observation.key}", self.spec, request, ask, meta)
        if _WEB_BROKER:
            _WEB_BROKER[0].saved(observation)
        if meta.get("how") == "stand-in":  # a model's reply: the game reads it as it reads a model seat's
            return Reply(line, None, how="stand-in", response_s=meta.get("response_s"))
        return _wrap(line, observation, UNKNOWN, meta)  # an old store's answer: how it came is unknown

    async def _stand_in(
        self, observation: Observation, ctx: SeatContext, given: WebAnswer, meta: dict[str, Any]
    ) -> str:
        """A model answers for the person (the prompt a model seat is sent, through the run context, so
        the call is stored like any model call); after :data:`STAND_IN_TRIES` unusable replies the
        default action the session gave is entered instead, ``how`` saying so."""
        from .parsing import InvalidAnswer, extract_fields

        for attempt in range(STAND_IN_TRIES):
            result = await ctx.chat(
                observation.messages,
                observation.params,
                role=given.role,
                sample=f"{observation.sample}:stand-in:{attempt}",
            )
            try:
                data = extract_fields(result.text, observation.fields)
                if observation.check is not None:
                    observation.check(data)
            except InvalidAnswer:
                continue
            meta["stand_in"] = given.role
            return result.text
        meta.update(how=given.otherwise)
        return given.text


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
    if kind == "web":
        return WebSeat(spec, rest.strip())
    raise ConfigError(
        f"unknown seat {spec!r}",
        "use llm[:role], fixed:<values>, strategy:ne, python:<module>:<function>, human or web[:name]",
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
        by_text = {str(k): v for k, v in spec.items()}  # keys from YAML/JSON may be text
        specs = [spec.get(i, by_text.get(str(i), default)) for i in range(players)]
    else:
        if len(spec) != players:
            raise ConfigError(f"seats: {len(spec)} seats given for {players} players")
        specs = list(spec)
    return [parse_seat(s, load) for s in specs]
