"""The perturbation grid: 5 templates × 5 item versions × 10 languages × 5 label formats × 2 orders.

Any subset can be chosen per factor. Within a configuration the items are shuffled with a seeded
generator and split into chunks of 17-27 (the thesis's "44/2 ± 5"; the released code's split was off
by one, giving a first chunk of 18-28).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from .labels import LABEL_FORMATS, ORDERS
from .official import LANGUAGES, TEMPLATES, VERSIONS

#: The factors of a reliability grid (the BFI grid and a custom grid), each a column of its score rows.
GRID_FACTORS: tuple[str, ...] = ("template", "version", "language", "framing", "persona")

FACTOR_LEVELS: dict[str, tuple[str, ...]] = {
    "template": TEMPLATES,
    "version": VERSIONS,
    "language": LANGUAGES,
    "label": tuple(LABEL_FORMATS),
    "order": tuple(ORDERS),
}
CHUNK_MIN, CHUNK_MAX = 17, 27


@dataclass(frozen=True)
class Configuration:
    """One cell of the grid."""

    template: str
    version: str
    language: str
    label: str
    order: str

    @property
    def config_id(self) -> str:
        """A readable, unique id, e.g. ``t1-v1-En-n-f``."""
        return "-".join((self.template, self.version, self.language, self.label, self.order))

    def as_dict(self) -> dict[str, str]:
        """The five factor levels."""
        return asdict(self)


def _choose(factor: str, chosen: Sequence[str] | None) -> tuple[str, ...]:
    levels = FACTOR_LEVELS[factor]
    if chosen is None:
        return levels
    by_lower = {level.lower(): level for level in levels}
    picked = []
    for value in chosen:
        key = str(value).strip().lower()
        if key not in by_lower:
            raise ValueError(f"unknown {factor} {value!r} (expected one of {', '.join(levels)})")
        picked.append(by_lower[key])
    if not picked:
        raise ValueError(f"no {factor} chosen")
    return tuple(dict.fromkeys(picked))


def build_grid(
    templates: Sequence[str] | None = None,
    versions: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    orders: Sequence[str] | None = None,
) -> list[Configuration]:
    """Every combination of the chosen levels (all levels of a factor when ``None``): 2,500 by default."""
    return [
        Configuration(*combo)
        for combo in itertools.product(
            _choose("template", templates),
            _choose("version", versions),
            _choose("language", languages),
            _choose("label", labels),
            _choose("order", orders),
        )
    ]


def chunk_sizes(n_items: int, rng: random.Random, low: int = CHUNK_MIN, high: int = CHUNK_MAX) -> list[int]:
    """Sizes in ``[low, high]`` summing to ``n_items`` (one chunk when ``n_items <= high``).

    For the 44-item BFI this is two chunks ``a`` and ``44 - a`` with ``a`` uniform in 17..27.
    """
    sizes = []
    left = n_items
    while left > high:
        upper = min(high, left - low)
        if upper < low:  # cannot leave a full chunk behind: take what keeps the rest in range
            upper = left - 1
        sizes.append(rng.randint(low, upper) if upper >= low else upper)
        left -= sizes[-1]
    sizes.append(left)
    return sizes


def shuffled_chunks(
    items: Sequence[int],
    rng: random.Random,
    low: int = CHUNK_MIN,
    high: int = CHUNK_MAX,
    order: Sequence[int] | None = None,
) -> list[list[int]]:
    """The items in a seeded random order (or the given ``order``), cut into chunks of ``low``-``high``."""
    if order is None:
        order = list(items)
        rng.shuffle(order)
    else:
        order = list(order)
    chunks, start = [], 0
    for size in chunk_sizes(len(order), rng, low, high):
        chunks.append(order[start : start + size])
        start += size
    return chunks
