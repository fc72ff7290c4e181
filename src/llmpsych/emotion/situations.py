"""The EmotionBench situations: 8 emotions, 36 factors, 428 situations, read from the data at run time.

Formats (both as released by the authors, and accepted for user files such as positive rewrites):

* JSON: ``{"emotions": [{"name": E, "factors": [{"name": F, "scenarios": [text, ...]}, ...]}, ...]}``;
* CSV: one column per factor headed ``<Emotion>-<k>`` with a **0-based** ``k``, the first data row the
  factor name, the following rows the situations.

Factors are identified as in the papers, ``<Emotion>-<k>`` with a **1-based** ``k``. Factor names come
from the data (llmpsych ships no situation text). Counts are checked against the papers (spec §1.2)
with a warning, never a failure, so edited or extended files still load.
"""

from __future__ import annotations

import csv
import io
import os
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.sources import data_file
from ..errors import DataError
from ..instruments.native import MAX_SCALE_FILE_BYTES
from ..instruments.official import read_json
from ..userfiles import read_text

#: The eight emotions in the papers' order.
EMOTIONS: tuple[str, ...] = (
    "Anger",
    "Anxiety",
    "Depression",
    "Frustration",
    "Jealousy",
    "Guilt",
    "Fear",
    "Embarrassment",
)

#: Situations collected per factor, in factor order (Huang et al., EmotionBench, Table 5.2 / §2.2).
EXPECTED_COUNTS: Mapping[str, tuple[int, ...]] = {
    "Anger": (13, 11, 15, 14, 35),
    "Anxiety": (11, 16, 9, 9),
    "Depression": (5, 5, 5, 5, 5, 5),
    "Frustration": (6, 9, 5, 5),
    "Jealousy": (11, 11, 2, 3),
    "Guilt": (13, 26, 32, 31),
    "Fear": (16, 9, 11, 17, 6),
    "Embarrassment": (13, 13, 10, 16),
}
EXPECTED_TOTAL = 428
EXPECTED_FACTORS = 36

#: Spellings of emotion names in the released files (the crowd sheet says "Angry", "Jealous").
EMOTION_ALIASES: Mapping[str, str] = {"angry": "Anger", "jealous": "Jealousy", "anxious": "Anxiety"}

SITUATIONS_JSON = "situations.json"
SITUATIONS_CSV = "situations/situations.csv"


class CountWarning(UserWarning):
    """The situations differ in number from the papers' (the file still loads)."""


def canonical_emotion(name: str) -> str:
    """``"angry"`` / ``"Anger"`` -> ``"Anger"``; unknown names are returned stripped, as given."""
    text = name.strip()
    for emotion in EMOTIONS:
        if emotion.lower() == text.lower():
            return emotion
    return EMOTION_ALIASES.get(text.lower(), text)


def factor_id(emotion: str, k: int) -> str:
    """The papers' factor id, ``Anger-1`` for the first Anger factor (``k`` is 1-based)."""
    return f"{canonical_emotion(emotion)}-{k}"


@dataclass(frozen=True)
class Situation:
    """One situation: its factor, its 0-based position in that factor's list, and its text."""

    factor: str
    index: int
    text: str

    @property
    def key(self) -> str:
        """Stable id, ``Anger-1/s03`` (position 1-based, as in the papers' ``scenario-k`` columns + 1)."""
        return f"{self.factor}/s{self.index + 1:02d}"


@dataclass(frozen=True)
class Factor:
    """One factor of an emotion with its situations."""

    id: str
    emotion: str
    number: int
    name: str
    situations: tuple[Situation, ...] = ()


@dataclass(frozen=True)
class SituationSet:
    """All factors of a situations file, in file order."""

    factors: tuple[Factor, ...]
    origin: str = ""
    warnings: tuple[str, ...] = field(default=())

    @property
    def emotions(self) -> tuple[str, ...]:
        """Emotions in file order."""
        return tuple(dict.fromkeys(f.emotion for f in self.factors))

    @property
    def n_situations(self) -> int:
        """Number of situations over all factors."""
        return sum(len(f.situations) for f in self.factors)

    def factor(self, fid: str) -> Factor:
        """The factor ``fid`` (``DataError`` naming the known ids if absent)."""
        for factor in self.factors:
            if factor.id == fid:
                return factor
        raise DataError(f"{self.origin}: no factor {fid!r} (known: {', '.join(f.id for f in self.factors)})")

    def names(self) -> dict[str, str]:
        """Factor id -> factor name."""
        return {f.id: f.name for f in self.factors}

    def select(
        self,
        per_factor: int | None,
        seed: int = 0,
        emotions: Sequence[str] | None = None,
    ) -> list[Situation]:
        """``per_factor`` situations of each factor, sampled without replacement with a seeded generator
        (all of them when fewer, or when ``per_factor`` is ``None``), kept in file order."""
        wanted = {canonical_emotion(e) for e in emotions} if emotions else None
        chosen: list[Situation] = []
        for factor in self.factors:
            if wanted is not None and factor.emotion not in wanted:
                continue
            pool = list(factor.situations)
            if per_factor is not None and len(pool) > per_factor:
                rng = random.Random(f"{seed}:{factor.id}")
                picked = sorted(rng.sample(range(len(pool)), per_factor))
                pool = [pool[i] for i in picked]
            chosen.extend(pool)
        return chosen


def count_problems(factors: Iterable[Factor]) -> list[str]:
    """Differences from the papers' 8 emotions, 36 factors and 428 situations (empty when equal)."""
    factors = list(factors)
    problems: list[str] = []
    by_emotion: dict[str, list[Factor]] = {}
    for factor in factors:
        by_emotion.setdefault(factor.emotion, []).append(factor)
    for emotion in EMOTIONS:
        if emotion not in by_emotion:
            problems.append(f"emotion {emotion} is missing")
    for emotion, group in by_emotion.items():
        expected = EXPECTED_COUNTS.get(emotion)
        if expected is None:
            problems.append(f"emotion {emotion!r} is not one of the papers' eight")
            continue
        counts = tuple(len(f.situations) for f in group)
        if len(counts) != len(expected):
            problems.append(f"{emotion} has {len(counts)} factors, the papers {len(expected)}")
        for factor, got, want in zip(group, counts, expected, strict=False):
            if got != want:
                problems.append(f"{factor.id} has {got} situations, the papers {want}")
    total = sum(len(f.situations) for f in factors)
    if len(factors) != EXPECTED_FACTORS:
        problems.append(f"{len(factors)} factors, the papers {EXPECTED_FACTORS}")
    if total != EXPECTED_TOTAL:
        problems.append(f"{total} situations, the papers {EXPECTED_TOTAL}")
    return problems


def _finish(factors: list[Factor], origin: str, check_counts: bool) -> SituationSet:
    problems = count_problems(factors) if check_counts else []
    if problems:
        message = f"{origin}: differs from the papers: {'; '.join(problems)}"
        warnings.warn(message, CountWarning, stacklevel=3)
    ids = [f.id for f in factors]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise DataError(f"{origin}: factor {duplicated[0]} appears twice")
    return SituationSet(tuple(factors), origin, tuple(problems))


def situations_from_json(data: Any, origin: str = "situations", check_counts: bool = True) -> SituationSet:
    """Build the situation set from the JSON structure of ``situations.json``."""
    if not isinstance(data, Mapping) or not isinstance(data.get("emotions"), list):
        raise DataError(f"{origin}: expected an object with a list 'emotions'")
    factors: list[Factor] = []
    for e_pos, entry in enumerate(data["emotions"], start=1):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise DataError(f"{origin}: emotion {e_pos} has no 'name'")
        emotion = canonical_emotion(entry["name"])
        raw_factors = entry.get("factors")
        if not isinstance(raw_factors, list):
            raise DataError(f"{origin}: emotion {emotion} has no list 'factors'")
        for k, raw in enumerate(raw_factors, start=1):
            if not isinstance(raw, Mapping):
                raise DataError(f"{origin}: {factor_id(emotion, k)} must be an object")
            fid = factor_id(emotion, k)
            scenarios = raw.get("scenarios")
            if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
                raise DataError(f"{origin}: {fid} needs a list of texts 'scenarios'")
            situations = tuple(Situation(fid, i, s.strip()) for i, s in enumerate(scenarios) if s.strip())
            name = str(raw.get("name") or fid)
            factors.append(Factor(fid, emotion, k, name, situations))
    return _finish(factors, origin, check_counts)


def situations_from_csv(path: Path, check_counts: bool = True) -> SituationSet:
    """Read the CSV form (columns ``<Emotion>-<k>``, ``k`` 0-based; first row = factor names)."""
    text = read_text(path, "situations file", MAX_SCALE_FILE_BYTES, encoding="utf-8-sig")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise DataError(f"{path}: cannot read as UTF-8 CSV ({exc})") from None
    if len(rows) < 2:
        raise DataError(f"{path}: expected a header row and a row of factor names")
    header, names, body = rows[0], rows[1], rows[2:]
    factors: list[Factor] = []
    for col, head in enumerate(header):
        emotion, sep, number = head.strip().rpartition("-")
        if not sep or not number.isdigit():
            raise DataError(f"{path}: column {head!r} is not of the form <Emotion>-<k>")
        fid = factor_id(emotion, int(number) + 1)
        texts = [row[col].strip() for row in body if col < len(row) and row[col].strip()]
        name = names[col].strip() if col < len(names) and names[col].strip() else fid
        situations = tuple(Situation(fid, i, t) for i, t in enumerate(texts))
        factors.append(Factor(fid, canonical_emotion(emotion), int(number) + 1, name, situations))
    return _finish(factors, str(path), check_counts)


def load_situations_file(path: str | os.PathLike[str], check_counts: bool = True) -> SituationSet:
    """A situations file in the JSON or CSV form (chosen by the suffix)."""
    file = Path(path)
    if not file.exists():
        raise DataError(f"{file}: situations file not found")
    if file.suffix.lower() == ".csv":
        return situations_from_csv(file, check_counts)
    data = read_json(file, MAX_SCALE_FILE_BYTES, "situations file")
    return situations_from_json(data, str(file), check_counts)


def situations_path(data_dir: str | os.PathLike[str] | None = None, csv_form: bool = False) -> Path:
    """The official ``situations.json`` (or its CSV form) in the EmotionBench data folder."""
    rel = SITUATIONS_CSV if csv_form else SITUATIONS_JSON
    return data_file("EmotionBench", rel, Path(data_dir) if data_dir is not None else None)


def load_situations(data_dir: str | os.PathLike[str] | None = None, csv_form: bool = False) -> SituationSet:
    """The official 428 situations from the data directory."""
    return load_situations_file(situations_path(data_dir, csv_form))


@dataclass(frozen=True)
class PositivePair:
    """A positive (or neutral) rewrite and the negative original it is compared with."""

    original: Situation
    positive: str


def load_positive_file(path: str | os.PathLike[str], originals: SituationSet) -> list[PositivePair]:
    """Positive rewrites in the ``situations.json`` shape, each paired with its negative original.

    A scenario entry is either a text, paired with the original at the **same position** of that factor
    in ``originals``, or an object ``{"text": ..., "original": k}`` with ``k`` the original's 1-based
    position (or its exact text).
    """
    file = Path(path)
    data = read_json(file, MAX_SCALE_FILE_BYTES, "situations file")
    if not isinstance(data, Mapping) or not isinstance(data.get("emotions"), list):
        raise DataError(f"{file}: expected an object with a list 'emotions'")
    pairs: list[PositivePair] = []
    for entry in data["emotions"]:
        emotion = canonical_emotion(str(entry.get("name", "")))
        for k, raw in enumerate(entry.get("factors") or [], start=1):
            fid = factor_id(emotion, k)
            factor = originals.factor(fid)
            for pos, item in enumerate(raw.get("scenarios") or []):
                text, ref = (
                    (item, pos + 1) if isinstance(item, str) else (item.get("text"), item.get("original"))
                )
                if not isinstance(text, str) or not text.strip():
                    raise DataError(f"{file}: {fid} entry {pos + 1} has no text")
                pairs.append(PositivePair(_original(factor, ref, file), text.strip()))
    if not pairs:
        raise DataError(f"{file}: no positive situations")
    return pairs


def _original(factor: Factor, ref: Any, file: Path) -> Situation:
    if isinstance(ref, int) and not isinstance(ref, bool) and 1 <= ref <= len(factor.situations):
        return factor.situations[ref - 1]
    if isinstance(ref, str):
        for situation in factor.situations:
            if situation.text == ref.strip():
                return situation
    raise DataError(
        f"{file}: {factor.id}: original {ref!r} is not a position 1-{len(factor.situations)} or text"
    )
