"""Every file llmpsych writes into a run folder goes through here: atomically, and never through a link.

A run folder may come from someone else, so a name in it may be a planted symbolic link
(``report.md -> ~/.bashrc``, ``tables -> /elsewhere``). The rule, one for every writer:

* a file is written to a temporary file in its own folder, then renamed over its name
  (``os.replace``): a reader sees the old file or the new one, never half of one, and a link that
  stood at that name is *replaced* by a regular file; what it pointed to is not touched;
* a folder llmpsych names inside an output folder (``plots/``, ``transcripts/``, ``export/``) that
  is a link is replaced by a real folder; the folder the user names (the run directory, ``--out``)
  is taken as given;
* CSV text cells that a spreadsheet would run as a formula are neutralised (:func:`neutralise_formulas`).
"""

from __future__ import annotations

import io
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import LlmpsychError

if TYPE_CHECKING:
    import pandas as pd


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: Mode of written files: what ``open(path, "w")`` would give (mkstemp alone would give 0600).
_FILE_MODE = 0o666 & ~_umask()


def _cannot_write(path: Path, exc: OSError) -> LlmpsychError:
    reason = "a folder is in the way" if isinstance(exc, IsADirectoryError) else exc.strerror or str(exc)
    return LlmpsychError(f"cannot write {path}: {reason}")


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[Any]:
    """A handle on a temporary file beside ``path`` that becomes ``path`` (by rename) when the block ends
    without an error; on an error the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    try:
        os.fchmod(fd, _FILE_MODE)
        text = "b" not in mode
        with os.fdopen(fd, mode, encoding="utf-8" if text else None, newline="" if text else None) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from None
        raise


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (a link at ``path`` is replaced, not followed)."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically."""
    with atomic_open(path, "w") as handle:
        handle.write(text)
    return Path(path)


def output_dir(base: Path, *names: str) -> Path:
    """``base/names...`` as a real folder, created if missing; returns it.

    ``base`` (a run directory or a folder the user named) is created with its parents and taken as it
    is, a link included. Each folder in ``names`` is llmpsych's own: a link there is removed and a real
    folder made in its place (the link's target is not touched); a file there is an error.
    """
    folder = Path(base)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise LlmpsychError(f"cannot write into {folder}: it is a file, not a folder") from None
    except OSError as exc:
        raise _cannot_write(folder, exc) from None
    for name in names:
        folder = folder / name
        try:
            info = folder.lstat()
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            folder.unlink()
            info = None
        if info is None:
            try:
                folder.mkdir()
            except OSError as exc:
                raise _cannot_write(folder, exc) from None
        elif not stat.S_ISDIR(info.st_mode):
            raise LlmpsychError(f"cannot write into {folder}: it is a file, not a folder")
    return folder


#: A cell that is a plain number ("-5", "+0.25", "1e-3") is data, not a formula: it is left alone.
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
#: First characters with which a spreadsheet starts a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: object) -> object:
    """``'`` + ``value`` when ``value`` is text a spreadsheet would run as a formula, else ``value``.

    The rule (OWASP's): a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return gets a leading single quote, unless the whole cell is a plain number such as ``-5`` or a
    single character (the ``-`` the tables write for "no value"), which no spreadsheet runs.
    """
    if (
        isinstance(value, str)
        and len(value) > 1
        and value.startswith(FORMULA_STARTS)
        and not _PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text columns are neutralised (:func:`neutralise_cell`); numeric
    columns are untouched. Cells are screened by their first character and only the few that can start
    a formula are rewritten: 100,000 rows with four text columns take about 80 ms (``to_csv``: 330-430 ms)."""
    import numpy as np
    import pandas as pd

    starts = frozenset(FORMULA_STARTS)
    out = frame
    for column in frame.columns:
        series = frame[column]
        if not (
            pd.api.types.is_object_dtype(series.dtype)
            or pd.api.types.is_string_dtype(series.dtype)
            or isinstance(series.dtype, pd.CategoricalDtype)
        ):
            continue
        values = series.to_numpy(dtype=object)
        suspect = np.fromiter((type(v) is str and v[:1] in starts for v in values), bool, len(values))
        if not suspect.any():
            continue
        values = values.copy()
        for i in np.flatnonzero(suspect):
            values[i] = neutralise_cell(values[i])
        if out is frame:
            out = frame.copy()
        out[column] = pd.Series(values, index=frame.index, dtype=object)
    return out


def csv_text(frame: pd.DataFrame, *, index: bool = False) -> str:
    """``frame`` as CSV text, formulas neutralised, rows ended by CRLF (RFC 4180).

    The CRLF matters: Python's CSV writer quotes a cell only for the characters of its line ending, so
    with ``\\n`` alone a bare ``\\r`` in a model's reply went out unquoted, and a reader (Python's
    ``csv``, a spreadsheet) started a new row there, with cells no neutralisation had seen.
    """
    text: str = neutralise_formulas(frame).to_csv(index=index, lineterminator="\r\n")
    return text


def write_csv(frame: pd.DataFrame, path: Path, *, index: bool = False) -> Path:
    """Write ``frame`` as CSV (formulas neutralised, see :func:`csv_text`), atomically."""
    with atomic_open(path, "w") as handle:
        neutralise_formulas(frame).to_csv(handle, index=index, lineterminator="\r\n")
    return Path(path)


def write_parquet(frame: pd.DataFrame, path: Path, *, index: bool = False) -> Path:
    """Write ``frame`` as Parquet (exact values: no cell is changed), atomically."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=index)
    return atomic_write_bytes(path, buffer.getvalue())


def save_figure(fig: Any, path: Path, **savefig: Any) -> Path:
    """Save a matplotlib figure (format from the suffix) atomically."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(path).suffix.lstrip(".") or "png", **savefig)
    return atomic_write_bytes(path, buffer.getvalue())


def write_lines(path: Path, lines: Iterator[str] | list[str]) -> Path:
    """Stream ``lines`` (each ending in a newline) into ``path`` atomically, without holding them all."""
    handle: TextIO
    with atomic_open(path, "w") as handle:
        for line in lines:
            handle.write(line)
    return Path(path)
