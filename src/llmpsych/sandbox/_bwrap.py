"""The bubblewrap command line of a worker: what the sandbox sees, and nothing more.

Bound read-only: ``/usr`` (and ``/bin``, ``/lib``, ``/lib64``, ``/sbin`` as on the host: symlinks or
binds), the interpreter's own prefix (``sys.base_prefix``, e.g. ``/root/.pyenv/versions/3.11.7``, at
the same path, so a pyenv Python under ``/root`` works without exposing anything else of ``/root``) and
this package's folder at ``/llmpsych-sandbox``. Not bound: ``/etc``, ``/home``, ``/root`` itself, the
user's configuration, the run folder, ``/var``, ``/work``... A new ``/proc`` (of the new PID
namespace), a minimal ``/dev``, a ``/tmp`` tmpfs of ``scratch_bytes``; the root is a tmpfs remounted
read-only. Namespaces: PID, network (only a down loopback), IPC, UTS, mount, cgroup; the environment is
cleared. ``--die-with-parent`` ends the sandbox with llmpsych, ``--new-session`` takes the terminal away.

As root (the usual case in containers), bubblewrap runs privileged without a user namespace and keeps
only ``CAP_SETUID``, ``CAP_SETGID`` and ``CAP_KILL`` for the worker, which runs every program under a
dedicated uid: the program has no capability, cannot signal the worker, and ``RLIMIT_NPROC`` applies
to it (the kernel never applies it to uid 0). Otherwise bubblewrap makes a user namespace, and
``--disable-userns`` stops the program from making another.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
INSIDE_DIR = "/llmpsych-sandbox"
#: Dedicated uids for programs when llmpsych runs as root: far above any real account.
UID_BASE = 2_000_000_000

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; "
    "Arch: pacman -S bubblewrap), or pass --unsafe-local-exec to run model-written code without isolation"
)


def bwrap_path() -> str | None:
    """The ``bwrap`` executable: ``$LLMPSYCH_BWRAP`` if set (e.g. a binary you built or chose), else the
    one on ``PATH`` (the distribution's package); None if there is none."""
    chosen = os.environ.get("LLMPSYCH_BWRAP")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return shutil.which("bwrap")


def interpreter() -> tuple[str, list[str]]:
    """The base interpreter (not a venv's launcher) and the prefixes it needs, outside ``/usr``."""
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    prefixes: list[str] = []
    for prefix in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}:
        if not _under(prefix, "/usr") and prefix not in prefixes:
            prefixes.append(prefix)
    if not any(_under(executable, p) for p in [*prefixes, "/usr"]):
        prefixes.append(os.path.dirname(executable))
    return executable, sorted(prefixes)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def command(bwrap: str, control_fd: int, seccomp_fd: int | None, scratch_bytes: int, uid: int) -> list[str]:
    """The argv that starts one worker; ``uid`` >= 0 means privileged mode (llmpsych runs as root)."""
    executable, prefixes = interpreter()
    argv = [bwrap]
    if uid >= 0:
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        argv += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL"):
            argv += ["--cap-add", cap]
    else:
        argv += ["--unshare-all", "--unshare-user", "--disable-userns"]
    argv += ["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    made: set[str] = set()
    for prefix in prefixes:
        # the folders above a prefix exist only in the sandbox, searchable by the program's uid
        parts = Path(prefix).parts[1:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/" + "/".join(parts[:depth])
            if folder not in made:
                made.add(folder)
                argv += ["--perms", "0755", "--dir", folder]
        argv += ["--ro-bind", prefix, prefix]
    argv += ["--ro-bind", str(PACKAGE_DIR), INSIDE_DIR]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", str(scratch_bytes), "--tmpfs", "/tmp"]
    argv += ["--remount-ro", "/"]
    argv += ["--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8"]
    # one malloc arena per thread would reserve 64 MiB of address space each: threads then hit RLIMIT_AS
    argv += ["--setenv", "MALLOC_ARENA_MAX", "2"]
    argv += ["--chdir", "/"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += [executable, "-I", "-S", f"{INSIDE_DIR}/_worker.py", str(control_fd), str(uid), "/tmp", "1"]
    return argv


def local_command(control_fd: int, scratch: str) -> list[str]:
    """The argv of an unisolated worker (``--unsafe-local-exec``): the same worker, no namespaces."""
    executable, _ = interpreter()
    return [executable, "-I", "-S", str(PACKAGE_DIR / "_worker.py"), str(control_fd), "-1", scratch, "0"]
