"""DBSCAN outlier detection (noise points), as in the thesis: eps 0.3, minPts 20.

``minPts`` counts the point itself (the scikit-learn convention the released analysis used). Noise is
every point that is neither a core point nor within ``eps`` of one; it does not depend on visiting order.
"""

from __future__ import annotations

from collections import deque

import numpy as np

EPS = 0.3
MIN_PTS = 20
#: The released notebook passed eps = 0.302; on the GPT-3.5 grid it finds the same outliers as 0.3.
RELEASED_EPS = 0.302


def _neighbours(points: np.ndarray, eps: float, block: int = 1024) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for start in range(0, len(points), block):
        part = points[start : start + block]
        d2 = ((part[:, None, :] - points[None, :, :]) ** 2).sum(axis=2)
        out.extend(np.flatnonzero(row <= eps * eps) for row in d2)
    return out


def dbscan(points: np.ndarray, eps: float = EPS, min_pts: int = MIN_PTS) -> np.ndarray:
    """Cluster labels ``0..k-1``, ``-1`` for noise."""
    x = np.asarray(points, dtype=float)
    neighbours = _neighbours(x, eps)
    core = np.array([len(n) >= min_pts for n in neighbours], dtype=bool)
    labels = np.full(len(x), -1, dtype=int)
    cluster = 0
    for seed in np.flatnonzero(core):
        if labels[seed] != -1:
            continue
        labels[seed] = cluster
        queue = deque([seed])
        while queue:
            point = queue.popleft()
            if not core[point]:
                continue
            for other in neighbours[point]:
                if labels[other] == -1:
                    labels[other] = cluster
                    queue.append(other)
        cluster += 1
    return labels


def outlier_mask(points: np.ndarray, eps: float = EPS, min_pts: int = MIN_PTS) -> np.ndarray:
    """True for the DBSCAN noise points."""
    return dbscan(points, eps, min_pts) == -1
