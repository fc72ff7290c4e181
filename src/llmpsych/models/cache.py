"""A SQLite response cache keyed by endpoint, model, full messages, parameters and sample index.

The sample index is part of the key, so ten repeated samples of one prompt stay ten samples.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import cache_dir
from .canonical import canonical_json
from .types import ChatResult

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


class ResponseCache:
    """Thread-safe SQLite cache of chat results."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def get(self, key: str) -> ChatResult | None:
        """The cached result, marked ``cached=True``, or None."""
        with self._lock:
            row = self._db.execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        result = ChatResult.from_json(json.loads(row[0]))
        result.cached = True
        return result

    def put(self, key: str, endpoint: str, model: str, result: ChatResult) -> None:
        """Store a fresh result."""
        payload = json.dumps(result.to_json(), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                (key, endpoint, model, payload, time.time()),
            )

    def stats(self) -> CacheStats:
        """Entry counts and file size."""
        with self._lock:
            total = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            rows = self._db.execute("SELECT model, COUNT(*) FROM responses GROUP BY model").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, total, size, dict(rows))

    def clear(self, model: str | None = None) -> int:
        """Delete all entries, or those of one model; returns how many were removed."""
        with self._lock:
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
