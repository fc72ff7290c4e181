"""Where the validity commands get their item-level long frame: a table file, or run folders.

A table file (CSV or Parquet) already in the long layout is read as is (bounded read, columns checked).
Run folders go through ``llmpsych.validity.items.item_frame`` (the item-level export); until that module
exists on this branch, a minimal private reader of PsychoBench run folders stands in
for it (``_psychobench``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ..userfiles import MAX_DATA_FILE_BYTES, read_bytes

REQUIRED = ("respondent", "scale", "item", "response")
GROUP_COLUMNS = ("source", "model", "persona", "language", "template", "run")


def read_table(path: Path) -> pd.DataFrame:
    """A long item table from CSV or Parquet; missing optional columns are filled as the layout says."""
    raw = read_bytes(path, "item table", MAX_DATA_FILE_BYTES)
    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(io.BytesIO(raw))
        else:
            frame = pd.read_csv(
                io.BytesIO(raw),
                dtype={"respondent": str, "subscale": str},
                keep_default_na=False,
                na_values={"response": ["", "NaN", "nan"]},
            )
    except (ValueError, OSError, ImportError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: not a CSV or Parquet item table ({str(exc)[:120]})") from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path}: the item table has no column {', '.join(missing)}",
            hint="columns: respondent, scale, item, response, subscale, and grouping columns",
        )
    frame = frame.copy()
    frame["respondent"] = frame["respondent"].astype(str)
    frame["scale"] = frame["scale"].astype(str)
    try:
        frame["item"] = pd.to_numeric(frame["item"], errors="raise").astype(int)
        frame["response"] = pd.to_numeric(frame["response"], errors="coerce").astype(float)
    except (ValueError, TypeError):
        raise DataError(f"{path}: the item column holds a value that is not a whole number") from None
    for col in ("subscale", *GROUP_COLUMNS):
        if col not in frame.columns:
            frame[col] = ""
        frame[col] = frame[col].fillna("").astype(str)
    return frame


def load_frame(sources: Sequence[Path]) -> pd.DataFrame:
    """The long frame of every source: table files and run folders, stacked."""
    if not sources:
        raise DataError("no item table or run folder given", hint="name a run folder or an items CSV")
    frames = []
    folders = [p for p in sources if p.is_dir()]
    for path in sources:
        if not path.is_dir():
            frames.append(read_table(path))
    if folders:
        frames.append(_folders(folders))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _folders(folders: list[Path]) -> pd.DataFrame:
    import importlib

    try:  # the item-level export, built alongside (see the module docstring)
        items = importlib.import_module("llmpsych.validity.items")
    except ImportError:
        return pd.concat([_psychobench(f) for f in folders], ignore_index=True)
    frame: pd.DataFrame = items.item_frame(folders)
    return frame


def _psychobench(folder: Path) -> pd.DataFrame:
    """The long rows of one PsychoBench run folder (a model run or ``psychobench import-answers``)."""
    from ..psychobench.task import PsychoBenchTask
    from ..runs.record import read_run

    record = read_run(folder)
    if record.config.task != "psychobench":
        raise DataError(f"{folder}: a {record.config.task} run; item tables come from psychobench runs here")
    task = PsychoBenchTask(record.config)
    scales = task.all_scales
    options: Any = task.options
    imported = options.imported is not None
    rows = []
    for unit in record.done():
        result = unit.result or {}
        scale = scales.get(str(result.get("scale")))
        if scale is None:
            continue
        given = {int(k): v for k, v in (result.get("answers") or {}).items()}
        refused = bool(result.get("refused", False))
        subscale_of = {i: s.name for s in scale.subscales for i in s.item_indices}
        for item in scale.items:
            value = given.get(item.index)
            ok = value is not None and not (isinstance(value, float) and math.isnan(value))
            rows.append(
                {
                    "respondent": f"{folder.name}:{result.get('run')}",
                    "source": "person" if imported else "model",
                    "model": "" if imported else str(record.config.model or ""),
                    "persona": "" if imported else str(options.persona),
                    "language": "",
                    "template": "" if imported else str(options.template),
                    "run": str(result.get("run", "")),
                    "scale": scale.name,
                    "item": item.index,
                    "subscale": subscale_of.get(item.index, ""),
                    "reverse": bool(item.reverse),
                    "response": float(value) if ok and value is not None else math.nan,
                    "status": "answered" if ok else ("refused" if refused else "invalid"),
                    "min": float(scale.response_min),
                    "max": float(scale.response_max),
                }
            )
    if not rows:
        raise DataError(f"{folder}: no finished PsychoBench unit with answers")
    return pd.DataFrame(rows)
