"""Reading a number from an answer or a data file by one strict rule, so no hostile form becomes a value.

The rule (``docs/security.md`` §5): a whole number counts only when it is written as one, with ASCII
digits and an optional leading minus (``"42"``, ``" -3 "``, JSON ``42``). ``2e5``, ``5%``, ``3-4``,
``3.5``, ``3.0``, ``1/2``, ``0x10``, ``+3``, ``1,000``, ``1_000``, non-ASCII digits (``٣``), ``inf``,
``nan`` and booleans are not whole numbers, although Python's ``float()`` and ``int()`` read several of
them (``float("٣") == 3.0``, ``int("+3") == 3``, ``float("1_000") == 1000.0``). Measured values that may
be fractional (a dimension mean, a hit rate) go through :func:`finite_number`, which refuses NaN and
infinities. JSON read with :func:`loads_strict` keeps float literals, ``NaN`` and ``Infinity`` (which the
standard library turns into floats) as text, so a JSON ``1e999`` or ``NaN`` is never a number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DataError

if TYPE_CHECKING:
    import pandas as pd

_WHOLE = re.compile(r"-?[0-9]{1,15}")
#: up to 20 decimals: Python (and pandas' CSV writer) print a float in [1e-4, 0.1) with up to 3 leading
#: zeros and 17 significant digits, e.g. 0.006409670809770109
_DECIMAL = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,20})?")
_SCIENTIFIC = re.compile(r"-?[0-9](?:\.[0-9]{1,17})?e[-+][0-9]{1,3}")


class JsonFloat(str):
    """A JSON number literal with a fraction or exponent (``50.0``, ``2e5``), kept as its text."""


def whole_number(value: object) -> int | None:
    """The integer ``value`` writes (an ``int`` that is not a bool, or ASCII digits); None otherwise.

    At most 15 digits, so a string can never name a number that a float would round (2**53 > 10**15).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and not isinstance(value, JsonFloat):
        text = value.strip()
        if _WHOLE.fullmatch(text):
            return int(text)
    return None


def finite_number(value: object) -> float | None:
    """A finite real number (``int``, ``float``, or decimal ASCII text such as ``"3.25"``); None for NaN,
    infinities, booleans, exponents and anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, JsonFloat):  # a JSON literal: 2.5e-3 is a number, 1e999 and NaN are not
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip()
        if _DECIMAL.fullmatch(text):
            return float(text)
        if _SCIENTIFIC.fullmatch(text):  # pandas writes 1e-05: finite only
            number = float(text)
            return number if math.isfinite(number) else None
    return None


def loads_strict(text: str) -> Any:
    """``json.loads`` that keeps float literals, ``NaN`` and ``Infinity`` as :class:`JsonFloat` text,
    which :func:`whole_number` refuses and :func:`finite_number` reads only when finite."""
    return json.loads(text, parse_float=JsonFloat, parse_constant=JsonFloat)


#: A decoder with the same rules, for ``raw_decode`` scans of a reply.
STRICT_DECODER = json.JSONDecoder(parse_float=JsonFloat, parse_constant=JsonFloat)


def checked_csv(
    path: Path,
    required: Sequence[str],
    numeric: Sequence[str] = (),
    unique: Sequence[str] = (),
) -> pd.DataFrame:
    """A CSV table whose ``required`` columns exist, whose ``numeric`` cells are finite numbers or blank
    (blank reads as NaN: "no value"), and whose ``unique`` key appears once; else a one-line DataError
    naming the file, the row (as a spreadsheet counts it, the header being row 1) and the column."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({str(exc).splitlines()[0][:120]})") from None
    absent = [c for c in required if c not in frame.columns]
    if absent:
        raise DataError(f"{path}: no column {absent[0]!r}", f"columns: {', '.join(map(str, frame.columns))}")
    for column in numeric:
        for row, cell in enumerate(frame[column], 2):
            text = cell.strip()
            if text not in {"", "nan", "NaN"} and finite_number(text) is None:
                raise DataError(f"{path}: row {row}, column {column!r}: {text[:20]!r} is not a finite number")
        stripped = frame[column].str.strip()
        frame[column] = pd.to_numeric(stripped.mask(stripped.isin(["", "nan", "NaN"])))
    for column in frame.columns:  # other blank cells read as pandas reads them: missing
        if column not in numeric:
            frame[column] = frame[column].replace("", math.nan)
    if unique:
        repeated = frame.duplicated(list(unique), keep="first")
        if repeated.any():
            row = int(repeated.to_numpy().nonzero()[0][0]) + 2
            key = ", ".join(str(frame.iloc[row - 2][c]) for c in unique)
            raise DataError(f"{path}: row {row} repeats {key} (give each row once)")
    return frame
