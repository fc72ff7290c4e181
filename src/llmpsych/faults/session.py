"""What the fault endpoint does with one request: recognise the agent, change what the plan says, forward
to the upstream model, change the reply, and record all of it in the run store.

Each request is one work unit, ``<agent>/<turn>/<attempt>``: the agent's ``turn``-th request (1, 2, ...),
and, when the framework sends the same request again after a transport fault (its retry), the next
``attempt`` of the same turn. The unit's calls are every model request made for it (the forwarded one,
role ``subject``; AutoInject's ``injector``, AutoTransform's ``transformer``, the defences'), each stored
the moment it completes through the run's :class:`~llmpsych.runs.context.UnitContext`; its result
(:class:`UnitResult`) names the agent, how it was recognised, and every change with the original and the
delivered text. A resumed endpoint (the same run folder) answers a request it has answered before for the
same agent and turn from the store, so a re-run of a deterministic program repeats no model call. A
held reply's delivery (:data:`~.plan.DELIVER_HEADER`) is the unit ``<agent>/<turn>/<attempt>/delivered``
of the request that got the reply: it asks no model for the reply, only the injector and the Inspector.

All randomness comes from the plan's seed, the agent, the turn and the attempt (never from arrival
times), so the same program against the same plan gets the same faults. A plan with ``seed_from =
"message"`` draws AutoInject for a request that names its unit and message index (the headers of
:mod:`.plan`) from the seed, that unit and that index instead: the draw ``mas run`` makes for that message
(:meth:`llmpsych.runs.context.UnitContext.rng`), so llmpsych's own systems run through the endpoint get
the faults ``mas run`` gives them on the same seed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import difflib
import hashlib
import json
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from ..collab.defences import Challenger, Inspector
from ..collab.inject import AutoInject
from ..collab.runtime import Agent, Message, Route, Runtime
from ..collab.taxonomy import NOT_CODE, classify
from ..collab.transform import AutoTransform, fill
from ..errors import LlmpsychError
from ..models.canonical import canonical_json
from ..models.chat_context import ChatRequest
from ..models.client import ModelClient, RequestFailed
from ..models.retry import FatalRequestError, RetriesExhausted, RetryableError, call_with_retries
from ..models.types import (
    ChatResult,
    GenerationParams,
    MalformedReply,
    clean_text,
    reply_text,
    token_count,
)
from ..models.types import Message as ChatMessage
from ..runs.context import UnitContext, derived_seed
from ..runs.group_commit import GroupCommit
from ..runs.store import RunStore, fail_unit_statements, finish_unit_statements, start_unit_statements
from .plan import (
    AGENT_HEADER,
    DELIVER_HEADER,
    HOLD_HEADER,
    MESSAGE_HEADER,
    PROFILE_HEADER,
    SYSTEM_SEARCHED,
    TASK_HEADER,
    TRANSPORT,
    UNIT_HEADER,
    UNMATCHED,
    Fault,
    FaultPlan,
)

#: The reply of a ``refusal`` fault (our words).
REFUSAL = "I'm sorry, but I can't help with that request."
#: The body of a ``malformed`` fault: JSON cut off inside the reply.
MALFORMED_BODY = (
    b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "message": {"con'
)
#: The most characters of a reply kept and delivered (a larger upstream reply is cut and says so).
MAX_REPLY_CHARS = 1_000_000
#: Held replies kept at most (the oldest is dropped first: its delivery is then refused).
MAX_HELD = 10_000
#: The longest unit name (:data:`~.plan.UNIT_HEADER`) and profile header (:data:`~.plan.PROFILE_HEADER`).
MAX_UNIT_CHARS = 200
MAX_PROFILE_HEADER = 1 << 20


class Change(BaseModel):
    """One message the endpoint changed: the ground truth of one row (:mod:`llmpsych.faults.truth`)."""

    source: Literal["fault", "defence"]
    kind: str  # autoinject, autotransform, timeout, malformed, refusal, inspector, challenger
    target: Literal["reply", "system prompt", "last message"]
    error_type: str  # semantic / syntactic (autoinject), profile, timeout, malformed, refusal, defence
    categories: list[str] = []  # the taxonomy category of each edited code line (AutoInject on code)
    lines: list[int] = []  # changed lines of the delivered text (1-based)
    original: str
    injected: str
    detail: dict[str, Any] = {}


class UnitResult(BaseModel):
    """What one request became (a unit's stored result)."""

    agent: str
    matched_by: str
    turn: int
    attempt: int
    call: int
    model_sent: str
    stream: bool
    status: int
    tool_calls: int  # tool calls in the delivered reply
    changes: list[Change] = []
    error: str | None = None
    held: bool = False  # the reply-side faults wait for its delivery
    delivers: int | None = None  # the held call whose reply this request delivered as a message


@dataclass
class Reply:
    """What the endpoint answers: a message (``status`` 200), a timeout (504) or a malformed body."""

    status: int
    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = "stop"
    usage: dict[str, int] = field(default_factory=dict)
    fault: str | None = None  # "timeout" or "malformed": not a message
    delay_s: float = 0.0
    error: str = ""
    held_call: int | None = None  # the call number of a held reply (said in the answer)


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message's content (a string or text parts)."""
    return reply_text(message.get("content"))


def changed_lines(before: str, after: str) -> list[int]:
    """The 1-based lines of ``after`` that are not lines of ``before`` at the same place (difflib)."""
    out: list[int] = []
    a, b = before.split("\n"), after.split("\n")
    for op, _, _, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            out += range(j1 + 1, j2 + 1)
    return out


def request_digest(body: dict[str, Any]) -> str:
    """What identifies a request for retry detection (everything but ``stream``)."""
    text = canonical_json({k: v for k, v in body.items() if k not in ("stream", "stream_options")})
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def message_labels(headers: dict[str, str]) -> tuple[str, int] | None | str:
    """(unit, message index) a request names in its headers, None when it does not name both, or why
    they are refused (a string)."""
    unit, index = headers.get(UNIT_HEADER), headers.get(MESSAGE_HEADER)
    if unit is not None and (not unit or len(unit) > MAX_UNIT_CHARS):
        return f"{UNIT_HEADER} must hold 1 to {MAX_UNIT_CHARS} characters"
    if index is not None and (not index.isdigit() or len(index) > 9):
        return f"{MESSAGE_HEADER} must be a whole number from 0"
    if unit is None or index is None:
        return None
    return unit, int(index)


def profile_template(headers: dict[str, str], profile: str) -> tuple[str, dict[str, str]] | None | str:
    """(template, values) of the request's profile from :data:`~.plan.PROFILE_HEADER`, None without the
    header or when the template filled with the values is not the request's system message (then the
    profile as sent is the one transformed), or why the header is refused."""
    raw = headers.get(PROFILE_HEADER)
    if raw is None:
        return None
    why = f"{PROFILE_HEADER} must be base64 of a JSON object with a template and string values"
    if len(raw) > MAX_PROFILE_HEADER:
        return f"{PROFILE_HEADER} is over {MAX_PROFILE_HEADER} characters"
    try:
        data = json.loads(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError, RecursionError):
        return why
    template = data.get("template") if isinstance(data, dict) else None
    values = data.get("values", {}) if isinstance(data, dict) else None
    if (
        not isinstance(template, str)
        or not isinstance(values, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())
    ):
        return why
    return (template, values) if fill(template, values) == profile else None


def request_task(headers: dict[str, str]) -> str | None:
    """The task a request names in :data:`~.plan.TASK_HEADER` (None without it, or when unreadable)."""
    raw = headers.get(TASK_HEADER)
    if raw is None or len(raw) > MAX_PROFILE_HEADER:
        return None
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def header_problem(headers: dict[str, str]) -> str | None:
    """Why the llmpsych headers of a request are refused (HTTP 400), or None."""
    for found in (message_labels(headers), profile_template(headers, "")):
        if isinstance(found, str):
            return found
    if TASK_HEADER in headers and request_task(headers) is None:
        return f"{TASK_HEADER} must be base64 of UTF-8 text, at most {MAX_PROFILE_HEADER} characters"
    if headers.get(HOLD_HEADER, "1") != "1":
        return f"{HOLD_HEADER} must be 1"
    deliver = headers.get(DELIVER_HEADER)
    if deliver is not None and (not deliver.isdigit() or len(deliver) > 9):
        return f"{DELIVER_HEADER} must be the number of a held call"
    if deliver is not None and HOLD_HEADER in headers:
        return f"{HOLD_HEADER} and {DELIVER_HEADER} exclude each other"
    return None


@dataclass
class Held:
    """A reply whose reply-side faults wait for its delivery (:data:`~.plan.HOLD_HEADER`)."""

    agent: str
    rule: str
    turn: int
    attempt: int
    digest: str
    reply: Reply


class DrawsOf:
    """A unit context whose draws are another unit's (``mas run``'s unit named by a request): the calls
    are still recorded in the endpoint's own unit."""

    def __init__(self, ctx: UnitContext, unit: str) -> None:
        self._ctx = ctx
        self._unit = unit

    @property
    def unit_id(self) -> str:
        return self._ctx.unit_id

    @property
    def clients(self) -> dict[str, ModelClient]:
        return self._ctx.clients

    def rng(self, *labels: Any) -> random.Random:
        """The generator ``UnitContext.rng`` gives unit ``unit`` of a run with this seed."""
        return random.Random(derived_seed(self._ctx.seed, self._unit, *labels))

    async def chat(
        self,
        messages: list[ChatMessage],
        params: GenerationParams | None = None,
        role: str = "subject",
        sample: int | str = 0,
    ) -> ChatResult:
        return await self._ctx.chat(messages, params, role, sample)

    async def chat_all(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return await self._ctx.chat_all(requests)


def drawn(seed: int, agent: str, turn: int, attempt: int, kind: str, rate: float) -> bool:
    """Whether a fault of ``rate`` hits this turn (a draw from the seed, agent, turn, attempt, kind)."""
    return random.Random(derived_seed(seed, agent, turn, attempt, kind)).random() < rate


class FaultSession:
    """The state of one endpoint: the plan, the upstream clients, the run store, the turn counters."""

    def __init__(
        self, plan: FaultPlan, clients: dict[str, ModelClient], store: RunStore, seed: int | None = None
    ) -> None:
        self.plan = plan
        self.clients = clients
        self.store = store
        self.seed = plan.seed if seed is None else seed
        self.commits = GroupCommit(store)
        self._patterns = {a.name: re.compile(a.system) for a in plan.agents if a.system is not None}
        self._calls = 0
        self._turns: Counter[str] = Counter()
        self._last: dict[str, tuple[str, int, int, bool]] = {}  # agent -> (digest, turn, attempt, faulted)
        self._order = asyncio.Lock()
        self._profiles: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._profile_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._inspectors: dict[str, Inspector] = {}
        self._held: dict[int, Held] = {}  # call -> its held reply, until delivered

    # -- recognising the agent -------------------------------------------------------------------
    def match(self, body: dict[str, Any], headers: dict[str, str], call: int) -> tuple[str, str]:
        """(agent, the rule that recognised it) for a request, by the plan's rules in order."""
        model = body.get("model")
        header = headers.get(AGENT_HEADER)
        system = system_text(body)[:SYSTEM_SEARCHED]
        for rule in self.plan.agents:
            if (
                (rule.model is not None and rule.model == model)
                or (rule.header is not None and rule.header == header)
                or (rule.system is not None and self._patterns[rule.name].search(system))
                or (rule.calls is not None and call in rule.calls)
            ):
                return rule.name, rule.rule
        return UNMATCHED, ""

    async def _place(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, str, int, int, int]:
        """(agent, rule, call, turn, attempt) of a request, decided in the order requests arrive: a request
        equal to the agent's previous one, which got a transport fault, is the next attempt of its turn."""
        digest = request_digest(body)
        async with self._order:
            self._calls += 1
            agent, rule = self.match(body, headers, self._calls)
            last = self._last.get(agent)
            if last is not None and last[0] == digest and last[3]:
                turn, attempt = last[1], last[2] + 1
            else:
                self._turns[agent] += 1
                turn, attempt = self._turns[agent], 1
            self._last[agent] = (digest, turn, attempt, False)
            return agent, rule, self._calls, turn, attempt

    def _mark_faulted(self, agent: str, turn: int, attempt: int) -> None:
        last = self._last.get(agent)
        if last is not None and last[1:3] == (turn, attempt):
            self._last[agent] = (last[0], turn, attempt, True)

    # -- one request -----------------------------------------------------------------------------
    async def handle(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[Reply, UnitResult]:
        """Answer one chat-completions request (already parsed and checked to hold ``messages``, its
        llmpsych headers by :func:`header_problem`)."""
        if DELIVER_HEADER in headers:
            return await self._deliver(body, headers)
        agent, rule, call, turn, attempt = await self._place(body, headers)
        unit_id = f"{agent}/{turn}/{attempt}"
        self.store.add_units([(unit_id, {"agent": agent, "turn": turn, "attempt": attempt})])
        self.commits.defer(start_unit_statements(unit_id))
        result = UnitResult(
            agent=agent,
            matched_by=rule,
            turn=turn,
            attempt=attempt,
            call=call,
            model_sent=str(body.get("model", ""))[:200],
            stream=bool(body.get("stream")),
            status=200,
            tool_calls=0,
        )
        ctx = UnitContext(unit_id, self.store, self.clients, self.seed, GenerationParams(), self.commits)
        try:
            reply = await self._answer(agent, turn, attempt, body, headers, ctx, result)
            if reply.held_call is not None:
                self._held[call] = Held(agent, rule, turn, attempt, request_digest(body), reply)
                while len(self._held) > MAX_HELD:
                    del self._held[next(iter(self._held))]
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and said in one line
            return await self._failed(unit_id, result, exc)
        result.status = reply.status
        result.tool_calls = len(reply.message.get("tool_calls") or [])
        if reply.fault is not None:
            self._mark_faulted(agent, turn, attempt)
        await self.commits.write(finish_unit_statements(unit_id, result.model_dump(mode="json")))
        return reply, result

    async def _failed(self, unit_id: str, result: UnitResult, exc: Exception) -> tuple[Reply, UnitResult]:
        """A request the endpoint could not answer, recorded as its unit's failure and said in one line: 502
        for the upstream model, 500 for anything else (the store, a role without a model, a bug)."""
        if isinstance(exc, RequestFailed):
            why, reply = str(exc), Reply(502, error=f"upstream model failed: {exc}")
        else:
            why = exc.message if isinstance(exc, LlmpsychError) else f"{type(exc).__name__}: {exc}"[:500]
            reply = Reply(500, error=f"the fault endpoint failed: {why}")
        result.status, result.error = reply.status, why
        await self.commits.write(fail_unit_statements(unit_id, why))
        return reply, result

    async def _deliver(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[Reply, UnitResult]:
        """Deliver a held reply as a message: its reply-side faults now (no model is asked for the reply
        again); refused (400) for a call that holds no reply or a request unlike the held one."""
        number = int(headers[DELIVER_HEADER])
        held = self._held.get(number)
        if held is None or held.digest != request_digest(body):
            why = f"call {number} holds no reply to deliver for this request"
            refused = UnitResult(
                agent=UNMATCHED, matched_by="", turn=0, attempt=0, call=0, model_sent="", stream=False,
                status=400, tool_calls=0, error=why,
            )  # fmt: skip
            return Reply(400, error=why), refused
        del self._held[number]
        async with self._order:
            self._calls += 1
            call = self._calls
        agent, turn, attempt = held.agent, held.turn, held.attempt
        unit_id = f"{agent}/{turn}/{attempt}/delivered"
        self.store.add_units(
            [(unit_id, {"agent": agent, "turn": turn, "attempt": attempt, "delivers": number})]
        )
        self.commits.defer(start_unit_statements(unit_id))
        result = UnitResult(
            agent=agent,
            matched_by=held.rule,
            turn=turn,
            attempt=attempt,
            call=call,
            model_sent=str(body.get("model", ""))[:200],
            stream=bool(body.get("stream")),
            status=200,
            tool_calls=len(held.reply.message.get("tool_calls") or []),
            delivers=number,
        )
        ctx = UnitContext(unit_id, self.store, self.clients, self.seed, GenerationParams(), self.commits)
        faults = [f for f in self.plan.faults_of(agent) if f.turns is None or turn in f.turns]
        text = message_text(held.reply.message)
        try:
            runtime = self._runtime(agent, faults, headers, ctx)
            delivered = await self._reply_changes(agent, turn, faults, text, headers, runtime, result)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and said in one line
            return await self._failed(unit_id, result, exc)
        message = held.reply.message if delivered == text else {**held.reply.message, "content": delivered}
        await self.commits.write(finish_unit_statements(unit_id, result.model_dump(mode="json")))
        return Reply(200, message, held.reply.finish_reason), result

    def _runtime(self, agent: str, faults: list[Fault], headers: dict[str, str], ctx: UnitContext) -> Runtime:
        """The collab runtime the faults and defences of one request run in: its draws are the unit's and
        message's a request names under ``seed_from = "message"``, else this request's."""
        labels = message_labels(headers) if self.plan.seed_from == "message" else None
        named = labels if isinstance(labels, tuple) else None  # (checked by the endpoint: no string)
        kind = next((f.content for f in faults if f.kind == "autoinject"), "code")
        task = request_task(headers) if named is not None else None
        runtime = Runtime(
            ctx if named is None else DrawsOf(ctx, named[0]),
            Route.of("endpoint"),
            [],
            GenerationParams(),
            kind=kind,
            task_description=task or self.plan.task or "(not given)",
        )
        runtime.agents[agent] = Agent(agent, "")
        return runtime

    async def _answer(
        self,
        agent: str,
        turn: int,
        attempt: int,
        body: dict[str, Any],
        headers: dict[str, str],
        ctx: UnitContext,
        result: UnitResult,
    ) -> Reply:
        faults = [f for f in self.plan.faults_of(agent) if f.turns is None or turn in f.turns]
        defences = {d.kind for d in self.plan.defences_of(agent)}
        runtime = self._runtime(agent, faults, headers, ctx)
        forward = json.loads(json.dumps(body))  # a copy the changes below may edit
        messages: list[dict[str, Any]] = forward["messages"]
        profile = system_text(body)
        actor = Agent(agent, profile)
        runtime.agents[agent] = actor
        # -- changes to the request: the agent's profile, then what it receives
        if any(f.kind == "autotransform" for f in faults) and profile:
            template = profile_template(headers, profile)
            rewritten, note = await self._transformed(
                agent, profile, runtime, template if isinstance(template, tuple) else None
            )
            if rewritten != profile:
                set_system_text(messages, rewritten)
                actor.profile = rewritten
                result.changes.append(
                    Change(
                        source="fault",
                        kind="autotransform",
                        target="system prompt",
                        error_type="profile",
                        lines=changed_lines(profile, rewritten),
                        original=profile,
                        injected=rewritten,
                        detail=note,
                    )
                )
        if "challenger" in defences:
            await self._challenge(actor, messages, runtime, result, turn)
        # -- the forwarded request
        upstream = await self._forward(forward, ctx)
        reply = Reply(200, upstream["message"], upstream.get("finish_reason"), upstream.get("usage") or {})
        # -- changes to the reply: a transport fault, else (now, or when a held reply is delivered)
        # AutoInject, then the Inspector
        transport = next(
            (
                f
                for f in faults
                if f.kind in TRANSPORT
                and attempt == 1
                and drawn(self.seed, agent, turn, attempt, f.kind, f.rate)
            ),
            None,
        )
        text = message_text(reply.message)
        if transport is not None:
            return self._transport_fault(transport, reply, text, result)
        if HOLD_HEADER in headers:
            reply.held_call = result.call
            result.held = True
            return reply
        delivered = await self._reply_changes(agent, turn, faults, text, headers, runtime, result)
        if delivered != text:
            reply.message = {**reply.message, "content": delivered}
        return reply

    async def _reply_changes(
        self,
        agent: str,
        turn: int,
        faults: list[Fault],
        text: str,
        headers: dict[str, str],
        runtime: Runtime,
        result: UnitResult,
    ) -> str:
        """The text delivered for a reply of ``agent``: AutoInject, then the Inspector (each change
        recorded in ``result``)."""
        labels = message_labels(headers) if self.plan.seed_from == "message" else None
        named = labels if isinstance(labels, tuple) else None  # mas run's unit and message index
        inject = next((f for f in faults if f.kind == "autoinject"), None)
        message = Message(turn if named is None else named[1], agent, ["(framework)"], text, turn)
        if inject is not None and text.strip():
            hook = AutoInject(agent, inject.rate, inject.share, inject.error_type, inject.unit_mode)
            message = await hook.on_message(message, runtime)
            record = message.meta.get("injection", {})
            if message.content != text:
                edits = record.get("edits", [])
                categories = [
                    (classify(e["before"], e["after"]) if e.get("code", True) else NOT_CODE)
                    for e in edits
                    if inject.content == "code"
                ]
                result.changes.append(
                    Change(
                        source="fault",
                        kind="autoinject",
                        target="reply",
                        error_type=inject.error_type,
                        categories=categories,
                        lines=changed_lines(text, message.content),
                        original=text,
                        injected=message.content,
                        detail={
                            "units": record.get("n_units"),
                            "chosen": record.get("chosen"),
                            "diff": record.get("diff"),
                            "drawn_from": f"turn {turn}"
                            if named is None
                            else f"message {named[1]} of unit {named[0]}",
                        },
                    )
                )
        if any(d.kind == "inspector" for d in self.plan.defences_of(agent)) and message.content.strip():
            # one Inspector per agent, or one per unit (all its agents') for requests naming their unit
            inspector = self._inspectors.setdefault(agent if named is None else f"\0{named[0]}", Inspector())
            before = message.content
            message = await inspector.on_message(message, runtime)
            if message.content != before:
                result.changes.append(
                    Change(
                        source="defence",
                        kind="inspector",
                        target="reply",
                        error_type="defence",
                        lines=changed_lines(before, message.content),
                        original=before,
                        injected=message.content,
                    )
                )
        return message.content

    def _transport_fault(self, fault: Fault, reply: Reply, text: str, result: UnitResult) -> Reply:
        if fault.kind == "refusal":
            injected = REFUSAL
            out = Reply(200, {"role": "assistant", "content": REFUSAL}, "stop", reply.usage)
        elif fault.kind == "timeout":
            injected = f"(no reply: HTTP 504 after {fault.delay_s:g} s)"
            out = Reply(504, fault="timeout", delay_s=fault.delay_s, error="the model did not answer in time")
        else:
            injected = MALFORMED_BODY.decode()
            out = Reply(200, fault="malformed")
        dropped = len(reply.message.get("tool_calls") or [])
        result.changes.append(
            Change(
                source="fault",
                kind=fault.kind,
                target="reply",
                error_type=fault.kind,
                lines=changed_lines(text, injected) if fault.kind == "refusal" else [],
                original=text,
                injected=injected,
                detail={"tool_calls_dropped": dropped} if dropped else {},
            )
        )
        return out

    async def _transformed(
        self,
        agent: str,
        profile: str,
        runtime: Runtime,
        template: tuple[str, dict[str, str]] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """AutoTransform's rewrite of ``profile``, made once per agent and profile (later turns reuse it).
        With ``template`` (the profile as a template and its values, :func:`profile_template`), the
        template is rewritten and filled in, as ``mas run`` does."""
        named = canonical_json([profile, template])
        key = (agent, hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest())
        lock = self._profile_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._profiles:
                shape, values = template or (profile, {})
                actor = Agent(agent, profile, notes={"template": shape, "values": values})
                await AutoTransform(agent).on_agent(actor, runtime)
                note = dict(actor.notes.get("transformed", {}))
                note.pop("original", None)
                note.pop("rewritten", None)
                self._profiles[key] = (actor.profile, note)
            return self._profiles[key]

    async def _challenge(
        self, actor: Agent, messages: list[dict[str, Any]], runtime: Runtime, result: UnitResult, turn: int
    ) -> None:
        last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        if last is None:
            return
        content = reply_text(last.get("content"))
        if not content.strip():
            return
        earlier = [m for m in messages if m is not last and m.get("role") in ("user", "assistant")]
        actor.history = [
            {"role": str(m["role"]), "content": reply_text(m.get("content"))} for m in earlier[-4:]
        ]
        challenger = Challenger()
        await challenger.on_agent(actor, runtime)
        received = Message(turn, "(other agents)", [actor.name], content, turn)
        text = await challenger.on_receive(actor, received, runtime)
        if text != content:
            last["content"] = text
            result.changes.append(
                Change(
                    source="defence",
                    kind="challenger",
                    target="last message",
                    error_type="defence",
                    lines=changed_lines(content, text),
                    original=content,
                    injected=text,
                    detail={
                        "verdict": received.meta.get("challenges", {}).get(actor.name, {}).get("verdict")
                    },
                )
            )

    async def _forward(self, body: dict[str, Any], ctx: UnitContext) -> dict[str, Any]:
        """Send the request to the upstream model (recorded; replayed from the store on resume)."""
        client = self.clients["subject"]
        body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        body["model"] = client.request_model
        key = "forward:" + hashlib.sha256(canonical_json(body).encode("utf-8", "surrogatepass")).hexdigest()
        meta: dict[str, Any] = {}

        async def produce() -> str:
            message, info = await send_raw(client, body)
            meta.update(info)
            meta["message"] = message
            return message_text(message)

        text = await ctx.recorded("subject", key, client.spec.text, body, produce, meta)
        message = meta.get("message")
        if not isinstance(message, dict):
            message = {"role": "assistant", "content": text}
        return {"message": message, "finish_reason": meta.get("finish_reason"), "usage": meta.get("usage")}


async def send_raw(client: ModelClient, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One chat request as the framework wrote it (tools and all), with the client's retry policy; the
    reply's message (its text and tool calls, bounded) and how it was obtained."""
    started = time.perf_counter()
    errors: list[str] = []
    rng = random.Random()

    async def attempt() -> dict[str, Any]:
        data = await client.backend.send(body)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise RetryableError("malformed response: no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise RetryableError("malformed response: no message")
        return data

    try:
        data, attempts = await call_with_retries(
            attempt, client.policy, rng, lambda _, why: errors.append(why)
        )
    except (RetriesExhausted, FatalRequestError, MalformedReply) as exc:
        raise RequestFailed(f"{client.spec}: {exc}") from None
    choice = data["choices"][0]
    raw = choice["message"]
    message: dict[str, Any] = {"role": "assistant", "content": message_text(raw)[:MAX_REPLY_CHARS]}
    calls = raw.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [tool_call(c) for c in calls[:128] if isinstance(c, dict)]
    if raw.get("content") is None and "tool_calls" in message:
        message["content"] = None
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    finish = choice.get("finish_reason")
    info = {
        "finish_reason": clean_text(finish[:64]) if isinstance(finish, str) else None,
        "usage": {k: token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens") if k in usage},
        "latency_s": time.perf_counter() - started,
        "attempts": attempts,
        "errors": errors,
    }
    return message, info


def tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as the framework gets it: id, type, function name and arguments (strings, bounded)."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    assert isinstance(function, dict)
    return {
        "id": clean_text(str(call.get("id", "")))[:200],
        "type": "function",
        "function": {
            "name": clean_text(str(function.get("name", "")))[:200],
            "arguments": clean_text(str(function.get("arguments", "")))[:MAX_REPLY_CHARS],
        },
    }


def system_text(body: dict[str, Any]) -> str:
    """The text of a request's first system (or developer) message, "" without one."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            return reply_text(message.get("content"))
    return ""


def set_system_text(messages: list[dict[str, Any]], text: str) -> None:
    """Replace the text of the first system (or developer) message."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            message["content"] = text
            return
