"""Descriptive statistics over runs: mean ± SD, confidence intervals, and valid-answer rates.

Conventions (``docs/statistics.md``): SD is the *sample* SD (``ddof=1``), as in the original PsychoBench
and EmotionBench code (``statistics.stdev``); ``NaN`` values (runs whose score is undefined because an
item was missing) are dropped and counted in ``n_missing``, so ``n`` is always the number of runs that
were actually scored. An infinite value is never a score: it raises :class:`StatsError` instead of
becoming a mean of ``inf`` or ``nan`` (``docs/security.md`` §5).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

from ..errors import LlmpsychError


class StatsError(LlmpsychError, ValueError):
    """A statistic cannot be computed from the given data (too few values, bad shape, ...)."""


@dataclass(frozen=True)
class Summary:
    """Mean, SD and a t-based confidence interval of the mean over ``n`` scored values."""

    mean: float
    sd: float
    n: int
    n_missing: int = 0
    ddof: int = 1
    confidence: float = 0.95
    ci_low: float = math.nan
    ci_high: float = math.nan

    @property
    def sem(self) -> float:
        """Standard error of the mean."""
        return self.sd / math.sqrt(self.n) if self.n > 0 else math.nan

    def format(self, digits: int = 1) -> str:
        """``"mean ± sd"`` as printed in the papers' tables."""
        return format_mean_sd(self.mean, self.sd, digits)


def summarize(values: Iterable[float], *, ddof: int = 1, confidence: float = 0.95) -> Summary:
    """Summarise values, dropping ``NaN`` (counted in ``n_missing``); SD uses ``ddof`` (default 1).

    An infinite value raises :class:`StatsError` (naming its position).
    """
    array = np.asarray(list(values), dtype=float)
    if np.isinf(array).any():
        raise StatsError(
            f"value {int(np.isinf(array).nonzero()[0][0])} is infinite: not a score to summarise"
        )
    finite = array[~np.isnan(array)]
    n = int(finite.size)
    mean = float(finite.mean()) if n else math.nan
    sd = float(finite.std(ddof=ddof)) if n > ddof else math.nan
    low, high = t_interval(mean, sd, n, confidence) if n > 1 else (math.nan, math.nan)
    return Summary(mean, sd, n, int(array.size - n), ddof, confidence, low, high)


def mean_sd(values: Iterable[float], *, ddof: int = 1) -> tuple[float, float]:
    """Mean and sample SD (``ddof=1``) of the non-``NaN`` values."""
    summary = summarize(values, ddof=ddof)
    return summary.mean, summary.sd


def t_interval(mean: float, sd: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided t confidence interval for a mean from summary statistics (``n - 1`` df)."""
    if not 0 < confidence < 1:
        raise StatsError(f"confidence must be between 0 and 1, got {confidence}")
    if n < 2 or not math.isfinite(sd):
        return math.nan, math.nan
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


#: What a table prints for a statistic that does not exist (no scored value, or an sd from one value).
NOT_AVAILABLE = "n/a"


def format_mean_sd(mean: float | None, sd: float | None, digits: int = 1, *, sep: str = " ± ") -> str:
    """``"4.2 ± 0.3"``: the one way every table prints a mean and its sd (``digits`` decimals each).

    One rule for what is missing (``None``, ``NaN`` or ``pandas.NA``):

    * no mean (n = 0: nothing was scored) prints ``"n/a"``, whatever the sd;
    * a mean without an sd (n = 1 with ``ddof=1``, or an sd that could not be computed) prints
      ``"4.2 ± n/a"``, so a single value is never mistaken for one without spread.

    ``sep`` is the separator, ``" ± "`` unless a published layout prints ``"±"``.
    """
    if _absent(mean):
        return NOT_AVAILABLE
    spread = NOT_AVAILABLE if _absent(sd) else f"{sd:.{digits}f}"
    return f"{mean:.{digits}f}{sep}{spread}"


def _absent(value: float | None) -> bool:
    if value is None:
        return True
    try:
        return math.isnan(value)
    except TypeError:  # pandas.NA and other missing markers that are not numbers
        return True


@dataclass(frozen=True)
class ValidRate:
    """``valid`` out of ``total`` with a Wilson score interval."""

    valid: int
    total: int
    confidence: float = 0.95
    ci_low: float = math.nan
    ci_high: float = math.nan

    @property
    def rate(self) -> float:
        """``valid / total`` (``NaN`` when nothing was asked)."""
        return self.valid / self.total if self.total else math.nan


def valid_rate(valid: int, total: int, *, confidence: float = 0.95) -> ValidRate:
    """The share of valid answers with its Wilson confidence interval."""
    if total < 0 or valid < 0 or valid > total:
        raise StatsError(f"valid-answer count {valid} out of {total} is impossible")
    if total == 0:
        return ValidRate(0, 0, confidence)
    interval = stats.binomtest(valid, total).proportion_ci(confidence_level=confidence, method="wilson")
    return ValidRate(valid, total, confidence, float(interval.low), float(interval.high))


class _ParsedLike(Protocol):
    expected: tuple[int, ...]
    answers: dict[int, int]

    @property
    def refused(self) -> bool: ...


def valid_answer_rate(results: Iterable[_ParsedLike], *, confidence: float = 0.95) -> ValidRate:
    """Item level: valid answers over expected items, pooled over parsed replies."""
    valid = total = 0
    for result in results:
        valid += sum(1 for i in result.expected if i in result.answers)
        total += len(result.expected)
    return valid_rate(valid, total, confidence=confidence)


def complete_run_rate(results: Iterable[_ParsedLike], *, confidence: float = 0.95) -> ValidRate:
    """Run level: replies that answered every expected item validly (refusals count as invalid)."""
    complete = total = 0
    for result in results:
        total += 1
        complete += all(i in result.answers for i in result.expected) and not result.refused
    return valid_rate(complete, total, confidence=confidence)
