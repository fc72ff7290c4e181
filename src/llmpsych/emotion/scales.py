"""EmotionBench's nine scales from its ``questionnaires.json``, checked against the papers (warn only)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

from ..instruments.official import load_emotionbench_scales
from ..instruments.scale import Scale
from .situations import CountWarning

#: Items and response range per scale (Huang et al., EmotionBench, Table 1 / spec §2).
EXPECTED_SCALES: Mapping[str, tuple[int, int, int]] = {
    "PANAS": (20, 1, 5),
    "AGQ": (29, 1, 7),
    "DASS-21": (21, 0, 3),
    "BDI": (21, 0, 3),
    "FDS": (28, 1, 5),
    "MJS": (24, 1, 7),
    "GASP": (16, 1, 7),
    "FSS": (52, 1, 5),
    "BFNE": (12, 1, 5),
}


def scale_problems(scales: Mapping[str, Scale]) -> list[str]:
    """Differences from the papers' nine scales (missing scales, item counts, ranges, placeholder)."""
    problems = []
    for name, (items, low, high) in EXPECTED_SCALES.items():
        scale = scales.get(name)
        if scale is None:
            problems.append(f"scale {name} is missing")
            continue
        if scale.n_items != items:
            problems.append(f"{name} has {scale.n_items} items, the papers {items}")
        if (scale.response_min, scale.response_max) != (low, high):
            problems.append(
                f"{name} answers {scale.response_min}-{scale.response_max}, the papers {low}-{high}"
            )
        if "SCENARIO" not in (scale.instructions or ""):
            problems.append(f"{name}'s prompt has no SCENARIO placeholder (the situation goes before it)")
    return problems


def load_scales(data_dir: str | os.PathLike[str] | None = None) -> dict[str, Scale]:
    """The EmotionBench scales by name; one :class:`CountWarning` lists any difference from the papers."""
    scales = load_emotionbench_scales(data_dir)
    problems = scale_problems(scales)
    if problems:
        warnings.warn(
            f"EmotionBench questionnaires differ from the papers: {'; '.join(problems)}",
            CountWarning,
            stacklevel=2,
        )
    return scales
