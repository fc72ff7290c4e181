"""Many runs, one set of DataFrames: :func:`load_runs` reads run folders (paths, globs, sweep or preset
folders) into tidy pandas frames, ``runs``, ``units``, ``calls`` and ``scores``, keyed by ``run_dir``, and
``items``, the item-level long format of every scale administered (:mod:`llmpsych.runs.items`).

Each folder is read once, read-only, with :func:`~llmpsych.runs.record.read_run`; nothing is written and no
model is called. ``scores`` is read from the tables the benchmark's analysis wrote into the folder
(each task's ``score_tables``, :mod:`llmpsych.runs.scores`), so a run that was never analysed contributes no
score rows (``runs.scores_from`` is then empty). The factors the loaded runs' tasks declare (a perturbation
grid's ``template``, ``language``, ``persona``, ...: :meth:`~llmpsych.runs.task.Task.score_factor_columns`)
stay columns after :data:`SCORE_COLUMNS`, so ``scores.groupby(["language", "measure"])`` needs no parsing
of ids.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError, LlmpsychError
from ..userfiles import parse_json, read_text
from .items import ITEM_COLUMNS, items_frame, typed_items
from .languages import config_language
from .params import params_report
from .record import RunRecord, read_run
from .scores import ScoreTable, require_columns
from .store import STORE_FILE
from .task import task_class

PathLike = str | Path


#: A score table larger than this is not one an analysis wrote (2,500 grid configurations: about 1 MB).
MAX_SCORE_TABLE_BYTES = 200_000_000

#: A sweep.json larger than this is not one a sweep wrote (a preset of 1,000 runs: about 100 kB).
MAX_SWEEP_FILE_BYTES = 10_000_000


RUN_COLUMNS = [
    "run_dir",
    "task",
    "model",
    "label",
    "seed",
    "temperature",
    "params_sent",
    "params_fixed_by_task",
    "language",
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
    "how",
    "response_s",
    "refused",
    "refused_texts",
]
SCORE_COLUMNS = [
    "run_dir",
    "task",
    "model",
    "group",
    "item",
    "repeat",
    "measure",
    "score",
    "range",
]  # then the factor columns of the loaded runs' tasks (factor_columns)


@dataclass(frozen=True)
class RunFrames:
    """Tidy frames of several runs; every frame has a ``run_dir`` column joining it to ``runs``."""

    runs: pd.DataFrame
    units: pd.DataFrame
    calls: pd.DataFrame
    scores: pd.DataFrame
    run_dirs: tuple[Path, ...] = field(default=(), repr=False, compare=False)

    @cached_property
    def items(self) -> pd.DataFrame:
        """One row per respondent x item of every scale the runs administered (:data:`ITEM_COLUMNS`),
        built on first use: it reads each run's scale definitions (the scale files' stored text; the
        official scales from the run's data directory), which the other frames never need. A run whose
        scales cannot be read is one :class:`DataError` naming the folder."""
        return run_items(self.run_dirs)


def find_run_dirs(paths_or_globs: PathLike | Iterable[PathLike]) -> list[Path]:
    """The run folders named: a run folder itself, every run folder inside a folder of runs (a sweep, a
    preset's ``<model>/<setting>`` folders, a retest folder of dated runs, a folder of presets; up to
    :data:`MAX_DEPTH` levels down), or every match of a glob (``runs/*/gpt*``, ``runs/**``) and the run
    folders inside each; in the order given, each once."""
    entries = [paths_or_globs] if isinstance(paths_or_globs, str | Path) else list(paths_or_globs)
    if not entries:
        raise LlmpsychError("give at least one run folder, sweep folder or glob")
    found: list[Path] = []
    for entry in entries:
        text = str(entry)
        if not Path(text).exists() and glob.has_magic(text):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            folders = [m for m in matches if (m / STORE_FILE).is_file()]
            folders += [d for m in matches if not (m / STORE_FILE).is_file() for d in runs_inside(m)]
            if not folders:
                raise DataError(f"{text}: no run folder matches", "a run folder holds run.sqlite")
            found += folders
            continue
        path = Path(text)
        if (path / STORE_FILE).is_file():
            found.append(path)
        elif path.is_dir() and (inside := runs_inside(path)):
            found += inside
        elif not path.exists():
            raise DataError(f"{path}: no such folder")
        else:
            raise DataError(
                f"{path}: not a run folder (no {STORE_FILE}) and no run folder inside it "
                f"(looked {MAX_DEPTH} levels down)",
                "give a run folder, a sweep or preset folder, or a glob",
            )
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(str(path.resolve()), path)
    return list(unique.values())


#: How far below a named folder run folders are looked for: a preset writes ``OUT/<model>/<setting>``
#: (two levels), so a folder holding several presets is three.
MAX_DEPTH = 3

#: Folders looked into below one named folder at most (a home folder named by mistake is refused in one
#: line instead of being walked for minutes).
MAX_FOLDERS = 20_000


def runs_inside(folder: Path) -> list[Path]:
    """Run folders below ``folder`` (a sweep, preset, retest folder or a folder of those), at most
    :data:`MAX_DEPTH` levels down, in name order level by level (``a/x``, ``a/y``, ``b/x``). A run folder's
    own subfolders are not searched, and symbolic links are never followed (a link inside the tree cannot
    pull in runs from elsewhere)."""
    if not folder.is_dir():
        return []
    found: list[Path] = []
    visited = 0

    def walk(directory: Path, depth: int) -> None:
        nonlocal visited
        try:
            with os.scandir(directory) as scan:
                children = sorted(e.name for e in scan if e.is_dir(follow_symlinks=False))
        except OSError:
            return  # unreadable: nothing found there (a named run folder inside it still fails loudly)
        for name in children:
            visited += 1
            if visited > MAX_FOLDERS:
                raise DataError(
                    f"{folder}: more than {MAX_FOLDERS:,} folders to look through for runs",
                    "name the run, sweep or preset folders, or a glob",
                )
            child = directory / name
            store = child / STORE_FILE
            if store.is_file() and not store.is_symlink():
                found.append(child)
            elif depth < MAX_DEPTH:
                walk(child, depth + 1)

    walk(folder, 1)
    return found


def load_runs(paths_or_globs: PathLike | Iterable[PathLike]) -> RunFrames:
    """Read every run folder named (see :func:`find_run_dirs`) into :class:`RunFrames`.

    A folder that is not a run, a damaged store or a damaged score table is one :class:`DataError` naming
    the folder."""
    runs, units, calls, scores = [], [], [], []
    factors: dict[str, None] = {}
    found = find_run_dirs(paths_or_globs)
    for run_dir in found:
        try:
            record = read_run(run_dir)
            key = str(run_dir)
            score_rows, source = _scores(record, key)
        except LlmpsychError as exc:
            message = exc.message if str(run_dir) in exc.message else f"{run_dir}: {exc.message}"
            raise DataError(message, exc.hint) from None
        factors.update(dict.fromkeys(factor_columns(record.config.task)))
        runs.append(_run_row(record, key, source))
        units.append(_units(record, key))
        calls.append(_calls(record, key))
        scores.append(score_rows)
    return RunFrames(
        runs=pd.DataFrame(runs, columns=RUN_COLUMNS),
        units=_concat(units, UNIT_COLUMNS),
        calls=_concat(calls, CALL_COLUMNS),
        scores=_concat(scores, [*SCORE_COLUMNS, *factors]),
        run_dirs=tuple(found),
    )


def run_items(run_dirs: Iterable[Path]) -> pd.DataFrame:
    """The item-level long format (:mod:`llmpsych.runs.items`) of the runs in these folders: each run's
    task says what it administered (:meth:`Task.administrations`); a task this installation does not
    know contributes no rows. The ``run`` column and the respondents are named by the folder as given."""
    parts = []
    for run_dir in run_dirs:
        try:
            record = read_run(run_dir)
            try:
                task = task_class(record.config.task)
            except LlmpsychError:
                continue
            given = task(record.config).administrations(record)
            groups = {
                "model": record.config.model,
                "language": config_language(record.meta.get("config") or {}),
            }
            parts.append(items_frame(given, str(run_dir), groups))
        except LlmpsychError as exc:
            message = exc.message if str(run_dir) in exc.message else f"{run_dir}: {exc.message}"
            raise DataError(message, exc.hint) from None
    return typed_items(_concat(parts, ITEM_COLUMNS))


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).reindex(columns=columns)


def _run_row(record: RunRecord, key: str, source: str | None) -> dict[str, Any]:
    counts = record.unit_counts()
    rows = record.calls.frame() if len(record.calls) else None
    label = _sweep_label(record.run_dir)
    sent = params_report(record)
    return {
        "run_dir": key,
        "task": record.config.task,
        "model": record.config.model,
        "label": label,
        "seed": record.config.seed,
        "temperature": record.config.params.temperature,
        # what the calls sent (stored request bodies), and where a task's fixed value beat the config
        "params_sent": sent.sent_text(),
        "params_fixed_by_task": sent.overrides_text(),
        "language": config_language(record.meta.get("config") or {}),
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
    """The run's label in the sweep.json of the sweep or preset holding it (its parent, or for a preset's
    ``<model>/<setting>`` its grandparent; a one-run sweep's own folder), as ``key=value`` pairs (None
    outside a sweep)."""
    from .sweep import SWEEP_FILE

    label = _label_in(run_dir / SWEEP_FILE, ".")
    for up in range(1, MAX_DEPTH):
        if label is not None or len(run_dir.parts) <= up:
            break
        label = _label_in(run_dir.parents[up - 1] / SWEEP_FILE, "/".join(run_dir.parts[-up:]))
    return label


def _label_in(plan: Path, directory: str) -> str | None:
    if not plan.is_file():
        return None
    try:
        entries = parse_json(read_text(plan, "sweep file", MAX_SWEEP_FILE_BYTES), str(plan))
    except LlmpsychError:
        return None  # a damaged sweep.json costs the label, not the load
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("directory") == directory:
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
    for spec in score_tables(record.config.task):
        path = record.run_dir / spec.file
        if path.is_file():
            parts.append(_score_rows(spec, _read_table(path), path, record, key))
            sources.append(spec.file)
    columns = [*SCORE_COLUMNS, *factor_columns(record.config.task)]
    return _concat(parts, columns), ", ".join(sources) or None


def _whole(values: pd.Series) -> pd.Series:
    """A column of whole numbers that a gap made float (situation 10 read as ``10.0``) as whole numbers
    with gaps (pandas ``Int64``); any other column as it is."""
    if pd.api.types.is_float_dtype(values):
        known = values.dropna()
        if len(known) and (known == known.round()).all():
            return values.astype("Int64")
    return values


def factor_columns(task: str) -> tuple[str, ...]:
    """The factor columns ``task``'s score rows carry (none for a task this installation does not know)."""
    try:
        return task_class(task).score_factor_columns()
    except LlmpsychError:
        return ()


def score_tables(task: str) -> tuple[ScoreTable, ...]:
    """The tables ``task``'s analysis writes its scores into (its ``score_tables``; none for a task this
    installation does not know)."""
    try:
        return task_class(task).score_tables
    except LlmpsychError:
        return ()


def _read_table(path: Path) -> pd.DataFrame:
    """A score table as written: CSV, or a JSON object as one row; DataError naming the file."""
    size = path.stat().st_size
    if size > MAX_SCORE_TABLE_BYTES:
        raise DataError(
            f"{path}: {size:,} bytes, more than any score table ({MAX_SCORE_TABLE_BYTES:,})",
            "re-run `llmpsych analyze RUN_DIR`",
        )
    if path.suffix == ".json":
        data = parse_json(read_text(path, "score table", MAX_SCORE_TABLE_BYTES), str(path))
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
    require_columns(table, path, wanted)
    if spec.keys is not None:
        keys = [c for c in table.columns if c in spec.keys or c == "range"]
        measures = [c for c in table.columns if c not in keys]
        if not measures:
            raise DataError(f"{path}: no score column", "re-run `llmpsych analyze RUN_DIR`")
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
            "item": _whole(table[spec.item]) if spec.item else None,
            "repeat": _whole(table[spec.repeat]) if spec.repeat else None,
            "measure": measure,
            "score": scores,
            "range": table["range"] if "range" in table.columns else spec.range,
            **{c: table[c] for c in spec.factors},
        }
    )
    return frame[[*SCORE_COLUMNS, *spec.factors]]


__all__ = [
    "ITEM_COLUMNS",
    "RunFrames",
    "factor_columns",
    "find_run_dirs",
    "load_runs",
    "run_items",
    "score_tables",
]
