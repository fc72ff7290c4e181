"""The record of a run: its config, manifest, units and model calls, read from the run store in one go.

:func:`read_run` opens the store once, read-only, and returns a :class:`RunRecord`; analysis receives
that record instead of a path. Unit results come typed from :meth:`RunRecord.results` (each task names
its result model), parsed once per model. Calls are held as stored rows and each becomes a
:class:`~llmpsych.runs.calls.StoredCall` (its request and response JSON parsed) only when it is read:
a store of 2,500 units and 50,000 calls is read in about a second, most of it SQLite handing over the
rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
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

RESULT_HINT = "was run.sqlite edited, or written by another llmpsych version?"


class Calls:
    """A run's model calls in completion order, each a :class:`StoredCall` parsed when it is read."""

    def __init__(self, rows: list[tuple[Any, ...]], store_path: Path) -> None:
        self._rows = rows
        self._path = store_path

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[StoredCall]:
        return (StoredCall.parse(row, self._path) for row in self._rows)

    def of_unit(self, unit_id: str) -> list[StoredCall]:
        """The calls of one unit, in completion order."""
        return [StoredCall.parse(row, self._path) for row in self._rows if row[0] == unit_id]

    def last_by_unit(self) -> dict[str, StoredCall]:
        """Each unit's call with the highest sequence number (its last exchange)."""
        last: dict[str, tuple[Any, ...]] = {}
        for row in self._rows:
            if row[2] >= (last[row[0]][2] if row[0] in last else -1):
                last[row[0]] = row
        return {unit_id: StoredCall.parse(row, self._path) for unit_id, row in last.items()}

    def frame(self) -> pd.DataFrame:
        """One row per call with the stored columns (request and response as their JSON text)."""
        import pandas as pd  # only here: reading a run needs no pandas

        frame = pd.DataFrame(self._rows, columns=list(CALL_COLUMNS))
        frame["cached"] = frame["cached"].astype(bool)
        return frame


@dataclass
class RunRecord:
    """Everything a run store holds, for analysis: config, manifest, units (in creation order), calls."""

    run_dir: Path
    config: RunConfig
    manifest: dict[str, Any]
    meta: dict[str, Any]
    units: list[UnitRow]
    calls: Calls
    _typed: dict[Any, list[tuple[UnitRow, Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def store_path(self) -> Path:
        """The run store file this record was read from."""
        return self.run_dir / STORE_FILE

    def done(self) -> list[UnitRow]:
        """The finished units, in creation order."""
        return [u for u in self.units if u.status == "done"]

    def failed(self) -> list[UnitRow]:
        """The failed units, in creation order."""
        return [u for u in self.units if u.status == "failed"]

    def unit_counts(self) -> dict[str, int]:
        """How many units have each status."""
        counts: dict[str, int] = {}
        for unit in self.units:
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
            adapter: TypeAdapter[Any] = TypeAdapter(model)
            typed = []
            for unit in self.done():
                try:
                    typed.append((unit, adapter.validate_python(unit.result)))
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"]) or "result"
                    raise DataError(
                        f"run store {self.store_path}: unit {unit.unit_id}: the stored result does not fit "
                        f"{getattr(model, '__name__', model)} ({where}: {first['msg']})",
                        RESULT_HINT,
                    ) from None
            self._typed[model] = typed
        return self._typed[model]


def read_run(run_dir: Path | str) -> RunRecord:
    """Read a run's record from its store, once and read-only (a folder without a run: one clear error,
    nothing created)."""
    run_dir = Path(run_dir)
    with RunStore.in_dir(run_dir, readonly=True) as store:
        return record_from_store(store, run_dir)


def record_from_store(store: RunStore, run_dir: Path) -> RunRecord:
    """The record of an open store (the engine's own, at the end of a run)."""
    meta = store.all_meta()
    if meta.get("config") is None:
        raise DataError(f"no run config stored in {run_dir}", RESULT_HINT)
    config = parse_run_config(meta["config"], f"{run_dir} (stored config)")
    return RunRecord(
        run_dir=run_dir,
        config=config,
        manifest=meta.get("manifest") or {},
        meta=meta,
        units=store.units(),
        calls=Calls(store.call_rows(), store.path),
    )


__all__ = ["CALL_COLUMNS", "Calls", "RunRecord", "StoredCall", "read_run", "record_from_store"]
