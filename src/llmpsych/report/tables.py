"""Tidy result tables written as CSV, and as Parquet when pyarrow is installed (the ``parquet`` extra)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .files import write_csv, write_parquet

PARQUET_MISSING = "Parquet files not written: pyarrow is not installed (`pip install 'llmpsych[parquet]'`)."


def parquet_available() -> bool:
    """Whether pandas can write Parquet here."""
    return importlib.util.find_spec("pyarrow") is not None


def write_tables(
    frames: Iterable[tuple[str, pd.DataFrame]], out_dir: Path, *, parquet: bool = True
) -> tuple[list[Path], str | None]:
    """Write ``<name>.csv`` (and ``<name>.parquet``) per frame; return the paths and a note if Parquet
    was asked for but could not be written.

    Files are written atomically; CSV text cells that a spreadsheet would run as formulas get a leading
    ``'`` (:func:`~llmpsych.report.files.neutralise_cell`), Parquet keeps every value exactly."""
    paths: list[Path] = []
    frames = list(frames)
    for name, frame in frames:
        path = out_dir / f"{name}.csv"
        write_csv(frame, path)
        paths.append(path)
    if not parquet:
        return paths, None
    if not parquet_available():
        return paths, PARQUET_MISSING
    for name, frame in frames:
        path = out_dir / f"{name}.parquet"
        write_parquet(frame, path)
        paths.append(path)
    return paths, None
