"""DBSCAN outlier detection (noise points), as in the thesis: eps 0.3, minPts 20.

``minPts`` counts the point itself (the scikit-learn convention the released analysis used). Noise is
every point that is neither a core point nor within ``eps`` of one; it does not depend on visiting order.
"""

from __future__ import annotations

import numpy as np

EPS = 0.3
MIN_PTS = 20
#: The released notebook passed eps = 0.302; on the GPT-3.5 grid it finds the same outliers as 0.3.
RELEASED_EPS = 0.302


def _pairs(points: np.ndarray, eps: float, block: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(i, j)``, ``i != j``, of points within ``eps`` (squared distances, blockwise)."""
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for start in range(0, len(points), block):
        part = points[start : start + block]
        d2 = ((part[:, None, :] - points[None, :, :]) ** 2).sum(axis=2)
        i, j = np.nonzero(d2 <= eps * eps)
        i += start
        keep = i != j
        rows.append(i[keep])
        cols.append(j[keep])
    return np.concatenate(rows), np.concatenate(cols)


def dbscan(points: np.ndarray, eps: float = EPS, min_pts: int = MIN_PTS) -> np.ndarray:
    """Cluster labels ``0..k-1`` (numbered by their first core point), ``-1`` for noise.

    Identical points are merged first and counted with their multiplicity (the grids hold many
    duplicates); clusters are the connected components of the core points. A border point joins the
    cluster of its first core neighbour.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    x = np.asarray(points, dtype=float)
    if len(x) == 0:
        return np.zeros(0, dtype=int)
    unique, inverse, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    m = len(unique)
    i, j = _pairs(unique, eps)
    size = counts + np.bincount(i, weights=counts[j], minlength=m).astype(int)
    core = size >= min_pts
    both = core[i] & core[j]
    graph = coo_matrix((np.ones(int(both.sum())), (i[both], j[both])), shape=(m, m))
    _, component = connected_components(graph, directed=False)
    labels = np.full(m, -1, dtype=int)
    # number clusters in the order of their first core point in the input
    order: dict[int, int] = {}
    for u in inverse[core[inverse]]:
        order.setdefault(int(component[u]), len(order))
    labels[core] = [order[int(c)] for c in component[core]]
    border = ~core[i] & core[j]
    for u, v in zip(i[border][::-1], j[border][::-1], strict=True):
        labels[u] = labels[v]  # reversed: the first core neighbour (lowest index) wins
    return labels[inverse]


def outlier_mask(points: np.ndarray, eps: float = EPS, min_pts: int = MIN_PTS) -> np.ndarray:
    """True for the DBSCAN noise points."""
    return np.asarray(dbscan(points, eps, min_pts) == -1, dtype=bool)
