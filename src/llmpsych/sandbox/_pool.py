"""llmpsych's side: warm workers, one execution at a time each, and the verdict decided here.

Each worker (``_worker.py``) is started once and serves executions one after the other; a pool keeps up
to ``size`` of them (default two per core: an execution mostly waits for its processes to be created,
scheduled and reaped). An execution runs in a thread of a private executor: it hands the worker a
fresh socket (the channel), and two anonymous in-memory files as stdout and stderr (capped by
``RLIMIT_FSIZE``, so output never blocks the program and never has to be drained), sends the program,
and, with a check, runs the check here, in trusted code, against a stand-in for the entry point.

The verdict. The check (for HumanEval: the problem's ``check`` function, from the dataset) never runs in
the sandbox, so the program can neither see the expected values nor touch the assertions. Every call of
the stand-in sends the arguments to the sandbox and gets back a tagged plain value (``_codec``) from
which a fresh builtin object is built here: a returned object cannot bring its own ``__eq__``, an early
exit or a fake marker is just a missing answer, and a program that writes forged answers on its
channel still has to write the right values, i.e. compute them. What the sandbox says about itself
(its exit status, its output) never makes a pass.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import _bwrap, _codec, _seccomp
from ._types import Check, Limits, Program, SandboxResult

#: How long a new worker may take to say it is ready.
START_TIMEOUT_S = 20.0
#: After the wall-time limit, how long the worker has to report before it is killed.
GRACE_S = 2.0
#: Largest answer accepted from the sandbox (a HumanEval value is a few bytes; this bounds the decoding
#: work a program can make llmpsych do).
MAX_FRAME = 4 << 20


class SandboxUnavailable(RuntimeError):
    """No worker could be started (the message says why)."""


class _Lost(Exception):
    """The worker died or stopped answering."""


class _Worker:
    """One started worker process and its control socket."""

    def __init__(
        self,
        argv_for: Callable[[int, int | None], list[str]],
        scratch: str | None = None,
        scratch_bytes: int = 0,
    ) -> None:
        self.scratch_bytes = scratch_bytes  # the size of its tmpfs, fixed when bubblewrap starts
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        seccomp = _seccomp.filter_program() if scratch is None else None  # only bubblewrap installs it
        seccomp_fd = None
        self.scratch = scratch
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the worker's, closed with it
        try:
            pass_fds = [theirs.fileno()]
            if seccomp is not None:
                seccomp_fd = os.memfd_create("llmpsych-seccomp", 0)
                os.write(seccomp_fd, seccomp)
                os.lseek(seccomp_fd, 0, os.SEEK_SET)
                pass_fds.append(seccomp_fd)
            self.proc = subprocess.Popen(
                argv_for(theirs.fileno(), seccomp_fd),
                pass_fds=pass_fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.stderr,
                cwd="/",
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        finally:
            theirs.close()
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        self.control = ours
        ours.settimeout(START_TIMEOUT_S)
        try:
            ready = ours.recv(64)
        except OSError:
            ready = b""
        if not ready:
            self.kill()
            self.stderr.seek(0)
            why = self.stderr.read(2000).decode("utf-8", "replace").strip().splitlines()
            raise SandboxUnavailable(why[-1] if why else "the sandbox worker did not start")

    def start(self, fds: list[int], limits: dict[str, Any]) -> None:
        try:
            socket.send_fds(self.control, [json.dumps(limits).encode()], fds)
        except OSError as exc:
            raise _Lost(str(exc)) from exc

    def outcome(self, timeout: float) -> dict[str, Any]:
        self.control.settimeout(max(timeout, 0.01))
        try:
            data = self.control.recv(1 << 16)
        except OSError as exc:
            raise _Lost(str(exc)) from exc
        if not data:
            raise _Lost("the sandbox worker is gone")
        result: dict[str, Any] = json.loads(data)
        return result

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, 9)
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self._forget()

    def close(self) -> None:
        self.control.close()  # the worker exits when its control socket closes
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.kill()
        self._forget()

    def _forget(self) -> None:
        self.control.close()
        self.stderr.close()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


class _Channel:
    """The trusted end of one execution's channel: frames with a deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def send(self, message: dict[str, Any]) -> None:
        self.sock.settimeout(max(self.deadline - time.monotonic(), 0.001))
        self.sock.sendall(_codec.dumps(message))

    def _exact(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            self.sock.settimeout(max(self.deadline - time.monotonic(), 0.001))
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise EOFError("the program closed its channel")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> dict[str, Any]:
        size = int.from_bytes(self._exact(4), "big")
        if size > MAX_FRAME:
            raise _codec.CodecError("answer too large")
        message = json.loads(self._exact(size))
        if type(message) is not dict:
            raise _codec.CodecError("malformed answer")
        return message


class Candidate:
    """The stand-in for the program's entry point handed to a trusted check."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel
        self.calls = 0
        #: The first failure of the channel itself (time out, closed, malformed or refused answer): it
        #: fails the item even if a test were to catch the exception.
        self.failure: Exception | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            reply = self._exchange(args, kwargs)
        except (OSError, EOFError, ValueError) as exc:  # TimeoutError is an OSError, CodecError a ValueError
            if self.failure is None:
                self.failure = exc
            raise
        if "value" in reply:
            return reply["value"]
        name, message = reply["raise"]
        kind = getattr(builtins, name, None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = RuntimeError
        raise kind(f"the program raised {name}: {message[:500]}")  # the program's own error: tests may see it

    def _exchange(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """One call: ``{"value": fresh value}`` or ``{"raise": [name, message]}``; anything else raises."""
        self._channel.send({"call": [_codec.encode(list(args)), _codec.encode(kwargs)]})
        reply = self._channel.receive()
        self.calls += 1
        if set(reply) == {"value"}:
            return {"value": _codec.decode(reply["value"])}
        if set(reply) == {"refused"}:
            raise _codec.CodecError(
                f"the program returned a value that is not plain ({str(reply['refused'])[:200]})"
            )
        if set(reply) == {"raise"} and type(reply["raise"]) is list and len(reply["raise"]) == 2:
            return {"raise": [str(x) for x in reply["raise"]]}
        raise _codec.CodecError("malformed answer")


def _text(fd: int, size: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, 4 * size + 4096)
    text = data.decode("utf-8", "replace")
    return text if len(text) <= size else text[:size] + "\n[... truncated]"


class WorkerSandbox:
    """A pool of warm workers behind the :class:`~llmpsych.sandbox.Sandbox` protocol."""

    def __init__(self, size: int | None = None, limits: Limits | None = None, *, isolated: bool = True):
        self.size = size or 2 * max(1, os.cpu_count() or 1)
        self.limits = limits or Limits()
        self.isolated = isolated
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="llmpsych-sandbox")
        self._slots = threading.BoundedSemaphore(self.size)
        self._next_uid = 0
        # a pool that is dropped (a finished run's task) stops its workers without waiting for the exit
        weakref.finalize(self, _stop, self._idle, self._busy, self._lock, self._executor)
        self._bwrap = _bwrap.bwrap_path() if isolated else None
        if isolated and self._bwrap is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
        root = os.geteuid() == 0
        seccomp = "seccomp" if _seccomp.filter_program() is not None else "no-seccomp"
        if isolated:
            self.isolation = [
                "bwrap",
                "pidns",
                "netns",
                "ipcns",
                "utsns",
                "mountns",
                "uid-dedicated" if root else "userns",
                seccomp,
                "rlimits",
                "tmpfs-scratch",
            ]
        else:
            self.isolation = ["none", "rlimits"]

    # -- workers ----------------------------------------------------------------------------------
    def _new_worker(self, limits: Limits) -> _Worker:
        if not self.isolated:
            scratch = tempfile.mkdtemp(prefix="llmpsych-unsafe-")

            def local(control_fd: int, _seccomp_fd: int | None) -> list[str]:
                return _bwrap.local_command(control_fd, scratch)

            return _Worker(local, scratch)
        with self._lock:
            self._next_uid += 1
            # one uid per live worker (RLIMIT_NPROC counts per uid): 10,000 per llmpsych process
            uid = _bwrap.UID_BASE + (os.getpid() % 10_000) * 10_000 + self._next_uid % 10_000  # < 2**31
        uid = uid if os.geteuid() == 0 else -1
        bwrap = self._bwrap or "bwrap"

        def isolated(control_fd: int, seccomp_fd: int | None) -> list[str]:
            return _bwrap.command(bwrap, control_fd, seccomp_fd, limits.scratch_bytes, uid)

        return _Worker(isolated, scratch_bytes=limits.scratch_bytes)

    def _acquire(self, limits: Limits) -> _Worker:
        stale: list[_Worker] = []
        found = None
        with self._lock:
            for worker in reversed(self._idle):
                if worker.proc.poll() is not None:
                    stale.append(worker)
                elif found is None and (not self.isolated or worker.scratch_bytes == limits.scratch_bytes):
                    found = worker
            for worker in [*stale, *([found] if found else [])]:
                self._idle.remove(worker)
            if found is not None:
                self._busy.add(found)
        for worker in stale:
            worker.kill()
        if found is not None:
            return found
        worker = self._new_worker(limits)
        with self._lock:
            self._busy.add(worker)
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._lock:
            self._busy.discard(worker)
            extra = None
            if healthy:
                self._idle.append(worker)
                if len(self._idle) > self.size:  # workers of other scratch sizes, no longer needed
                    extra = self._idle.pop(0)
            else:
                extra = worker
        if extra is not None:
            extra.kill()

    def probe(self) -> None:
        """Start one worker now (SandboxUnavailable with the reason if it cannot start); keep it warm."""
        self._release(self._acquire(self.limits), True)

    # -- executions -------------------------------------------------------------------------------
    async def run(
        self, program: Program, limits: Limits | None = None, check: Check | None = None
    ) -> SandboxResult:
        """Run ``program`` when a worker is free; with ``check``, the verdict is the check's."""
        loop = asyncio.get_running_loop()
        state: dict[str, Any] = {}
        future = loop.run_in_executor(
            self._executor, self._execute, program, limits or self.limits, check, state
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # Not yet started: dropped from the executor's queue (else the interpreter runs every queued
            # program before it exits: a MAS run took minutes to stop after Ctrl-C).
            future.cancel()
            worker = state.get("worker")
            if worker is not None:
                state["cancelled"] = True
                worker.kill()  # ends the sandbox and everything in it
            raise

    def run_sync(
        self, program: Program, limits: Limits | None = None, check: Check | None = None
    ) -> SandboxResult:
        """The same, for callers without an event loop."""
        return self._execute(program, limits or self.limits, check, {})

    def _execute(
        self, program: Program, limits: Limits, check: Check | None, state: dict[str, Any]
    ) -> SandboxResult:
        with self._slots:
            worker = state["worker"] = self._acquire(limits)  # the clock starts once a worker is ready
            try:
                return self._on(worker, program, limits, check, time.monotonic(), state)
            except _Lost:  # the worker died before it took the program: once more on a new one
                worker = state["worker"] = self._acquire(limits)
                return self._on(worker, program, limits, check, time.monotonic(), state)
            finally:
                state.pop("worker", None)

    def _on(
        self,
        worker: _Worker,
        program: Program,
        limits: Limits,
        check: Check | None,
        started: float,
        state: dict[str, Any],
    ) -> SandboxResult:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out = os.memfd_create("stdout", 0)
        err = os.memfd_create("stderr", 0)
        header = {
            "timeout_s": limits.timeout_s,
            "cpu_s": limits.cpu_s,
            "process_memory": limits.process_memory,
            "file_bytes": limits.file_bytes,
            "nproc": limits.nproc,
        }
        healthy = True
        detail = ""
        verdict = False
        calls = 0
        outcome: dict[str, Any] = {}
        deadline = started + limits.timeout_s
        try:
            try:
                worker.start([theirs.fileno(), out, err], header)
            finally:
                theirs.close()
            channel = _Channel(ours, deadline)
            loaded = False
            try:
                channel.send(
                    {
                        "source": program.source,
                        "filename": program.filename,
                        "name": program.name,
                        "entry": program.entry,
                        "judge": program.judge,
                    }
                )
                reply = channel.receive()
                loaded = reply == {"loaded": True}
                if not loaded:
                    error = reply.get("error")
                    detail = (
                        ": ".join(str(x) for x in error)
                        if type(error) is list
                        else "the program did not load"
                    )
                elif program.judge:
                    verdict, detail, calls = _relay(channel, state["answer"])
                elif check is not None:
                    candidate = Candidate(channel)
                    try:
                        check(candidate)
                        if candidate.failure is not None:
                            raise candidate.failure
                        verdict = True
                    finally:
                        calls = candidate.calls
            except TimeoutError:
                detail = "timed out"
            except EOFError:
                detail = "the program ended before answering"
            except Exception as exc:  # the check failed: an assertion, a raised error, a refused value
                detail = f"{type(exc).__name__}: {exc}"[:2000]
            finally:
                ours.close()  # the child sees the end of its channel and exits
            try:
                outcome = worker.outcome(deadline + GRACE_S - time.monotonic())
            except _Lost as exc:
                healthy = False
                detail = detail or f"sandbox worker lost ({exc})"
            if state.get("cancelled"):
                healthy = False
            timed_out = bool(outcome.get("timeout")) or (not outcome and time.monotonic() > deadline)
            returncode = outcome.get("status")
            judged = check is not None or program.judge
            passed = verdict if judged else loaded and returncode == 0 and not timed_out
            status = "passed" if passed else ("timeout" if timed_out or detail == "timed out" else "failed")
            return SandboxResult(
                status=status,
                returncode=returncode if returncode is not None else (137 if timed_out else None),
                stdout=_text(out, limits.max_output),
                stderr=_text(err, limits.max_output),
                seconds=time.monotonic() - started,
                isolation=list(self.isolation),
                detail=detail,
                calls=calls,
                cpu_s=float(outcome.get("cpu_s", 0.0)),
                maxrss_kib=int(outcome.get("maxrss_kib", 0)),
            )
        except _Lost:
            healthy = False
            raise
        finally:
            os.close(out)
            os.close(err)
            self._release(worker, healthy)

    def judge(self, program: Program, candidate: Callable[..., Any], limits: Limits | None = None) -> None:
        """Run a judge program's ``check`` in a sandbox of its own against ``candidate`` (called from a
        check, in its thread); AssertionError when the check fails.

        It takes a worker outside the pool's slots (the program it judges holds one), so it never waits
        for itself.
        """
        limits = limits or self.limits
        worker = self._acquire(limits)
        result = self._on(worker, program, limits, None, time.monotonic(), {"answer": candidate})
        if not result.passed:
            raise AssertionError(f"the check failed in its sandbox: {result.detail}")

    def close(self) -> None:
        """Stop every worker (each also stops by itself when llmpsych exits)."""
        _stop(self._idle, self._busy, self._lock, self._executor)


def _relay(channel: _Channel, candidate: Callable[..., Any]) -> tuple[bool, str, int]:
    """Answer a sandboxed check's calls with ``candidate`` (fresh plain values both ways) until it sends
    its verdict; (verdict, detail, calls)."""
    calls = 0
    while True:
        message = channel.receive()
        if set(message) == {"request"} and type(message["request"]) is list and len(message["request"]) == 2:
            args, kwargs = _codec.decode(message["request"][0]), _codec.decode(message["request"][1])
            if type(args) is not list or type(kwargs) is not dict or any(type(k) is not str for k in kwargs):
                raise _codec.CodecError("malformed request")
            calls += 1
            try:
                value = candidate(*args, **kwargs)
            except Exception as exc:
                if getattr(candidate, "failure", None) is not None:
                    raise  # the program's own channel failed: no answer can be given
                channel.send({"raise": [type(exc).__name__, str(exc)[:2000]]})
                continue
            channel.send({"value": _codec.encode(value)})
        elif message == {"verdict": True}:
            return True, "", calls
        elif message.get("verdict") is False:
            error = message.get("error")
            return False, ": ".join(str(x) for x in error) if type(error) is list else "check failed", calls
        else:
            raise _codec.CodecError("malformed request")


def _stop(
    idle: list[_Worker], busy: set[_Worker], lock: threading.Lock, executor: ThreadPoolExecutor
) -> None:
    with lock:
        workers = [*idle, *busy]
        idle.clear()
    for worker in workers:
        worker.close()
    executor.shutdown(wait=False)
