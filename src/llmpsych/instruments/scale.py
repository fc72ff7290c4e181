"""The scale model: items, response range, reverse keys, subscales, norms, and scoring.

A :class:`Scale` is immutable and validates itself on construction, so every scale in memory is
well formed whichever file format it came from. Item texts and prompts are loaded from the user's data
directory at run time; llmpsych never ships them.

Scoring rules (documented in ``docs/scales.md``):

* a reverse-keyed answer ``x`` becomes ``response_min + response_max - x`` (the original code wrote this
  as ``scale - x`` with ``scale = min + max``);
* ``AVG`` is the mean of a subscale's keyed answers, ``SUM`` their sum, ``SUM*2`` twice their sum
  (the DASS-21 convention);
* a subscale with at least one missing item scores ``NaN``; it is never averaged over the answered items
  only, because that silently changes what a ``SUM`` score means;
* an answer outside ``[response_min, response_max]``, a non-integer answer, or an answer to an item the
  scale does not have raises :class:`ScoringError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, get_args

from ..errors import DataError, LlmpsychError

ScoringMode = Literal["SUM", "AVG", "SUM*2"]
SCORING_MODES: tuple[str, ...] = get_args(ScoringMode)


class ScaleError(DataError):
    """A scale definition is malformed (one clear line naming the scale and the problem)."""


class ScoringError(LlmpsychError, ValueError):
    """Answers cannot be scored: out of range, not an integer, unknown item, or an unscored scale."""


#: The hint of an error about answers read back from a run store: the parser stores only valid answers.
STORED_HINT = "the parser stores only valid answers; was run.sqlite edited or copied from elsewhere?"


@dataclass(frozen=True)
class NormGroup:
    """Human reference values for one subscale in one population."""

    label: str
    mean: float
    sd: float
    n: int
    citation: str | None = None
    language: str | None = None  # the language the population answered in (set on translated scales)

    @property
    def population(self) -> str:
        """Alias of ``label``: the human group the norm describes."""
        return self.label


@dataclass(frozen=True)
class Item:
    """One statement of a scale; ``index`` is the item number used in prompts and answers."""

    index: int
    text: str
    reverse: bool = False
    versions: tuple[str, ...] = ()  # other wordings of the item (``scales translate --paraphrase``)
    back_translation: str | None = None  # on a translated scale: the text translated back


@dataclass(frozen=True)
class Subscale:
    """A named set of items scored together, with optional human norms."""

    name: str
    item_indices: tuple[int, ...]
    norms: tuple[NormGroup, ...] = ()

    def norm(self, label: str) -> NormGroup:
        """The norm group called ``label`` (``KeyError`` if there is none)."""
        for group in self.norms:
            if group.label == label:
                return group
        raise KeyError(f"subscale {self.name!r} has no norm group {label!r}")


@dataclass(frozen=True)
class Correction:
    """A documented fix applied to published data when it was loaded."""

    scale: str
    field: str
    old: str
    new: str
    reason: str


@dataclass(frozen=True)
class Translation:
    """How a scale file was made from another by ``llmpsych scales translate`` (``docs/scales.md``).

    ``mode`` is ``translate`` (items' back-translations are on the items, the other texts' in
    ``back_translations`` keyed ``title``, ``instructions``, ``system_prompt``, ``label N``) or
    ``paraphrase`` (new wordings are the items' ``versions``).
    """

    mode: Literal["translate", "paraphrase"]
    model: str
    date: str
    source_file: str
    source_sha256: str
    measure: str
    back_model: str | None = None
    back_translations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Scale:
    """A Likert-type self-report instrument.

    ``system_prompt`` and ``instructions`` carry the wording from the data file (the official files'
    ``inner_setting`` and ``prompt``); they are ``None`` for scales without them. ``unscored`` scales
    (e.g. 16P, which only a third-party website can score) load and can be administered, but
    :meth:`score` refuses them and says why.
    """

    name: str
    items: tuple[Item, ...]
    response_min: int
    response_max: int
    scoring: ScoringMode
    subscales: tuple[Subscale, ...] = ()
    title: str | None = None
    system_prompt: str | None = None
    instructions: str | None = None
    level_labels: Mapping[int, str] = field(default_factory=dict)
    language: str | None = None
    unscored: bool = False
    unscored_reason: str | None = None
    source: str | None = None
    license: str | None = None
    citation: str | None = None
    corrections: tuple[Correction, ...] = ()
    origin: str | None = None
    translated_from: str | None = None
    translation: Translation | None = None

    def __post_init__(self) -> None:
        problems = scale_problems(self)
        if problems:
            where = f"{self.origin}: " if self.origin else ""
            raise ScaleError(f"{where}scale {self.name!r}: {problems[0]}")

    # -- look-ups ---------------------------------------------------------------------------------
    @property
    def n_items(self) -> int:
        """Number of items."""
        return len(self.items)

    @property
    def item_indices(self) -> tuple[int, ...]:
        """Item numbers in file order."""
        return tuple(item.index for item in self.items)

    @property
    def reverse_indices(self) -> tuple[int, ...]:
        """Numbers of the reverse-keyed items, ascending."""
        return tuple(sorted(item.index for item in self.items if item.reverse))

    @property
    def filler_indices(self) -> tuple[int, ...]:
        """Items that belong to no subscale (e.g. LOT-R fillers), ascending."""
        scored = {i for sub in self.subscales for i in sub.item_indices}
        return tuple(sorted(i for i in self.item_indices if i not in scored))

    @property
    def subscale_names(self) -> tuple[str, ...]:
        """Subscale names in file order."""
        return tuple(sub.name for sub in self.subscales)

    @property
    def norm_labels(self) -> tuple[str, ...]:
        """Every norm-group label used by any subscale, in first-seen order."""
        labels: dict[str, None] = {}
        for sub in self.subscales:
            for group in sub.norms:
                labels.setdefault(group.label, None)
        return tuple(labels)

    def item(self, index: int) -> Item:
        """The item numbered ``index`` (``KeyError`` if there is none)."""
        for item in self.items:
            if item.index == index:
                return item
        raise KeyError(f"scale {self.name!r} has no item {index}")

    def subscale(self, name: str) -> Subscale:
        """The subscale called ``name`` (``KeyError`` if there is none)."""
        for sub in self.subscales:
            if sub.name == name:
                return sub
        raise KeyError(f"scale {self.name!r} has no subscale {name!r}")

    # -- scoring ----------------------------------------------------------------------------------
    def reverse_value(self, value: int) -> int:
        """The reverse-keyed value of an answer: ``min + max - value``."""
        return self.response_min + self.response_max - value

    def check_answer(self, index: int, value: object) -> int:
        """Return ``value`` as an int if it is a valid answer to item ``index``; raise otherwise."""
        if index not in self._index_set:
            raise ScoringError(f"scale {self.name!r} has no item {index}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
            raise ScoringError(
                f"scale {self.name!r}: answer to item {index} is not a whole number: {value!r}"
            )
        number = int(value)
        if not self.response_min <= number <= self.response_max:
            raise ScoringError(
                f"scale {self.name!r}: answer {number} to item {index} is outside "
                f"{self.response_min}-{self.response_max}"
            )
        return number

    def keyed_answers(self, answers: Mapping[int, int], *, reverse_keying: bool = True) -> dict[int, int]:
        """Validate ``answers`` and apply reverse keying (unless ``reverse_keying=False``)."""
        reverse = set(self.reverse_indices) if reverse_keying else set()
        keyed: dict[int, int] = {}
        for index, value in answers.items():
            number = self.check_answer(int(index), value)
            keyed[int(index)] = self.reverse_value(number) if int(index) in reverse else number
        return keyed

    def score(
        self,
        answers: Mapping[int, int],
        *,
        reverse_keying: bool = True,
        scoring: ScoringMode | None = None,
    ) -> dict[str, float]:
        """Score every subscale from one administration's answers ``{item index: answer}``.

        A subscale with any missing item is ``NaN``. ``reverse_keying=False`` and ``scoring`` (which
        overrides the scale's own mode) exist to reproduce published numbers that ignored the scale's
        keys (e.g. EmotionBench's challenging scales); the defaults are the psychometrically correct
        scoring.
        """
        self._require_scored()
        keyed = self.keyed_answers(answers, reverse_keying=reverse_keying)
        mode = scoring or self.scoring
        return {
            sub.name: _aggregate([keyed.get(i) for i in sub.item_indices], mode) for sub in self.subscales
        }

    def score_range(self, subscale: str, scoring: ScoringMode | None = None) -> tuple[float, float]:
        """The lowest and highest score ``subscale`` can take, from the response range, the number of its
        items and the scoring mode (``AVG`` of a 1-5 scale: 1-5; ``SUM`` of four such items: 4-20)."""
        sub = next((s for s in self.subscales if s.name == subscale), None)
        if sub is None:
            raise ScoringError(f"scale {self.name!r} has no subscale {subscale!r}")
        low = _aggregate([self.response_min] * len(sub.item_indices), scoring or self.scoring)
        high = _aggregate([self.response_max] * len(sub.item_indices), scoring or self.scoring)
        return low, high

    def total(
        self,
        answers: Mapping[int, int],
        *,
        reverse_keying: bool = True,
        scoring: ScoringMode | None = None,
    ) -> float:
        """The raw total over every item (fillers included); ``NaN`` if any item is missing."""
        self._require_scored()
        keyed = self.keyed_answers(answers, reverse_keying=reverse_keying)
        return _aggregate([keyed.get(i) for i in self.item_indices], scoring or self.scoring)

    def subscale_range(self, name: str, *, scoring: ScoringMode | None = None) -> tuple[float, float]:
        """The lowest and highest possible score of a subscale."""
        size = len(self.subscale(name).item_indices)
        low = _aggregate([self.response_min] * size, scoring or self.scoring)
        high = _aggregate([self.response_max] * size, scoring or self.scoring)
        return low, high

    def missing_items(self, answers: Mapping[int, object]) -> tuple[int, ...]:
        """Items without an answer, in file order."""
        return tuple(i for i in self.item_indices if i not in answers)

    @cached_property
    def _index_set(self) -> frozenset[int]:
        return frozenset(self.item_indices)

    def _require_scored(self) -> None:
        if self.unscored:
            reason = f": {self.unscored_reason}" if self.unscored_reason else ""
            raise ScoringError(f"scale {self.name!r} is not scored by llmpsych{reason}")


def _aggregate(values: Iterable[int | None], mode: str) -> float:
    numbers = list(values)
    if not numbers or any(v is None for v in numbers):
        return math.nan
    total = float(sum(v for v in numbers if v is not None))
    if mode == "SUM":
        return total
    if mode == "SUM*2":
        return 2.0 * total
    if mode == "AVG":
        return total / len(numbers)
    raise ScoringError(f"unknown scoring mode {mode!r} (use one of {', '.join(SCORING_MODES)})")


def scale_problems(scale: Scale) -> list[str]:
    """Every structural problem of a scale, as short sentences (empty if the scale is valid)."""
    problems: list[str] = []
    if not isinstance(scale.name, str) or not scale.name.strip():
        problems.append("the name is empty")
    for label, bound in (("response_min", scale.response_min), ("response_max", scale.response_max)):
        if isinstance(bound, bool) or not isinstance(bound, int):
            problems.append(f"{label} must be a whole number, got {bound!r}")
    if not problems and scale.response_min >= scale.response_max:
        problems.append(
            f"response_min ({scale.response_min}) must be below response_max ({scale.response_max})"
        )
    if scale.scoring not in SCORING_MODES:
        problems.append(f"unknown scoring mode {scale.scoring!r} (use one of {', '.join(SCORING_MODES)})")
    if not scale.items:
        problems.append("it has no items")
    seen: set[int] = set()
    for item in scale.items:
        if isinstance(item.index, bool) or not isinstance(item.index, int) or item.index < 1:
            problems.append(f"item index {item.index!r} is not a positive whole number")
        elif item.index in seen:
            problems.append(f"item {item.index} appears more than once")
        seen.add(item.index)
        if not isinstance(item.text, str) or not item.text.strip():
            problems.append(f"item {item.index} has no text")
    if not scale.unscored and not scale.subscales:
        problems.append("it has no subscales (mark it unscored if it cannot be scored)")
    names: set[str] = set()
    for sub in scale.subscales:
        problems.extend(_subscale_problems(sub, seen, names))
        names.add(sub.name)
    for level in scale.level_labels:
        if not isinstance(level, int) or not scale.response_min <= level <= scale.response_max:
            problems.append(f"level label {level!r} is outside {scale.response_min}-{scale.response_max}")
    if scale.unscored and not scale.unscored_reason:
        problems.append("an unscored scale needs a reason (unscored_reason)")
    return problems


def _subscale_problems(sub: Subscale, item_indices: set[int], earlier_names: set[str]) -> list[str]:
    problems: list[str] = []
    if not sub.name or not sub.name.strip():
        problems.append("a subscale has an empty name")
    if sub.name in earlier_names:
        problems.append(f"subscale {sub.name!r} is defined twice")
    if not sub.item_indices:
        problems.append(f"subscale {sub.name!r} has no items")
    seen: set[int] = set()
    for index in sub.item_indices:
        if index not in item_indices:
            problems.append(f"subscale {sub.name!r} refers to item {index}, which the scale does not have")
        if index in seen:
            problems.append(f"subscale {sub.name!r} lists item {index} twice")
        seen.add(index)
    labels: set[str] = set()
    for group in sub.norms:
        where = f"subscale {sub.name!r}, norm group {group.label!r}"
        if group.label in labels:
            problems.append(f"{where} is defined twice")
        labels.add(group.label)
        if not _is_finite_number(group.mean):
            problems.append(f"{where}: mean must be a number, got {group.mean!r}")
        if not _is_finite_number(group.sd):
            problems.append(f"{where}: sd must be a number, got {group.sd!r}")
        elif group.sd < 0:
            problems.append(f"{where}: sd must not be negative, got {group.sd}")
        if isinstance(group.n, bool) or not isinstance(group.n, int) or group.n < 1:
            problems.append(f"{where}: n must be a positive whole number, got {group.n!r}")
    return problems


def _is_finite_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
