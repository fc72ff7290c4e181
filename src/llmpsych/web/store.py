"""The one place the web pages read a run store: SQLite opened read-only, never written, never locked.

This adapter stands in for :func:`llmpsych.runs.read_run` (config, manifest, units, calls): the pages
ask it for small slices (a page of units, one unit's calls) because a large run (2,500 units, 50,000
calls) read whole takes seconds per page. A run that another process is writing is read safely: the
store is in WAL mode, so a reader sees the last committed state and never blocks the writer.

A run folder may come from someone else: ``run.sqlite`` and its side files must be regular files (a
planted link is refused, as :class:`~llmpsych.runs.store.RunStore` refuses it), and the file is opened
with ``mode=ro`` so nothing is created or changed.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..runs.calls import CALL_COLUMNS, StoredCall
from ..runs.store import STORE_FILE

#: How long a read waits for a writer's checkpoint before giving up (milliseconds).
BUSY_TIMEOUT_MS = 2000
#: What to do about a store that cannot be read (its run's other files are still shown).
RESTORE_HINT = "restore run.sqlite from a copy; the run's reports and tables are still listed on its page"


class StoreUnreadable(DataError):
    """The run store cannot be read: damaged (garbage, truncated), empty, or not a run store."""


class StoreBusy(DataError):
    """Another process held the run store longer than :data:`BUSY_TIMEOUT_MS` (try again)."""


@dataclass(frozen=True)
class UnitSummary:
    """One unit's row without its payload and result (the units table of the run page)."""

    unit_id: str
    position: int
    status: str
    attempts: int
    error: str | None
    started: float | None
    finished: float | None
    calls: int


def check_store_files(run_dir: Path) -> Path:
    """``run_dir``'s store path once it and its side files are regular files (no link, no folder)."""
    path = run_dir / STORE_FILE
    for suffix in ("", "-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        try:
            mode = side.lstat().st_mode
        except FileNotFoundError:
            if suffix == "":
                raise DataError(f"no run store in {run_dir}") from None
            continue
        if not stat.S_ISREG(mode):
            raise DataError(f"{side} is not a regular file (a link or a folder); not read")
    return path


class _Damaged(Exception):
    """A stored value of the wrong type (turned into a :class:`StoreUnreadable` naming the store)."""


#: The type each column must hold: text, integer, number (finite), each optionally NULL (``?``).
_KINDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "text": (str, "text"),
    "int": (int, "an integer"),
    "number": ((int, float), "a number"),
}


def _typed(
    table: str, names: tuple[str, ...], kinds: str, row: tuple[Any, ...], keyed: bool = True
) -> tuple[Any, ...]:
    """``row`` once each value has its column's type (``kinds``: one word per column, ``?`` for NULL
    allowed; ``keyed``: the first value names the row); SQLite keeps whatever a writer put in a column,
    so a damaged or foreign store can hold text where a time belongs, which no page can show."""
    for name, kind, value in zip(names, kinds.split(), row, strict=True):
        if value is None and kind.endswith("?"):
            continue
        wanted, said = _KINDS[kind.rstrip("?")]
        if (
            isinstance(value, bool)
            or not isinstance(value, wanted)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            shown = repr(value if not isinstance(value, str | bytes) else value[:40])
            of = f" of {row[0]!r}" if keyed else ""
            raise _Damaged(f"{table}.{name}{of} holds {shown}, not {said}")
    return row


def _unreadable(path: Path, exc: sqlite3.Error) -> DataError:
    """What SQLite's ``exc`` means for the pages: a busy store (try again) or an unreadable one."""
    said = " ".join(str(exc).split())
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in said or "busy" in said):
        return StoreBusy(f"run store {path} is busy (another process holds it: {said})", "reload in a moment")
    if "no such table" in said or "no such column" in said:
        return StoreUnreadable(f"run store {path} is not a llmpsych run store ({said})", RESTORE_HINT)
    return StoreUnreadable(f"run store {path} is damaged or not a database: {said}", RESTORE_HINT)


@contextmanager
def connect(run_dir: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the run's store, closed after the block; a store that cannot be read is
    a :class:`StoreUnreadable` (damaged, empty, not a run store) or a :class:`StoreBusy`."""
    path = check_store_files(run_dir)
    try:
        empty = path.stat().st_size == 0
    except OSError as exc:
        raise StoreUnreadable(f"run store {path}: {exc.strerror}", RESTORE_HINT) from None
    if empty:  # SQLite would read it as a database without tables
        raise StoreUnreadable(f"run store {path} is empty (0 bytes): no run was saved in it", RESTORE_HINT)
    uri = path.absolute().as_uri() + "?mode=ro"
    if not os.access(run_dir, os.W_OK):
        # a WAL store in a folder nobody may write (an archive, a read-only mount) cannot get the side
        # files SQLite reads it with; nothing can be writing it either, so it is read as immutable
        uri += "&immutable=1"
    try:
        with closing(sqlite3.connect(uri, uri=True, check_same_thread=False)) as db:
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            yield db
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from None
    except _Damaged as exc:
        raise StoreUnreadable(f"run store {path} is damaged: {exc}", RESTORE_HINT) from None


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return text  # shown as stored rather than not at all


def read_meta(run_dir: Path) -> dict[str, Any]:
    """The ``meta`` table (config, manifest, ...) as parsed JSON values."""
    with connect(run_dir) as db:
        return {key: _loads(value) for key, value in db.execute("SELECT key, value FROM meta")}


def unit_statuses(run_dir: Path) -> dict[str, str]:
    """Each unit's status by id (cheap: no payload or result is read)."""
    with connect(run_dir) as db:
        return dict(db.execute("SELECT unit_id, status FROM units"))


def unit_results(run_dir: Path, unit_ids: list[str]) -> dict[str, Any]:
    """The stored results of the given units, by id."""
    out: dict[str, Any] = {}
    with connect(run_dir) as db:
        for start in range(0, len(unit_ids), 500):
            chunk = unit_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = db.execute(f"SELECT unit_id, result FROM units WHERE unit_id IN ({marks})", chunk)
            out.update((uid, _loads(result)) for uid, result in rows)
    return out


def run_times(run_dir: Path) -> tuple[float | None, float | None, int]:
    """(first unit start, last call or unit end, number of calls)."""
    with connect(run_dir) as db:
        # SQLite orders text and blobs after every number, so MAX finds a damaged value if there is one
        started, _, finished = _typed(
            "units",
            ("started", "started", "finished"),
            "number? number? number?",
            db.execute("SELECT MIN(started), MAX(started), MAX(finished) FROM units").fetchone(),
            keyed=False,
        )
        last_call, calls = _typed(
            "calls",
            ("created", "count"),
            "number? int",
            db.execute("SELECT MAX(created), COUNT(*) FROM calls").fetchone(),
            keyed=False,
        )
    ends = [float(t) for t in (finished, last_call) if t is not None]
    return started, max(ends) if ends else None, calls


def units_page(
    run_dir: Path, *, status: str | None, offset: int, limit: int
) -> tuple[list[UnitSummary], int]:
    """One page of units in creation order (optionally of one status), and how many match in all."""
    where, args = ("WHERE u.status = ?", [status]) if status else ("", [])
    with connect(run_dir) as db:
        total = db.execute(f"SELECT COUNT(*) FROM units u {where}", args).fetchone()[0]
        rows = db.execute(
            "SELECT u.unit_id, u.position, u.status, u.attempts, u.error, u.started, u.finished, "
            "(SELECT COUNT(*) FROM calls c WHERE c.unit_id = u.unit_id) "
            f"FROM units u {where} ORDER BY u.position LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        names = ("unit_id", "position", "status", "attempts", "error", "started", "finished", "calls")
        kinds = "text int text int text? number? number? int"
        return [UnitSummary(*_typed("units", names, kinds, row)) for row in rows], total


def read_unit(run_dir: Path, unit_id: str) -> tuple[dict[str, Any], list[StoredCall], list[str]] | None:
    """One unit (its row as a dict), its calls in order and its failure log; None if there is no such unit."""
    with connect(run_dir) as db:
        row = db.execute(
            "SELECT unit_id, position, payload, status, result, error, attempts, started, finished "
            "FROM units WHERE unit_id = ?",
            (unit_id,),
        ).fetchone()
        if row is None:
            return None
        calls = db.execute(
            f"SELECT {', '.join(CALL_COLUMNS)} FROM calls WHERE unit_id = ? ORDER BY created, seq",
            (unit_id,),
        ).fetchall()
        logged = db.execute("SELECT unit_id, error FROM failures WHERE unit_id = ? ORDER BY id", (unit_id,))
        failures = [_typed("failures", ("unit_id", "error"), "text text", row)[1] for row in logged]
        names = (
            "unit_id", "position", "payload", "status", "result", "error", "attempts", "started", "finished",
        )  # fmt: skip
        kinds = "text int text text text? text? int number? number?"
        unit = dict(zip(names, _typed("units", names, kinds, row), strict=True))
        call_kinds = "text text int text text text text number? int? int? int? int? number"
        calls = [_typed("calls", CALL_COLUMNS, call_kinds, call) for call in calls]
    unit["payload"], unit["result"] = _loads(unit["payload"]), _loads(unit["result"])
    records = [StoredCall.of(call, _loads(call[5]), _loads(call[6])) for call in calls]
    return unit, records, failures
