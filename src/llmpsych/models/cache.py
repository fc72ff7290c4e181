"""A SQLite response cache keyed by endpoint, model, full messages, parameters and sample index.

The sample index is part of the key, so ten repeated samples of one prompt stay ten samples.

The cache file may be damaged (a crash, a full disk, a copy cut short) or not a cache at all, so opening
it checks what it opens: the file must be a regular file (not a link, not a folder) that SQLite reads and
that holds only the ``responses`` table with its columns. Anything else is a
:class:`~llmpsych.errors.DataError` naming the file (exit 2; deleting the file mends it). Damage SQLite
meets only later, in the middle of a run, turns the cache off for the rest of that run (one warning
line). A row whose stored result is not exactly what :meth:`ChatResult.to_json` writes (garbage, a wrong
type, JSON nested past the recursion limit) is never replayed: it is a cache miss, counted in
:attr:`ResponseCache.bad_rows`, and the fresh answer replaces it.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..paths import cache_dir
from .canonical import canonical_json
from .types import ChatResult, Usage, reply_logprobs

#: The columns of ``responses``; a file with another table or without one of these is not a cache.
_COLUMNS = {"key", "endpoint", "model", "result", "created"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_model ON responses(model);
"""


def default_cache_path() -> Path:
    """The cache file inside the user cache directory."""
    return cache_dir() / "responses.sqlite"


def cache_key(endpoint: str, model: str, body: dict[str, Any] | str, sample: str) -> str:
    """A stable hash of everything that determines an answer.

    ``body`` is the request body or its canonical JSON (as a run has it already): the key is the same.
    It hashes the canonical JSON of ``{"body", "endpoint", "model", "sample"}``, written out here so
    that an encoded body is not encoded again (sorted keys put the body first).
    """
    encoded = body if isinstance(body, str) else canonical_json(body)
    canonical = (
        f'{{"body":{encoded},"endpoint":{canonical_json(endpoint)},'
        f'"model":{canonical_json(model)},"sample":{canonical_json(sample)}}}'
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    """What ``llmpsych cache stats`` prints."""

    path: Path
    entries: int
    bytes: int
    by_model: dict[str, int]


#: The fields :meth:`ChatResult.to_json` writes, with the value of a row that lacks one.
_FIELDS: dict[str, Any] = {
    "text": "",
    "finish_reason": None,
    "usage": {"prompt_tokens": 0, "completion_tokens": 0},
    "latency_s": 0.0,
    "attempts": 1,
    "cached": False,
    "logprobs": None,
    "errors": [],
}


def _int(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**53


def decode_row(text: Any) -> ChatResult | None:
    """The result stored in a row, or None unless it is what :meth:`ChatResult.to_json` writes (an older
    llmpsych's row may lack a field).

    Strict on purpose: a row that was damaged or planted with other types would otherwise be replayed as
    an answer (or crash the unit on every resume), while a miss only costs one request.
    """
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # garbage, or nested deeper than Python's recursion limit
        return None
    if not isinstance(data, dict) or "text" not in data or not set(data) <= _FIELDS.keys():
        return None
    data = {**_FIELDS, **data}  # a row written before a field existed lacks it
    usage, finish, latency, logprobs, errors = (
        data["usage"], data["finish_reason"], data["latency_s"], data["logprobs"], data["errors"],
    )  # fmt: skip
    if not (
        isinstance(data["text"], str)
        and (finish is None or (isinstance(finish, str) and len(finish) <= 64))
        and isinstance(usage, dict)
        and set(usage) == {"prompt_tokens", "completion_tokens"}
        and all(_int(v) for v in usage.values())
        and type(latency) in (int, float)
        and math.isfinite(latency)
        and _int(data["attempts"])
        and isinstance(data["cached"], bool)
        and isinstance(errors, list)
        and all(isinstance(e, str) for e in errors)
        and (logprobs is None or reply_logprobs({"content": logprobs}) == logprobs)
    ):
        return None
    return ChatResult(
        text=data["text"],
        finish_reason=finish,
        usage=Usage(**usage),
        latency_s=float(latency),
        attempts=data["attempts"],
        cached=True,
        logprobs=logprobs,
        errors=list(errors),
    )


class ResponseCache:
    """Thread-safe SQLite cache of chat results.

    A file that is not a readable cache is a :class:`DataError` naming it, at open or (damage SQLite
    finds only when it reads the page) at the first call that meets it.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.bad_rows = 0  # rows that were not a well-formed result: misses, replaced when answered
        self.broken = ""  # why the cache was turned off mid-run (SQLite damage met after opening)
        self._lock = threading.Lock()
        self._check_file()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self._damaged(exc) from None
        try:
            with self._guard():
                self._check_schema()
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(SCHEMA)
        except BaseException:
            self._db.close()
            raise

    def _check_file(self) -> None:
        """Refuse a cache file (or SQLite side file) that is a link, a folder or not a regular file."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = self.path.with_name(self.path.name + suffix)
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise DataError(f"cannot open the response cache {path}: {exc.strerror}") from None
            if stat.S_ISLNK(info.st_mode):
                what = "a symbolic link"
            elif stat.S_ISDIR(info.st_mode):
                what = "a folder"
            elif not stat.S_ISREG(info.st_mode):
                what = "not a regular file"
            else:
                continue
            raise DataError(
                f"the response cache {path} is {what}, not a cache file",
                "remove it, or choose another file with [cache] path",
            )

    def _check_schema(self) -> None:
        tables = {
            row[0]
            for row in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if not tables:
            return  # a new (or empty) file: the schema is created
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        if tables != {"responses"} or not columns >= _COLUMNS:
            raise DataError(
                f"{self.path} is not an llmpsych response cache (tables: {', '.join(sorted(tables))})",
                "remove it, or choose another file with [cache] path",
            )

    def _damaged(self, exc: Exception) -> DataError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return DataError(
            f"response cache {self.path}: {' '.join(reason.split())}",
            "is the file damaged? delete it to start a new cache",
        )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite damage as one clear error naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def get(self, key: str) -> ChatResult | None:
        """The cached result, marked ``cached=True``, or None (also for a row that is not a result).

        Damage SQLite meets only now (a page past the end of a truncated file) turns the cache off for
        the rest of the run (:attr:`broken`): the run goes on uncached rather than failing every unit.
        """
        with self._lock:
            if self.broken:
                return None
            try:
                row = self._db.execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as exc:
                self.broken = " ".join(str(exc).split())
                return None
        if row is None:
            return None
        result = decode_row(row[0])
        if result is None:
            with self._lock:
                self.bad_rows += 1
        return result

    def put(self, key: str, endpoint: str, model: str, result: ChatResult) -> None:
        """Store a fresh result (nothing, once the cache is :attr:`broken`)."""
        payload = json.dumps(result.to_json(), ensure_ascii=False)
        with self._lock:
            if self.broken:
                return
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    (key, endpoint, model, payload, time.time()),
                )
            except sqlite3.DatabaseError as exc:
                self.broken = " ".join(str(exc).split())

    def stats(self) -> CacheStats:
        """Entry counts and file size."""
        with self._lock, self._guard():
            total = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            rows = self._db.execute("SELECT model, COUNT(*) FROM responses GROUP BY model").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, total, size, dict(rows))

    def clear(self, model: str | None = None) -> int:
        """Delete all entries, or those of one model; returns how many were removed."""
        with self._lock, self._guard():
            if model is None:
                removed = self._db.execute("DELETE FROM responses").rowcount
            else:
                removed = self._db.execute("DELETE FROM responses WHERE model = ?", (model,)).rowcount
            self._db.execute("VACUUM")
        return removed

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
