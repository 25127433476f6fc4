"""The square-corner template of mirror-symmetric L0: which template entry an entry of the size-``n`` design
copies, and which class of multipliers a constraint row or a column sum of the full LP takes.

An optimal L0 design with S (Theorem 1: every L0 optimum has a symmetric one beside it) is, at
large ``n``, free only in a ``(W + 1) x (W + 1)`` square at each corner, the two squares mirror
images; everything else follows from the squares and one number (:func:`primal_map`):

* the rows of a corner square go on towards the far side as a geometric tail, ``alpha`` per step
  from the square's boundary column ``W`` (resp. ``n - W``); these *row tails* run all the way
  across, through the far off-diagonal block of the other corner;
* the columns of a corner square go on downwards (resp. upwards) as a geometric tail from the
  boundary row, between the two corner strips (*column tails*);
* the middle (both indices strictly between ``W`` and ``n - W``) is GM: ``g alpha^|i - j|``.

So the template has ``(W + 1)^2 + 1`` unknowns, against ``(3 W + 5)^2`` for the three-width template
of :mod:`countdp.design.template.geometry`, and ``E z`` is mirror symmetric by construction.

The dual is restricted by *classes* (:func:`row_classes`, :func:`column_classes`): every row of the
full LP takes the multiplier of its class, the class of its first entry's position at level
``L = W + 1``: each entry of the two corner squares its own, each entry of the two far
off-diagonal blocks its own (row tails meet the other corner's columns there, whose multipliers
differ), one per row of a corner strip and side for its row or column tail, and one per side and
distance to the diagonal (clipped at ``L``) in the middle.

Conventions: ``P[i, j] = Pr[output i | input j]``, ``N = n + 1``, ``x = P.ravel()``; the rows are
those of :func:`countdp.design.optimality.design_lp_model` (:func:`countdp.design.template.geometry.row_entries`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from countdp.design.template.geometry import row_entries


def primal_map(n: int, W: int, alpha: float) -> tuple[np.ndarray, np.ndarray, int]:
    """``(col, weight, k)``: entry ``p`` of the size-``n`` design is ``weight[p] * z[col[p]]`` for the
    ``k = (W + 1)^2 + 1`` template unknowns ``z`` (the top-left square row-major, then ``g``; module
    docstring).  ``weight`` is ``alpha`` to the distance from the copied entry (``alpha^|i - j|`` in
    the middle, whose unknown is ``g``)."""
    N, K = n + 1, W + 1
    i, j = np.divmod(np.arange(N * N), N)
    ri, rj = np.full(N * N, -1), np.full(N * N, -1)
    dist = np.zeros(N * N, dtype=np.int64)
    boundary = np.full(N * N, W)
    far = n - W
    rules = [((i <= W) & (j <= W), i, j, 0 * i),  # the top-left square
             ((i >= far) & (j >= far), n - i, n - j, 0 * i),  # the bottom-right square, its mirror image
             ((i <= W) & (j > W), i, boundary, j - W),  # top-left row tails
             ((i >= far) & (j < far), n - i, boundary, far - j),  # bottom-right row tails (mirrored)
             (j <= W, boundary, j, i - W),  # top-left column tails
             (j >= far, boundary, n - j, far - i)]  # bottom-right column tails (mirrored)
    for where, a, b, d in rules:
        free = where & (ri < 0)
        ri[free], rj[free], dist[free] = a[free], b[free], d[free]
    middle = ri < 0
    col = np.where(middle, K * K, ri * K + rj)
    weight = alpha ** np.where(middle, np.abs(i - j), dist).astype(float)
    return col, weight, K * K + 1


def position_class(i: np.ndarray, j: np.ndarray, n: int, L: int) -> np.ndarray:
    """The class (a non-negative integer, not contiguous) of the positions ``(i, j)`` at level ``L``
    (module docstring): corner squares and far blocks entry by entry, tails by strip row and side,
    the middle by side and distance to the diagonal clipped at ``L``."""
    D = L + 1
    side = np.sign(i - j) + 1
    e = np.abs(i - j)
    parts = [((i <= L) & (j <= L), i * D + j, D * D),
             ((i >= n - L) & (j >= n - L), (n - i) * D + (n - j), D * D),
             ((i <= L) & (j >= n - L), i * D + (n - j), D * D),  # far blocks
             ((i >= n - L) & (j <= L), (n - i) * D + j, D * D),
             (i <= L, i * 3 + side, 3 * D),  # row tails
             (i >= n - L, (n - i) * 3 + side, 3 * D),
             (j <= L, j * 3 + side, 3 * D),  # column tails
             (j >= n - L, (n - j) * 3 + side, 3 * D),
             (np.ones_like(i, dtype=bool), np.minimum(e, L) * 3 + side, 3 * D)]
    key = np.full(i.shape, -1, dtype=np.int64)
    offset = 0
    for where, value, size in parts:
        free = where & (key < 0)
        key[free] = offset + value[free]
        offset += size
    return key


def row_classes(n: int, W: int, props: tuple[str, ...]) -> np.ndarray:
    """The class (contiguous, from 0) of every inequality row of the size-``n`` LP with ``props`` (no
    S: its rows are equalities), by block and the class of the row's first entry at level ``W + 1``."""
    keys, offset = [], 0
    for pi, pj in row_entries(n, props):
        key = position_class(pi, pj, n, W + 1)
        keys.append(key + offset)
        offset += int(key.max()) + 1
    return np.unique(np.concatenate(keys), return_inverse=True)[1].astype(np.int64)


def column_classes(n: int, W: int) -> np.ndarray:
    """The class (contiguous, from 0) of every column sum: that of the column's diagonal entry."""
    diagonal = np.arange(n + 1)
    return np.unique(position_class(diagonal, diagonal, n, W + 1), return_inverse=True)[1].astype(np.int64)


def middle_rows(n: int, W: int, alpha: float) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(rows, rhs)``: the two rows ``g = (1 - alpha) / (1 + alpha)`` and ``sum_(i <= W) x[i, W] =
    1 / (1 + alpha)``, on the entries of the size-``n`` design (``g`` is the middle diagonal entry; the
    caller maps them to template columns): the column sums of the middle columns span exactly these
    two (each is ``f(j) g + (alpha^(j - W) + alpha^(n - W - j)) sum_i x[i, W]``), and stand in for
    them; the certificate checks every column sum of the full model."""
    N, K, middle = n + 1, W + 1, n // 2
    rows = np.r_[0, np.ones(K, dtype=np.int64)]
    entries = np.r_[middle * N + middle, np.arange(K) * N + W]
    matrix = sp.csr_matrix((np.ones(rows.size), (rows, entries)), shape=(2, N * N))
    return matrix, np.array([(1 - alpha) / (1 + alpha), 1 / (1 + alpha)])
