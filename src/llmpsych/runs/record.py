"""The record of a run: its config, manifest, units and model calls, read from the run store in one go.

:func:`read_run` opens the store once, read-only, and returns a :class:`RunRecord`; analysis receives
that record instead of a path. Unit results come typed from :meth:`RunRecord.results` (each task names
its result model), parsed once per model. Calls are read from the store when they are read, a chunk at a
time, and each becomes a :class:`~llmpsych.runs.calls.StoredCall` (its request and response JSON parsed)
only then (:class:`Calls`): the memory a record holds does not grow with its calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from ..errors import DataError
from .calls import CALL_COLUMNS, StoredCall
from .config import RunConfig, parse_run_config
from .store import STORE_FILE, RunStore, UnitRow

if TYPE_CHECKING:
    import pandas as pd

ResultT = TypeVar("ResultT")

_ROLE, _REQUEST = CALL_COLUMNS.index("role"), CALL_COLUMNS.index("request")

RESULT_HINT = "was run.sqlite edited, or written by another llmpsych version?"


class Calls:
    """A run's model calls in completion order, read from the run store when they are read, a chunk at a
    time (:meth:`RunStore.iter_call_rows`); each is a :class:`StoredCall` parsed when it is read.

    The calls are those stored when the record was made (calls are only ever added: those up to the newest
    row id then), so a record of a run still being written keeps its length. Until November 2026 every
    row was held in memory from the start: the end of a 50,000-request run held them all (about 50 MB).
    """

    def __init__(self, store_path: Path, count: int, up_to: int) -> None:
        self._path = store_path
        self._count = count
        self._up_to = up_to

    @classmethod
    def of_store(cls, store: RunStore) -> Calls:
        """The calls ``store`` holds now (read later, through a connection of their own)."""
        up_to = store.last_call_rowid()
        return cls(store.path, store.call_count() if up_to else 0, up_to)

    def __len__(self) -> int:
        return self._count

    def _rows(self, unit_id: str | None = None) -> Iterator[tuple[Any, ...]]:
        if not self._count:
            return
        with RunStore(self._path, readonly=True) as store:
            yield from store.iter_call_rows(self._up_to, unit_id)

    def __iter__(self) -> Iterator[StoredCall]:
        return (StoredCall.parse(row, self._path) for row in self._rows())

    def requests(self) -> Iterator[tuple[str, Any]]:
        """Each call's (role, request body), in completion order, without parsing the responses (half the
        JSON of a pass over the calls; for readers of what was sent, such as ``params_report``)."""
        for row in self._rows():
            try:
                yield row[_ROLE], json.loads(row[_REQUEST])
            except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
                raise DataError(
                    f"run store {self._path}: {' '.join(str(exc).split())}", "is the file damaged?"
                ) from None

    def of_unit(self, unit_id: str) -> list[StoredCall]:
        """The calls of one unit, in completion order."""
        return [StoredCall.parse(row, self._path) for row in self._rows(unit_id)]

    def last_by_unit(self) -> dict[str, StoredCall]:
        """Each unit's call with the highest sequence number (its last exchange)."""
        last: dict[str, tuple[Any, ...]] = {}
        for row in self._rows():
            if row[2] >= (last[row[0]][2] if row[0] in last else -1):
                last[row[0]] = row
        return {unit_id: StoredCall.parse(row, self._path) for unit_id, row in last.items()}

    def frame(self) -> pd.DataFrame:
        """One row per call with the stored columns (request and response as their JSON text)."""
        import pandas as pd  # only here: reading a run needs no pandas

        frame = pd.DataFrame(list(self._rows()), columns=list(CALL_COLUMNS))
        frame["cached"] = frame["cached"].astype(bool)
        return frame


class RunRecord:
    """Everything a run store holds, for analysis: config, manifest, units (in creation order), calls.

    The units are read when the record is made, or (``lazy_units``, for a run whose lock the reader
    holds, so nothing changes them meanwhile) when :attr:`units` is first read: a reader that needs one
    pass (:meth:`iter_units`, :meth:`iter_results`) or the counts (:meth:`unit_counts`) then never holds
    them all (the end of a 50,000-unit echo run held every unit's row, ~30 MiB, for a JSON file).
    """

    def __init__(
        self,
        run_dir: Path,
        config: RunConfig,
        manifest: dict[str, Any],
        meta: dict[str, Any],
        units: list[UnitRow] | None,
        calls: Calls,
    ) -> None:
        self.run_dir = run_dir
        self.config = config
        self.manifest = manifest
        self.meta = meta
        self.calls = calls
        self._units = units
        self._typed: dict[Any, list[tuple[UnitRow, Any]]] = {}

    def __repr__(self) -> str:
        return f"RunRecord(run_dir={self.run_dir!r}, task={self.config.task!r}, calls={len(self.calls)})"

    @property
    def store_path(self) -> Path:
        """The run store file this record was read from."""
        return self.run_dir / STORE_FILE

    @property
    def units(self) -> list[UnitRow]:
        """Every unit, in creation order (read from the store the first time, for a lazy record)."""
        if self._units is None:
            with RunStore(self.store_path, readonly=True) as store:
                self._units = store.units()
        return self._units

    def iter_units(self) -> Iterator[UnitRow]:
        """The units, in creation order, read a chunk at a time unless :attr:`units` holds them already."""
        if self._units is not None:
            yield from self._units
            return
        with RunStore(self.store_path, readonly=True) as store:
            yield from store.iter_units()

    def done(self) -> list[UnitRow]:
        """The finished units, in creation order."""
        return [u for u in self.units if u.status == "done"]

    def failed(self) -> list[UnitRow]:
        """The failed units, in creation order."""
        return [u for u in self.units if u.status == "failed"]

    def unit_counts(self) -> dict[str, int]:
        """How many units have each status."""
        if self._units is None:
            with RunStore(self.store_path, readonly=True) as store:
                return dict(sorted(store.unit_counts().items()))
        counts: dict[str, int] = {}
        for unit in self._units:
            counts[unit.status] = counts.get(unit.status, 0) + 1
        return dict(sorted(counts.items()))

    @overload
    def results(self, model: type[ResultT]) -> list[tuple[UnitRow, ResultT]]: ...

    @overload
    def results(self, model: Any) -> list[tuple[UnitRow, Any]]: ...

    def results(self, model: Any) -> list[tuple[UnitRow, Any]]:
        """Each finished unit with its result parsed as ``model`` (a pydantic model, a dataclass, or a
        type such as ``list[str]`` or ``A | B``).

        Parsed once per model; a stored result that does not fit is a :class:`DataError` naming the unit.
        """
        if model not in self._typed:
            self._typed[model] = list(self._parsed(model, self.done()))
        return self._typed[model]

    @overload
    def iter_results(self, model: type[ResultT]) -> Iterator[tuple[UnitRow, ResultT]]: ...

    @overload
    def iter_results(self, model: Any) -> Iterator[tuple[UnitRow, Any]]: ...

    def iter_results(self, model: Any) -> Iterator[tuple[UnitRow, Any]]:
        """:meth:`results` in one pass that keeps none of them (read a chunk at a time, unless the record
        holds its units or these results already)."""
        if model in self._typed:
            return iter(self._typed[model])
        return self._parsed(model, (u for u in self.iter_units() if u.status == "done"))

    def _parsed(self, model: Any, units: Iterable[UnitRow]) -> Iterator[tuple[UnitRow, Any]]:
        adapter: TypeAdapter[Any] = TypeAdapter(model)
        for unit in units:
            try:
                yield unit, adapter.validate_python(unit.result)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "result"
                raise DataError(
                    f"run store {self.store_path}: unit {unit.unit_id}: the stored result does not fit "
                    f"{getattr(model, '__name__', model)} ({where}: {first['msg']})",
                    RESULT_HINT,
                ) from None


def read_run(run_dir: Path | str) -> RunRecord:
    """Read a run's record from its store, once and read-only (a folder without a run: one clear error,
    nothing created)."""
    run_dir = Path(run_dir)
    with RunStore.in_dir(run_dir, readonly=True) as store:
        return record_from_store(store, run_dir)


def record_from_store(store: RunStore, run_dir: Path, *, lazy_units: bool = False) -> RunRecord:
    """The record of an open store (the engine's own, at the end of a run); ``lazy_units`` (the caller
    holds the run's lock): the units are read when they are first read (:class:`RunRecord`)."""
    meta = store.all_meta()
    if meta.get("config") is None:
        raise DataError(f"no run config stored in {run_dir}", RESULT_HINT)
    config = parse_run_config(meta["config"], f"{run_dir} (stored config)")
    return RunRecord(
        run_dir=run_dir,
        config=config,
        manifest=meta.get("manifest") or {},
        meta=meta,
        units=None if lazy_units else store.units(),
        calls=Calls.of_store(store),
    )


__all__ = ["CALL_COLUMNS", "Calls", "RunRecord", "StoredCall", "read_run", "record_from_store"]
