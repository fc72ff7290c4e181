"""CABIN's higher-order groupings (8-dimension SETPOINT, 6-dimension RIASEC), only from a mapping you give.

PsychoBench reports CABIN on its 41 basic interests and on two higher-order models, but neither the
thesis nor the official data says which of the 41 interests make up each dimension (spec §2.4.5). llmpsych
therefore ships no mapping: without one the report says the groupings are absent and why. With a mapping
file (JSON or YAML, read when the report is built and stored with the run)::

    source: "where the mapping comes from (paper, table)"
    groupings:
      "8DM (SETPOINT)":
        Health Science: [Medical Science, Health Care Service]
        ...
      "6DM (RIASEC)":
        Realistic: [Mechanics/Electronics, Construction/WoodWork]
        ...

a dimension's score in a run is the unweighted mean of its interests' scores in that run (a run with any
of them unscored has no score for the dimension), then mean ± sd over runs as for every subscale.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import MAX_CONFIG_BYTES
from ..errors import DataError
from ..instruments.native import read_structured
from ..instruments.scale import Scale

ABSENT = (
    "CABIN's 8-dimension (SETPOINT) and 6-dimension (RIASEC) groupings are **not reported**: neither the "
    "PsychoBench paper/thesis nor its questionnaires.json says which of the 41 basic interests form each "
    "dimension, and llmpsych does not guess. Give a documented mapping with "
    "`llmpsych psychobench analyze RUN_DIR --cabin-groupings FILE` (format: docs/psychobench.md) to add them."
)


def is_cabin(scale: Scale) -> bool:
    """The scale these groupings apply to."""
    return scale.name.upper() == "CABIN"


def load_groupings(path: str | Path) -> dict[str, Any]:
    """Read a mapping file (JSON or YAML) into ``{"source": str, "groupings": {model: {dim: [names]}}}``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"CABIN groupings file not found: {path}")
    data = read_structured(path, MAX_CONFIG_BYTES, "CABIN groupings file")
    return check_groupings(data, where=str(path))


def check_groupings(data: Any, *, where: str = "CABIN groupings") -> dict[str, Any]:
    """Validate the structure (not the names; see :func:`resolve`)."""
    if not isinstance(data, dict) or set(data) - {"source", "groupings"}:
        raise DataError(f"{where}: expected a mapping with keys 'source' and 'groupings'")
    source = data.get("source")
    if not isinstance(source, str) or not source.strip():
        raise DataError(f"{where}: 'source' must say where the mapping comes from")
    groupings = data.get("groupings")
    if not isinstance(groupings, dict) or not groupings:
        raise DataError(f"{where}: 'groupings' must map a model name to its dimensions")
    for model, dims in groupings.items():
        if not isinstance(dims, dict) or not dims:
            raise DataError(f"{where}: grouping {model!r} must map dimension names to interest lists")
        for dim, names in dims.items():
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise DataError(f"{where}: {model} / {dim} must be a non-empty list of interest names")
    return {"source": source.strip(), "groupings": groupings}


def resolve(scale: Scale, mapping: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Map every listed name to the scale's subscale name (case-insensitive; the source's spelling
    "Business Iniatives" is accepted for the corrected "Business Initiatives"). Unknown names: DataError."""
    known = {name.lower(): name for name in scale.subscale_names}
    for correction in scale.corrections:
        if correction.new in scale.subscale_names:
            known.setdefault(correction.old.lower(), correction.new)
    out: dict[str, dict[str, list[str]]] = {}
    for model, dims in mapping["groupings"].items():
        out[str(model)] = {}
        for dim, names in dims.items():
            resolved = []
            for name in names:
                hit = known.get(name.strip().lower())
                if hit is None:
                    raise DataError(
                        f"CABIN groupings: {model} / {dim}: {name!r} is not one of CABIN's 41 interests"
                    )
                resolved.append(hit)
            out[str(model)][str(dim)] = resolved
    return out


def group_scores(
    scores: pd.DataFrame, scale_name: str, groups: dict[str, dict[str, list[str]]]
) -> pd.DataFrame:
    """Per run and dimension: the mean of its interests' run scores (NaN if any is unscored)."""
    picked = scores[scores["scale"] == scale_name]
    wide = picked.pivot_table(index="run", columns="subscale", values="score", aggfunc="first", dropna=False)
    rows = []
    for model, dims in groups.items():
        for dim, names in dims.items():
            for run, row in zip(wide.index, wide.to_dict("records"), strict=True):
                values = [float(row.get(name, math.nan)) for name in names]
                value = math.nan if any(math.isnan(v) for v in values) else sum(values) / len(values)
                rows.append(
                    {
                        "scale": scale_name,
                        "grouping": model,
                        "dimension": dim,
                        "run": int(run),
                        "score": value,
                    }
                )
    return pd.DataFrame(rows, columns=["scale", "grouping", "dimension", "run", "score"])
