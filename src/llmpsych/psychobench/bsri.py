"""BSRI four-way sex-role classification (Bem's median split), with explicit thresholds and label order.

A run (or the mean over runs) is *high* on a subscale when its mean score is strictly above that
subscale's threshold. High masculine only: Masculine; high feminine only: Feminine; both: Androgynous;
neither: Undifferentiated. PsychoBench splits at "the median" but never gives the medians, and its count
strings ("U:M:F:A") cannot be reconciled with its own means under the printed order (spec §2.4.4), so
here both the thresholds and the order of the count string are stated in every report and configurable.

Default thresholds (``rule="norms"``): for each subscale, the mean of the data file's norm groups
weighted by their n. The norm medians are not published; the pooled mean stands in for them and is
labelled as such. ``rule="midpoint"`` uses the middle of the response range (4 on 1-7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..instruments.scale import Scale

LABELS = ("Undifferentiated", "Masculine", "Feminine", "Androgynous")
PAPER_ORDER = LABELS  # the order printed in the thesis/report tables: U : M : F : A
MASCULINE, FEMININE = "Masculine", "Feminine"


class BsriSettings(BaseModel):
    """How BSRI runs are classified (``docs/psychobench.md``)."""

    model_config = ConfigDict(extra="forbid")

    masculine_threshold: float | None = Field(default=None, description="None: from ``rule``")
    feminine_threshold: float | None = Field(default=None, description="None: from ``rule``")
    rule: Literal["norms", "midpoint"] = "norms"
    label_order: list[str] = Field(default_factory=lambda: list(PAPER_ORDER))

    @field_validator("label_order")
    @classmethod
    def _permutation(cls, value: list[str]) -> list[str]:
        by_lower = {label.lower(): label for label in LABELS}
        short = {label[0].lower(): label for label in LABELS}
        out = [by_lower.get(v.strip().lower()) or short.get(v.strip().lower()) or v for v in value]
        if sorted(out) != sorted(LABELS):
            raise ValueError(f"label_order must list each of {', '.join(LABELS)} once (or U, M, F, A)")
        return out


@dataclass(frozen=True)
class Thresholds:
    """The split points actually used, and where they came from."""

    masculine: float
    feminine: float
    source: str


def thresholds(scale: Scale, settings: BsriSettings) -> Thresholds:
    """Resolve the masculine/feminine split points for ``scale`` (a BSRI-like scale)."""
    values, sources = {}, []
    for name, given in ((MASCULINE, settings.masculine_threshold), (FEMININE, settings.feminine_threshold)):
        if given is not None:
            values[name] = float(given)
            sources.append(f"{name.lower()} {given:g} (given)")
            continue
        norms = scale.subscale(name).norms
        if settings.rule == "norms" and norms:
            total = sum(g.n for g in norms)
            values[name] = sum(g.mean * g.n for g in norms) / total
            groups = ", ".join(f"{g.label} {g.mean:g} (n={g.n})" for g in norms)
            sources.append(
                f"{name.lower()} {values[name]:.3f} = n-weighted mean of the data file's norm groups "
                f"({groups}), standing in for the unpublished median"
            )
        else:
            values[name] = (scale.response_min + scale.response_max) / 2
            sources.append(f"{name.lower()} {values[name]:g} = midpoint of the response range")
    return Thresholds(values[MASCULINE], values[FEMININE], "; ".join(sources))


def classify(masculine: float, feminine: float, cut: Thresholds) -> str | None:
    """The sex-role label of one pair of subscale means (``None`` if either is missing)."""
    if masculine is None or feminine is None or math.isnan(masculine) or math.isnan(feminine):
        return None
    high_m, high_f = masculine > cut.masculine, feminine > cut.feminine
    if high_m and high_f:
        return "Androgynous"
    if high_m:
        return "Masculine"
    if high_f:
        return "Feminine"
    return "Undifferentiated"


def is_bsri(scale: Scale) -> bool:
    """A scale this classifier applies to: named BSRI with Masculine and Feminine subscales."""
    return scale.name.upper() == "BSRI" and {MASCULINE, FEMININE} <= set(scale.subscale_names)


def classify_runs(scores: pd.DataFrame, scale_name: str, cut: Thresholds) -> pd.DataFrame:
    """One row per run: masculine, feminine, the two high/low decisions and the label (or None)."""
    picked = scores[(scores["scale"] == scale_name) & scores["subscale"].isin([MASCULINE, FEMININE])]
    wide = picked.pivot_table(index="run", columns="subscale", values="score", aggfunc="first", dropna=False)
    rows = []
    for run, row in zip(wide.index, wide.to_dict("records"), strict=True):
        m, f = float(row.get(MASCULINE, math.nan)), float(row.get(FEMININE, math.nan))
        label = classify(m, f, cut)
        rows.append(
            {
                "scale": scale_name,
                "run": int(run),
                "masculine": m,
                "feminine": f,
                "masculine_threshold": cut.masculine,
                "feminine_threshold": cut.feminine,
                "high_masculine": None if label is None else m > cut.masculine,
                "high_feminine": None if label is None else f > cut.feminine,
                "label": label,
            }
        )
    columns = [
        "scale",
        "run",
        "masculine",
        "feminine",
        "masculine_threshold",
        "feminine_threshold",
        "high_masculine",
        "high_feminine",
        "label",
    ]
    return pd.DataFrame(rows, columns=columns)


def counts(labels: pd.Series, order: list[str]) -> dict[str, int]:
    """How many runs got each label, in ``order``."""
    return {label: int((labels == label).sum()) for label in order}


def count_string(labels: pd.Series, order: list[str]) -> str:
    """The paper's ``a:b:c:d`` string in ``order``."""
    return ":".join(str(n) for n in counts(labels, order).values())


def order_key(order: list[str]) -> str:
    """``U:M:F:A``-style key of a label order."""
    return ":".join(label[0] for label in order)
