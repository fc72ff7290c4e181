"""What a work unit sees: a recorded chat function, recorded non-model answers and seeded randomness.

Every call goes through the run store. On resume, a unit runs again from the start but its completed
calls are answered from the store, so nothing is sent twice and the result equals an uninterrupted run.
Answers that come from elsewhere (a person at the terminal, user code) are recorded the same way, by
:meth:`UnitContext.recorded`, so a resumed unit replays them instead of asking again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import ConfigError
from ..models.client import ModelClient
from ..models.types import ChatResult, GenerationParams, Message
from .group_commit import GroupCommit
from .params import merge_params
from .store import RunStore, put_call_statements


def derived_seed(*labels: Any) -> int:
    """A 63-bit seed derived from labels (stable across processes and platforms)."""
    digest = hashlib.sha256(json.dumps(labels, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


#: Where this code runs when no person can answer there (a Ray actor, a sweep's Ray task); None: here.
_NO_PERSON: ContextVar[str | None] = ContextVar("llmpsych_no_person", default=None)


@contextmanager
def no_person_here(where: str) -> Iterator[None]:
    """Runs executed in the block cannot seat a person: a unit that would ask one stops with one line
    naming ``where`` (e.g. "a Ray task"), instead of reading a terminal nobody is at."""
    token = _NO_PERSON.set(where)
    try:
        yield
    finally:
        _NO_PERSON.reset(token)


def refuse_person(where: str) -> ConfigError:
    """The error of a person's seat where no person can answer."""
    return ConfigError(f"a person's seat cannot be played on {where}", "run it with --executor local")


class UnitContext:
    """Per-unit access to models, recorded in the run store."""

    def __init__(
        self,
        unit_id: str,
        store: RunStore,
        clients: dict[str, ModelClient],
        seed: int,
        run_params: GenerationParams,
        commits: GroupCommit,
        may_replay: bool = True,
    ) -> None:
        self.unit_id = unit_id
        #: False when the store holds no call of this unit (a fresh unit): no lookup per call then.
        self.may_replay = may_replay
        self.store = store
        #: Writes calls to the store, one transaction per event-loop turn for all units.
        self.commits = commits
        self.clients = clients
        self.seed = seed
        #: The run's sampling parameters (the config's ``params``), merged into every call.
        self.run_params = run_params
        self._occurrences: Counter[str] = Counter()
        self._seq = 0
        self.replayed = 0
        self.sent = 0
        self.cached = 0
        #: non-model answers (a person's, user code's) given now / replayed from the store
        self.answered = 0
        self.answers_replayed = 0

    def rng(self, *labels: Any) -> random.Random:
        """A random generator seeded by the run seed, this unit and ``labels``."""
        return random.Random(derived_seed(self.seed, self.unit_id, *labels))

    async def chat(
        self,
        messages: list[Message],
        params: GenerationParams | None = None,
        role: str = "subject",
        sample: int | str = 0,
    ) -> ChatResult:
        """Ask the model playing ``role``; identical repeated requests in a unit stay distinct samples.

        ``params`` are the task's for this call (its defaults, and the values it fixes with
        :class:`~llmpsych.models.types.CallParams`); what is sent is their one merge with the run's and
        the role's parameters, :func:`~llmpsych.runs.params.merge_params`."""
        try:
            client = self.clients[role]
        except KeyError:
            raise ConfigError(f"no model configured for role {role!r}") from None
        params = merge_params(params, self.run_params, client.overrides)
        encoded = client.encode(client.body(messages, params))  # once: key, HTTP payload, store
        base_key = client.call_key(encoded, f"{role}:{sample}")
        occurrence = self._occurrences[base_key]
        self._occurrences[base_key] += 1
        call_key = f"{base_key}#{occurrence}"
        stored = self.store.get_call(self.unit_id, call_key) if self.may_replay else None
        self._seq += 1  # a replayed call keeps its place: calls made after a resume number on from it
        seq = self._seq
        if stored is not None:
            self.replayed += 1
            return ChatResult.from_json(stored)
        result = await client.complete(messages, params, sample=f"{sample}:{occurrence}", encoded=encoded)
        self.cached += int(result.cached)
        self.sent += int(not result.cached)
        statements = put_call_statements(
            self.unit_id, call_key, seq, role, client.spec.text, encoded, result.to_json()
        )
        await self.commits.write(statements)
        return result

    async def chat_all(
        self, requests: list[tuple[list[Message], GenerationParams | None, str, int | str]]
    ) -> list[ChatResult]:
        """Ask several requests at once (e.g. all seats of a simultaneous round)."""
        return list(await asyncio.gather(*(self.chat(m, p, r, s) for m, p, r, s in requests)))

    async def recorded(
        self,
        role: str,
        key: str,
        source: str,
        request: dict[str, Any],
        produce: Callable[[], Awaitable[str]],
        meta: dict[str, Any] | None = None,
    ) -> str:
        """A non-model answer (``role`` e.g. ``human`` or ``python``), recorded like a model call.

        ``key`` names the question (``human:<unit>:p0:r1:number``); each ask of it gets the next occurrence
        (``#0``, ``#1``, ...). An answer stored by an earlier execution of this unit is returned without
        calling ``produce``; otherwise ``produce()`` gives the answer, which is written through the grouped
        commits (durable before this returns) with ``source`` (e.g. the seat) and ``request``.

        ``meta`` (filled by ``produce``: how the answer came, ``response_s``, the refused attempts) is stored
        in the answer beside its text, ``response_s`` also as the call's latency; on replay it is filled
        from the stored answer, so a resumed game knows how each replayed answer was given.
        """
        occurrence = self._occurrences[key]
        self._occurrences[key] += 1
        call_key = f"{key}#{occurrence}"
        stored = self.store.get_call(self.unit_id, call_key) if self.may_replay else None
        self._seq += 1
        seq = self._seq
        if stored is not None:
            self.answers_replayed += 1
            if meta is not None:
                meta.update({k: v for k, v in stored.items() if k != "text"})
            return str(stored.get("text", ""))
        text = await produce()
        response: dict[str, Any] = {**(meta or {}), "text": text}
        if isinstance(response.get("response_s"), int | float):
            response["latency_s"] = response["response_s"]
        await self.commits.write(
            put_call_statements(self.unit_id, call_key, seq, role, source, request, response)
        )
        self.answered += 1
        return text

    @contextmanager
    def prompting(self) -> Iterator[None]:
        """While a person types an answer: live displays (the run's progress bar) are stopped, so they
        cannot hide or overwrite the typed input, and started again afterwards."""
        where = _NO_PERSON.get()
        if where is not None:
            raise refuse_person(where)
        with suspended_live_display():
            yield


@contextmanager
def suspended_live_display() -> Iterator[None]:
    """Stop the live displays of rich's console (e.g. a progress bar) for the block; restart them after."""
    import rich

    console = rich.get_console()
    # rich keeps the running displays on the console; without that attribute there is nothing to pause
    lives = list(getattr(console, "_live_stack", []))
    for live in reversed(lives):
        live.stop()
    try:
        yield
    finally:
        for live in lives:
            live.start()
