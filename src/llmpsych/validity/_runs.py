"""Where the validity commands get their item-level long frame: a table file, or run folders.

A table file (CSV or Parquet) already in the long layout is read as is (bounded read, columns checked).
Run folders go through ``llmpsych.validity.items.item_frame`` (the item-level export).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

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
    from .items import item_frame

    return item_frame(folders)
