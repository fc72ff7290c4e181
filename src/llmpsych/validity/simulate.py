"""Simulated respondents in the item-level long format, built to differ (or not) between groups.

Used by the tests and the benchmark to check that invariance is detected where it was built in and not
where it was not, and by a researcher to see what their design can detect. Answers follow a
simple-structure factor model, x = nu + lambda * eta + e, cut into ``points`` ordered categories at fixed
thresholds (so they look like Likert answers), with the latent means, loadings and intercepts of each group
set by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd


def simulate_long(
    *,
    groups: Sequence[str],
    n: int,
    factors: Mapping[str, Sequence[int]],
    loading: float = 0.7,
    loadings_shift: Mapping[str, Mapping[int, float]] | None = None,
    intercepts_shift: Mapping[str, Mapping[int, float]] | None = None,
    latent_mean: Mapping[str, float] | None = None,
    points: int = 5,
    scale: str = "SIM",
    by: str = "persona",
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (respondent, item) in the agreed long layout.

    ``factors`` maps a subscale name to its item numbers; ``loadings_shift[group][item]`` is added to that
    item's loading in that group, ``intercepts_shift[group][item]`` to its intercept (in standard-deviation
    units of the continuous answer before it is cut into ``points`` categories).
    """
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    cuts = np.linspace(-1.5, 1.5, points - 1)
    for g in groups:
        for r in range(n):
            respondent = f"{g}-{r}"
            for sub, items in factors.items():
                eta = rng.normal((latent_mean or {}).get(g, 0.0), 1.0)
                for item in items:
                    lam = loading + (loadings_shift or {}).get(g, {}).get(item, 0.0)
                    nu = (intercepts_shift or {}).get(g, {}).get(item, 0.0)
                    resid = rng.normal(0.0, float(np.sqrt(max(1.0 - loading**2, 0.05))))
                    x = nu + lam * eta + resid
                    rows.append(
                        {
                            "respondent": respondent,
                            "source": "model",
                            by: g,
                            "scale": scale,
                            "item": int(item),
                            "subscale": sub,
                            "reverse": False,
                            "response": float(1 + np.searchsorted(cuts, x)),
                            "status": "answered",
                            "min": 1.0,
                            "max": float(points),
                        }
                    )
    return pd.DataFrame(rows)
