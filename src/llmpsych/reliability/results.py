"""Data points of an llmpsych reliability run, read from its store (one row per finished unit).

A unit's conversation is in its stored calls. Each attempt starts again from the steering turns, so the
calls group into one thread per attempt (:func:`llmpsych.report.transcripts.threads`; a generated
steering turn opens the first) and the scored attempt ``kept_attempt`` is thread ``kept_attempt``.
Results written before the calls were the only copy hold that conversation as ``transcript``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ..errors import LlmpsychError
from ..instruments.numbers import finite_number
from ..instruments.scale import STORED_HINT
from ..report.transcripts import threads
from ..runs.calls import StoredCall
from ..runs.store import STORE_FILE, RunStore, UnitRow
from .published import DIMENSIONS
from .saves import concat_saves, load_save


class ReliabilityResult(BaseModel):
    """One unit's stored result: one configuration of the questionnaire, answered and scored.

    The scores are checked where they are read (:func:`run_frame`), with messages naming the unit.
    """

    model_config = ConfigDict(extra="allow")

    config: dict[str, Any] = Field(default_factory=dict)
    answers: dict[str, Any] | None = None
    scores: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] = Field(default_factory=list)  # runs before calls were the only copy


def kept_conversation(result: Mapping[str, Any], calls: Iterable[StoredCall]) -> list[dict[str, str]]:
    """The messages and replies of the scored attempt: the result's own copy (older runs), else the
    ``kept_attempt``-th thread of the unit's stored calls (``calls``: its rows of ``record.calls``, in
    completion order)."""
    if result.get("transcript"):
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in result["transcript"]]
    grouped = threads(calls)  # completion order: a unit asks one call at a time
    kept = int(result.get("kept_attempt") or 1)
    if not 1 <= kept <= len(grouped):
        return []
    conversation: list[dict[str, str]] = []
    for turn in grouped[kept - 1].turns:
        conversation += [*turn.new_messages, {"role": "assistant", "content": turn.reply}]
    return conversation


def done_units(run_dir: Path) -> list[UnitRow]:
    """The finished units of a run, read once from its store."""
    if not (run_dir / STORE_FILE).exists():
        raise LlmpsychError(f"no run found in {run_dir}", f"expected {run_dir / STORE_FILE}")
    with RunStore.in_dir(run_dir) as store:
        return store.units(status="done")


def run_frame(run_dir: Path, scoring: str = "text", units: list[UnitRow] | None = None) -> pd.DataFrame:
    """Factors, target, scores, valid-answer rate and attempts of every finished unit.

    ``scoring="expected"`` takes the dimension scores from the label probabilities (``method=logprob``
    runs; units without them keep the written labels' scores). ``units``: already read with
    :func:`done_units`.
    """
    if units is None:
        units = done_units(run_dir)
    rows = []
    for unit in units:
        result = unit.result or {}
        scores = result.get("scores") or {}
        if scoring == "expected" and result.get("scores_expected"):
            scores = result["scores_expected"]
        row = {
            "unit_id": unit.unit_id,
            **result.get("config", {}),
            "n_valid": result.get("n_valid"),
            "n_items": result.get("n_items"),
            "valid_rate": result.get("valid_rate"),
            "attempts": result.get("attempts"),
            "n_logprob_items": result.get("n_logprob_items"),
            "refused": result.get("refused"),
            "answers": {int(k): v for k, v in (result.get("answers") or {}).items()},
            **{d: _stored_score(scores.get(d), unit.unit_id, d) for d in DIMENSIONS},
        }
        if result.get("target") is not None:
            row["append_label"] = result["target"]
            row["case"] = str(result.get("repeat", 0) + 1)
        rows.append(row)
    return pd.DataFrame(rows)


def _stored_score(value: object, unit_id: str, dimension: str) -> float:
    """A stored dimension score: None (not scored) reads as NaN; anything but a finite number is an
    error naming the unit (the task stores only means of valid levels)."""
    if value is None:
        return math.nan
    number = finite_number(value) if isinstance(value, int | float) else None
    if number is None or number < 1:
        raise LlmpsychError(
            f"run store unit {unit_id}: {dimension} score {str(value)[:20]!r} is not a finite level mean",
            STORED_HINT,
        )
    return number


def detail_frame(
    run_dir: Path, units: list[UnitRow] | None = None, calls: Iterable[StoredCall] | None = None
) -> pd.DataFrame:
    """Per configuration: the prompts, the raw replies (of the scored attempt) and the parsed vector.

    ``units`` and ``calls`` (``record.calls``) as already read; without them they are read from the store.
    """
    if units is None:
        units = done_units(run_dir)
    if calls is None:
        with RunStore.in_dir(run_dir, readonly=True) as store:
            calls = list(store.calls())
    by_unit: dict[str, list[StoredCall]] = {}
    for call in calls:
        by_unit.setdefault(call.unit_id, []).append(call)
    rows = []
    for unit in units:
        result = unit.result or {}
        transcript = kept_conversation(result, by_unit.get(unit.unit_id, []))
        rows.append(
            {
                "unit_id": unit.unit_id,
                "prompts": "\n\n---\n\n".join(m["content"] for m in transcript if m["role"] == "user"),
                "replies": "\n\n---\n\n".join(m["content"] for m in transcript if m["role"] == "assistant"),
                "answers": result.get("answers"),
                "invalid": result.get("invalid"),
                "valid_rate": result.get("valid_rate"),
                **{d: (result.get("scores") or {}).get(d) for d in DIMENSIONS},
            }
        )
    return pd.DataFrame(rows)


def load_points(paths: list[Path], scoring: str = "text", missing: list[str] | None = None) -> pd.DataFrame:
    """Data points from released save files and/or llmpsych run directories; ``missing``, when given,
    receives what of its grid each save lacks (:meth:`ReleasedSave.missing`)."""
    frames = [run_frame(p, scoring).assign(source=p.name) for p in paths if p.is_dir()]
    saves = [load_save(p) for p in paths if not p.is_dir()]
    if missing is not None:
        missing.extend(gap for save in saves for gap in save.missing())
    if saves:
        frames.append(concat_saves(saves))
    if not frames:
        raise LlmpsychError("nothing to analyse: give a save file or a run directory")
    return pd.concat(frames, ignore_index=True)


class GridResult(BaseModel):
    """One unit's stored result: one configuration, its answers on the scale's range and its scores."""

    model_config = ConfigDict(extra="allow")

    config: dict[str, str]
    answers: dict[str, float] = Field(default_factory=dict)
    scores: dict[str, float | None] = Field(default_factory=dict)
    valid_rate: float = Field(ge=0, le=1)
    transcript: list[dict[str, Any]] = Field(default_factory=list)
