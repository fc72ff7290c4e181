"""The item-level long format: one row per respondent x item of every scale a run administered.

A task that administers scales says what it administered through :meth:`Task.administrations
<llmpsych.runs.task.Task.administrations>` (plain data: :class:`Administration`); :func:`items_frame` turns
them into rows of :data:`ITEM_COLUMNS`, and :func:`llmpsych.load_runs` gives the rows of every run as its
``items`` frame. ``llmpsych.validity`` fits item response and measurement models on it and exports it.

A **respondent** is one administration: ``<run folder>#<number>`` for a model run (a run's repeated
administrations are several respondents, the run folder their ``run`` column), a person's id in an
imported human sample. ``response`` is the raw answer on the scale's range (before reverse keying); it is
NaN when there was no valid answer, and ``status`` says why: ``answered``, ``invalid`` (an answer out of
range, contradicting itself, or numbered by position), ``refused`` (the reply refused the questionnaire)
or ``missing`` (no answer to this item). Group columns the run does not set are empty strings, never
guessed. A unit that failed has no result and no rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import DataError

if TYPE_CHECKING:
    import pandas as pd

Status = Literal["answered", "invalid", "refused", "missing"]
STATUSES: tuple[str, ...] = ("answered", "invalid", "refused", "missing")

#: The settings a respondent's rows carry as columns (empty string: the run does not set it).
GROUP_COLUMNS: tuple[str, ...] = ("model", "persona", "language", "template", "run")

ITEM_COLUMNS: list[str] = [
    "respondent",
    "source",
    *GROUP_COLUMNS,
    "scale",
    "item",
    "subscale",
    "reverse",
    "response",
    "status",
    "min",
    "max",
]


class _ItemLike(Protocol):
    @property
    def index(self) -> int: ...

    @property
    def reverse(self) -> bool: ...


class _SubscaleLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def item_indices(self) -> tuple[int, ...]: ...


class ScaleLike(Protocol):
    """What :meth:`ScaleItems.of` reads of an :class:`llmpsych.instruments.Scale`."""

    @property
    def name(self) -> str: ...

    @property
    def response_min(self) -> int: ...

    @property
    def response_max(self) -> int: ...

    @property
    def items(self) -> Sequence[_ItemLike]: ...

    @property
    def subscales(self) -> Sequence[_SubscaleLike]: ...


@dataclass(frozen=True)
class ScaleItems:
    """A scale's items as the long format shows them: number, subscale (several joined by ``+``; ``""``
    for a filler), reverse key, and the answer range."""

    name: str
    low: int
    high: int
    items: tuple[tuple[int, str, bool], ...]

    @classmethod
    def of(cls, scale: ScaleLike) -> ScaleItems:
        """From a scale definition (:class:`llmpsych.instruments.Scale`)."""
        rows = []
        for item in scale.items:
            names = [sub.name for sub in scale.subscales if item.index in sub.item_indices]
            rows.append((item.index, "+".join(names), bool(item.reverse)))
        return cls(scale.name, scale.response_min, scale.response_max, tuple(rows))


@dataclass(frozen=True)
class Administration:
    """One administration of a scale: its number in the run, the answers given (item -> raw value), why
    the other items have none (item -> status; an item in neither is ``missing``), and the settings that
    vary between administrations of one run (e.g. a grid's language)."""

    scale: ScaleItems
    number: int
    answers: Mapping[int, float]
    status: Mapping[int, Status] = field(default_factory=dict)
    groups: Mapping[str, str] = field(default_factory=dict)
    source: Literal["model", "person"] = "model"


def unanswered_status(
    stored: Mapping[str, Any], items: Sequence[int], answers: Mapping[int, float]
) -> dict[int, Status]:
    """Why each item of an administration's stored result (the JSON of
    :class:`~llmpsych.instruments.administration.AdministrationResult`) has no answer: ``invalid`` for an
    item in ``duplicates``, ``out_of_range`` or ``positional``, ``refused`` for the others of a refused
    administration; an item in neither is ``missing``."""
    invalid = {int(i) for key in ("duplicates", "out_of_range") for i in (stored.get(key) or {})}
    invalid |= {int(i) for i in stored.get("positional") or []}
    status: dict[int, Status] = {i: "invalid" for i in items if i in invalid and i not in answers}
    if stored.get("refused"):
        status.update({i: "refused" for i in items if i not in answers and i not in status})
    return status


def items_frame(
    administrations: list[Administration], run: str, groups: Mapping[str, str | None]
) -> pd.DataFrame:
    """Rows of :data:`ITEM_COLUMNS` for a run's administrations; ``run`` names the run (its folder as
    given) and the respondents, ``groups`` its run-wide settings (None: not set)."""
    import pandas as pd

    base = {column: "" if groups.get(column) is None else str(groups.get(column)) for column in GROUP_COLUMNS}
    base["run"] = run
    rows = []
    for given in administrations:
        own = {**base, **{k: str(v) for k, v in given.groups.items() if k in GROUP_COLUMNS and v is not None}}
        respondent = f"{run}#{given.number}"
        for number, subscale, reverse in given.scale.items:
            value = given.answers.get(number)
            status = "answered" if value is not None else given.status.get(number, "missing")
            rows.append(
                {
                    "respondent": respondent,
                    "source": given.source,
                    **own,
                    "scale": given.scale.name,
                    "item": number,
                    "subscale": subscale,
                    "reverse": reverse,
                    "response": float(value) if value is not None else float("nan"),
                    "status": status,
                    "min": given.scale.low,
                    "max": given.scale.high,
                }
            )
    return typed_items(pd.DataFrame(rows, columns=ITEM_COLUMNS))


def typed_items(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns' types: text, ``item``/``min``/``max`` int, ``reverse`` bool, ``response`` float."""
    frame = frame[ITEM_COLUMNS].copy()
    for column in ("respondent", "source", *GROUP_COLUMNS, "scale", "subscale", "status"):
        frame[column] = frame[column].fillna("").astype(str)
    for column in ("item", "min", "max"):
        frame[column] = frame[column].astype("int64")
    frame["reverse"] = frame["reverse"].astype(bool)
    frame["response"] = frame["response"].astype("float64")
    return frame.reset_index(drop=True)


__all__ = [
    "GROUP_COLUMNS",
    "ITEM_COLUMNS",
    "STATUSES",
    "require_item_frame",
    "Administration",
    "ScaleItems",
    "Status",
    "items_frame",
    "typed_items",
    "unanswered_status",
]


def require_item_frame(frame: pd.DataFrame) -> None:
    """DataError naming the first column of the long format that ``frame`` lacks, or a bad status."""
    absent = [c for c in ITEM_COLUMNS if c not in frame.columns]
    if absent:
        raise DataError(f"not the item-level long format: no column {absent[0]!r}")
    bad = ~frame["status"].isin(STATUSES)
    if bad.any():
        raise DataError(
            f"unknown status {str(frame['status'][bad].iloc[0])[:20]!r}", f"one of {', '.join(STATUSES)}"
        )
