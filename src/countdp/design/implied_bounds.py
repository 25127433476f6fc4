"""Lower bounds ``y >= 0`` of a reduced LP that its two-variable rows already imply.

A DP row of a design LP links two entries of one output row: ``P[i, j+1] - alpha P[i, j] >= 0``
(rows are outputs, columns inputs; ``alpha = e^-epsilon``).  So ``P[i, j] >= 0`` implies
``P[i, j+1] >= 0``, and along the row's chain one bound per output row implies the other ``n``.
Left as rows, they make up a third of the constraints Clarabel sees, and the barrier on them
slows it.

Any row ``lo <= a y_q + b y_p <= hi`` with ``a b < 0`` and ``lo >= 0`` (or ``hi <= 0``) gives
``y_q >= c y_p`` (or ``y_p >= c y_q``) for some ``c > 0``: an edge ``p -> q``.  Every column
reachable along edges from a column whose bound is kept is non-negative whenever the LP's rows
hold, so one bound per source component of the graph (strongly connected components with no
edge coming in) implies all the others.  Only columns with lower bound exactly 0 take part.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def implied_nonnegative(A: sp.spmatrix, row_lower: np.ndarray, row_upper: np.ndarray,
                        col_lower: np.ndarray) -> np.ndarray:
    """Mask of the columns whose bound ``y >= 0`` the rows ``row_lower <= A y <= row_upper`` and
    the bounds left unmasked imply (module docstring); all false where nothing is implied."""
    A = sp.csr_matrix(A)
    k = A.shape[1]
    bounded = np.asarray(col_lower) == 0.0
    rows = np.flatnonzero(np.diff(A.indptr) == 2)
    first = A.indptr[rows]
    c1, c2, a1, a2 = A.indices[first], A.indices[first + 1], A.data[first], A.data[first + 1]
    lo, hi = np.asarray(row_lower)[rows], np.asarray(row_upper)[rows]
    opposite = (np.sign(a1) * np.sign(a2) < 0) & bounded[c1] & bounded[c2]
    pos, neg = np.where(a1 > 0, c1, c2), np.where(a1 > 0, c2, c1)
    at_least = opposite & np.isfinite(lo) & (lo >= 0)  # pos >= c neg
    at_most = opposite & np.isfinite(hi) & (hi <= 0)  # neg >= c pos
    src = np.concatenate([neg[at_least], pos[at_most]])
    dst = np.concatenate([pos[at_least], neg[at_most]])
    if src.size == 0:
        return np.zeros(k, bool)
    graph = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(k, k))
    count, label = connected_components(graph, directed=True, connection="strong")
    entered = np.zeros(count, bool)
    entered[label[dst[label[src] != label[dst]]]] = True
    root = np.full(count, k)
    np.minimum.at(root, label, np.arange(k))
    is_root = (np.arange(k) == root[label]) & ~entered[label]
    return bounded & ~is_root
