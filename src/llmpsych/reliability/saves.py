"""Released results of the reliability study (``Analysis/save/*.json``) as a tidy DataFrame.

A save holds ``meta`` (the grid that was run) and ``data``: one record per configuration with ``info``
(template, language, version, label, order and, for steering runs, ``append_label`` and ``case``),
``raw`` (item -> answer, already mapped back to 1-5) and ``data`` (dimension -> mean, reverse keying
applied). One row of the frame is one data point.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from .published import DIMENSIONS

FACTORS: tuple[str, ...] = ("template", "version", "language", "label", "order")


@dataclass(frozen=True)
class ReleasedSave:
    """One save file: its metadata and one row per data point."""

    path: Path
    meta: dict[str, Any]
    frame: pd.DataFrame

    @property
    def name(self) -> str:
        """The experiment name recorded in the file (else the file stem)."""
        return str(self.meta.get("name_exp") or self.path.stem)


def load_save(path: Path | str) -> ReleasedSave:
    """Read a save file; DataError with the reason when it is not one."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"save file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not JSON: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataError(f"{path} is not a reliability save (expected {{'meta': ..., 'data': [...]}})")
    rows = []
    for record in raw["data"]:
        info = record.get("info", {})
        scores = record.get("data", {})
        answers = record.get("raw", {})
        rows.append(
            {
                **{k: str(v) for k, v in info.items()},
                **{d: float(scores[d]) if d in scores else float("nan") for d in DIMENSIONS},
                "n_answers": len(answers),
                "answers": {int(k): int(v) for k, v in answers.items()},
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise DataError(f"{path} holds no data points")
    return ReleasedSave(path, raw.get("meta", {}), frame)


def concat_saves(saves: list[ReleasedSave]) -> pd.DataFrame:
    """All data points of several saves, with a ``source`` column (the experiment name)."""
    return pd.concat([s.frame.assign(source=s.name) for s in saves], ignore_index=True)
