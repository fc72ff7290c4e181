"""Work units on Ray actors; the driver stays the single writer of the run store.

Each actor builds the task from the run's config and opens its own model clients once per run (an
embedded model is loaded once per actor and stays loaded). The actors of a process are kept from one run
to the next, so a sweep or preset starts them once. A unit goes to the least busy actor as (unit id,
payload, the unit's stored calls); the actor runs :meth:`Task.run_unit` with a
:class:`~llmpsych.runs.context.UnitContext` whose store is those stored calls (so a resumed or retried
unit replays them) and whose writes are streamed back to the driver the moment each call completes (a Ray
streaming generator). The driver checks that each
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
import importlib
import json
import math
import os
import pickle
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ..errors import ConfigError, LlmpsychError
from ..models.embedded import EmbeddedSettings
from .context import UnitContext, refuse_person
from .executors import ExecutorSettings
from .group_commit import GroupCommit
from .node_paths import absolute_paths
from .store import RunStore, Statement, put_call_statements
from .task import WorkUnit

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator, Mapping

    from ..models.cache import ResponseCache
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
    private_token_file()
    if settings.address is not None:
        probe(settings.address)
        check_token(settings.address)
        try:
            ray.init(address=settings.address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"cannot connect to the Ray cluster at {settings.address}: {first}") from None
        return True
    from ray._private import ray_constants  # read when Ray picks the node's address (Ray 2.60)

    before = os.environ.get(LOOPBACK_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOOPBACK_ENV] = "0"  # for the Ray processes started now
    ray_constants.ENABLE_RAY_CLUSTER = False  # for this process, which imported Ray already
    cpus = max(os.cpu_count() or 1, math.ceil(settings.actors * settings.cpus_per_actor))
    mask = os.umask(0o077)  # the token file Ray writes for its instance (~/.ray/auth_token): owner only
    try:
        ray.init(address="local", num_cpus=cpus, **quiet)
    finally:
        os.umask(mask)  # a later connection of this process to a real cluster must see its own address again
        if before[0] is None:
            os.environ.pop(LOOPBACK_ENV, None)
        else:
            os.environ[LOOPBACK_ENV] = before[0]
        ray_constants.ENABLE_RAY_CLUSTER = before[1]
    gcs = str(ray.get_runtime_context().gcs_address)
    if not _is_loopback(gcs):
        ray.shutdown()
        raise ConfigError(f"the local Ray instance listened on {gcs}, not on loopback; it was stopped")
    return True


def token_file() -> Path:
    """The file Ray reads the cluster's token from (``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``)."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token").expanduser()


def private_token_file() -> None:
    """Make Ray's token file readable by its owner only when others can read it (Ray writes it with the
    process's umask, usually readable by every user), and say so."""
    from .runner import notice

    path = token_file()
    with contextlib.suppress(OSError):
        mode = path.stat().st_mode
        if mode & 0o077:
            path.chmod(0o600)
            notice(f"the Ray token file {path} was readable by other users; it is now readable by you only")


def check_token(address: str) -> None:
    """Refuse, in one line, a cluster that refuses this process's token (none, or another cluster's),
    before ``ray.init``, which would retry for about 20 s with a warning a second and then say only that
    it cannot connect. Ray's own client asks the cluster's id once; its warning line is kept off the
    terminal (standard error is pointed elsewhere for that moment)."""
    if address == "auto":  # the cluster this machine's Ray last started, as ray.init finds it
        from ray._private.services import get_ray_address_from_environment

        found = None
        with contextlib.suppress(Exception):
            found = get_ray_address_from_environment("auto", None)
        if not found or found == "auto":
            return
        address = found
    from ray.exceptions import AuthenticationError

    raylet: Any = importlib.import_module("ray._raylet")  # compiled: no type information
    refused = None
    with _quiet_stderr(), contextlib.suppress(Exception):
        try:
            raylet.GcsClient(address=address)
        except AuthenticationError as exc:
            refused = exc
    if refused is None:
        return
    why = (
        f"the token this process gives ({_token_source()}) is not the cluster's"
        if raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN
        else "this process has Ray's token authentication off (RAY_AUTH_MODE is not token)"
    )
    raise ConfigError(
        f"the Ray cluster at {address} refused this process: it wants its token, and {why}",
        "export RAY_AUTH_MODE=token and give the cluster's token: copy the head's ~/.ray/auth_token "
        "(mode 600), or set RAY_AUTH_TOKEN_PATH",
    )


def _token_source() -> str:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    return str(token_file()) if token_file().is_file() else f"none: no {token_file()}"


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Standard error (file descriptor 2, where Ray's C++ code logs) sent to /dev/null for a moment."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no standard error at all: nothing to keep quiet
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def probe(address: str) -> None:
    """Refuse, in one line, a cluster address that is malformed or where nothing answers (Ray itself
    retries such an address for minutes); ``auto`` is left to Ray, which fails fast without a cluster.

    A Ray Client address (``ray://HOST:10001``) is refused: Ray Client (the ``ray[client]`` extra, grpcio)
    cannot run streaming actor methods, by which an actor sends each call to the driver as it completes
    (measured with Ray 2.60.0: it connects, and every unit fails with "'async for' requires an object
    with __aiter__ method, got ClientObjectRef"); its server is one more port to guard."""
    if address == "auto":
        return
    if address.startswith("ray://"):
        raise ConfigError(
            f"--ray-address {address}: Ray Client (ray://) addresses cannot run llmpsych's actors",
            "run llmpsych on a machine of the cluster's network with the head's address, "
            "--ray-address HEAD:6379 (or --ray-address auto on the head)",
        )
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(
            f"--ray-address {address!r} is not auto or HOST:PORT",
            "e.g. --ray-address head-node:6379",
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(
            f"nothing answers at the Ray address {address} ({exc.strerror or exc})",
            "start the cluster first (ray start --head), or check --ray-address",
        ) from None


# -- what the cluster can hold ---------------------------------------------------------------------
#: Ray counts CPUs and GPUs in ten-thousandths (fractions such as 0.5 GPU), so capacity is counted so too.
_RESOURCE_UNITS = 10_000


def _units(amount: float) -> int:
    return round(amount * _RESOURCE_UNITS)


def check_resources(
    settings: ExecutorSettings, nodes: Iterable[Mapping[str, float]], *, all_at_once: bool = True
) -> None:
    """Refuse, in one line, actors the cluster can never place, rather than wait ``start_timeout_s`` for
    them: GPUs asked of a cluster without GPUs, more CPUs or GPUs per actor than any node has (an actor
    lives on one node), or more actors than the nodes can hold together (with ``all_at_once``; a sweep's
    tasks, which only need room for one, wait for each other).

    ``nodes`` are the total resources of each live node (``ray.nodes()``), not what is free now: actors
    waiting for another job's CPUs are placed when those are released. Nodes an autoscaler would add
    later are not counted (start them first).
    """
    nodes = list(nodes)
    asked = {"CPU": settings.cpus_per_actor, "GPU": settings.gpus_per_actor}
    wanted = {name: amount for name, amount in asked.items() if _units(amount) > 0}
    flag = {"CPU": "--actor-cpus", "GPU": "--actor-gpus"}
    for name, amount in wanted.items():
        most = max((node.get(name, 0.0) for node in nodes), default=0.0)
        if _units(most) == 0:
            raise ConfigError(
                f"{flag[name]} {amount:g}: the Ray cluster has no {name}s",
                f"drop {flag[name]}, or give the --ray-address of a cluster with {name} nodes",
            )
        if _units(most) < _units(amount):
            raise ConfigError(
                f"{flag[name]} {amount:g}: no node of the Ray cluster has {_amount(amount, name)} "
                f"(the most a node has is {most:g})",
                f"ask for at most {flag[name]} {most:g}",
            )
    if not wanted:
        return
    each = " and ".join(_amount(amount, name) for name, amount in wanted.items())
    room = sum(
        min(_units(node.get(name, 0.0)) // _units(amount) for name, amount in wanted.items())
        for node in nodes
    )
    hint = "ask for fewer --actors, --actor-cpus or --actor-gpus, or add nodes"
    if room == 0:
        raise ConfigError(f"no node of the Ray cluster has {each} for one actor", hint)
    if all_at_once and room < settings.actors:
        raise ConfigError(
            f"the Ray cluster has room for {room} of the {settings.actors} actors with {each} each", hint
        )


def _amount(amount: float, name: str) -> str:
    return f"{amount:g} {name}" + ("" if amount == 1 else "s")


def live_nodes(ray: Any) -> list[dict[str, float]]:
    """The total resources of each live node of the cluster this process is connected to."""
    return [dict(node.get("Resources") or {}) for node in ray.nodes() if node.get("Alive")]


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
        raise refuse_person("Ray actors")


def _error_item(exc: BaseException) -> tuple[str, Any]:
    """The failure of a unit as the driver will raise it (the exception itself when it pickles)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return ("error_text", (type(exc).__name__, str(exc)))
    return ("error", exc)


@dataclass
class _OpenRun:
    """What an actor holds for one run: the task, the clients and the response cache."""

    config: RunConfig
    task: Task[Any]
    clients: dict[str, ModelClient]
    cache: ResponseCache | None


class UnitActor:
    """One Ray actor: runs the units of any run it is sent, many at once, opening each run's task and
    model clients once (an embedded model stays loaded for the actor's life, so a sweep loads it once)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.runs: dict[str, asyncio.Future[_OpenRun]] = {}

    async def _open(self, config: RunConfig, identities: dict[str, str]) -> _OpenRun:
        from .clients import _open_cache, open_clients
        from .node_paths import check_on_node
        from .task import task_class

        check_on_node(config, "the node of a Ray actor")  # before its task reads any of them
        task = task_class(config.task)(config)
        cache = _open_cache(config)
        embedded = EmbeddedSettings(n_parallel=config.n_parallel, n_threads=self.threads)
        clients = open_clients(config, cache, task.model_roles(), embedded)
        for role, client in clients.items():
            client.call_identity = identities.get(role, client.call_identity)
            await client.settle_concurrency()
        return _OpenRun(config, task, clients, cache)

    async def _opened(self, run_key: str, config: RunConfig, identities: dict[str, str]) -> _OpenRun:
        if run_key not in self.runs:
            self.runs[run_key] = asyncio.ensure_future(self._open(config, identities))
        return await asyncio.shield(self.runs[run_key])

    async def prepare(self, run_key: str, config: RunConfig, identities: dict[str, str]) -> int:
        """Open a run's task and clients (once); the actor's process id."""
        await self._opened(run_key, config, identities)
        return os.getpid()

    async def release(self, run_key: str) -> None:
        """Close a finished run's clients and cache (an embedded model stays loaded)."""
        opening = self.runs.pop(run_key, None)
        if opening is None or opening.cancelled() or (opening.done() and opening.exception()):
            return
        opened = await opening
        for client in {id(c): c for c in opened.clients.values()}.values():
            with contextlib.suppress(Exception):
                await client.aclose()
        if opened.cache is not None:
            opened.cache.close()

    async def run(
        self,
        run_key: str,
        config: RunConfig,
        identities: dict[str, str],
        unit_id: str,
        payload: dict[str, Any],
        may_replay: bool,
        stored: dict[str, dict[str, Any]],
    ) -> AsyncIterator[tuple[str, Any]]:
        """Run one unit, yielding ("call", statements) as calls complete, then its result or failure.

        The run's config comes with every unit: an actor Ray restarted after its process died has lost
        what it had opened, and opens it again."""
        opened = await self._opened(run_key, config, identities)
        stream = _Stream()
        ctx = _ActorContext(
            unit_id,
            cast(RunStore, _StoredCalls(stored)),
            opened.clients,
            config.seed,
            config.params,
            stream,
            may_replay,
        )
        running = asyncio.ensure_future(opened.task.run_unit(WorkUnit(unit_id, payload), ctx))
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


@dataclass
class _Pool:
    """The actors of this process: kept from one run to the next (a sweep starts them once)."""

    key: tuple[Any, ...]
    actors: list[Any]
    busy: list[int] = field(default_factory=list)


_pool: _Pool | None = None


async def _actor_pool(ray: Any, settings: ExecutorSettings) -> _Pool:
    """The process's actors for ``settings`` on the current Ray connection, started if need be; actors
    started for other settings are stopped first (they would hold the cluster's CPUs)."""
    global _pool
    context = ray.get_runtime_context()
    key = (settings, context.get_node_id(), context.get_job_id())
    if _pool is not None and _pool.key == key:
        return _pool
    shutdown_actors()
    actor_class = ray.remote(UnitActor).options(
        num_cpus=settings.cpus_per_actor,
        num_gpus=settings.gpus_per_actor,
        max_restarts=-1,
        max_task_retries=0,  # the driver retries a unit itself, replaying the calls it received
        max_concurrency=100_000,
    )
    actors = [actor_class.remote(settings.threads_per_actor) for _ in range(settings.actors)]
    _pool = _Pool(key, actors, [0] * len(actors))
    return _pool


def shutdown_actors() -> None:
    """Stop this process's actors (Ray stops them anyway when the process disconnects)."""
    global _pool
    if _pool is not None:
        ray = import_ray()
        for actor in _pool.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
    _pool = None


class RayExecutor:
    """Units on Ray actors (see the module docstring)."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        self.pool = _Pool((), [])
        self.stored: dict[str, dict[str, dict[str, Any]]] = {}
        self.ray: Any = None
        self.run_key = uuid.uuid4().hex
        self.run_args: tuple[Any, ...] = ()
        self.restarts = 0  # units run again after their actor died

    async def open(
        self, task: Task[Any], config: RunConfig, clients: dict[str, ModelClient], store: RunStore
    ) -> None:
        ray = import_ray()
        connect(self.settings)  # a Ray this process starts stops when the process ends
        check_resources(self.settings, live_nodes(ray))  # a request it can never place: say so now
        self.ray = ray
        for row in store.call_rows() if store.units_with_calls() else []:
            self.stored.setdefault(row[0], {})[row[1]] = json.loads(row[6])
        identities = {role: client.call_identity for role, client in clients.items()}
        config = absolute_paths(config)  # an actor works in its node's folder, not in the driver's
        self.run_args = (self.run_key, ray.put(config), identities)
        self.pool = await _actor_pool(ray, self.settings)
        s = self.settings
        ready = [actor.prepare.remote(*self.run_args) for actor in self.pool.actors]
        try:
            await asyncio.wait_for(asyncio.gather(*ready), s.start_timeout_s)
        except TimeoutError:
            raise ConfigError(
                f"Ray did not start {s.actors} actors with {s.cpus_per_actor:g} CPUs and "
                f"{s.gpus_per_actor:g} GPUs each within {s.start_timeout_s:g} s",
                f"the cluster has {ray.cluster_resources()}; ask for fewer --actors or --actor-cpus",
            ) from None
        except ray.exceptions.RayTaskError as exc:  # the task or a model could not be opened on an actor
            cause = getattr(exc, "cause", None)  # the actor's own exception (its text without Ray's trace)
            if isinstance(cause, LlmpsychError):
                raise cause from None
            what = (
                f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else "see Ray's logs"
            )
            raise ConfigError(f"a Ray actor failed to start: {what}") from None
        except ray.exceptions.RayActorError as exc:  # llmpsych could not even be imported there
            shutdown_actors()
            first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise ConfigError(
                f"a Ray actor died while starting: {first}",
                "every node needs the same llmpsych installed (pip install 'llmpsych[ray]')",
            ) from None

    async def run_unit(self, task: Task[Any], unit: WorkUnit, ctx: UnitContext) -> Any:
        lost = (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError)
        actors, busy = self.pool.actors, self.pool.busy
        attempts = RETRIES_PER_ACTOR * len(actors) + 1
        for _ in range(attempts):
            index = min(range(len(actors)), key=busy.__getitem__)
            busy[index] += 1
            try:
                return await self._run_on(actors[index], unit, ctx)
            except lost:
                self.restarts += 1
            finally:
                busy[index] -= 1
        raise ActorsLost(f"the Ray actors running unit {unit.unit_id} died {attempts} times")

    async def _run_on(self, actor: Any, unit: WorkUnit, ctx: UnitContext) -> Any:
        stored = self.stored.setdefault(unit.unit_id, {})
        may_replay = ctx.may_replay or bool(stored)
        outcome: tuple[str, Any] | None = None
        stream = actor.run.remote(*self.run_args, unit.unit_id, unit.payload, may_replay, stored)
        async for ref in stream:
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
        """Let the actors close this run's clients; the actors stay for the process's next run."""
        if not self.pool.actors:
            return
        released = [actor.release.remote(self.run_key) for actor in self.pool.actors]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*released, return_exceptions=True), 30)


class RemoteUnitError(Exception):
    """A unit's failure on an actor whose exception could not be sent back as it was."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")


def _checked(statement: Any, unit_id: str) -> Statement:
    """``statement`` if it is one call of ``unit_id`` (an actor writes nothing else to the store), stamped
    with the driver's clock (the store's completion order must not depend on the clocks of other nodes)."""
    sql, row = statement
    if sql != CALL_SQL or not isinstance(row, tuple) or len(row) != CALL_COLUMNS or row[0] != unit_id:
        raise ConfigError(f"a Ray actor sent a write that is not a call of unit {unit_id}; it was refused")
    return sql, (*row[:-1], time.time())
