"""Run untrusted generated code in a separate, limited process, never in the framework's own.

Each execution is a fresh ``python -I -S`` child (standard library only, no site-packages) in its own
session and a throwaway working directory:

* resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC``, no core files);
* no network: the child unshares a new network namespace (only a down loopback) when the kernel allows
  it (as root, or through an unprivileged user namespace); in every case an audit hook inside the child
  refuses socket creation and connection;
* as root, the program drops to ``nobody`` so that file permissions, and ``RLIMIT_NPROC``, apply;
* the audit hook also refuses writes, deletions and renames outside the working directory, starting
  programs, signalling processes and loading native code through ``ctypes``;
* no process outlives its execution (see below), and the working directory is removed.

Containment of descendants. ``os.fork`` stays allowed, so a program can leave its process group with
``os.setsid()`` or daemonize with a double fork, keeping (or closing) the output pipes. The direct
child is therefore only a *keeper*: it unshares a new PID namespace (as root, or inside the user
namespace) and forks a trusted init (PID 1 there), which forks the program and reaps everything until
the program's main process ends. When that init exits, or is killed, the kernel kills every process
left in the namespace: ``setsid`` and double forks cannot leave it. The init also has a parent-death
signal, so killing the keeper kills it. Where no PID namespace can be created (non-root without user
namespaces, or a seccomp policy that forbids ``unshare``), the keeper makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``, unprivileged), so orphans are re-parented to it instead of to PID 1, and it
kills its remaining children when the program ends. On timeout (or cancellation) the parent, in both
cases, SIGKILLs every descendant of the keeper (parent links read from ``/proc``) until none is left,
lets the keeper reap them and exit, and SIGKILLs the keeper and its group if it has not. The parent
never waits for the output pipes to close: it reads them as data comes (bounded), and once the keeper
has exited it gives them a short grace period (``DRAIN_GRACE_S``) for the last bytes, then closes them.
A dedicated uid with "kill every process of that uid" was not chosen: ``nobody`` is shared with other
services and with concurrent executions, and without root there is no uid to switch to.

Warm start. :class:`SandboxPool` (what the ``mas`` task uses) keeps one pre-started worker per event
loop: a ``python -I -S`` with the standard modules already imported, which never runs generated code but
forks a keeper per execution, with the request's stdin file and output pipes passed over a Unix socket.
The keeper runs the same bootstrap as a cold start (namespaces, init, privileges, limits, audit hook),
so containment is the same; what is saved is the interpreter start-up and imports (about 60 ms of CPU
per execution). Each program reseeds ``random``; string hashing shares the worker's seed. If the worker
dies, the execution is retried cold and the next one starts a new worker.

Limitation: without root or user namespaces, network isolation rests on the audit hook alone, which
native extension code could bypass, and so does the keeper's protection against being signalled by
the program (they then run as the same user); ``SandboxResult.isolation`` says which layers were
active (``netns`` or ``userns+netns``, ``pidns`` or ``subreaper``, ``uid-nobody``, ``rlimits``,
``audit``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

NOBODY = 65534

#: Put each execution in its own PID namespace when the kernel allows it (tests turn it off to exercise
#: the subreaper fallback).
USE_PID_NAMESPACE = True

#: After the keeper has exited (or been killed), how long to wait for the output pipes' last bytes.
DRAIN_GRACE_S = 0.5

#: Standard modules imported before privileges are dropped (as root, the child runs as ``nobody``, who
#: may not be able to read the interpreter's library folder).
PRELOAD = [
    "abc",
    "array",
    "bisect",
    "cmath",
    "collections",
    "collections.abc",
    "copy",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "itertools",
    "json",
    "math",
    "numbers",
    "operator",
    "random",
    "re",
    "socket",
    "statistics",
    "string",
    "sys",
    "textwrap",
    "time",
    "typing",
    "unicodedata",
]


@dataclass(frozen=True)
class Limits:
    """Resource limits for one execution."""

    timeout_s: float = 3.0
    cpu_s: int = 4
    memory_bytes: int = 512 << 20
    file_bytes: int = 1 << 20
    nproc: int = 32
    max_output: int = 20_000


@dataclass
class SandboxResult:
    """What happened to one execution."""

    status: str  # "passed", "failed", "timeout"
    returncode: int | None  # the program's exit status, 128 + N if signal N ended it (137 on timeout)
    stdout: str
    stderr: str
    seconds: float
    isolation: list[str]

    @property
    def passed(self) -> bool:
        """The program ran to its end without an exception."""
        return self.status == "passed"

    def to_json(self) -> dict[str, object]:
        """A JSON-ready record."""
        return asdict(self)


_BOOTSTRAP = r"""
import ctypes, json, os, resource, select, signal, sys, time
cfg = json.loads(sys.stdin.readline())
code = sys.stdin.read()
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
isolation = []
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID = 0x40000000, 0x10000000, 0x20000000
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
if os.geteuid() == 0 and libc.unshare(CLONE_NEWNET) == 0:
    isolation.append("netns")
elif os.geteuid() != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
    isolation.append("userns+netns")
pidns = cfg["pidns"] and libc.unshare(CLONE_NEWPID) == 0
if pidns:
    isolation.append("pidns")
elif libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
    isolation.append("subreaper")
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
def _reap(main):
    # reap every child (orphans are re-parented here) until the main one ends; its wait status
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == main:
            return status
def _end_orphans():
    # subreaper: SIGKILL the children left behind until none is left
    me = str(os.getpid())
    while True:
        for name in os.listdir("/proc"):
            try:
                with open("/proc/" + name + "/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[1] == me and fields[0] != "Z":
                    os.kill(int(name), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.002)
def _leave(status):
    # the keeper or init exits like the program (128 + N for signal N); never holds the output pipes
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)
def _quiet():
    os.dup2(null, 1)
    os.dup2(null, 2)
if pidns:
    alive_r, alive_w = os.pipe()
    init = os.fork()
    if init:
        os.close(alive_r)
        _quiet()
        _leave(os.waitpid(init, 0)[1])
    os.close(alive_w)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(137)  # the keeper died before the parent-death signal was set
    os.close(alive_r)
main = os.fork()
if main:
    _quiet()
    status = _reap(main)
    if not pidns:
        _end_orphans()
    _leave(status)  # as PID 1, its exit makes the kernel kill whatever is left in the namespace
os.close(null)
del _reap, _end_orphans, _leave, _quiet, main, pidns
for name in cfg["preload"]:
    try:
        __import__(name)
    except ImportError:
        pass
if "random" in sys.modules:
    sys.modules["random"].seed()  # a warm worker's fork would otherwise share its parent's state
work = cfg["workdir"]
os.chdir(work)
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid(cfg["nobody"])
    os.setuid(cfg["nobody"])
    isolation.append("uid-nobody")
os.environ.clear()
os.environ.update({"HOME": work, "TMPDIR": work, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
R = resource
R.setrlimit(R.RLIMIT_CPU, (cfg["cpu"], cfg["cpu"] + 1))
R.setrlimit(R.RLIMIT_AS, (cfg["mem"], cfg["mem"]))
R.setrlimit(R.RLIMIT_FSIZE, (cfg["fsize"], cfg["fsize"]))
R.setrlimit(R.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))
isolation.append("rlimits")
sys.stderr.write("#isolation " + ",".join(isolation + ["audit"]) + "\n")
sys.stderr.flush()
marker = cfg["marker"]
del cfg
root = os.path.realpath(work) + os.sep
def _inside(p):
    if isinstance(p, int):
        return True
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return (os.path.realpath(str(p)) + os.sep).startswith(root)
_BLOCKED = {"socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
            "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.kill",
            "os.killpg", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.forkpty", "pty.spawn",
            "os.chroot", "os.startfile", "webbrowser.open", "sys.remote_exec"}
_PATHS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink",
          "os.truncate", "shutil.rmtree", "shutil.copyfile", "shutil.move", "os.utime"}
def _guard(event, args):
    if event in _BLOCKED:
        raise PermissionError("sandbox: " + event + " is not allowed")
    if event == "open":
        path, mode, flags = args
        writing = (mode and any(c in str(mode) for c in "wax+")) or (flags or 0) & 0o3 or (flags or 0) & 0o100
        if writing and not _inside(path):
            raise PermissionError("sandbox: writing outside the working directory")
    elif event in _PATHS and args and not _inside(args[0]):
        raise PermissionError("sandbox: " + event + " outside the working directory")
    elif event == "os.rename" and not (_inside(args[0]) and _inside(args[1])):
        raise PermissionError("sandbox: os.rename outside the working directory")
sys.addaudithook(_guard)
del ctypes, libc
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
exec(compile(code, "<generated>", "exec"), namespace)
sys.stdout.flush()
sys.stdout.write("\n" + marker + "\n")
sys.stdout.flush()
os._exit(0)
"""


_WORKER = r"""
import os, signal, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
for name in sys.argv[2].split(","):
    try:
        __import__(name)
    except ImportError:
        pass
import ctypes, json, resource, select, time, traceback
keeper = compile(sys.argv[3], "<sandbox>", "exec")
sys.argv = ["-c"]
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *a: None)
children = set()
import gc
gc.freeze()  # fewer copy-on-write pages in each fork
def _exit_code(exc):
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1
def _child(fds):
    # the keeper: a fresh session, the request's stdin/stdout/stderr, nothing else of the worker's
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 20)
        exec(keeper, {"__name__": "__main__", "__builtins__": __builtins__})
        status = 0
    except SystemExit as exc:
        status = _exit_code(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(status)
while True:
    ready = select.select([sock, wake_r], [], [])[0]
    if wake_r in ready:
        try:
            os.read(wake_r, 4096)
        except BlockingIOError:
            pass
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not pid:
                break
            children.discard(pid)
            sock.send(b"exit %d %d" % (pid, status))
    if sock in ready:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 64, 3)
        except OSError:
            data = b""
        if not data:
            break
        pid = os.fork()
        if pid == 0:
            _child(fds)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        sock.send(b"pid %d" % pid)
for pid in children:  # the framework went away: end what is still running
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""


class SandboxLost(RuntimeError):
    """The warm worker died while an execution was starting or running."""


class _WarmProcess:
    """A keeper forked by the warm worker, with the part of ``asyncio.subprocess.Process`` used here."""

    def __init__(self, pid: int, exited: asyncio.Future[int]) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._exited = exited
        exited.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[int]) -> None:
        if not future.cancelled() and future.exception() is None:
            self.returncode = future.result()

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)


class _WarmWorker:
    """A pre-started ``python -I -S`` with the standard modules imported, forking one keeper per execution.

    It never runs generated code itself: each request (the stdin file with the header and the code, and
    the two output pipes, passed as file descriptors over a Unix socket) is forked into a keeper in its
    own session that runs the same bootstrap as a cold start, so every program still has its own
    process, namespaces, limits and working directory. The worker reaps the keepers and reports their
    exit status; it exits when the framework closes the socket (or dies), killing live keepers.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _WORKER,
                    str(theirs.fileno()),
                    ",".join(PRELOAD),
                    _BOOTSTRAP,
                ],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        finally:
            theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.lost = False
        self._starts: collections.deque[asyncio.Future[_WarmProcess]] = collections.deque()
        self._exits: dict[int, asyncio.Future[int]] = {}
        loop.add_reader(ours.fileno(), self._read)
        weakref.finalize(self, _stop_worker, ours, self.proc)

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(64)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.close()
                return
            kind, *fields = data.split()
            if kind == b"pid":
                pid = int(fields[0])
                exited = self._exits[pid] = self.loop.create_future()
                start = self._starts.popleft()
                if start.done():  # the execution was cancelled while starting
                    _kill_tree(pid)
                else:
                    start.set_result(_WarmProcess(pid, exited))
            elif kind == b"exit":
                exited = self._exits.pop(int(fields[0]), None)
                if exited is not None and not exited.done():
                    exited.set_result(os.waitstatus_to_exitcode(int(fields[1])))

    async def start(self, fds: list[int]) -> _WarmProcess:
        """Fork a keeper with ``fds`` as its stdin, stdout and stderr."""
        if self.lost:
            raise SandboxLost("the warm sandbox worker is gone")
        started = self.loop.create_future()
        self._starts.append(started)
        try:
            socket.send_fds(self.sock, [b"run"], fds)
        except OSError as exc:
            self._starts.remove(started)
            self.close()
            raise SandboxLost(f"the warm sandbox worker is gone ({exc})") from exc
        return await started

    def close(self) -> None:
        """Stop the worker (it kills live keepers); pending executions raise :class:`SandboxLost`."""
        if self.lost:
            return
        self.lost = True
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.sock.fileno())
        _stop_worker(self.sock, self.proc)
        for future in [*self._starts, *self._exits.values()]:
            if not future.done():
                future.set_exception(SandboxLost("the warm sandbox worker is gone"))
                future.exception()  # retrieved: nobody may be waiting for it
        self._starts.clear()
        self._exits.clear()


def _stop_worker(sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
    sock.close()
    try:
        proc.wait(1.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _limit(text: bytes, size: int) -> str:
    decoded = text.decode("utf-8", "replace")
    return decoded if len(decoded) <= size else decoded[:size] + "\n[... truncated]"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _descendants(root: int) -> list[int]:
    """Live processes below ``root``, following the parent links in ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _kill_descendants(pid: int, budget_s: float = 2.0) -> None:
    """SIGKILL every descendant of the keeper ``pid`` until none is left.

    The keeper is spared: while it lives, orphans are re-parented to it (or to the init of its PID
    namespace) rather than to PID 1, where they could no longer be found; it then reaps them and exits.
    """
    deadline = time.monotonic() + budget_s
    while True:
        rest = _descendants(pid)
        for child in rest:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        if not rest or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def _kill_tree(pid: int) -> None:
    """SIGKILL the keeper ``pid`` after all its descendants, then its whole group."""
    _kill_descendants(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    _kill_group(pid)


class _Output:
    """One output pipe, read as data comes (bounded), never awaited to its end: closed on demand."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int) -> None:
        self._loop, self._fd, self._cap = loop, fd, cap
        self.data = bytearray()
        self.closed: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.close()
            return
        room = self._cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        if not self.closed.done():
            self.closed.set_result(None)


async def _spawn(stdin: object, out_w: int, err_w: int, workdir: Path) -> asyncio.subprocess.Process:
    """A cold start: a fresh ``python -I -S`` running the bootstrap."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        "-c",
        _BOOTSTRAP,
        stdin=stdin,
        stdout=out_w,
        stderr=err_w,
        cwd=str(workdir),
        start_new_session=True,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


async def run_code(
    code: str, limits: Limits | None = None, worker: _WarmWorker | None = None
) -> SandboxResult:
    """Execute ``code`` in a sandboxed child; passed means it ran to its end within the limits.

    The child is a fresh interpreter, or a fork of the warm ``worker`` (same bootstrap, no interpreter
    start-up). Returns within about ``limits.timeout_s`` plus a fraction of a second, whatever the
    program does with its descendants and its output pipes.
    """
    limits = limits or Limits()
    loop = asyncio.get_running_loop()
    started = loop.time()
    workdir = Path(tempfile.mkdtemp(prefix="llmpsych-sandbox-"))
    if os.geteuid() == 0:
        os.chown(workdir, NOBODY, NOBODY)
    marker = "#done-" + secrets.token_hex(16)
    header = {
        "workdir": str(workdir),
        "nobody": NOBODY,
        "cpu": limits.cpu_s,
        "mem": limits.memory_bytes,
        "fsize": limits.file_bytes,
        "nproc": limits.nproc,
        "marker": marker,
        "preload": PRELOAD,
        "pidns": USE_PID_NAMESPACE,
    }
    # Bytes kept per stream: enough for max_output characters of any UTF-8 text.
    cap = 4 * limits.max_output + 4096
    proc: asyncio.subprocess.Process | _WarmProcess | None = None
    outputs: list[_Output] = []
    read_ends: list[int] = []
    timed_out = False
    try:
        with tempfile.TemporaryFile() as stdin:
            stdin.write((json.dumps(header) + "\n" + code).encode())
            stdin.seek(0)
            out_r, out_w = os.pipe()
            read_ends.append(out_r)
            try:
                err_r, err_w = os.pipe()
            except OSError:
                os.close(out_w)
                raise
            read_ends.append(err_r)
            try:
                if worker is not None:
                    proc = await worker.start([stdin.fileno(), out_w, err_w])
                else:
                    proc = await _spawn(stdin, out_w, err_w, workdir)
            finally:
                os.close(out_w)
                os.close(err_w)
        while read_ends:
            outputs.append(_Output(loop, read_ends.pop(0), cap))
        try:
            await asyncio.wait_for(proc.wait(), limits.timeout_s)
        except TimeoutError:
            timed_out = True
            _kill_descendants(proc.pid)
            try:  # the keeper reaps them and exits by itself
                await asyncio.wait_for(proc.wait(), DRAIN_GRACE_S)
            except TimeoutError:
                _kill_tree(proc.pid)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 5.0)
        # Everything the program started is gone by now (PID namespace, subreaper or _kill_tree); give
        # the pipes a moment for their last bytes, but never wait for their end.
        await asyncio.wait([o.closed for o in outputs], timeout=DRAIN_GRACE_S)
    finally:
        for output in outputs:
            output.close()
        for fd in read_ends:
            os.close(fd)
        if proc is not None:
            if proc.returncode is None:
                _kill_tree(proc.pid)
            _kill_group(proc.pid)  # whatever the program left behind in its group
        shutil.rmtree(workdir, ignore_errors=True)
    stdout = _limit(bytes(outputs[0].data), limits.max_output)
    stderr = _limit(bytes(outputs[1].data), limits.max_output)
    isolation: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("#isolation "):
            isolation = line.split(" ", 1)[1].split(",")
            break
    finished = proc.returncode == 0 and stdout.rstrip().endswith(marker)
    status = "timeout" if timed_out else ("passed" if finished else "failed")
    stdout = stdout.replace("\n" + marker + "\n", "")
    return SandboxResult(status, proc.returncode, stdout, stderr, loop.time() - started, isolation)


class SandboxPool:
    """At most ``size`` sandboxed executions at once (default: two per core, since an execution mostly
    waits for its processes to be created, scheduled and reaped; a CPU-bound program still has its own
    ``RLIMIT_CPU``).

    With ``warm`` (the default) each event loop gets one pre-started worker that forks a keeper per
    execution (see :class:`_WarmWorker`), saving the interpreter start-up and standard-module imports
    of a cold start; if that worker dies, the execution is retried cold and the next one starts a new
    worker.
    """

    def __init__(self, size: int | None = None, limits: Limits | None = None, warm: bool = True) -> None:
        self.size = size or 2 * max(1, os.cpu_count() or 1)
        self.limits = limits or Limits()
        self.warm = warm
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._workers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _WarmWorker] = (
            weakref.WeakKeyDictionary()
        )

    def _worker(self) -> _WarmWorker | None:
        if not self.warm:
            return None
        loop = asyncio.get_running_loop()
        worker = self._workers.get(loop)
        if worker is None or worker.lost:
            for other, old in list(self._workers.items()):
                if other.is_closed():
                    old.close()
                    del self._workers[other]
            worker = self._workers[loop] = _WarmWorker(loop)
        return worker

    async def run(self, code: str, limits: Limits | None = None) -> SandboxResult:
        """Run ``code`` when a worker slot is free."""
        loop_id = id(asyncio.get_running_loop())
        semaphore = self._semaphores.setdefault(loop_id, asyncio.Semaphore(self.size))
        async with semaphore:
            try:
                return await run_code(code, limits or self.limits, self._worker())
            except SandboxLost:
                return await run_code(code, limits or self.limits)

    def close(self) -> None:
        """Stop the warm workers (they also stop by themselves when this process ends)."""
        for worker in list(self._workers.values()):
            worker.close()
        self._workers.clear()
