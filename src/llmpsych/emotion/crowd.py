"""The human data (``results/PANAS_Test/crowd.xlsx``): 1,266 people, PANAS before and after one situation.

Sheet ``Raw`` has one column per respondent headed ``<Emotion>_F<f>S<s>`` (``f``, ``s`` 1-based; the file
spells Anger "Angry" and Jealousy "Jealous"), five demographic rows, then the 20 PANAS items answered
before (default) and after imagining the situation (evoked). Item rows are matched to the PANAS items of
``questionnaires.json`` by the adjective after the last " - " of the row label, so nothing about the
wording is assumed here.

The human table (spec §8.4): per factor, per emotion (pooled) and overall, each respondent's evoked
minus own default, tested with a **paired** t-test at alpha (what the file's own Summary sheet does and
what the printed markers match), and, for comparison, with the papers' independent F-test + Student/Welch.
"""

from __future__ import annotations

import io
import math
import os
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ..data.sources import data_file
from ..errors import DataError
from ..instruments.numbers import whole_number
from ..instruments.scale import Scale
from ..userfiles import MAX_DATA_FILE_BYTES, read_bytes, reason
from .changes import DOWN, SAME, UP, compare_groups, emotion_of, ordered_factors, score_answers
from .situations import factor_id

CROWD_FILE = "results/PANAS_Test/crowd.xlsx"
_COLUMN = re.compile(r"^(?P<emotion>[A-Za-z]+)_F(?P<factor>\d+)S(?P<situation>\d+)$")
_DEMOGRAPHICS = {"gender": "gender", "birth": "year_of_birth", "country": "country"}
_DEMOGRAPHICS_MORE = {"employment": "employment", "education": "education"}


@dataclass
class Respondent:
    """One person: factor, situation (1-based), PANAS answers before and after, demographics."""

    factor: str
    situation: int
    default: dict[int, int]
    evoked: dict[int, int]
    info: dict[str, Any] = field(default_factory=dict)
    #: Where each ``info`` answer sits, for errors: ``crowd.xlsx: sheet Raw cell C3 (respondent ...)``.
    info_cells: dict[str, str] = field(default_factory=dict)


def crowd_path(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``crowd.xlsx`` in the EmotionBench data folder."""
    return data_file("EmotionBench", CROWD_FILE, Path(data_dir) if data_dir is not None else None)


def _item_of(label: str, by_text: Mapping[str, int]) -> int | None:
    tail = label.rsplit(" - ", 1)[-1].strip().lower()
    return by_text.get(tail)


def _letters(number: int) -> str:
    """A spreadsheet column's letters: 1 -> A, 27 -> AA."""
    out = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        out = chr(65 + rest) + out
    return out


def _cell(file: Path, r: int, col: int, name: object, value: object, panas: Scale) -> int:
    """One PANAS answer: a whole number in the scale's range (all 50,640 released answers are ints in
    1-5); anything else (3.7, "٣", NaN, 99) is a DataError naming the sheet cell and the respondent."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        number = whole_number(value)
    where = f"{file}: sheet Raw cell {_letters(col + 1)}{r + 1} (respondent {name})"
    if number is None:
        raise DataError(f"{where}: answer {str(value)[:20]!r} is not a whole number")
    if not panas.response_min <= number <= panas.response_max:
        raise DataError(f"{where}: answer {number} is outside {panas.response_min}-{panas.response_max}")
    return number


def load_crowd(path: str | os.PathLike[str], panas: Scale) -> list[Respondent]:
    """Every respondent of ``crowd.xlsx`` (PANAS items matched by their text); an answer that is not a
    whole number in the PANAS range is an error naming its cell, a blank one a missing item."""
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - openpyxl is a dependency of the emotion extra
        raise DataError("reading crowd.xlsx needs openpyxl", "pip install openpyxl") from None
    file = Path(path)
    raw = read_bytes(file, "crowd workbook", MAX_DATA_FILE_BYTES)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise DataError(f"{file}: not an Excel workbook ({reason(exc)})") from None
    try:
        if "Raw" not in workbook.sheetnames:
            raise DataError(f"{file}: no sheet 'Raw' (sheets: {', '.join(workbook.sheetnames)})")
        rows = [list(r) for r in workbook["Raw"].iter_rows(values_only=True)]
    finally:
        workbook.close()
    header = rows[0]
    columns = [(c, m) for c, v in enumerate(header) if (m := _COLUMN.match(str(v or "").strip()))]
    if not columns:
        raise DataError(f"{file}: no respondent columns of the form <Emotion>_F<f>S<s>")
    by_text = {item.text.strip().lower(): item.index for item in panas.items}
    default_rows: dict[int, int] = {}
    evoked_rows: dict[int, int] = {}
    info_rows: dict[str, int] = {}
    label_col = min(c for c, _ in columns) - 1
    for r, row in enumerate(rows[1:], start=1):
        label = str(row[label_col] or "") if label_col >= 0 else ""
        item = _item_of(label, by_text) if " - " in label else None
        if item is not None:
            (default_rows if item not in default_rows else evoked_rows).setdefault(item, r)
            continue
        lowered = label.lower()
        for word, key in {**_DEMOGRAPHICS, **_DEMOGRAPHICS_MORE}.items():
            if word in lowered and key not in info_rows:
                info_rows[key] = r
    if len(default_rows) != panas.n_items or len(evoked_rows) != panas.n_items:
        raise DataError(
            f"{file}: found {len(default_rows)} default and {len(evoked_rows)} evoked PANAS item rows, "
            f"expected {panas.n_items} each"
        )
    people: list[Respondent] = []
    for col, match in columns:

        def answers(where: Mapping[int, int], col: int = col) -> dict[int, int]:
            out: dict[int, int] = {}
            for item, r in where.items():
                value = rows[r][col] if col < len(rows[r]) else None
                if value is None or (isinstance(value, str) and not value.strip()):
                    continue  # a blank cell: the item is missing, the score NaN, the person left out
                out[item] = _cell(file, r, col, header[col], value, panas)
            return out

        info = {key: rows[r][col] if col < len(rows[r]) else None for key, r in info_rows.items()}
        cells = {
            key: f"{file}: sheet Raw cell {_letters(col + 1)}{r + 1} (respondent {header[col]})"
            for key, r in info_rows.items()
        }
        fid = factor_id(match.group("emotion"), int(match.group("factor")))
        people.append(
            Respondent(
                fid, int(match.group("situation")), answers(default_rows), answers(evoked_rows), info, cells
            )
        )
    return people


@dataclass(frozen=True)
class PairedCell:
    """One row × measure of the human table."""

    n: int
    default_mean: float
    default_sd: float
    evoked_mean: float
    evoked_sd: float
    change: float
    mark: str
    p_value: float
    dz: float
    independent_mark: str

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, ``NaN`` as ``None``."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def paired_cell(before: Sequence[float], after: Sequence[float], alpha: float = 0.01) -> PairedCell:
    """Paired t-test of ``after`` − ``before`` (incomplete pairs dropped), plus the independent test."""
    pairs = [(b, a) for b, a in zip(before, after, strict=True) if not (math.isnan(b) or math.isnan(a))]
    b = np.array([p[0] for p in pairs], dtype=float)
    a = np.array([p[1] for p in pairs], dtype=float)
    n = len(pairs)
    diff = a - b
    change = float(diff.mean()) if n else math.nan
    p = math.nan
    if n >= 2 and float(diff.std(ddof=1)) > 0:
        p = float(stats.ttest_rel(a, b).pvalue)
    mark = SAME if math.isnan(p) or p > alpha else (UP if change > 0 else DOWN)
    sd_diff = float(diff.std(ddof=1)) if n >= 2 else math.nan
    dz = change / sd_diff if n >= 2 and sd_diff > 0 else math.nan
    independent = compare_groups(list(a), list(b), alpha=alpha, published=False).mark
    return PairedCell(
        n,
        float(b.mean()) if n else math.nan,
        float(b.std(ddof=1)) if n >= 2 else math.nan,
        float(a.mean()) if n else math.nan,
        float(a.std(ddof=1)) if n >= 2 else math.nan,
        change,
        mark,
        p,
        dz,
        independent,
    )


def human_table(people: Sequence[Respondent], panas: Scale, alpha: float = 0.01) -> dict[str, Any]:
    """Rows ``factors`` / ``emotions`` / ``overall``, each ``{"positive": PairedCell, "negative": ...}``."""
    scored: list[tuple[str, dict[str, float], dict[str, float]]] = []
    for person in people:
        before = score_answers(panas, person.default, published=True)
        after = score_answers(panas, person.evoked, published=True)
        scored.append((person.factor, before, after))

    def cells(selected: list[tuple[str, dict[str, float], dict[str, float]]]) -> dict[str, PairedCell]:
        return {
            m: paired_cell([s[1][m] for s in selected], [s[2][m] for s in selected], alpha)
            for m in ("positive", "negative")
        }

    factors = ordered_factors(s[0] for s in scored)
    out: dict[str, Any] = {"factors": {}, "emotions": {}, "overall": cells(scored)}
    for fid in factors:
        out["factors"][fid] = cells([s for s in scored if s[0] == fid])
    for emotion in dict.fromkeys(emotion_of(f) for f in factors):
        out["emotions"][emotion] = cells([s for s in scored if emotion_of(s[0]) == emotion])
    return out


def human_table_json(table: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`human_table` as plain JSON."""
    return {
        "factors": {k: {m: c.to_json() for m, c in v.items()} for k, v in table["factors"].items()},
        "emotions": {k: {m: c.to_json() for m, c in v.items()} for k, v in table["emotions"].items()},
        "overall": {m: c.to_json() for m, c in table["overall"].items()},
    }
