"""The run store: one SQLite file (WAL) holding the manifest, work units and every model call.

Tables
    meta(key, value)              the manifest and config, as JSON
    units(unit_id, ...)           one row per work unit: status, result, error, timings
    calls(unit_id, call_key, ...) one row per completed model request, written the moment it completes

A run folder may come from someone else, so opening a store checks what it opens: ``run.sqlite`` must be
a regular file (not a link, not a folder), hold these tables, and have been written by a store version
this llmpsych reads (``PRAGMA user_version``); any other file, and any damage found later (a truncated
file: "database disk image is malformed"), is a :class:`~llmpsych.errors.DataError` naming the file.

While a process executes, resumes or re-analyses a run it holds the run's lock (:func:`run_lock`): an
``flock`` on ``run.lock`` in the run folder, which the operating system releases when the process
ends, however it ends (SIGKILL included), so a lock is never left stale.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError, RunLockedError
from .calls import StoredCall

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    unit_id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    started REAL,
    finished REAL
);
CREATE TABLE IF NOT EXISTS calls (
    unit_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    attempts INTEGER,
    cached INTEGER,
    created REAL NOT NULL,
    PRIMARY KEY (unit_id, call_key)
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    unit_id TEXT NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL
);
"""

STORE_FILE = "run.sqlite"
#: Stored calls (or units) fetched at once when they are read in turn (:meth:`RunStore.iter_call_rows`,
#: :meth:`RunStore.iter_units`; default ``chunk``).
CALL_CHUNK = 1000
LOCK_FILE = "run.lock"

#: The store layout this llmpsych writes (``PRAGMA user_version``). 0 is a store written before the
#: version was recorded, with the same layout as 1; a higher number is refused (a newer llmpsych wrote it).
STORE_VERSION = 1

#: Columns each table must have, for a file to be taken as a run store.
_COLUMNS = {
    "meta": {"key", "value"},
    "units": {"unit_id", "position", "payload", "status", "result", "error", "attempts"},
    "calls": {"unit_id", "call_key", "seq", "role", "model", "request", "response", "created"},
}

#: One SQL write and its arguments; the ``*_statements`` functions build them for :meth:`RunStore.write`
#: (one transaction now) or :class:`~llmpsych.runs.group_commit.GroupCommit` (one transaction per loop turn).
Statement = tuple[str, tuple[Any, ...]]


def stored_json(value: Any, finite: bool = False) -> str:
    """``value`` as JSON text for the store, written by orjson where that is exact, else by ``json``.

    orjson is 5-10x faster (a 150 kB game result: 0.3 ms instead of 3.5 ms, on the event loop) but
    writes NaN and infinities as ``null`` where the standard library writes ``NaN``/``Infinity``, which
    ``json.loads`` reads back as floats. So text with a ``null`` in it is written again by the standard
    library, unless the caller knows the value holds no such float (``finite``); what orjson refuses
    (an integer beyond 64 bits, an unsupported type) goes to the standard library too. Either way the
    text reads back with ``json.loads`` as the value that was written.
    """
    try:
        data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False)
    if not finite and b"null" in data:
        return json.dumps(value, ensure_ascii=False)
    return data.decode("utf-8")


def start_unit_statements(unit_id: str) -> list[Statement]:
    """Mark a unit as running."""
    sql = "UPDATE units SET status='running', attempts=attempts+1, started=? WHERE unit_id=?"
    return [(sql, (time.time(), unit_id))]


def finish_unit_statements(unit_id: str, result: Any) -> list[Statement]:
    """Record a unit's result."""
    sql = "UPDATE units SET status='done', result=?, error=NULL, finished=? WHERE unit_id=?"
    return [(sql, (stored_json(result), time.time(), unit_id))]


def fail_unit_statements(unit_id: str, error: str) -> list[Statement]:
    """Record a unit's failure, in its row and in the failure log."""
    now = time.time()
    return [
        ("UPDATE units SET status='failed', error=?, finished=? WHERE unit_id=?", (error, now, unit_id)),
        ("INSERT INTO failures (unit_id, error, created) VALUES (?, ?, ?)", (unit_id, error, now)),
    ]


def put_call_statements(
    unit_id: str,
    call_key: str,
    seq: int,
    role: str,
    model: str,
    request: dict[str, Any] | str,
    response: dict[str, Any],
) -> list[Statement]:
    """Insert one completed call (``request`` as a dict or already JSON-encoded).

    A response without log-probabilities holds no float but its latency, so orjson writes it exactly.
    """
    usage = response.get("usage") or {}
    row = (
        unit_id,
        call_key,
        seq,
        role,
        model,
        request if isinstance(request, str) else json.dumps(request, ensure_ascii=False),
        stored_json(response, finite=response.get("logprobs") is None),
        response.get("latency_s"),
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        response.get("attempts"),
        int(bool(response.get("cached"))),
        time.time(),
    )
    return [("INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", row)]


_HELD: dict[str, tuple[int, int]] = {}  # real run folder -> (lock file descriptor, nesting depth)
_HELD_GUARD = threading.Lock()


def _lock_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "another process"


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run's lock for the block: one process executes, resumes or re-analyses a run at a time.

    ``run.lock`` is opened without following links (``O_NOFOLLOW``) and locked with ``flock``; the
    holder writes its pid into it so that a second process can name it. The lock is re-entrant within
    a process (a run analyses itself at its end) and the file is left in place: removing it would let a
    third process lock a new file while the second still waits on the old one.
    """
    key = os.path.realpath(run_dir)
    with _HELD_GUARD:
        if key in _HELD:
            fd, depth = _HELD[key]
            _HELD[key] = (fd, depth + 1)
        else:
            _HELD[key] = (_acquire(Path(run_dir)), 1)
    try:
        yield
    finally:
        with _HELD_GUARD:
            fd, depth = _HELD[key]
            if depth > 1:
                _HELD[key] = (fd, depth - 1)
            else:
                del _HELD[key]
                os.close(fd)  # releases the flock


def run_locked(run_dir: Path) -> bool:
    """Whether a process holds the run's lock (``run.lock``, an ``flock``), i.e. the run is executing.

    Read from ``/proc/locks`` by the lock file's device and inode, so a reader (the runs page,
    :func:`llmpsych.load_runs`) never takes the lock itself (taking it, even for a moment, could make a
    starting run report "in use")."""
    try:
        info = (run_dir / LOCK_FILE).lstat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    ident = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            return any(line.split()[5:6] == [ident] for line in handle if "FLOCK" in line)
    except OSError:
        return False


def _acquire(run_dir: Path) -> int:
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(
                f"{path} is a symbolic link", "remove it; llmpsych makes its own lock file"
            ) from None
        if exc.errno == errno.EISDIR:
            raise DataError(f"{path} is a folder", "remove it; llmpsych makes its own lock file") from None
        raise DataError(f"cannot lock the run {run_dir}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise RunLockedError(
            f"the run {run_dir} is in use by {holder}",
            "one process at a time runs, resumes or analyses a run; wait for it to end or stop it",
        ) from None
    except OSError as exc:
        os.close(fd)
        raise DataError(f"cannot lock the run {run_dir}: {exc.strerror}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def check_store_file(store_path: Path, create: bool = False) -> None:
    """Refuse a store that is a link or not a regular file, and SQLite side files that are links."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = store_path.with_name(store_path.name + suffix)
        try:
            info = path.lstat()
        except FileNotFoundError:
            if suffix == "" and not create:
                raise DataError(
                    f"no run found in {store_path.parent}", f"expected the run store {store_path}"
                ) from None
            continue
        except OSError as exc:
            raise DataError(f"cannot open the run store {path}: {exc.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise DataError(
                f"{path} is a symbolic link; a run store and its side files must be regular files",
                "copy the run folder without links",
            )
        if stat.S_ISDIR(info.st_mode):
            raise DataError(f"{path} is a folder, not a run store")
        if not stat.S_ISREG(info.st_mode):
            raise DataError(f"{path} is not a regular file, so not a run store")


@dataclass(slots=True)
class UnitRow:
    """A work unit as stored (slots: a run's record holds one per unit, 50,000 for a large run)."""

    unit_id: str
    payload: dict[str, Any]
    status: str
    result: Any
    error: str | None
    attempts: int


def _unit_rows(rows: Iterable[tuple[Any, ...]]) -> Iterator[UnitRow]:
    """Stored unit rows as :class:`UnitRow` (read from the cursor as they come: the raw rows are never all
    held beside the parsed ones; statuses interned: four strings, not one per unit)."""
    for uid, p, s, r, e, a in rows:
        yield UnitRow(uid, json.loads(p), sys.intern(s), json.loads(r) if r is not None else None, e, a)


class RunStore:
    """Durable record of one run; safe to read while the run is going on.

    ``create=False`` (the default) opens an existing store and never creates a file or folder: a missing,
    linked, foreign, damaged or newer store is a :class:`DataError` naming the file. ``readonly=True``
    opens it for reading only (SQLite ``mode=ro``; the layout is checked, nothing is written).

    A store is a context manager: ``with RunStore.in_dir(run_dir) as store:`` closes it at the end.
    """

    def __init__(self, path: Path, *, create: bool = False, readonly: bool = False) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._check_file(create)
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if create:
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            else:  # mode=rw / mode=ro: SQLite must not create a missing file
                uri = self.path.absolute().as_uri() + ("?mode=ro" if readonly else "?mode=rw")
                if readonly and not os.access(self.path.parent, os.W_OK):
                    # a read-only folder (an archive, a read-only mount): SQLite cannot make the WAL side
                    # files it reads with, and nothing can be writing the store, so read it as immutable
                    uri += "&immutable=1"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._damaged(exc) from None
        try:
            self._open_schema(create, readonly and not create)
        except BaseException:
            self._db.close()
            raise

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_file(self, create: bool) -> None:
        check_store_file(self.path, create)

    def _open_schema(self, create: bool, readonly: bool = False) -> None:
        with self._guard():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                name: {row[1] for row in self._db.execute(f"PRAGMA table_info({name})")} for name in _COLUMNS
            }
            if version > STORE_VERSION:
                raise DataError(
                    f"{self.path} was written by a newer llmpsych (store version {version}; this one reads "
                    f"up to {STORE_VERSION})",
                    "upgrade llmpsych to read it",
                )
            fresh = not any(tables.values())
            if not (create and fresh):
                for name, columns in _COLUMNS.items():
                    if not tables[name]:
                        raise DataError(
                            f"{self.path} is not an llmpsych run store (it has no table {name!r})"
                        )
                    if missing := sorted(columns - tables[name]):
                        raise DataError(
                            f"{self.path} is not an llmpsych run store (table {name!r} lacks "
                            f"{', '.join(missing)})"
                        )
            if readonly:
                return
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            if fresh:
                self._db.execute(f"PRAGMA user_version={STORE_VERSION}")

    def _damaged(self, exc: Exception) -> DataError:
        return DataError(f"run store {self.path}: {' '.join(str(exc).split())}", "is the file damaged?")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite damage and stored text that is not JSON, as one clear error naming the file."""
        try:
            yield
        except (sqlite3.DatabaseError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._damaged(exc) from None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock, self._guard():
            yield

    @classmethod
    def in_dir(cls, run_dir: Path, *, create: bool = False, readonly: bool = False) -> RunStore:
        """Open the store of a run directory (create it only with ``create=True``)."""
        return cls(Path(run_dir) / STORE_FILE, create=create, readonly=readonly)

    # -- meta --------------------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``."""
        with self._locked():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        """Read a JSON value."""
        with self._locked():
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return default if row is None else json.loads(row[0])

    def all_meta(self) -> dict[str, Any]:
        """Every stored JSON value, by key."""
        with self._locked():
            return {key: json.loads(value) for key, value in self._db.execute("SELECT key, value FROM meta")}

    # -- units -------------------------------------------------------------------------------------
    def add_units(self, units: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Register units (idempotent: existing ids are kept as they are)."""
        with self._locked():
            start = self._db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
            self._db.execute("BEGIN")
            cursor = self._db.executemany(
                "INSERT OR IGNORE INTO units (unit_id, position, payload) VALUES (?, ?, ?)",
                ((uid, start + i, json.dumps(payload)) for i, (uid, payload) in enumerate(units)),
            )
            self._db.execute("COMMIT")
            return cursor.rowcount

    def units(self, status: str | None = None) -> list[UnitRow]:
        """Units in creation order, optionally of one status."""
        query = "SELECT unit_id, payload, status, result, error, attempts FROM units"
        args: tuple[Any, ...] = ()
        if status:
            query += " WHERE status = ?"
            args = (status,)
        with self._locked():
            return list(_unit_rows(self._db.execute(query + " ORDER BY position", args)))

    def iter_units(self, chunk: int | None = None) -> Iterator[UnitRow]:
        """:meth:`units`, all of them, fetched ``chunk`` at a time (for one pass that keeps none of them:
        the end-of-run summary). Not while another thread uses this store."""
        query = "SELECT unit_id, payload, status, result, error, attempts FROM units ORDER BY position"
        with self._guard():
            cursor = self._db.execute(query)
            try:
                while rows := cursor.fetchmany(chunk or CALL_CHUNK):
                    yield from _unit_rows(rows)
            finally:
                cursor.close()

    def unit_counts(self) -> dict[str, int]:
        """How many units have each status."""
        with self._locked():
            return dict(self._db.execute("SELECT status, COUNT(*) FROM units GROUP BY status").fetchall())

    def same_unit_ids(self, unit_ids: Iterable[str]) -> bool:
        """Whether ``unit_ids`` (read once, in any order, repeats allowed) are as a set the ids of the stored
        units: compared in a temporary table, so neither side is held in memory (50,000 ids as two Python
        sets: ~8 MiB)."""
        with self._locked():
            self._db.execute("DROP TABLE IF EXISTS temp.given_ids")
            self._db.execute("CREATE TEMP TABLE given_ids (unit_id TEXT PRIMARY KEY)")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO temp.given_ids VALUES (?)", ((uid,) for uid in unit_ids)
                )
                missing = self._db.execute(
                    "SELECT 1 FROM units WHERE unit_id NOT IN (SELECT unit_id FROM temp.given_ids) LIMIT 1"
                ).fetchone()
                extra = self._db.execute(
                    "SELECT 1 FROM temp.given_ids WHERE unit_id NOT IN (SELECT unit_id FROM units) LIMIT 1"
                ).fetchone()
                return missing is None and extra is None
            finally:
                self._db.execute("DROP TABLE IF EXISTS temp.given_ids")

    def snapshot_ids(self, name: str, query: str) -> int:
        """Keep the unit ids ``query`` selects now in the temporary table ``name`` (for :meth:`among`: what
        was done, or had calls, when an execution started, without a Python set of them); their number."""
        with self._locked():
            self._db.execute(f"DROP TABLE IF EXISTS temp.{name}")
            self._db.execute(f"CREATE TEMP TABLE {name} (unit_id TEXT PRIMARY KEY)")
            self._db.execute(f"INSERT OR IGNORE INTO temp.{name} {query}")
            return int(self._db.execute(f"SELECT COUNT(*) FROM temp.{name}").fetchone()[0])

    def among(self, name: str, unit_ids: list[str]) -> set[str]:
        """Which of ``unit_ids`` (a batch, at most a few thousand) the snapshot ``name`` holds."""
        found: set[str] = set()
        with self._locked():
            for start in range(0, len(unit_ids), 500):  # below SQLite's limit of bound parameters
                part = unit_ids[start : start + 500]
                sql = f"SELECT unit_id FROM temp.{name} WHERE unit_id IN ({','.join('?' * len(part))})"
                found.update(row[0] for row in self._db.execute(sql, part))
        return found

    def drop_snapshot(self, name: str) -> None:
        """Forget the snapshot ``name``."""
        with self._locked():
            self._db.execute(f"DROP TABLE IF EXISTS temp.{name}")

    def write(self, statements: Iterable[Statement]) -> None:
        """Execute write statements in one transaction (one commit for all of them).

        SQLite errors reach the caller as they are (the engine and :class:`GroupCommit` handle them).
        """
        with self._lock:
            self._db.execute("BEGIN")
            try:  # a run of one statement with many rows (the calls of many units) in one call
                for sql, group in itertools.groupby(statements, key=itemgetter(0)):
                    self._db.executemany(sql, [args for _, args in group])
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- calls -------------------------------------------------------------------------------------
    def units_with_calls(self) -> set[str]:
        """Ids of the units that have at least one stored call (only these can replay on resume)."""
        with self._locked():
            return {row[0] for row in self._db.execute("SELECT DISTINCT unit_id FROM calls")}

    def get_call(self, unit_id: str, call_key: str) -> dict[str, Any] | None:
        """A completed call's stored response, if any."""
        with self._locked():
            row = self._db.execute(
                "SELECT response FROM calls WHERE unit_id=? AND call_key=?", (unit_id, call_key)
            ).fetchone()
            return None if row is None else json.loads(row[0])

    def put_call(
        self,
        unit_id: str,
        call_key: str,
        seq: int,
        role: str,
        model: str,
        request: dict[str, Any] | str,
        response: dict[str, Any],
    ) -> None:
        """Persist one completed call immediately (``request`` as a dict or already JSON-encoded)."""
        self.write(put_call_statements(unit_id, call_key, seq, role, model, request, response))

    def call_rows(self) -> list[tuple[Any, ...]]:
        """Every stored call as its row of columns (request and response as JSON text), in completion
        order."""
        with self._locked():
            return self._db.execute(
                "SELECT unit_id, call_key, seq, role, model, request, response, latency_s, prompt_tokens, "
                "completion_tokens, attempts, cached, created FROM calls ORDER BY created, unit_id, seq"
            ).fetchall()

    def last_call_rowid(self) -> int:
        """The newest call's row id (0 with none): calls are only ever added, so the calls up to it are the
        store's calls at this moment (a :class:`~llmpsych.runs.record.Calls` reads exactly those)."""
        with self._locked():
            return int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM calls").fetchone()[0])

    def iter_call_rows(
        self, up_to: int | None = None, unit_id: str | None = None, chunk: int | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of :meth:`call_rows` (only those up to row id ``up_to``, only ``unit_id``'s), fetched
        ``chunk`` at a time: memory stays that of one chunk, whatever the run's size (SQLite's sorter
        spills to a temporary file beyond its page cache). The store must not be written meanwhile
        through this connection (another connection may: the read sees one snapshot)."""
        where: list[str] = []
        args: list[Any] = []
        if up_to is not None:
            where.append("rowid <= ?")
            args.append(up_to)
        if unit_id is not None:
            where.append("unit_id = ?")
            args.append(unit_id)
        query = (
            "SELECT unit_id, call_key, seq, role, model, request, response, latency_s, prompt_tokens, "
            "completion_tokens, attempts, cached, created FROM calls"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY created, unit_id, seq"
        )
        with self._guard():
            cursor = self._db.execute(query, args)
            try:
                while rows := cursor.fetchmany(chunk or CALL_CHUNK):
                    yield from rows
            finally:
                cursor.close()

    def calls(self) -> Iterator[StoredCall]:
        """Every stored call, in completion order."""
        for row in self.call_rows():
            with self._guard():
                request, response = json.loads(row[5]), json.loads(row[6])
            yield StoredCall.of(row, request, response)

    def call_count(self) -> int:
        """Number of stored calls."""
        with self._locked():
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
