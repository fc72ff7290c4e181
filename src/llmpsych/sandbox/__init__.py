"""Running untrusted (model-written) code under operating-system isolation, judged from outside.

One small interface, :class:`Sandbox` (``run(program, limits, check) -> SandboxResult``), so that a
container backend can be added later. The default backend, :func:`open_sandbox`, keeps warm workers
inside bubblewrap namespaces (see ``_bwrap`` for what a program sees, ``_pool`` for how a verdict is
decided, ``_seccomp`` for the system-call filter); ``unsafe=True`` (the ``--unsafe-local-exec`` flag)
runs the same workers without isolation. docs/sandbox.md explains the guarantees and their bounds.
"""

from __future__ import annotations

import sys

from ._bwrap import INSTALL_HINT, bwrap_path
from ._pool import Candidate, SandboxUnavailable, WorkerSandbox
from ._types import Check, Limits, Program, Sandbox, SandboxResult

__all__ = [
    "INSTALL_HINT",
    "Candidate",
    "Check",
    "Limits",
    "Program",
    "Sandbox",
    "SandboxResult",
    "SandboxUnavailable",
    "available",
    "open_sandbox",
]

UNSAFE_WARNING = (
    "WARNING: --unsafe-local-exec: model-written code runs WITHOUT isolation, as your user, with "
    "access to your files, keys and network (resource limits only). Recorded in the run's manifest."
)


def available() -> bool:
    """Whether the isolating backend can be used here (bubblewrap is installed)."""
    return bwrap_path() is not None and sys.platform.startswith("linux")


def open_sandbox(
    size: int | None = None, limits: Limits | None = None, *, unsafe: bool = False
) -> WorkerSandbox:
    """The bubblewrap backend with ``size`` warm workers; with ``unsafe``, workers without isolation.

    Workers start on first use; call :meth:`WorkerSandbox.probe` to start one now and learn whether
    the sandbox works (SandboxUnavailable says why not).
    """
    if unsafe:
        print(UNSAFE_WARNING, file=sys.stderr)
        return WorkerSandbox(size, limits, isolated=False)
    return WorkerSandbox(size, limits, isolated=True)
