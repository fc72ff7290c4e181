"""Which runs exist under the served folders, what state each is in, and which of their files may be shown.

Every path the pages use comes from here: a URL names a run by an id made when the folders were scanned
and a file by a name found in the run's own listing, so no request can reach a path it builds itself.
Scanning never follows a symbolic link (a run folder, a sub-folder or a file planted as a link to
elsewhere is not listed), and a file is opened with ``O_NOFOLLOW`` after its folder is checked to lie
inside the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..report.summary import _answer_counts
from ..runs.store import LOCK_FILE, STORE_FILE
from ..runs.store import run_locked as store_locked
from . import store

#: How deep below a served folder runs are looked for (a preset writes ``out/preset/run``).
MAX_DEPTH = 4
#: A hosted session's file in its run folder (:mod:`.session`): every seat token and the form secret.
SESSION_FILE = "session.json"
#: Files of a run folder never listed or served, in any of its folders: the store's own, and the files
#: holding secrets (a seat token admits anyone to that seat while the session runs or is resumed).
_PRIVATE = {
    STORE_FILE,
    LOCK_FILE,
    f"{STORE_FILE}-wal",
    f"{STORE_FILE}-shm",
    f"{STORE_FILE}-journal",
    SESSION_FILE,
}
#: What a run's files are served as; anything else is not listed.
CONTENT_TYPES = {
    ".png": "image/png",
    ".md": "text/plain; charset=utf-8",
    ".csv": "text/plain; charset=utf-8",
    ".json": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".log": "text/plain; charset=utf-8",
}
#: Largest file served (bytes): a report's PNG or table is far smaller.
MAX_FILE_BYTES = 64 * 2**20
#: Most files listed for one run (a game run writes one transcript per game; far fewer than this).
MAX_FILES = 5000
#: A run's status; ``unreadable``: its store cannot be read (damaged, empty, not a run store), so nothing
#: about its units is known (its files are still listed).
STATUSES = ("running", "done", "failed", "interrupted", "unreadable")


@dataclass
class RunInfo:
    """What the runs page shows of one run."""

    run_id: str
    run_dir: Path
    label: str
    task: str = "?"
    models: list[str] = field(default_factory=list)
    status: str = "interrupted"
    total: int = 0
    done: int = 0
    failed: int = 0
    valid: int = 0
    answers: int = 0
    calls: int = 0
    started: float | None = None
    last: float | None = None
    error: str | None = None
    #: the store was unreadable because another process held it (status ``unreadable``, try again)
    busy: bool = False

    @property
    def progress(self) -> float:
        return (self.done + self.failed) / self.total if self.total else 0.0

    @property
    def valid_rate(self) -> float | None:
        return self.valid / self.answers if self.answers else None

    @property
    def started_text(self) -> str:
        if self.started is None:
            return "–"
        try:
            return datetime.fromtimestamp(self.started, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, ValueError, OSError):  # a stored time no calendar holds
            return f"{self.started!r} (not a time)"

    def as_json(self) -> dict[str, Any]:
        rate = self.valid_rate
        return {
            "id": self.run_id,
            "status": self.status,
            "done": self.done,
            "failed": self.failed,
            "total": self.total,
            "calls": self.calls,
            "progress": f"{self.done + self.failed}/{self.total}",
            "percent": round(100 * self.progress, 1),
            "valid": "–" if rate is None else f"{rate:.1%} ({self.valid}/{self.answers})",
        }


def _signature(run_dir: Path) -> tuple[Any, ...]:
    """Changes whenever the store does (its file or its write-ahead log)."""
    parts: list[Any] = []
    for name in (STORE_FILE, f"{STORE_FILE}-wal"):
        try:
            info = (run_dir / name).lstat()
            parts.append((info.st_mtime_ns, info.st_size))
        except OSError:
            parts.append(None)
    return tuple(parts)


def _run_id(root_index: int, relative: str) -> str:
    """A short, stable id for a run (its folder relative to the served folder, hashed)."""
    digest = hashlib.sha256(f"{root_index}\0{relative}".encode()).hexdigest()[:12]
    return digest


class Catalog:
    """The runs under the served folders, re-scanned at most every ``rescan_s`` seconds.

    Tallies (valid answers) are kept per run and extended by the units finished since the last look, so
    a running run with thousands of units costs one cheap status query per refresh.
    """

    def __init__(self, roots: list[Path], rescan_s: float = 2.0) -> None:
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self.rescan_s = rescan_s
        self._lock = threading.Lock()
        self._tally_lock = threading.Lock()
        self._scanned = 0.0
        self._dirs: dict[str, tuple[Path, str]] = {}
        self._infos: dict[str, tuple[tuple[Any, ...], bool, RunInfo]] = {}
        self._counted: dict[str, dict[str, tuple[int, int] | None]] = {}
        self._files: dict[str, tuple[float, list[str]]] = {}

    # -- discovery -----------------------------------------------------------------------------------
    def _scan(self) -> None:
        found: dict[str, tuple[Path, str]] = {}
        for index, root in enumerate(self.roots):
            for folder, dirs, files in os.walk(root):  # never follows links into folders
                here = Path(folder)
                depth = len(here.relative_to(root).parts)
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < MAX_DEPTH)
                if STORE_FILE in files:
                    dirs[:] = []  # a run's own sub-folders (plots, transcripts) hold no run
                if STORE_FILE in files and stat.S_ISREG((here / STORE_FILE).lstat().st_mode):
                    relative = here.relative_to(root).as_posix()
                    label = relative if relative != "." else here.name
                    if len(self.roots) > 1:
                        label = f"{root.name}/{relative}" if relative != "." else root.name
                    found[_run_id(index, relative)] = (here, label)
        self._dirs = found

    def run_dirs(self) -> dict[str, tuple[Path, str]]:
        """Run id -> (folder, label), scanned again when older than ``rescan_s``."""
        with self._lock:
            if time.monotonic() - self._scanned > self.rescan_s:
                self._scan()
                self._scanned = time.monotonic()
            return dict(self._dirs)

    def folder(self, run_id: str) -> tuple[Path, str] | None:
        """The folder and label of a run id, or None for an id that names no run."""
        return self.run_dirs().get(run_id)

    # -- state ---------------------------------------------------------------------------------------
    def info(self, run_id: str) -> RunInfo | None:
        """The run's summary, read again only when its store changed or it is running."""
        found = self.folder(run_id)
        if found is None:
            return None
        run_dir, label = found
        signature, locked = _signature(run_dir), store_locked(run_dir)
        with self._lock:
            cached = self._infos.get(run_id)
            if cached and cached[0] == signature and cached[1] == locked:
                return cached[2]
        info = RunInfo(run_id, run_dir, label)
        with self._tally_lock:
            try:
                self._read(info, locked)
            except DataError as exc:  # nothing read before the damage is shown
                busy = isinstance(exc, store.StoreBusy)
                status = "running" if busy and locked else "unreadable"  # its writer holds it a while
                info = RunInfo(run_id, run_dir, label, status=status, error=str(exc), busy=busy)
                if busy:
                    return info  # not kept: the next look may find the store free
        with self._lock:
            self._infos[run_id] = (signature, locked, info)
        return info

    def infos(self) -> list[RunInfo]:
        """Every run's summary."""
        return [i for i in (self.info(run_id) for run_id in self.run_dirs()) if i is not None]

    def _read(self, info: RunInfo, locked: bool) -> None:
        meta = store.read_meta(info.run_dir)
        raw_config, raw_manifest = meta.get("config"), meta.get("manifest")
        config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
        manifest: dict[str, Any] = raw_manifest if isinstance(raw_manifest, dict) else {}
        info.task = str(config.get("task") or manifest.get("task") or "?")
        raw_models = manifest.get("models")
        models: dict[str, Any] = raw_models if isinstance(raw_models, dict) else {}
        specs = [str(m.get("spec")) for m in models.values() if isinstance(m, dict) and m.get("spec")]
        if not specs and config.get("model") and "models" not in manifest:
            specs = [str(config["model"])]  # no manifest yet; a manifest names the models opened
        info.models = list(dict.fromkeys(specs))
        statuses = store.unit_statuses(info.run_dir)
        info.total = len(statuses)
        info.done = sum(s == "done" for s in statuses.values())
        info.failed = sum(s == "failed" for s in statuses.values())
        counted = self._counted.setdefault(info.run_id, {})
        new = [uid for uid, s in statuses.items() if s == "done" and uid not in counted]
        for uid, result in store.unit_results(info.run_dir, new).items():
            counted[uid] = _answer_counts(result)
        for uid in [u for u in counted if statuses.get(u) != "done"]:
            del counted[uid]  # resumed and re-run since
        for counts in counted.values():
            if counts is not None:
                info.valid += counts[0]
                info.answers += counts[1]
        info.started, info.last, info.calls = store.run_times(info.run_dir)
        if info.started is None and isinstance(manifest.get("created"), str):
            with contextlib.suppress(ValueError):
                info.started = datetime.fromisoformat(manifest["created"]).timestamp()
        if locked:
            info.status = "running"
        elif info.total and info.done == info.total:
            info.status = "done"
        elif info.failed and info.done + info.failed == info.total:
            info.status = "failed"
        else:
            info.status = "interrupted"

    # -- files ---------------------------------------------------------------------------------------
    def files(self, run_id: str) -> list[str]:
        """The run's files that may be shown: regular files of the known kinds, in the run folder or its
        sub-folders (links skipped, at most :data:`MAX_FILES`), as POSIX paths relative to the run
        folder; listed again when older than ``rescan_s``."""
        found = self.folder(run_id)
        if found is None:
            return []
        with self._lock:
            cached = self._files.get(run_id)
            if cached and time.monotonic() - cached[0] <= self.rescan_s:
                return cached[1]
        listed = list_files(found[0])
        with self._lock:
            self._files[run_id] = (time.monotonic(), listed)
        return listed

    def read_file(self, run_id: str, name: str) -> bytes | None:
        """A listed file's bytes, or None when ``name`` is not one of :meth:`files`."""
        found = self.folder(run_id)
        if found is None or name not in self.files(run_id):
            return None
        return read_inside(found[0], name)


def list_files(run_dir: Path) -> list[str]:
    """The showable files of ``run_dir`` (see :meth:`Catalog.files`)."""
    out: list[str] = []
    for folder, dirs, names in os.walk(run_dir):  # never follows links into folders
        here = Path(folder)
        depth = len(here.relative_to(run_dir).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < 3)
        if here != run_dir and STORE_FILE in names:
            dirs[:] = []  # a run inside a run is a run of its own
            continue
        for name in sorted(names):
            if name in _PRIVATE or name.startswith(".") or Path(name).suffix.lower() not in CONTENT_TYPES:
                continue
            try:
                if not stat.S_ISREG((here / name).lstat().st_mode):
                    continue
            except OSError:
                continue
            out.append((here / name).relative_to(run_dir).as_posix())
            if len(out) >= MAX_FILES:
                return out
    return out


def links_in(run_dir: Path, limit: int = 3) -> list[str]:
    """Up to ``limit`` symbolic links in ``run_dir`` or its sub-folders (relative POSIX paths).

    The comparisons read a run's files by name (``summary.json``, ``norms.csv``) and would follow a
    planted link out of the run, so a run holding links is not compared."""
    found: list[str] = []
    for folder, dirs, names in os.walk(run_dir):
        here = Path(folder)
        for name in [*dirs, *names]:
            if (here / name).is_symlink():
                found.append((here / name).relative_to(run_dir).as_posix())
                if len(found) >= limit:
                    return found
    return found


def read_inside(folder: Path, name: str) -> bytes | None:
    """The bytes of ``folder/name`` if it is a regular file reached from ``folder`` without any link.

    Each folder on the way is opened relative to the previous one with ``O_NOFOLLOW`` (``openat``), so
    a folder swapped for a link between the listing and the read is refused too."""
    parts = name.split("/")
    if not parts or any(p in ("", ".", "..") for p in parts):
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(folder, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        return handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
