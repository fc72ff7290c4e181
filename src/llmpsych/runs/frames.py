"""Many runs, one set of DataFrames: :func:`load_runs` reads run folders (paths, globs, sweep or preset
folders) into tidy pandas frames, ``runs``, ``units``, ``calls`` and ``scores``, keyed by ``run_dir``.

Each folder is read once, read-only, with :func:`~llmpsych.runs.record.read_run`; nothing is written and no
model is called. ``scores`` is read from the tables the benchmark's analysis wrote into the folder
(:data:`SCORE_TABLES`, one entry per registered task), so a run that was never analysed contributes no
score rows (``runs.scores_from`` is then empty). The perturbation grids' factors stay columns
(:data:`FACTOR_COLUMNS`), so ``scores.groupby(["language", "measure"])`` needs no parsing of ids.
"""

from __future__ import annotations

import glob
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError, LlmpsychError
from ..quickstart.demo_scale import demo_scale
from ..reliability.custom_grid import GRID_FACTORS
from .record import RunRecord, read_run
from .store import STORE_FILE

PathLike = str | Path


#: The grid factors a reliability run's scores keep as their own columns (empty for most other tasks).
FACTOR_COLUMNS = list(GRID_FACTORS)
#: A score table larger than this is not one an analysis wrote (2,500 grid configurations: about 1 MB).
MAX_SCORE_TABLE_BYTES = 200_000_000

Prepare = Callable[[pd.DataFrame, Path, RunRecord], pd.DataFrame]


@dataclass(frozen=True)
class ScoreTable:
    """Where a benchmark's analysis keeps its per-repeat scores, and which of its columns mean what.

    A long table has one score per row in ``value``, its measure in column ``measure`` (``None``: the
    measure is ``value``'s own name). A wide table gives ``keys``, its columns that are not scores: every
    other column is one measure. ``factors`` are copied into the same-named :data:`FACTOR_COLUMNS`.
    ``prepare`` derives columns the file does not hold as such (a configuration id, a repeat from the
    store) before any of this; it raises :class:`DataError` naming the file."""

    file: str
    group: str | None
    repeat: str | None
    item: str | None = None
    measure: str | None = None
    value: str = "score"
    keys: tuple[str, ...] | None = None
    factors: tuple[str, ...] = ()
    prepare: Prepare | None = None


def _require(table: pd.DataFrame, path: Path, columns: Iterable[str]) -> None:
    """DataError naming the file and the first of ``columns`` it lacks."""
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise DataError(f"{path}: no column {absent[0]!r}", "re-run `llmpsych report RUN_DIR`")


def _whole_numbers(values: pd.Series, path: Path, column: str) -> pd.Series:
    """``values`` as whole numbers; DataError naming the file at the first that is not one."""
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() | (numbers != numbers.round())
    if bad.any():
        shown = str(values[bad].iloc[0])[:20]
        raise DataError(f"{path}: {column} {shown!r} is not a whole number")
    return numbers.astype(int)


#: the BFI grid's factors, in the order of its configuration ids (``t1-v1-En-n-f``)
_BFI_FACTORS = ("template", "version", "language", "label", "order")


def _bfi_points(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The BFI grid's data points with a configuration id, the grid's factor columns (``framing``: the
    label format and the order, e.g. ``al-r``; ``persona``: the steering target) and the repeat (1, 2,
    ...) from the unit's payload in the store."""
    _require(table, path, ("unit_id", *_BFI_FACTORS))
    repeats = {u.unit_id: int(u.payload.get("repeat", 0)) + 1 for u in record.units}
    units = table["unit_id"].astype(str)
    unknown = units[~units.isin(repeats)]
    if len(unknown):
        raise DataError(f"{path}: unit {unknown.iloc[0][:60]!r} is not a unit of this run")
    factors = table[list(_BFI_FACTORS)].astype(str)
    target = table["append_label"] if "append_label" in table.columns else None
    return table.assign(
        configuration=factors.agg("-".join, axis=1),
        framing=factors["label"] + "-" + factors["order"],
        persona=target,
        repeat=units.map(repeats),
    )


def _grid_points(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """An instrument grid's data points with a configuration id and the repeat counted from 1."""
    _require(table, path, (*GRID_FACTORS, "repeat"))
    factors = table[list(GRID_FACTORS)].astype(str)
    return table.assign(
        configuration=factors.agg("-".join, axis=1),
        repeat=_whole_numbers(table["repeat"], path, "repeat") + 1,
    )


def _quickstart_scale(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The demonstration scale's scores: the scale's name, and the administration number of
    ``run-003`` (3)."""
    _require(table, path, ("run",))
    numbers = table["run"].astype(str).str.removeprefix("run-")
    return table.assign(scale=demo_scale().name, run=_whole_numbers(numbers, path, "run"))


def _quickstart_game(table: pd.DataFrame, path: Path, record: RunRecord) -> pd.DataFrame:
    """The short game's 0-100 score, named as GAMA-Bench names the game (one game: run 1)."""
    return table.assign(game="guessing", run=1)


#: columns of data_points.csv that are not scores: the BFI grid's (each other column is a dimension) ...
_BFI_KEYS = (
    "unit_id",
    *_BFI_FACTORS,
    "append_label",
    "case",
    "n_valid",
    "n_items",
    "valid_rate",
    "attempts",
    "n_logprob_items",
    "refused",
    "pc1",
    "pc2",
    "outlier",
    "configuration",
    "framing",
    "persona",
    "repeat",
)
#: ... and an instrument grid's (each other column is one of the scale's subscales)
_GRID_KEYS = (
    "unit_id",
    *GRID_FACTORS,
    "repeat",
    "n_valid",
    "n_items",
    "valid_rate",
    "pc1",
    "pc2",
    "outlier",
    "configuration",
)

#: task name -> the tables its analysis writes scores into, read in this order. Every registered task
#: (``llmpsych.runs.task.TASKS``) is here; ``echo`` (a test workload) and ``gamabench-rephrase`` (it writes
#: prompt templates) measure nothing and give no score rows.
SCORE_TABLES: dict[str, tuple[ScoreTable, ...]] = {
    "psychobench": (ScoreTable("scores.csv", group="scale", repeat="run", measure="subscale"),),
    "gamabench": (ScoreTable("games.csv", group="game", repeat="run"),),
    "mas": (ScoreTable("results.csv", group=None, repeat=None, item="item"),),
    "emotionbench": (
        ScoreTable(
            "runs.csv",
            group="factor",
            repeat="run",
            item="situation",
            keys=("kind", "factor", "situation", "run", "valid", "refused", "asks"),
        ),
    ),
    "reliability": (
        ScoreTable(
            "data_points.csv",
            group="configuration",
            repeat="repeat",
            keys=_BFI_KEYS,
            factors=tuple(FACTOR_COLUMNS),
            prepare=_bfi_points,
        ),
    ),
    "reliability-grid": (
        ScoreTable(
            "data_points.csv",
            group="configuration",
            repeat="repeat",
            keys=_GRID_KEYS,
            factors=tuple(FACTOR_COLUMNS),
            prepare=_grid_points,
        ),
    ),
    "quickstart": (
        ScoreTable(
            "scores.csv",
            group="scale",
            repeat="run",
            keys=("scale", "run", "valid_rate", "asks", "refused"),
            prepare=_quickstart_scale,
        ),
        ScoreTable("game.json", group="game", repeat="run", prepare=_quickstart_game),
    ),
    "validity": (ScoreTable("validity_runs.csv", group="benchmark", repeat="run", factors=("persona",)),),
    "translate": (
        ScoreTable(
            "agreement.csv",
            group="scale",
            repeat=None,
            item="text",
            keys=(
                "scale",
                "text",
                "source",
                "translation",
                "back_translation",
                "versions",
                "asks",
                "rejected",
            ),
        ),
    ),
    "echo": (),
    "gamabench-rephrase": (),
}

RUN_COLUMNS = [
    "run_dir",
    "task",
    "model",
    "label",
    "seed",
    "temperature",
    "units",
    "done",
    "failed",
    "calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "llmpsych_version",
    "scores_from",
]
UNIT_COLUMNS = ["run_dir", "unit_id", "status", "attempts", "error", "payload", "result"]
CALL_COLUMNS = [
    "run_dir",
    "unit_id",
    "seq",
    "role",
    "model",
    "messages",
    "answer",
    "finish_reason",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "attempts",
    "cached",
]
SCORE_COLUMNS = ["run_dir", "task", "model", "group", "item", "repeat", "measure", "score", *FACTOR_COLUMNS]


@dataclass(frozen=True)
class RunFrames:
    """Tidy frames of several runs; every frame has a ``run_dir`` column joining it to ``runs``."""

    runs: pd.DataFrame
    units: pd.DataFrame
    calls: pd.DataFrame
    scores: pd.DataFrame


def find_run_dirs(paths_or_globs: PathLike | Iterable[PathLike]) -> list[Path]:
    """The run folders named: a run folder itself, every run folder directly inside a sweep or preset
    folder, or every match of a glob (``runs/*/gpt*``, ``runs/**``); in the order given, each once."""
    entries = [paths_or_globs] if isinstance(paths_or_globs, str | Path) else list(paths_or_globs)
    if not entries:
        raise LlmpsychError("give at least one run folder, sweep folder or glob")
    found: list[Path] = []
    for entry in entries:
        text = str(entry)
        if not Path(text).exists() and glob.has_magic(text):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            folders = [m for m in matches if (m / STORE_FILE).is_file()]
            folders += [d for m in matches if not (m / STORE_FILE).is_file() for d in _runs_inside(m)]
            if not folders:
                raise DataError(f"{text}: no run folder matches", "a run folder holds run.sqlite")
            found += folders
            continue
        path = Path(text)
        if (path / STORE_FILE).is_file():
            found.append(path)
        elif path.is_dir() and _runs_inside(path):
            found += _runs_inside(path)
        elif not path.exists():
            raise DataError(f"{path}: no such folder")
        else:
            raise DataError(
                f"{path}: not a run folder (no {STORE_FILE}) and no run folder inside it",
                "give a run folder, a sweep or preset folder, or a glob",
            )
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(str(path.resolve()), path)
    return list(unique.values())


def _runs_inside(folder: Path) -> list[Path]:
    """Run folders directly inside ``folder`` (a sweep or preset folder), in name order."""
    if not folder.is_dir():
        return []
    return sorted(p.parent for p in folder.glob(f"*/{STORE_FILE}"))


def load_runs(paths_or_globs: PathLike | Iterable[PathLike]) -> RunFrames:
    """Read every run folder named (see :func:`find_run_dirs`) into :class:`RunFrames`.

    A folder that is not a run, a damaged store or a damaged score table is one :class:`DataError` naming
    the folder."""
    runs, units, calls, scores = [], [], [], []
    for run_dir in find_run_dirs(paths_or_globs):
        try:
            record = read_run(run_dir)
            key = str(run_dir)
            score_rows, source = _scores(record, key)
        except LlmpsychError as exc:
            message = exc.message if str(run_dir) in exc.message else f"{run_dir}: {exc.message}"
            raise DataError(message, exc.hint) from None
        runs.append(_run_row(record, key, source))
        units.append(_units(record, key))
        calls.append(_calls(record, key))
        scores.append(score_rows)
    return RunFrames(
        runs=pd.DataFrame(runs, columns=RUN_COLUMNS),
        units=_concat(units, UNIT_COLUMNS),
        calls=_concat(calls, CALL_COLUMNS),
        scores=_concat(scores, SCORE_COLUMNS),
    )


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def _run_row(record: RunRecord, key: str, source: str | None) -> dict[str, Any]:
    counts = record.unit_counts()
    rows = record.calls.frame() if len(record.calls) else None
    label = _sweep_label(record.run_dir)
    return {
        "run_dir": key,
        "task": record.config.task,
        "model": record.config.model,
        "label": label,
        "seed": record.config.seed,
        "temperature": record.config.params.temperature,
        "units": len(record.units),
        "done": counts.get("done", 0),
        "failed": counts.get("failed", 0),
        "calls": len(record.calls),
        "cached_calls": int(rows["cached"].sum()) if rows is not None else 0,
        "prompt_tokens": _total(rows, "prompt_tokens"),
        "completion_tokens": _total(rows, "completion_tokens"),
        "llmpsych_version": record.manifest.get("llmpsych_version"),
        "scores_from": source,
    }


def _total(rows: pd.DataFrame | None, column: str) -> float:
    """Sum of a token column; NaN when no call reported it."""
    if rows is None:
        return 0
    values = pd.to_numeric(rows[column], errors="coerce")
    return float(values.sum()) if values.notna().any() else math.nan


def _sweep_label(run_dir: Path) -> str | None:
    """The run's label in its parent's sweep.json, as ``key=value`` pairs (None outside a sweep)."""
    plan = run_dir.parent / "sweep.json"
    try:
        entries = json.loads(plan.read_text(encoding="utf-8")) if plan.is_file() else []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("directory") == run_dir.name:
            label = entry.get("label")
            if isinstance(label, dict):
                return ", ".join(f"{k}={v}" for k, v in label.items())
    return None


def _units(record: RunRecord, key: str) -> pd.DataFrame:
    from .export import units_frame

    frame = units_frame(record)
    frame.insert(0, "run_dir", key)
    return frame


def _calls(record: RunRecord, key: str) -> pd.DataFrame:
    from .export import calls_frame

    frame = calls_frame(record)
    if frame.empty:
        return frame
    frame.insert(0, "run_dir", key)
    return frame


def _scores(record: RunRecord, key: str) -> tuple[pd.DataFrame, str | None]:
    """The run's scores in long form, and the files they came from (None: no analysed score table)."""
    parts, sources = [], []
    for spec in SCORE_TABLES.get(record.config.task, ()):
        path = record.run_dir / spec.file
        if path.is_file():
            parts.append(_score_rows(spec, _read_table(path), path, record, key))
            sources.append(spec.file)
    return _concat(parts, SCORE_COLUMNS), ", ".join(sources) or None


def _read_table(path: Path) -> pd.DataFrame:
    """A score table as written: CSV, or a JSON object as one row; DataError naming the file."""
    size = path.stat().st_size
    if size > MAX_SCORE_TABLE_BYTES:
        raise DataError(
            f"{path}: {size:,} bytes, more than any score table ({MAX_SCORE_TABLE_BYTES:,})",
            "re-run `llmpsych report RUN_DIR`",
        )
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: cannot read as JSON ({str(exc).splitlines()[0][:120]})") from None
        if not isinstance(data, dict):
            raise DataError(f"{path}: not a JSON object")
        return pd.DataFrame([data])
    try:  # only an empty cell is missing: "n/a" or "NA" typed into a score is not silently a gap
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({str(exc).splitlines()[0][:120]})") from None


def _score_rows(
    spec: ScoreTable, table: pd.DataFrame, path: Path, record: RunRecord, key: str
) -> pd.DataFrame:
    """One table's scores as :data:`SCORE_COLUMNS` rows."""
    if spec.prepare is not None:
        table = spec.prepare(table, path, record)
    wanted = [c for c in (spec.group, spec.repeat, spec.item, spec.measure) if c] + list(spec.factors)
    if spec.keys is None:
        wanted.append(spec.value)
    _require(table, path, wanted)
    if spec.keys is not None:
        keys = [c for c in table.columns if c in spec.keys]
        measures = [c for c in table.columns if c not in spec.keys]
        if not measures:
            raise DataError(f"{path}: no score column", "re-run `llmpsych report RUN_DIR`")
        table = table.melt(id_vars=keys, value_vars=measures, var_name="\0measure", value_name="\0score")
        measure, value = table["\0measure"], table["\0score"]
    else:
        measure = table[spec.measure] if spec.measure else pd.Series(spec.value, index=table.index)
        value = table[spec.value]
    scores = pd.to_numeric(value, errors="coerce")
    bad = value.notna() & scores.isna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: a score is not a number: {str(value.iloc[row])[:20]!r}")
    frame = pd.DataFrame(
        {
            "run_dir": key,
            "task": record.config.task,
            "model": record.config.model,
            "group": table[spec.group] if spec.group else None,
            "item": table[spec.item] if spec.item else None,
            "repeat": table[spec.repeat] if spec.repeat else None,
            "measure": measure,
            "score": scores,
            **{c: table[c] if c in spec.factors else None for c in FACTOR_COLUMNS},
        }
    )
    return frame[SCORE_COLUMNS]


__all__ = ["FACTOR_COLUMNS", "SCORE_TABLES", "RunFrames", "ScoreTable", "find_run_dirs", "load_runs"]
