"""Choice label formats and orders: level <-> label, and the LEVEL_DETAILS text.

Five formats (thesis §3.2, factor 4) with the codes of the released data: ``n`` Arabic numerals,
``al``/``au`` lower/upper Latin letters, ``rl``/``ru`` lower/upper Roman numerals. Two orders: ``f``
ascending (label 1 = the lowest level, "strongly disagree") and ``r`` descending (label 1 = the highest
level). Every answer is mapped back to the canonical level (1 = disagree ... 5 = agree) before scoring.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

LABEL_FORMATS: dict[str, str] = {
    "n": "Arabic numeral",
    "al": "Lowercase Latin",
    "au": "Uppercase Latin",
    "rl": "Lowercase Roman",
    "ru": "Uppercase Roman",
}
ORDERS: dict[str, str] = {"f": "Ascending", "r": "Descending"}
_ROMAN = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def check_format(fmt: str) -> str:
    """The format code, or ValueError naming the valid ones."""
    if fmt not in LABEL_FORMATS:
        raise ValueError(f"unknown label format {fmt!r} (expected {', '.join(LABEL_FORMATS)})")
    return fmt


def roman(number: int) -> str:
    """Upper-case Roman numeral of a positive integer."""
    out = []
    for value, symbol in _ROMAN:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


def letters(number: int) -> str:
    """Spreadsheet-style letters: 1 -> A, 26 -> Z, 27 -> AA."""
    out = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        out = chr(65 + rest) + out
    return out


@lru_cache(maxsize=512)
def label(fmt: str, position: int) -> str:
    """The label shown for choice ``position`` (1-based) in format ``fmt``."""
    check_format(fmt)
    if position < 1:
        raise ValueError(f"label positions start at 1, got {position}")
    if fmt == "n":
        return str(position)
    text = letters(position) if fmt.startswith("a") else roman(position)
    return text.lower() if fmt.endswith("l") else text


def position_of(fmt: str, text: object, n_levels: int) -> int | None:
    """The choice position a label denotes, or None when it is not one of the ``n_levels`` labels.

    Strict: a label of the *wrong* format ("A" when Roman numerals were offered) or the wrong case is
    not accepted, except that Arabic numerals may be given as JSON numbers or full-width digits.
    """
    check_format(fmt)
    if isinstance(text, bool):
        return None
    if isinstance(text, int):  # compared, not converted: str() refuses integers of 4,300+ digits
        return text if fmt == "n" and 1 <= text <= n_levels else None
    if isinstance(text, float) and text.is_integer():
        value = str(int(text))
    elif isinstance(text, str):
        value = unicodedata.normalize("NFKC", text).strip().strip(".)'\"*` ")
    else:
        return None
    if fmt == "n" and re.fullmatch(r"[0-9]{1,9}", value):  # ASCII after NFKC: "٣" is not a label
        number = int(value)
        return number if 1 <= number <= n_levels else None
    return _positions(fmt, n_levels).get(value)


@lru_cache(maxsize=64)
def _positions(fmt: str, n_levels: int) -> dict[str, int]:
    return {label(fmt, p): p for p in range(1, n_levels + 1)}


def level_of(position: int, order: str, n_levels: int) -> int:
    """The canonical level (1 = lowest agreement) of a choice position under an order."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r} (expected f or r)")
    return position if order == "f" else n_levels + 1 - position


def level_details(fmt: str, order: str, level_texts: dict[int, str], denotes: str) -> str:
    """``"<label> <denotes> <text>, ..."`` with the texts in the order's direction (the released format)."""
    levels = sorted(level_texts)
    n = len(levels)
    return ", ".join(
        f"{label(fmt, p)} {denotes} {level_texts[levels[level_of(p, order, n) - 1]]}" for p in range(1, n + 1)
    )
