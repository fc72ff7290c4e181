"""Work units on Ray actors; the driver stays the single writer of the run store.

Each actor builds the task from the run's config and opens its own model clients once (an embedded model
is loaded once per actor). A unit goes to the least busy actor as (unit id, payload, the unit's stored
calls); the actor runs :meth:`Task.run_unit` with a :class:`~llmpsych.runs.context.UnitContext` whose
store is those stored calls (so a resumed or retried unit replays them) and whose writes are streamed back
to the driver the moment each call completes (a Ray streaming generator). The driver checks that each
streamed write is one call of that unit and commits it through the run's grouped commits, then records the
result or failure as the local path does.

An actor that dies mid-unit (its process killed, its node lost) loses only the calls it had not yet
streamed: the driver keeps what arrived, restarts nothing itself (Ray restarts the actor), and runs the
unit again on the least busy actor, which replays the calls already received; the store's primary key on
(unit, call key) keeps any call from being recorded twice.

Security: without ``address`` Ray is started on 127.0.0.1 only (every Ray server of the instance listens
on loopback; checked after start), without its dashboard. API keys are never task arguments: an actor's
clients read them from the worker's environment, which a local instance inherits from the driver (on a
cluster, give the workers their own environment).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import pickle
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ..errors import ConfigError, LlmpsychError
from ..models.embedded import EmbeddedSettings
from .context import UnitContext
from .executors import ExecutorSettings
from .group_commit import GroupCommit
from .store import RunStore, Statement, put_call_statements
from .task import WorkUnit

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from ..models.client import ModelClient
    from .config import RunConfig
    from .task import Task

#: The only statement an actor may stream back: one call of the unit it runs.
CALL_SQL = put_call_statements("", "", 0, "", "", "", {})[0][0]
#: Columns of a call row (see :func:`~llmpsych.runs.store.put_call_statements`).
CALL_COLUMNS = 13
#: How often a unit is started again after its actor died, per actor of the run.
RETRIES_PER_ACTOR = 3
#: Set before Ray starts a local instance: every Ray server then binds 127.0.0.1 (see :func:`connect`).
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class RayNotInstalled(ConfigError):
    """``--executor ray`` without the ``ray`` extra."""


def import_ray() -> Any:
    """The ``ray`` module, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RayNotInstalled(
            "--executor ray needs Ray, which is not installed", "pip install 'llmpsych[ray]'"
        ) from None
    return ray


def _is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in {"127.0.0.1", "localhost", "::1"} or host.startswith("127.")


def connect(settings: ExecutorSettings) -> bool:
    """Connect to Ray as ``settings`` say; True when this call started (and so owns) the connection.

    A process already connected (``ray.init`` called by the user or a test) is used as it is. Without an
    address a private instance is started on loopback: Ray binds its servers to the node's address, which
    it takes to be the machine's outward address unless clusters are disabled for the process (Ray's own
    switch for laptops, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``); the address the instance reports is
    checked, and anything but loopback stops the run.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    quiet = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if settings.address is not None:
        ray.init(address=settings.address, **quiet)
        return True
    os.environ[LOOPBACK_ENV] = "0"
    from ray._private import ray_constants  # read when Ray picks the node's address (Ray 2.60)

    ray_constants.ENABLE_RAY_CLUSTER = False
    cpus = max(os.cpu_count() or 1, math.ceil(settings.actors * settings.cpus_per_actor))
    ray.init(address="local", num_cpus=cpus, **quiet)
    gcs = str(ray.get_runtime_context().gcs_address)
    if not _is_loopback(gcs):
        ray.shutdown()
        raise ConfigError(f"the local Ray instance listened on {gcs}, not on loopback; it was stopped")
    return True


# -- the actor side --------------------------------------------------------------------------------
class _StoredCalls:
    """What a unit's context reads of the store on an actor: the unit's calls the driver sent along."""

    def __init__(self, calls: dict[str, dict[str, Any]]) -> None:
        self.calls = calls

    def get_call(self, unit_id: str, call_key: str) -> dict[str, Any] | None:
        return self.calls.get(call_key)


class _Stream(GroupCommit):
    """A unit context's writes on an actor: queued for the driver instead of committed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[list[Statement]] = asyncio.Queue()

    async def write(self, statements: Iterable[Statement]) -> None:
        self.queue.put_nowait(list(statements))

    def defer(self, statements: Iterable[Statement]) -> None:
        self.queue.put_nowait(list(statements))

    def flush(self) -> None:
        return None


class _ActorContext(UnitContext):
    """A unit's context on an actor: no person can answer there (no terminal)."""

    def prompting(self) -> NoReturn:
        raise ConfigError("a person's seat cannot be played on Ray actors", "run it with --executor local")


def _error_item(exc: BaseException) -> tuple[str, Any]:
    """The failure of a unit as the driver will raise it (the exception itself when it pickles)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return ("error_text", (type(exc).__name__, str(exc)))
    return ("error", exc)


class UnitActor:
    """One Ray actor: the task and model clients of a run, opened once, running many units at once."""

    def __init__(self, config: RunConfig, identities: dict[str, str], threads: int) -> None:
        self.config = config
        self.identities = identities
        self.threads = threads
        self._ready: asyncio.Task[None] | None = None

    async def _open(self) -> None:
        from .runner import _open_cache, open_clients
        from .task import task_class

        self.task = task_class(self.config.task)(self.config)
        self.cache = _open_cache(self.config)
        embedded = EmbeddedSettings(n_parallel=self.config.n_parallel, n_threads=self.threads)
        self.clients = open_clients(self.config, self.cache, self.task.model_roles(), embedded)
        for role, client in self.clients.items():
            client.call_identity = self.identities.get(role, client.call_identity)
            await client.settle_concurrency()

    async def ready(self) -> int:
        """Open the task and clients (once); the actor's process id."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._open())
        await asyncio.shield(self._ready)
        return os.getpid()

    async def run(
        self, unit_id: str, payload: dict[str, Any], may_replay: bool, stored: dict[str, dict[str, Any]]
    ) -> AsyncIterator[tuple[str, Any]]:
        """Run one unit, yielding ("call", statements) as calls complete, then its result or failure."""
        await self.ready()
        stream = _Stream()
        ctx = _ActorContext(
            unit_id,
            cast(RunStore, _StoredCalls(stored)),
            self.clients,
            self.config.seed,
            self.config.params,
            stream,
            may_replay,
        )
        running = asyncio.ensure_future(self.task.run_unit(WorkUnit(unit_id, payload), ctx))
        while not running.done():
            getter = asyncio.ensure_future(stream.queue.get())
            await asyncio.wait({running, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield ("call", getter.result())
            else:
                getter.cancel()
        while not stream.queue.empty():
            yield ("call", stream.queue.get_nowait())
        counts = (ctx.sent, ctx.cached, ctx.replayed, ctx.answered, ctx.answers_replayed)
        exc = running.exception()
        yield ("counts", counts)
        yield _error_item(exc) if exc is not None else ("result", running.result())


# -- the driver side -------------------------------------------------------------------------------
class ActorsLost(LlmpsychError):
    """A unit whose actors kept dying."""


class RayExecutor:
    """Units on Ray actors (see the module docstring)."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        self.actors: list[Any] = []
        self.busy: list[int] = []
        self.stored: dict[str, dict[str, dict[str, Any]]] = {}
        self.owns_ray = False
        self.ray: Any = None
        self.restarts = 0  # units run again after their actor died

    async def open(
        self, task: Task[Any], config: RunConfig, clients: dict[str, ModelClient], store: RunStore
    ) -> None:
        ray = import_ray()
        self.ray = ray
        self.owns_ray = connect(self.settings)
        for row in store.call_rows() if store.units_with_calls() else []:
            self.stored.setdefault(row[0], {})[row[1]] = json.loads(row[6])
        identities = {role: client.call_identity for role, client in clients.items()}
        actor_class = ray.remote(UnitActor).options(
            num_cpus=self.settings.cpus_per_actor,
            num_gpus=self.settings.gpus_per_actor,
            max_restarts=-1,
            max_task_retries=0,  # the driver retries a unit itself, replaying the calls it received
            max_concurrency=100_000,
        )
        s = self.settings
        self.actors = [actor_class.remote(config, identities, s.threads_per_actor) for _ in range(s.actors)]
        self.busy = [0] * len(self.actors)
        ready = [actor.ready.remote() for actor in self.actors]
        try:
            await asyncio.wait_for(asyncio.gather(*ready), s.start_timeout_s)
        except TimeoutError:
            raise ConfigError(
                f"Ray did not start {s.actors} actors with {s.cpus_per_actor:g} CPUs and "
                f"{s.gpus_per_actor:g} GPUs each within {s.start_timeout_s:g} s",
                f"the cluster has {ray.cluster_resources()}; ask for fewer --actors or --actor-cpus",
            ) from None
        except ray.exceptions.RayTaskError as exc:  # the task or a model could not be opened on an actor
            cause = exc.as_instanceof_cause()
            if isinstance(cause, LlmpsychError):
                raise cause from None
            raise ConfigError(f"a Ray actor failed to start: {exc}") from None

    async def run_unit(self, task: Task[Any], unit: WorkUnit, ctx: UnitContext) -> Any:
        lost = (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError)
        attempts = RETRIES_PER_ACTOR * len(self.actors) + 1
        for _ in range(attempts):
            index = min(range(len(self.actors)), key=self.busy.__getitem__)
            self.busy[index] += 1
            try:
                return await self._run_on(self.actors[index], unit, ctx)
            except lost:
                self.restarts += 1
            finally:
                self.busy[index] -= 1
        raise ActorsLost(f"the Ray actors running unit {unit.unit_id} died {attempts} times")

    async def _run_on(self, actor: Any, unit: WorkUnit, ctx: UnitContext) -> Any:
        stored = self.stored.setdefault(unit.unit_id, {})
        may_replay = ctx.may_replay or bool(stored)
        outcome: tuple[str, Any] | None = None
        async for ref in actor.run.remote(unit.unit_id, unit.payload, may_replay, stored):
            kind, value = await ref
            if kind == "call":
                rows = [_checked(statement, unit.unit_id) for statement in value]
                await ctx.commits.write(rows)
                for _, row in rows:
                    stored[row[1]] = json.loads(row[6])
                    ctx.sent += int(not row[11])
                    ctx.cached += int(row[11])
            elif kind == "counts":
                ctx.sent, ctx.cached, ctx.replayed, ctx.answered, ctx.answers_replayed = value
            else:
                outcome = (kind, value)
        self.stored.pop(unit.unit_id, None)
        if outcome is None:
            raise self.ray.exceptions.RayActorError()
        kind, value = outcome
        if kind == "error":
            raise value
        if kind == "error_text":
            raise RemoteUnitError(*value)
        return value

    async def aclose(self) -> None:
        if self.ray is None:  # never opened
            return
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        self.actors = []
        if self.owns_ray:
            self.ray.shutdown()


class RemoteUnitError(Exception):
    """A unit's failure on an actor whose exception could not be sent back as it was."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")


def _checked(statement: Any, unit_id: str) -> Statement:
    """``statement`` if it is one call of ``unit_id`` (an actor writes nothing else to the store)."""
    sql, row = statement
    if sql != CALL_SQL or not isinstance(row, tuple) or len(row) != CALL_COLUMNS or row[0] != unit_id:
        raise ConfigError(f"a Ray actor sent a write that is not a call of unit {unit_id}; it was refused")
    return sql, row
