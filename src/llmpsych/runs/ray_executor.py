"""Work units on Ray actors; the driver stays the single writer of the run store.

Each actor builds the task from the run's config and opens its own model clients once per run (an
embedded model is loaded once per actor and stays loaded). The actors of a process are kept from one run
to the next, so a sweep or preset starts them once. A unit goes to the least busy live actor with the
calls of that unit the driver holds; the actor runs :meth:`Task.run_unit` with a
:class:`~llmpsych.runs.context.UnitContext` whose store is those stored calls (so a resumed or retried
unit replays them) and whose writes go back to the driver as they complete. The driver checks that each
write is one call of a unit that actor runs and commits it through the run's grouped commits, then
records the result or failure as the local path does. Units in flight are the run's ``workers`` per actor
(:meth:`RayExecutor.in_flight`).

Traffic is batched, because Ray's cost is per message, not per unit (one unit per message cost the driver
1.4-2.3 ms of CPU, ~400 units/s whatever the cluster): the units handed to an actor within one window
travel in one message (:meth:`UnitActor.submit`), and each actor streams back everything its units
recorded within one window in one message (:meth:`UnitActor.serve`; the window: :func:`batch_window`),
whose calls the driver commits in one transaction. ``benchmarks/ray_driver.py`` measures the driver's
CPU per unit and the ceiling it implies.

An actor lost mid-unit (its process killed, its node lost) loses only the calls it had not yet sent: the
driver keeps what arrived and runs each of its units again (at most :data:`UNIT_RETRIES` times) on the
least busy live actor, which replays the calls already received; the store's primary key on (unit, call
key) keeps any call from being recorded twice. The lost actor gets no unit until Ray has it running
again and it has opened the run again.

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
    from .notices import notice

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


@dataclass
class _Feed:
    """What an actor's units of one run (one lane epoch, see :class:`_Lane`) have to tell the driver, in
    the order it happened: ``(unit id, "call", statements)`` and, last for each unit, ``(unit id,
    "done", (counts, outcome))``; the driver reads it through :meth:`UnitActor.serve`."""

    events: list[tuple[str, str, Any]] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    units: set[asyncio.Future[None]] = field(default_factory=set)
    closed: bool = False

    def put(self, event: tuple[str, str, Any]) -> None:
        self.events.append(event)
        self.ready.set()


class _Stream(GroupCommit):
    """A unit context's writes on an actor: put on the run's feed for the driver instead of committed."""

    def __init__(self, feed: _Feed, unit_id: str) -> None:
        self.feed = feed
        self.unit_id = unit_id

    async def write(self, statements: Iterable[Statement]) -> None:
        self.feed.put((self.unit_id, "call", list(statements)))

    def defer(self, statements: Iterable[Statement]) -> None:
        self.feed.put((self.unit_id, "call", list(statements)))

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


#: A unit as the driver sends it: (unit id, payload, may replay, the unit's stored calls).
UnitMessage = tuple[str, dict[str, Any], bool, dict[str, dict[str, Any]]]


class UnitActor:
    """One Ray actor: runs the units of any run it is sent, many at once, opening each run's task and
    model clients once (an embedded model stays loaded for the actor's life, so a sweep loads it once).

    The driver sends units in batches (:meth:`submit`: every unit it handed this actor in one turn of its
    event loop) and reads what they record through one stream per run (:meth:`serve`), which yields
    everything that happened since its last message, at most one message per ``window`` seconds: Ray's
    cost is per message, so a message carries many calls and results (see :func:`batch_window`)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.runs: dict[str, asyncio.Future[_OpenRun]] = {}
        self.feeds: dict[str, _Feed] = {}

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
        """End a finished run's streams, close its clients and cache (an embedded model stays loaded)."""
        for key in [k for k in self.feeds if k.split("/")[0] == run_key]:
            feed = self.feeds.pop(key)
            feed.closed = True
            feed.ready.set()
            for unit in feed.units:
                unit.cancel()
        opening = self.runs.pop(run_key, None)
        if opening is None or opening.cancelled() or (opening.done() and opening.exception()):
            return
        opened = await opening
        for client in {id(c): c for c in opened.clients.values()}.values():
            with contextlib.suppress(Exception):
                await client.aclose()
        if opened.cache is not None:
            opened.cache.close()

    def _feed(self, feed_key: str) -> _Feed:
        return self.feeds.setdefault(feed_key, _Feed())

    async def submit(
        self,
        run_key: str,
        feed_key: str,
        config: RunConfig,
        identities: dict[str, str],
        units: list[UnitMessage],
    ) -> None:
        """Start ``units``; what they record goes to the feed ``feed_key``. Returns at once.

        The run's config comes with every batch: an actor Ray restarted after its process died has lost
        what it had opened, and opens it again."""
        feed = self._feed(feed_key)
        for unit in units:
            running = asyncio.ensure_future(self._unit(run_key, config, identities, feed, *unit))
            feed.units.add(running)
            running.add_done_callback(feed.units.discard)

    async def _unit(
        self,
        run_key: str,
        config: RunConfig,
        identities: dict[str, str],
        feed: _Feed,
        unit_id: str,
        payload: dict[str, Any],
        may_replay: bool,
        stored: dict[str, dict[str, Any]],
    ) -> None:
        """Run one unit, putting each call it makes on ``feed`` as it completes, then its outcome."""
        try:
            opened = await self._opened(run_key, config, identities)
        except Exception as exc:  # the task or a model could not be opened here
            feed.put((unit_id, "done", ((0, 0, 0, 0, 0), _error_item(exc))))
            return
        ctx = _ActorContext(
            unit_id,
            cast(RunStore, _StoredCalls(stored)),
            opened.clients,
            config.seed,
            config.params,
            _Stream(feed, unit_id),
            may_replay,
        )
        outcome: tuple[str, Any]
        try:
            outcome = ("result", await opened.task.run_unit(WorkUnit(unit_id, payload), ctx))
        except Exception as exc:
            outcome = _error_item(exc)
        counts = (ctx.sent, ctx.cached, ctx.replayed, ctx.answered, ctx.answers_replayed)
        feed.put((unit_id, "done", (counts, outcome)))

    async def serve(self, feed_key: str, window: float) -> AsyncIterator[list[tuple[str, str, Any]]]:
        """The events of the feed ``feed_key`` as they happen, in messages at least ``window`` seconds
        apart (the first at once), until :meth:`release` ends the run."""
        feed = self._feed(feed_key)
        loop = asyncio.get_running_loop()
        last = -math.inf
        while True:
            if not feed.events:
                if feed.closed:
                    return
                feed.ready.clear()
                await feed.ready.wait()
                continue
            wait = last + window - loop.time()
            if wait > 0:  # gather what else completes meanwhile into the same message
                await asyncio.sleep(wait)
            batch, feed.events = feed.events, []
            last = loop.time()
            yield batch

    async def ping(self) -> int:
        """The actor's process id (answered once Ray has restarted it, if it had died)."""
        return os.getpid()


# -- the driver side -------------------------------------------------------------------------------
class ActorsLost(LlmpsychError):
    """A unit whose actors kept dying, or a run that had no live actor left for too long."""


@dataclass
class _Pool:
    """The actors of this process: kept from one run to the next (a sweep starts them once)."""

    key: tuple[Any, ...]
    actors: list[Any]


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
    _pool = _Pool(key, actors)
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


def batch_window(actors: int) -> float:
    """Seconds between two messages of one actor to the driver, and of the driver to one actor:
    ``actors`` x 5 ms, at least 5 ms and at most 500 ms.

    Ray's cost is per message (about 0.8 ms of the driver's CPU per message measured on a loaded 2-core
    machine, ``benchmarks/ray_driver.py``), so the driver handles at most 2 x ``actors`` / window = 400
    messages a second whatever the cluster's size, and each message carries every call and result of its
    window. A unit reaches its actor, and its result the driver, up to one window later, which costs no
    throughput as long as units in flight (``workers`` per actor) cover it; an actor lost mid-window loses
    at most that window's calls, which are asked again."""
    return min(0.5, max(0.005, 0.005 * actors))


#: How often a unit is started again after the actor running it was lost (its process or its node), each
#: time on a live actor; beyond that the unit is recorded as failed.
UNIT_RETRIES = 3
#: What the driver counted (messages to and from the actors); for benchmarks.
COUNTERS: dict[str, int] = {"batches": 0, "messages": 0}


class _Lost(Exception):
    """The actor running a unit was lost before the unit's outcome reached the driver."""


@dataclass
class _Job:
    """One attempt of a unit on a lane."""

    unit: WorkUnit
    ctx: UnitContext
    done: asyncio.Future[tuple[str, Any]]


@dataclass
class _Lane:
    """The driver's side of one actor in one run: the units it runs now, the batch to send, the stream it
    reads. A lost actor's lane is down until Ray has restarted the actor (or placed it on another node)
    and it has opened the run again; each time it comes up it reads a new feed (``epoch``), so nothing a
    lost incarnation still sends is taken for the new one's."""

    actor: Any
    index: int
    up: bool = True
    epoch: int = 0
    sent: float = -math.inf  # when its last batch was sent (event-loop time)
    jobs: dict[str, _Job] = field(default_factory=dict)
    outbox: list[_Job] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None
    reviver: asyncio.Task[None] | None = None


class RayExecutor:
    """Units on Ray actors (see the module docstring)."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        self.pool = _Pool((), [])
        self.lanes: list[_Lane] = []
        #: calls of units not yet finished, as the store holds them (unit -> call key -> response JSON)
        self.stored: dict[str, dict[str, str]] = {}
        self.ray: Any = None
        self.run_key = uuid.uuid4().hex
        self.run_args: tuple[Any, ...] = ()
        self.restarts = 0  # units run again after their actor was lost
        self.window = batch_window(settings.actors)
        self.changed: asyncio.Event | None = None  # set when a lane comes up again
        self.closing = False

    def in_flight(self, per_process: int) -> int:
        """Units in flight: ``per_process`` (the run's ``workers``) on each actor."""
        return per_process * self.settings.actors

    async def open(
        self, task: Task[Any], config: RunConfig, clients: dict[str, ModelClient], store: RunStore
    ) -> None:
        ray = import_ray()
        connect(self.settings)  # a Ray this process starts stops when the process ends
        check_resources(self.settings, live_nodes(ray))  # a request it can never place: say so now
        self.ray = ray
        for row in store.call_rows() if store.units_with_calls() else []:
            self.stored.setdefault(row[0], {})[row[1]] = row[6]
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
        self.changed = asyncio.Event()
        self.lanes = [_Lane(actor, index) for index, actor in enumerate(self.pool.actors)]
        for lane in self.lanes:
            self._read(lane)

    # -- handing out units -------------------------------------------------------------------------
    async def run_unit(self, task: Task[Any], unit: WorkUnit, ctx: UnitContext) -> Any:
        loop = asyncio.get_running_loop()
        for _ in range(UNIT_RETRIES + 1):
            lane = await self._live_lane(unit)
            job = _Job(unit, ctx, loop.create_future())
            lane.jobs[unit.unit_id] = job
            if not lane.outbox:  # one batch per window, as the actor answers (see batch_window)
                loop.call_at(max(loop.time(), lane.sent + self.window), self._send, lane)
            lane.outbox.append(job)
            try:
                kind, value = await job.done
            except _Lost:
                self.restarts += 1
                continue
            finally:
                if lane.jobs.get(unit.unit_id) is job:
                    del lane.jobs[unit.unit_id]
            self.stored.pop(unit.unit_id, None)
            if kind == "error":
                raise value
            if kind == "error_text":
                raise RemoteUnitError(*value)
            return value
        raise ActorsLost(
            f"the Ray actor running unit {unit.unit_id} was lost {UNIT_RETRIES + 1} times",
            "the cluster keeps losing nodes; --resume runs the unit again",
        )

    async def _live_lane(self, unit: WorkUnit) -> _Lane:
        """The live lane running the fewest units; with none live, wait for one (at most
        ``start_timeout_s``, as for starting the actors)."""
        assert self.changed is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.start_timeout_s
        while True:
            live = [lane for lane in self.lanes if lane.up]
            if live:
                return min(live, key=lambda lane: len(lane.jobs))
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise ActorsLost(
                    f"no Ray actor was alive for {self.settings.start_timeout_s:g} s to run unit "
                    f"{unit.unit_id}",
                    "the cluster lost its nodes; --resume finishes the run",
                ) from None

    def _send(self, lane: _Lane) -> None:
        """Send the lane's batch: every unit handed to it in this turn of the event loop, in one message."""
        batch, lane.outbox = lane.outbox, []
        lane.sent = asyncio.get_running_loop().time()
        batch = [job for job in batch if lane.jobs.get(job.unit.unit_id) is job and not job.done.done()]
        if not batch:
            return
        if not lane.up:
            for job in batch:
                job.done.set_exception(_Lost())
            return
        units = [
            (
                job.unit.unit_id,
                job.unit.payload,
                job.ctx.may_replay or job.unit.unit_id in self.stored,
                {key: json.loads(text) for key, text in self.stored.get(job.unit.unit_id, {}).items()},
            )
            for job in batch
        ]
        COUNTERS["batches"] += 1
        # not awaited: the actor answers through its feed, and a lost actor ends the lane's stream
        lane.actor.submit.remote(self.run_key, self._feed_key(lane), *self.run_args[1:], units)

    def _feed_key(self, lane: _Lane) -> str:
        return f"{self.run_key}/{lane.epoch}"

    # -- reading what the actors send --------------------------------------------------------------
    def _read(self, lane: _Lane) -> None:
        lane.reader = asyncio.ensure_future(self._reader(lane))

    async def _reader(self, lane: _Lane) -> None:
        lost = (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError)
        stream = lane.actor.serve.remote(self._feed_key(lane), self.window)
        try:
            async for ref in stream:
                events = await ref
                COUNTERS["messages"] += 1
                await self._receive(lane, events)
        except lost:
            self._lose(lane)
            return
        except Exception as exc:  # the stream itself failed (not a unit: those fail one by one)
            lane.up = False  # for good: its units fail with that error, the next ones go elsewhere
            for job in list(lane.jobs.values()):
                if not job.done.done():
                    job.done.set_exception(exc)
            return
        if not self.closing:  # the stream ended though the run goes on: as if the actor were lost
            self._lose(lane)

    async def _receive(self, lane: _Lane, events: list[tuple[str, str, Any]]) -> None:
        """Commit the calls of one message (one transaction), then hand each finished unit its outcome."""
        rows: list[Statement] = []
        finished: list[tuple[_Job, Any]] = []
        commits: GroupCommit | None = None
        for unit_id, kind, value in events:
            job = lane.jobs.get(unit_id)
            if job is None:  # not a unit this lane runs (or one abandoned: Ctrl-C): nothing is recorded
                continue
            if kind == "call":
                stored = self.stored.setdefault(unit_id, {})
                ctx = job.ctx
                commits = ctx.commits
                for statement in value:
                    sql, row = _checked(statement, unit_id)
                    rows.append((sql, row))
                    stored[row[1]] = row[6]
                    ctx.sent += int(not row[11])
                    ctx.cached += int(row[11])
            elif kind == "done":
                finished.append((job, value))
            else:
                raise ConfigError(f"a Ray actor sent {kind!r} for unit {unit_id}; it was refused")
        if rows and commits is not None:
            await commits.write(rows)
        for job, (counts, outcome) in finished:
            ctx = job.ctx
            ctx.sent, ctx.cached, ctx.replayed, ctx.answered, ctx.answers_replayed = counts
            if not job.done.done():
                job.done.set_result(outcome)

    # -- a lost actor --------------------------------------------------------------------------------
    def _lose(self, lane: _Lane) -> None:
        """The lane's actor is gone: its units run again elsewhere; the lane waits for Ray to bring the
        actor back."""
        lane.up = False
        lane.epoch += 1
        jobs = list(lane.jobs.values())
        lane.jobs.clear()
        for job in jobs:
            if not job.done.done():
                job.done.set_exception(_Lost())
        if lane.reviver is None or lane.reviver.done():
            lane.reviver = asyncio.ensure_future(self._revive(lane))

    async def _revive(self, lane: _Lane) -> None:
        """Wait until Ray has the lane's actor running again and it has opened the run, then use it."""
        lost = (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError)
        pause = 0.1
        while True:
            try:
                await lane.actor.prepare.remote(*self.run_args)
            except lost:  # still dying, or not placed yet: ask again, less and less often
                await asyncio.sleep(pause)
                pause = min(2 * pause, 5.0)
                continue
            except Exception:  # it cannot open the run any more: the lane stays down
                return
            break
        lane.up = True
        self._read(lane)
        assert self.changed is not None
        self.changed.set()

    async def aclose(self) -> None:
        """Let the actors close this run's clients and end its streams; the actors stay for the
        process's next run."""
        self.closing = True
        for lane in self.lanes:
            if lane.reviver is not None:
                lane.reviver.cancel()
        if not self.pool.actors:
            return
        released = [actor.release.remote(self.run_key) for actor in self.pool.actors]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*released, return_exceptions=True), 30)
        for lane in self.lanes:
            if lane.reader is not None:
                lane.reader.cancel()
        if any(not lane.up for lane in self.lanes):  # a lost actor: the next run starts afresh (and
            shutdown_actors()  # is refused in one line if the cluster has no room for all its actors)


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
