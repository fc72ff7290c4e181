"""The warm worker inside the sandbox: forks one child per execution, then clears up after it.

Started once per worker slot as ``python -I -S /llmpsych-sandbox/_worker.py CONTROL_FD UID SCRATCH
ISOLATED`` inside bubblewrap (standard library only; ``UID`` -1 keeps the worker's own uid). It never
runs a program itself. For each request on the control socket (the limits as JSON, and three file
descriptors: the execution's channel, stdout and stderr) it

1. forks a child that starts a session, takes those descriptors as fds 3, 1 and 2 (stdin is
   ``/dev/null``, nothing else stays open), drops to ``UID`` when the worker runs as root (so the
   program holds no capability and cannot signal the worker), sets the resource limits, makes a fresh
   scratch folder and runs :func:`_child.serve`;
2. waits for the child with the wall-time limit, SIGKILLs it on expiry;
3. SIGKILLs every other process in the sandbox's PID namespace until none is left (whatever the
   program left behind, in any session), empties the scratch tmpfs as ``UID``, and reports the exit
   status, whether the time ran out, and the child's CPU time and peak memory.

Without isolation (``ISOLATED`` 0, ``--unsafe-local-exec``) the worker is a child subreaper and kills
only its own descendants; the scratch is a private temporary folder.

One execution at a time per worker: nothing of one program is left for the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import select
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if TYPE_CHECKING:  # the checker reads the package; inside the sandbox it is a top-level module
    from llmpsych.sandbox import _child
else:
    import _child

#: Standard modules imported once here, so that a program's imports cost nothing.
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
    "math",
    "numbers",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "textwrap",
    "typing",
    "unicodedata",
    "traceback",
]

SCRATCH = "/tmp"
ISOLATED = True


def _drop(uid: int) -> None:
    if uid >= 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from uid 0 to another uid: every capability is cleared


def _limit(limits: dict[str, int]) -> None:
    r = resource
    r.setrlimit(r.RLIMIT_CORE, (0, 0))
    r.setrlimit(r.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    r.setrlimit(r.RLIMIT_AS, (limits["process_memory"], limits["process_memory"]))
    r.setrlimit(r.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    r.setrlimit(r.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    r.setrlimit(r.RLIMIT_NOFILE, (256, 256))


def _child_main(fds: list[int], limits: dict[str, int], uid: int) -> None:
    status = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        # above every target first, so that no dup2 below overwrites a descriptor still to be moved
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (null, fds[0], fds[1], fds[2])]
        for target, fd in zip((0, 3, 1, 2), high, strict=True):
            os.dup2(fd, target)
        os.closerange(4, 1 << 16)
        _drop(uid)
        _limit(limits)
        workdir = os.path.join(SCRATCH, "run")
        os.mkdir(workdir, 0o700)
        os.chdir(workdir)
        os.environ.clear()
        os.environ.update({"HOME": workdir, "TMPDIR": workdir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        if "random" in sys.modules:
            sys.modules["random"].seed()  # a fork would otherwise repeat the worker's sequence
        sys.argv = ["<program>"]
        status = _child.serve()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(status & 0xFF)


def _others() -> list[int]:
    """Live processes to end: in the sandbox, all of its PID namespace but its init (1) and this
    worker; without isolation, this worker's descendants (it is their subreaper)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            parents[int(name)] = int(fields[1])
    if ISOLATED:
        return list(parents)
    found: list[int] = []
    frontier = {me}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier}
        found += frontier
    return found


#: A process that survives SIGKILL this long (stuck in the kernel) ends the worker instead: bubblewrap then
#: tears the whole namespace down, and llmpsych starts a new worker.
SWEEP_BUDGET_S = 5.0


def _sweep() -> None:
    """SIGKILL everything the program left, in any session, until nothing is left; reap our children."""
    deadline = time.monotonic() + SWEEP_BUDGET_S
    while True:
        if time.monotonic() > deadline:
            os._exit(1)
        rest = _others()
        for pid in rest:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not rest:
            return
        time.sleep(0.001)


def _clear_scratch(uid: int) -> None:
    """Empty the scratch tmpfs, as the program's uid (it may have made its folders unreadable)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        with contextlib.suppress(BaseException):
            _drop(uid)
            for root, dirs, _files in os.walk(SCRATCH):
                for name in dirs:
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(root, name), 0o700)
            for root, dirs, files in os.walk(SCRATCH, topdown=False):
                for name in files:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(root, name))
                for name in dirs:
                    path = os.path.join(root, name)
                    with contextlib.suppress(OSError):
                        os.unlink(path) if os.path.islink(path) else os.rmdir(path)
            code = 1 if os.listdir(SCRATCH) else 0
        os._exit(code)
    os.waitpid(pid, 0)


def _exits_within(pid: int, seconds: float) -> bool:
    """Whether the child ``pid`` ends within ``seconds`` (it is not reaped here)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux before 5.3: poll
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            time.sleep(0.001)
        return False
    try:
        return bool(select.select([pidfd], [], [], seconds)[0])
    finally:
        os.close(pidfd)


def run_one(fds: list[int], limits: dict[str, int], uid: int) -> dict[str, object]:
    """One execution: fork, wait with the wall-time limit, then clear up; the outcome."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child_main(fds, limits, uid)
    for fd in fds:
        os.close(fd)
    timed_out = not _exits_within(pid, limits["timeout_s"])
    if timed_out:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - started
    _sweep()
    _clear_scratch(uid)
    return {
        "status": os.waitstatus_to_exitcode(status),
        "timeout": timed_out,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
    }


def main() -> None:
    """Serve requests on the control socket until it closes."""
    global SCRATCH, ISOLATED
    control = socket.socket(fileno=int(sys.argv[1]))
    uid = int(sys.argv[2])
    SCRATCH, ISOLATED = sys.argv[3], sys.argv[4] == "1"
    if not ISOLATED:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    if uid < 0:  # the programs run as this worker's uid: keep /proc/<worker>/mem and ptrace closed to them
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    import gc

    gc.freeze()  # fewer copy-on-write pages in each fork
    control.send(b'{"ready": true}')
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        except OSError:
            return
        if not data:
            return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        outcome = run_one(fds, json.loads(data), uid)
        control.send(json.dumps(outcome).encode())


if __name__ == "__main__":
    main()
