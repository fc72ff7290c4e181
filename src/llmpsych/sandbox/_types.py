"""The sandbox layer's small public surface: a program, its limits, its result, and the backend protocol."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

#: A trusted check: called (in a thread of llmpsych's process) with a stand-in for the program's entry
#: point whose calls run in the sandbox and return fresh plain values; it passes unless it raises.
Check = Callable[[Callable[..., Any]], None]


@dataclass(frozen=True)
class Program:
    """Source to run. With ``entry``, the sandbox then answers calls of that function (see ``Check``).

    ``name`` is the module ``__name__`` the source sees: ``"__main__"`` runs ``if __name__ ==
    "__main__"`` blocks; ``None`` leaves it unset, as OpenAI's human-eval harness does (``exec`` with
    empty globals, so ``__name__`` is ``"builtins"`` and such blocks do not run).
    """

    source: str
    entry: str | None = None
    name: str | None = "__main__"
    filename: str = "<program>"
    #: The source defines ``check(candidate)``: the sandbox calls it with a stand-in whose calls are
    #: answered by the caller (see ``Sandbox.judge``), for tests that must not run in llmpsych's process.
    judge: bool = False


@dataclass(frozen=True)
class Limits:
    """Resource limits for one execution (every program process, and the whole process tree).

    ``memory_bytes`` bounds the tree: each of at most ``nproc`` processes gets ``RLIMIT_AS`` =
    ``memory_bytes // nproc`` (256 MiB by default), and the scratch tmpfs adds at most
    ``scratch_bytes``. ``file_bytes`` caps any one file, stdout and stderr included.
    """

    timeout_s: float = 3.0
    cpu_s: int = 4
    memory_bytes: int = 2 << 30
    nproc: int = 8
    file_bytes: int = 1 << 20
    scratch_bytes: int = 16 << 20
    max_output: int = 20_000

    @property
    def process_memory(self) -> int:
        """``RLIMIT_AS`` of each program process."""
        return self.memory_bytes // self.nproc


@dataclass
class SandboxResult:
    """What happened to one execution. ``status`` is ``passed``, ``failed`` or ``timeout``.

    With a check, ``passed`` means the trusted check passed on the values the sandbox returned;
    without one, that the program ran to its end and exited with status 0.
    """

    status: str
    returncode: int | None  # the program's exit status; 128 + N if signal N ended it (137 on timeout)
    stdout: str
    stderr: str
    seconds: float
    isolation: list[str]
    detail: str = ""  # why it failed, as the trusted side saw it
    calls: int = 0  # calls of the entry point answered
    cpu_s: float = 0.0
    maxrss_kib: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The verdict."""
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return asdict(self)


class Sandbox(Protocol):
    """A backend that runs untrusted programs: bubblewrap namespaces today, a container later."""

    #: The isolation layers that are active, recorded with each result.
    isolation: list[str]

    async def run(
        self, program: Program, limits: Limits | None = None, check: Check | None = None
    ) -> SandboxResult:
        """Run ``program`` within ``limits``; with ``check``, the verdict is the check's."""
        ...

    def judge(self, program: Program, candidate: Callable[..., Any], limits: Limits | None = None) -> None:
        """Run a ``judge`` program's ``check`` in the sandbox against ``candidate`` (synchronously, from a
        check); raises AssertionError when the check fails."""
        ...

    def close(self) -> None:
        """Stop the backend's warm workers."""
        ...
