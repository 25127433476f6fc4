"""The square corners trimmed: the cells of a corner square left free for L1 and L2 near
``alpha = 1``, every other cell tied along its row towards the diagonal.

At an L1 or L2 optimum of the square-corner form nearly every DP row of the square is tight, and
always the same way: along an output row, entries fall by ``alpha`` per step away from the
diagonal.  On WM, L2, ``alpha = 0.97``, ``n = 1024`` (``W = 242``), 2,170 of the square's 59,049
row steps are slack, all left of the diagonal: every step of the rows up to about ``1.6 s``
(``s = 1 / -ln alpha``), then a band next to the diagonal and a block of the first columns, both
narrowing with the row, none past row ``5.6 s``.  So the form keeps free (:func:`free_cells`):

* the diagonal;
* the rows ``i <= T`` from the first column to ``B`` past the diagonal;
* in every row, the ``B`` cells left of the diagonal and the first ``C + 1`` columns;

with ``T, B, C = ceil(f s)`` for the factors ``f`` of :attr:`~ChainTuning.square_chain_trim`.  A
cell not kept takes the value of the nearest kept cell of its row on the diagonal's side, times
``alpha`` per step between them (:func:`ties`); the row and column tails of the square then go on
from the cells they copy, as in the untrimmed form.  The form is a restriction of the square
corners, so its optimum is a design, never better than theirs; where the trim cuts off a free
cell of their optimum, the certificate stays open and the full square runs.
"""

from __future__ import annotations

import numpy as np

from countdp.design.template.square_geometry import primal_map


def trim_sizes(alpha: float, trim: tuple[float, float, float]) -> tuple[int, int, int]:
    """``(T, B, C)``: each factor of ``trim`` times ``1 / -ln alpha``, rounded up (module docstring)."""
    scale = 1.0 / -np.log(alpha)
    T, B, C = (int(np.ceil(f * scale)) for f in trim)
    return T, B, C


def free_cells(W: int, alpha: float, trim: tuple[float, float, float]) -> np.ndarray:
    """The ``(W + 1) x (W + 1)`` mask of the corner square's free cells (module docstring)."""
    T, B, C = trim_sizes(alpha, trim)
    K = W + 1
    i, j = np.divmod(np.arange(K * K), K)
    left = (j < i) & ((i <= T) | (j >= i - B) | (j <= C))
    right = (j > i) & (i <= T) & (j <= i + B)
    return ((i == j) | left | right).reshape(K, K)


def ties(free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cell, steps)`` for each cell of the square (flat, row-major): the free cell it copies, the
    nearest free one of its row on the diagonal's side (itself when free), and the steps between
    them.  Every row's diagonal is free, so every cell has one."""
    K = free.shape[0]
    columns = np.broadcast_to(np.arange(K), (K, K))
    from_left = np.maximum.accumulate(np.where(free, columns, -1), axis=1)  # nearest free at or left
    from_right = np.minimum.accumulate(np.where(free, columns, K)[:, ::-1], axis=1)[:, ::-1]
    rows = np.arange(K)[:, None]
    source = np.where(columns > rows, from_left, from_right)
    if np.any(source < 0) or np.any(source >= K):
        raise ValueError("a row of the trimmed square has no free cell on its diagonal's side")
    return (rows * K + source).ravel(), np.abs(columns - source).ravel()


def trimmed_map(n: int, W: int, alpha: float, trim: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray, int]:
    """``(col, weight, k)`` as :func:`countdp.design.template.square_geometry.primal_map`, for the
    trimmed square: ``k`` is the number of free cells plus one (``g``, last)."""
    col, weight, k = primal_map(n, W, alpha)
    cell, steps = ties(free_cells(W, alpha, trim))
    cell, steps = np.r_[cell, k - 1], np.r_[steps, 0]  # g copies itself
    weight = weight * alpha ** steps[col].astype(float)
    used, col = np.unique(cell[col], return_inverse=True)
    return col, weight, used.size


def trimmed_unknowns(W: int, alpha: float, trim: tuple[float, float, float]) -> int:
    """The trimmed primal's unknowns: the free cells and ``g``."""
    return int(free_cells(W, alpha, trim).sum()) + 1
