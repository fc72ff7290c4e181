"""Run untrusted generated code in a separate, limited process, never in the framework's own.

Each execution is a fresh ``python -I -S`` child (standard library only, no site-packages) in its own
session and a throwaway working directory:

* resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC``, no core files);
* no network: the child unshares a new network namespace (only a down loopback) when the kernel allows
  it (as root, or through an unprivileged user namespace); in every case an audit hook inside the child
  refuses socket creation and connection;
* as root, the child drops to ``nobody`` so that file permissions, and ``RLIMIT_NPROC``, apply;
* the audit hook also refuses writes, deletions and renames outside the working directory, starting
  programs, signalling processes and loading native code through ``ctypes``;
* the parent kills the whole process group on timeout and removes the working directory.

Limitation: without root or user namespaces, network isolation rests on the audit hook alone, which
native extension code could bypass; ``SandboxResult.isolation`` says which layers were active.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

NOBODY = 65534

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
    returncode: int | None
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
import ctypes, json, os, resource, sys
cfg = json.loads(sys.stdin.readline())
code = sys.stdin.read()
isolation = []
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
if os.geteuid() == 0 and libc.unshare(CLONE_NEWNET) == 0:
    isolation.append("netns")
elif os.geteuid() != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
    isolation.append("userns+netns")
for name in cfg["preload"]:
    try:
        __import__(name)
    except ImportError:
        pass
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
R.setrlimit(R.RLIMIT_CORE, (0, 0))
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


def _limit(text: bytes, size: int) -> str:
    decoded = text.decode("utf-8", "replace")
    return decoded if len(decoded) <= size else decoded[:size] + "\n[... truncated]"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_code(code: str, limits: Limits | None = None) -> SandboxResult:
    """Execute ``code`` in a sandboxed child; passed means it ran to its end within the limits."""
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
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        "-c",
        _BOOTSTRAP,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(workdir),
        start_new_session=True,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    payload = (json.dumps(header) + "\n" + code).encode()
    talk = asyncio.ensure_future(proc.communicate(payload))
    try:
        done, _ = await asyncio.wait({talk}, timeout=limits.timeout_s)
        timed_out = not done
        if timed_out:
            _kill_group(proc.pid)
        out, err = await talk
    finally:
        _kill_group(proc.pid)  # whatever the program left behind in its group
        shutil.rmtree(workdir, ignore_errors=True)
    stdout = _limit(out, limits.max_output)
    stderr = _limit(err, limits.max_output)
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
    """At most ``size`` sandboxed executions at once (a pool of worker processes)."""

    def __init__(self, size: int | None = None, limits: Limits | None = None) -> None:
        self.size = size or max(1, os.cpu_count() or 1)
        self.limits = limits or Limits()
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    async def run(self, code: str, limits: Limits | None = None) -> SandboxResult:
        """Run ``code`` when a worker slot is free."""
        loop_id = id(asyncio.get_running_loop())
        semaphore = self._semaphores.setdefault(loop_id, asyncio.Semaphore(self.size))
        async with semaphore:
            return await run_code(code, limits or self.limits)
