"""Where a run's work units execute: in the run's own process (``local``, the default) or on Ray actors.

Either way the run's process (the driver) is the only writer of the run store: an executor only decides
where :meth:`Task.run_unit <llmpsych.runs.task.Task.run_unit>` runs. The local executor calls it in the
driver's event loop; the Ray executor (:mod:`llmpsych.runs.ray_executor`) ships the unit to an actor that
has its own model clients, and records what the actor streams back through the unit's context, exactly as
the local path records it. So the store, the response cache, ``--resume`` and the results are the same.

The executor is not part of the run's config (it changes where work runs, not what the run is): it is
chosen per invocation, by :func:`use` (the CLI's ``--executor``), and a resumed run may take another.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..models.client import ModelClient
    from .config import RunConfig
    from .context import UnitContext
    from .store import RunStore
    from .task import Task, WorkUnit

ExecutorKind = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorKind, ...] = ("local", "ray")


@dataclass(frozen=True)
class ExecutorSettings:
    """How units execute: ``kind`` and, for Ray, the cluster and the actors.

    ``address`` None starts a private Ray instance on 127.0.0.1 (nothing listens on another interface);
    otherwise it is passed to ``ray.init`` (``auto``, ``host:6379``; a Ray Client address,
    ``ray://``, is refused: see :func:`llmpsych.runs.ray_executor.probe`). Each of the
    ``actors`` reserves ``cpus_per_actor`` CPUs (and ``gpus_per_actor`` GPUs) of the cluster and opens its
    own model clients, so an embedded model is loaded once per actor, with ``threads_per_actor`` llama.cpp
    threads (0: every core of its node).
    """

    kind: ExecutorKind = "local"
    address: str | None = None
    actors: int = 2
    cpus_per_actor: float = 1.0
    gpus_per_actor: float = 0.0
    threads_per_actor: int = 0
    #: Seconds to wait for the cluster to place every actor before the run stops with an error.
    start_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.kind!r}", f"choose one of: {', '.join(EXECUTORS)}")
        if (
            self.actors < 1
            or self.cpus_per_actor < 0
            or self.gpus_per_actor < 0
            or self.threads_per_actor < 0
        ):
            raise ConfigError("the Ray actors need actors >= 1 and no negative CPUs, GPUs or threads")


class Executor(Protocol):
    """Runs one unit for the engine; the engine records the unit's start, result or failure."""

    async def open(
        self, task: Task[Any], config: RunConfig, clients: dict[str, ModelClient], store: RunStore
    ) -> None:
        """Get ready for the run's units (the driver's clients already carry the run's call identities)."""

    def in_flight(self, per_process: int) -> int:
        """Units in flight for a run whose ``workers`` setting is ``per_process`` (each process running
        units holds that many)."""

    async def run_unit(self, task: Task[Any], unit: WorkUnit, ctx: UnitContext) -> Any:
        """The unit's result; its calls are recorded through ``ctx`` as they complete."""

    async def aclose(self) -> None:
        """Release what :meth:`open` acquired."""


class LocalExecutor:
    """Units run in the driver's event loop (the default; what every run did before executors)."""

    async def open(
        self, task: Task[Any], config: RunConfig, clients: dict[str, ModelClient], store: RunStore
    ) -> None:
        return None

    def in_flight(self, per_process: int) -> int:
        return per_process

    async def run_unit(self, task: Task[Any], unit: WorkUnit, ctx: UnitContext) -> Any:
        return await task.run_unit(unit, ctx)

    async def aclose(self) -> None:
        return None


#: Environment variables giving the executor of runs whose command has no flags for it (and of the API).
ENVIRONMENT = {
    "kind": "LLMPSYCH_EXECUTOR",
    "address": "LLMPSYCH_RAY_ADDRESS",
    "actors": "LLMPSYCH_RAY_ACTORS",
    "cpus_per_actor": "LLMPSYCH_RAY_ACTOR_CPUS",
    "gpus_per_actor": "LLMPSYCH_RAY_ACTOR_GPUS",
    "threads_per_actor": "LLMPSYCH_RAY_ACTOR_THREADS",
}
_TYPES: dict[str, type] = {
    "actors": int,
    "cpus_per_actor": float,
    "gpus_per_actor": float,
    "threads_per_actor": int,
}

_current: ExecutorSettings | None = None


def from_environment(environ: Mapping[str, str] | None = None) -> ExecutorSettings:
    """Executor settings from :data:`ENVIRONMENT` (unset: the defaults); a bad value is a ConfigError."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, variable in ENVIRONMENT.items():
        text = environ.get(variable, "").strip()
        if not text:
            continue
        try:
            values[name] = _TYPES.get(name, str)(text)
        except ValueError:
            kind = "whole number" if _TYPES[name] is int else "number"
            raise ConfigError(f"{variable}={text!r} is not a {kind}") from None
    return ExecutorSettings(**values)


def current() -> ExecutorSettings:
    """The executor settings runs of this process use now: :func:`use` / :func:`set_current` (the CLI's
    flags), else the environment (:data:`ENVIRONMENT`), else local."""
    global _current
    if _current is None:
        _current = from_environment()
    return _current


def set_current(settings: ExecutorSettings) -> None:
    """Make ``settings`` the executor of every run this process starts or resumes from now on."""
    global _current
    _current = settings


@contextlib.contextmanager
def use(settings: ExecutorSettings) -> Iterator[None]:
    """Runs started or resumed in the block (a sweep's too) execute with ``settings``."""
    before = current()
    set_current(settings)
    try:
        yield
    finally:
        set_current(before)
