"""Released results of the reliability study (``Analysis/save/*.json``) as a tidy DataFrame.

A save holds ``meta`` (the grid that was run) and ``data``: one record per configuration with ``info``
(template, language, version, label, order and, for steering runs, ``append_label`` and ``case``),
``raw`` (item -> answer, already mapped back to 1-5) and ``data`` (dimension -> mean, reverse keying
applied). One row of the frame is one data point.

Values are checked as they are read (``docs/security.md`` §5; every one of the 10,020 released records
passes): an answer is a whole number in 1-5 (:func:`llmpsych.instruments.numbers.whole_number`), a
dimension score a finite number in 1-5; anything else (99, 3.7, ``"٣"``, NaN, null, text) is a one-line
DataError naming the file, the record and the key. A dimension absent from ``data`` reads as NaN and the
re-analysis counts the points it leaves out for it. A record whose ``info`` lacks one of the five factors
is an error too. In a grid save (no steering fields) a configuration
listed twice is an error; steering saves repeat configurations by design (several samples per target).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ..instruments.numbers import finite_number, whole_number
from ..userfiles import MAX_DATA_FILE_BYTES, read_text, reason
from .published import DIMENSIONS

FACTORS: tuple[str, ...] = ("template", "version", "language", "label", "order")
#: The BFI's response range: answers and dimension means lie in it.
LOW, HIGH = 1, 5


@dataclass(frozen=True)
class ReleasedSave:
    """One save file: its metadata and one row per data point."""

    path: Path
    meta: dict[str, Any]
    frame: pd.DataFrame

    def missing(self) -> list[str]:
        """What of the grid its ``meta`` lists the data lack, one line each (empty when complete).

        The design is every combination of the levels ``meta`` lists for the five factors (and, in a
        steering save, ``append_label``), each as often as the most repeated configuration (once in a
        grid save: save.json's 2,500). A level with fewer points than that asks for is named with the
        points it has (``language Ko: 0 of 250 data points``), then the total; levels ``meta`` does not
        list are named too."""
        design = [
            f for f in (*FACTORS, "append_label") if isinstance(self.meta.get(f), list) and self.meta[f]
        ]
        design = [f for f in design if f in self.frame]
        if not design:
            return []
        levels = {f: [str(v) for v in self.meta[f]] for f in design}
        repeats = int(self.frame.groupby(design).size().max())
        cells = math.prod(len(v) for v in levels.values()) * repeats
        counts = {f: self.frame[f].astype(str).value_counts() for f in design}
        gaps = []
        for factor, wanted in levels.items():  # a whole level gone: named once, not as its echo elsewhere
            absent = [level for level in wanted if level not in counts[factor]]
            if absent:
                gaps.append(
                    f"{self.name}: {factor} {', '.join(absent)}: no data points "
                    f"(the grid asks for {cells // len(wanted)} each)"
                )
            extra = sorted(set(counts[factor].index) - set(wanted))
            if extra:
                gaps.append(f"{self.name}: {factor} {', '.join(extra)}: not in the grid its meta lists")
        present = {f: [level for level in v if level in counts[f]] for f, v in levels.items()}
        rest = math.prod(len(v) for v in present.values()) * repeats
        if len(self.frame) < rest:  # configurations missing within the levels that are there
            for factor, wanted in present.items():
                per_level = rest // len(wanted)
                for level in wanted:
                    got = int(counts[factor][level])
                    if got < per_level:
                        gaps.append(f"{self.name}: {factor} {level}: {got} of {per_level} data points")
        if gaps:
            gaps.append(f"{self.name}: {len(self.frame)} of {cells} data points of the grid its meta lists")
        return gaps

    @property
    def name(self) -> str:
        """The experiment name recorded in the file (else the file stem)."""
        return str(self.meta.get("name_exp") or self.path.stem)


def load_save(path: Path | str) -> ReleasedSave:
    """Read a save file; DataError with the reason when it is not one."""
    path = Path(path)
    try:
        raw = json.loads(read_text(path, "save file", MAX_DATA_FILE_BYTES))
    except FileNotFoundError:
        raise DataError(f"save file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    except RecursionError:
        raise DataError(f"{path} is nested too deeply to be a save file") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise DataError(f"{path} is not a save file: {reason(exc)}") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataError(f"{path} is not a reliability save (expected {{'meta': ..., 'data': [...]}})")
    rows = []
    for number, record in enumerate(raw["data"]):
        where = f"{path}: data[{number}]"
        if not isinstance(record, dict):
            raise DataError(f"{where} is not an object")
        info, scores, answers = (record.get(k, {}) for k in ("info", "data", "raw"))
        for key, value in (("info", info), ("data", scores), ("raw", answers)):
            if not isinstance(value, dict):
                raise DataError(f"{where}.{key} is not an object")
        absent = [f for f in FACTORS if f not in info]
        if absent:  # a point without its factor levels would silently leave the factor tests
            raise DataError(
                f"{where}.info has no {absent[0]!r}", f"each record names its {', '.join(FACTORS)}"
            )
        rows.append(
            {
                **{k: str(v) for k, v in info.items()},
                **{
                    d: _score(scores[d], f"{where}.data.{d}") if d in scores else math.nan for d in DIMENSIONS
                },
                "n_answers": len(answers),
                "answers": {
                    _item(k, f"{where}.raw"): _answer(v, f"{where}.raw.{k}") for k, v in answers.items()
                },
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise DataError(f"{path} holds no data points")
    if "append_label" not in frame and set(FACTORS) <= set(frame.columns):
        repeated = frame.duplicated(list(FACTORS), keep="first")
        if repeated.any():  # a grid save holds each configuration once (save.json: 2,500 distinct)
            second = int(repeated.to_numpy().nonzero()[0][0])
            setting = frame.loc[second, list(FACTORS)]
            first = int((frame[list(FACTORS)] == setting).all(axis=1).to_numpy().nonzero()[0][0])
            raise DataError(
                f"{path}: data[{second}] repeats the configuration of data[{first}]", "give each once"
            )
    return ReleasedSave(path, raw.get("meta", {}), frame)


def _score(value: Any, where: str) -> float:
    number = finite_number(value) if isinstance(value, int | float) else None
    if number is None or not LOW <= number <= HIGH:
        raise DataError(f"{where}: {str(value)[:20]!r} is not a score in {LOW}-{HIGH}")
    return number


def _answer(value: Any, where: str) -> int:
    number = whole_number(value)
    if number is None or not LOW <= number <= HIGH:
        raise DataError(f"{where}: {str(value)[:20]!r} is not an answer in {LOW}-{HIGH}")
    return number


def _item(key: str, where: str) -> int:
    number = whole_number(key)
    if number is None or number < 1:
        raise DataError(f"{where}: {key[:20]!r} is not an item number")
    return number


def concat_saves(saves: list[ReleasedSave]) -> pd.DataFrame:
    """All data points of several saves, with a ``source`` column (the experiment name)."""
    return pd.concat([s.frame.assign(source=s.name) for s in saves], ignore_index=True)
