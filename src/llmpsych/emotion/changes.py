"""Scores per run and the papers' evoked-minus-baseline tests per factor, per emotion and overall.

* PANAS runs give ``positive`` and ``negative`` (sums of the PA and NA items, 10-50 each); every other
  scale gives ``total``.
* ``published=True`` sums the raw answers, which is what reproduces the published numbers (no reverse
  keys, no ×2 for DASS-21). ``published=False`` (corrected) reverse-keys the items the data file lists
  and applies the scale's own mode (``SUM*2`` for DASS-21): psychometrically correct, not paper-compatible.
* change = mean(evoked) − mean(baseline); baseline = the default runs (or, for positive situations, the
  negative originals' evoked runs). Emotion and overall rows **pool all runs**, as the papers do.
* Test (spec §3.6, through :mod:`llmpsych.stats`): two-tailed F-test at alpha, then Student's or Welch's
  t-test; ``↑``/``↓`` when p <= alpha by the sign of the change, else ``—``. ``published=True`` follows the
  original code exactly (1e-8 added to the SDs, F p-value ``2·(1 − cdf)``); ``False`` is the plain F-test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..instruments.scale import Scale, ScoringMode
from ..stats import GroupStats, compare_with_norm, summarize
from ..stats.descriptive import StatsError
from .situations import EMOTIONS

UP, DOWN, SAME = "↑", "↓", "—"
PANAS_MEASURES = ("positive", "negative")


def is_affect_scale(scale: Scale) -> bool:
    """True for PANAS-like scales: one positive and one negative subscale."""
    names = [s.lower() for s in scale.subscale_names]
    return any(n.startswith("positive") for n in names) and any(n.startswith("negative") for n in names)


def own_subscales(scale: Scale) -> bool:
    """True for a user's scale with subscales (not PANAS-like): its measures are its subscales."""
    from .scales import EXPECTED_SCALES

    return bool(scale.subscales) and not is_affect_scale(scale) and scale.name.upper() not in EXPECTED_SCALES


def measures(scale: Scale) -> tuple[str, ...]:
    """``("positive", "negative")`` for PANAS, ``("total",)`` for the emotion-specific scales, the
    subscales for a user's scale file that has them."""
    if own_subscales(scale):
        return scale.subscale_names
    return PANAS_MEASURES if is_affect_scale(scale) else ("total",)


def score_answers(scale: Scale, answers: Mapping[int, int], *, published: bool) -> dict[str, float]:
    """The measures of one run (``NaN`` if an item is missing); ``published``: plain sums, no reverse keys."""
    reverse = not published
    mode: ScoringMode | None = None if not published else "SUM"
    if is_affect_scale(scale):
        scores = scale.score(answers, reverse_keying=reverse, scoring=mode)
        out: dict[str, float] = {}
        for name, value in scores.items():
            key = "positive" if name.lower().startswith("positive") else "negative"
            if name.lower().startswith(("positive", "negative")):
                out[key] = value
        return out
    if own_subscales(scale):
        return scale.score(answers, reverse_keying=reverse, scoring=mode)
    return {"total": scale.total(answers, reverse_keying=reverse, scoring=mode)}


@dataclass(frozen=True)
class Cell:
    """One table cell: the change with its test, and both groups' summaries."""

    change: float
    mark: str
    n: int
    mean: float
    sd: float
    baseline_n: int
    p_value: float
    test: str
    hedges_g: float

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, ``NaN`` as ``None``."""
        return {k: _clean(v) for k, v in self.__dict__.items()}

    def label(self, digits: int = 1) -> str:
        """``↓ (-15.2)`` as printed in the papers."""
        return f"{self.mark} ({self.change:+.{digits}f})"


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def compare_groups(
    evoked: Sequence[float], baseline: Sequence[float], *, alpha: float = 0.01, published: bool = True
) -> Cell:
    """The papers' test of evoked against baseline scores (``NaN`` values are skipped and not counted)."""
    ev, base = summarize(evoked), summarize(baseline)
    change = ev.mean - base.mean if ev.n and base.n else math.nan
    try:
        result = compare_with_norm(
            GroupStats(ev.mean, ev.sd, ev.n, "evoked"),
            GroupStats(base.mean, base.sd, base.n, "baseline"),
            alpha=alpha,
            published=published,
        )
    except StatsError:
        return Cell(change, "n/a", ev.n, ev.mean, ev.sd, base.n, math.nan, "", math.nan)
    mark = SAME
    if result.significant:
        mark = UP if result.t_statistic > 0 else DOWN
    return Cell(change, mark, ev.n, ev.mean, ev.sd, base.n, result.t_p_value, result.test, result.hedges_g)


def emotion_of(fid: str) -> str:
    """``Anger-3`` -> ``Anger``."""
    return fid.rpartition("-")[0]


def ordered_factors(fids: Iterable[str]) -> list[str]:
    """Factor ids in the papers' order (emotion order, then factor number)."""

    def key(fid: str) -> tuple[int, str, int]:
        emotion, _, number = fid.rpartition("-")
        rank = EMOTIONS.index(emotion) if emotion in EMOTIONS else len(EMOTIONS)
        return rank, emotion, int(number) if number.isdigit() else 0

    return sorted(set(fids), key=key)


def change_table(
    baseline: Mapping[str, Sequence[float]],
    evoked: Mapping[str, Mapping[str, Sequence[float]]],
    measure_names: Sequence[str],
    *,
    alpha: float = 0.01,
    published: bool = True,
    pooled_baseline: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
) -> dict[str, Any]:
    """Per factor, per emotion (pooled) and overall (pooled) cells against the baseline scores.

    ``baseline[measure]`` is the default runs' scores; ``evoked[factor][measure]`` the evoked runs'.
    With ``pooled_baseline`` (positive situations), each factor has its own baseline (the negative
    originals' runs) and the emotion and overall rows pool those baselines too.
    """
    factors = ordered_factors(evoked)
    out: dict[str, Any] = {"factors": {}, "emotions": {}, "overall": {}}

    def base_of(fids: Sequence[str], m: str) -> list[float]:
        if pooled_baseline is None:
            return list(baseline[m])
        return [v for f in fids for v in pooled_baseline.get(f, {}).get(m, [])]

    for fid in factors:
        out["factors"][fid] = {
            m: compare_groups(evoked[fid][m], base_of([fid], m), alpha=alpha, published=published)
            for m in measure_names
        }
    emotions = list(dict.fromkeys(emotion_of(f) for f in factors))
    for emotion in emotions:
        members = [f for f in factors if emotion_of(f) == emotion]
        out["emotions"][emotion] = {
            m: compare_groups(
                [v for f in members for v in evoked[f][m]],
                base_of(members, m),
                alpha=alpha,
                published=published,
            )
            for m in measure_names
        }
    if factors:
        out["overall"] = {
            m: compare_groups(
                [v for f in factors for v in evoked[f][m]],
                base_of(factors, m),
                alpha=alpha,
                published=published,
            )
            for m in measure_names
        }
    return out


def summary_json(values: Sequence[float]) -> dict[str, Any]:
    """``{"mean", "sd", "n"}`` of the scored values."""
    s = summarize(values)
    return {"mean": _clean(s.mean), "sd": _clean(s.sd), "n": s.n}


def table_json(table: Mapping[str, Any]) -> dict[str, Any]:
    """The cells of :func:`change_table` as plain JSON."""
    out: dict[str, Any] = {}
    for section in ("factors", "emotions"):
        out[section] = {
            key: {m: cell.to_json() for m, cell in cells.items()} for key, cells in table[section].items()
        }
    out["overall"] = {m: cell.to_json() for m, cell in table["overall"].items()}
    return out
