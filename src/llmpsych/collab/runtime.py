"""The multi-agent runtime: agents, explicit message routes, hook points and the message transcript.

* An :class:`Agent` is a profile (its system prompt), the model role that answers for it (``models =
  {agent name: spec}`` in the run config gives it its own model, otherwise it uses ``model``) and its
  own conversation.
* A :class:`Route` lists the directed edges a structure allows; sending along any other edge is an error,
  so a linear system can never talk backwards by accident.
* Two hook points: **profile hooks** run once on every agent before the collaboration starts
  (AutoTransform rewrites the faulty profile there; the Challenger arms every agent), and **message
  hooks** see every message in flight, in order (AutoInject, then the Inspector). Receive checks (the
  armed Challenger) run when an agent reads a message, and when another agent's message is about to
  become the result the final agent delivers (:meth:`Runtime.result_of`).
* Every model call goes through ``ctx.chat``, so it is stored the moment it completes; a unit that is
  resumed re-runs from the start and its finished calls are answered from the store. The unit's result
  records each message (who sent it to whom, in which round, the injected edits as diffs, the defences'
  interventions) without a second copy of its text: a text a model wrote is named by its digest
  (``reply_sha``, the stored call whose reply it is); any other text (a defence's request) is kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..models.chat_context import ChatContext
from ..models.types import GenerationParams


def digest(text: str) -> str:
    """The short digest that names a text in a unit's result (the first 16 hex digits of its sha256)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


#: Agent notes that copy its profile (in every one of its stored calls): left out of the unit's result.
PROFILE_NOTES = frozenset({"template", "values"})


@dataclass
class Message:
    """An intermediate output passed between agents; ``meta`` records injections and interventions."""

    index: int
    sender: str
    receivers: list[str]
    content: str
    round: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def written(self) -> str:
        """The text as its sender wrote it (before any message hook edited it)."""
        return str(self.meta.get("original", self.content))

    def to_json(self, replies: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
        """A JSON-ready record: the written text by its digest when it is one of ``replies`` (a model's
        reply, stored with its call), else as ``content``; the delivered text is the edits' diffs."""
        written = self.written
        text = {"reply_sha": digest(written)} if written in replies else {"content": written}
        meta = {k: v for k, v in self.meta.items() if k != "original"}
        return {
            "index": self.index,
            "sender": self.sender,
            "receivers": self.receivers,
            **text,
            "round": self.round,
            "meta": meta,
        }


@dataclass
class Agent:
    """A profile with a model role and its own conversation."""

    name: str
    profile: str
    model_role: str = "subject"
    history: list[dict[str, str]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """The directed edges a structure allows (``A -> B``)."""

    structure: str
    edges: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, structure: str, *pairs: str) -> Route:
        """Build from ``"a->b"`` (one way) and ``"a<->b"`` (both ways) strings."""
        edges: set[tuple[str, str]] = set()
        for pair in pairs:
            if "<->" in pair:
                a, b = (p.strip() for p in pair.split("<->"))
                edges |= {(a, b), (b, a)}
            else:
                a, b = (p.strip() for p in pair.split("->"))
                edges.add((a, b))
        return cls(structure, frozenset(edges))

    def allows(self, sender: str, receiver: str) -> bool:
        """Whether ``sender`` may send to ``receiver``."""
        return (sender, receiver) in self.edges


class ProfileHook(Protocol):
    """Runs once per agent before the collaboration starts."""

    async def on_agent(self, agent: Agent, runtime: Runtime) -> None:
        """Change the agent (e.g. its profile)."""


class MessageHook(Protocol):
    """Sees every message in flight and may change it."""

    async def on_message(self, message: Message, runtime: Runtime) -> Message:
        """Return the message to deliver."""


class ReceiveCheck(Protocol):
    """Runs when an agent receives a message (the Challenger), before it acts on it."""

    async def on_receive(self, agent: Agent, message: Message, runtime: Runtime) -> str:
        """Return the text the agent acts on."""


class ResultCheck(Protocol):
    """Runs when another agent's message is about to become the final result (the Challenger)."""

    async def on_result(self, agent: Agent, message: Message, runtime: Runtime, fmt: str) -> str | None:
        """Return a replacement result written by ``agent``, or None to keep the message."""


class RouteError(RuntimeError):
    """A message along an edge its structure does not have."""


ChatFn = Callable[..., Awaitable[Any]]


class Runtime:
    """One collaboration on one task item."""

    def __init__(
        self,
        ctx: ChatContext,
        route: Route,
        agents: list[Agent],
        params: GenerationParams,
        profile_hooks: list[ProfileHook] | None = None,
        message_hooks: list[MessageHook] | None = None,
        receive_checks: list[ReceiveCheck] | None = None,
        max_messages: int = 40,
        kind: str = "code",
        task_description: str = "",
    ) -> None:
        self.ctx = ctx
        self.route = route
        self.agents = {a.name: a for a in agents}
        self.params = params
        self.profile_hooks = profile_hooks or []
        self.message_hooks = message_hooks or []
        self.receive_checks = receive_checks or []
        self.max_messages = max_messages
        self.kind = kind
        self.task_description = task_description
        self.transcript: list[Message] = []
        self.replies: set[str] = set()  # every reply a model gave in this unit (stored with its call)
        self.llm_calls = 0
        self.aux_calls = 0
        self.events: list[dict[str, Any]] = []
        self.sandbox: Any = None  # a llmpsych.sandbox.Sandbox, for systems that run code (Self-collab)

    # -- model access ----------------------------------------------------------------------------
    def role_for(self, preferred: str) -> str:
        """``preferred`` if the run config names a model for it, else the subject model."""
        return preferred if preferred in self.ctx.clients else "subject"

    async def complete(
        self, messages: list[dict[str, str]], role: str = "subject", params: GenerationParams | None = None
    ) -> str:
        """One recorded model call outside any agent's conversation (injector, inspector, ...)."""
        self.aux_calls += 1
        result = await self.ctx.chat(messages, params or self.params, self.role_for(role))
        self.replies.add(result.text)
        return result.text

    async def ask(self, agent: Agent, prompt: str, remember: bool = True) -> str:
        """The agent answers ``prompt`` given its profile and conversation so far."""
        messages = [{"role": "system", "content": agent.profile}, *agent.history]
        messages.append({"role": "user", "content": prompt})
        self.llm_calls += 1
        result = await self.ctx.chat(messages, self.params, self.role_for(agent.model_role))
        text = result.text
        self.replies.add(text)
        if remember:
            agent.history += [{"role": "user", "content": prompt}, {"role": "assistant", "content": text}]
        return text

    # -- setup and messages ----------------------------------------------------------------------
    async def setup(self) -> None:
        """Run the profile hooks on every agent (in a fixed order)."""
        for hook in self.profile_hooks:
            for agent in self.agents.values():
                await hook.on_agent(agent, self)

    @property
    def exhausted(self) -> bool:
        """The message budget is spent."""
        return len(self.transcript) >= self.max_messages

    async def send(self, sender: str, receivers: list[str] | str, content: str, round: int = 0) -> Message:
        """Pass ``content`` along the route through the message hooks; returns what was delivered."""
        targets = [receivers] if isinstance(receivers, str) else list(receivers)
        for receiver in targets:
            if not self.route.allows(sender, receiver):
                raise RouteError(f"{self.route.structure} route has no edge {sender} -> {receiver}")
        message = Message(len(self.transcript), sender, targets, content, round)
        message.meta["original"] = content
        for hook in self.message_hooks:
            message = await hook.on_message(message, self)
        if message.content == message.meta["original"]:
            del message.meta["original"]
        self.transcript.append(message)
        return message

    async def receive(self, agent: Agent, message: Message) -> str:
        """The text ``agent`` acts on for ``message`` (after its receive checks, e.g. the Challenger)."""
        text = message.content
        for check in self.receive_checks:
            text = await check.on_receive(agent, message, self)
        return text

    async def result_of(self, final: str, message: Message, fmt: str = "") -> str:
        """The result text when ``message`` (another agent's) becomes the result that ``final`` delivers.

        The final agent's result checks see the message first, even when the system would otherwise
        end without the final agent reading it; a check (the Challenger) may have the final agent write
        the result itself (``fmt``: the task's answer format). Without such checks it is the content.
        """
        if message.sender == final:
            return message.content
        agent = self.agents[final]
        for check in self.receive_checks:
            on_result = getattr(check, "on_result", None)
            if on_result is None:
                continue
            replacement: str | None = await on_result(agent, message, self, fmt)
            if replacement is not None:
                self.events.append({"result_from": final, "instead_of": message.index})
                return replacement
        return message.content

    def to_json(self) -> dict[str, Any]:
        """The message records and counters (texts a model wrote, and the profiles, by their digests: the
        stored calls hold them)."""
        notes = {
            a.name: {k: v for k, v in a.notes.items() if k not in PROFILE_NOTES} for a in self.agents.values()
        }
        return {
            "structure": self.route.structure,
            "transcript": [m.to_json(self.replies) for m in self.transcript],
            "n_messages": len(self.transcript),
            "llm_calls": self.llm_calls,
            "aux_calls": self.aux_calls,
            "profile_sha": {a.name: digest(a.profile) for a in self.agents.values()},
            "agent_notes": {name: note for name, note in notes.items() if note},
            "events": self.events,
        }
