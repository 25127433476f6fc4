"""Exact closed forms for sums of powers, and for the floor's share of a column's expected loss.

The exact error formulas of the structural mechanisms (:mod:`countdp.structural.errors`,
:mod:`countdp.structural.spread_errors`) and the evaluation of Figures 9-13
(:mod:`countdp.evaluate.structural`) never sum over the ``n + 1`` rows of a column: a structural
column is a short structured part plus a *floor* ``f + [i < r]`` on every row ``i = 0..n``, and
the floor's part of any loss is a closed form in the input ``j``.  They all read those closed forms
from here, so the formulas exist once.

Every function is elementwise and exact in the arithmetic of its arguments: Python integers (or
numpy ``object`` arrays of them) for any size, int64 arrays only while the products fit (a caller
passes ``object`` arrays where they may not).  Divisions are exact (``//`` of a multiple).
"""

from __future__ import annotations

import numpy as np


def power_sum(p: int, a: int, b: int) -> int:
    """``sum_{j=a}^{b} j**p`` over non-negative ``j`` (``a >= 0``) for ``p`` in 0..3 (0 when ``a > b``), by
    Faulhaber's closed forms."""
    if p not in (0, 1, 2, 3):
        raise ValueError(f"power_sum: p must be 0, 1, 2 or 3, got {p}")
    if a < 0:
        raise ValueError(f"power_sum: the range must start at 0 or above, got {a}")

    def upto(x: int) -> int:  # sum_{j=0}^{x} j**p (0 for x < 0)
        if x < 0:
            return 0
        return [x + 1, x * (x + 1) // 2, square_sum(x), (x * (x + 1) // 2) ** 2][p]

    return upto(b) - upto(a - 1) if a <= b else 0


def square_sum(x):
    """``T(x) = 0**2 + 1**2 + ... + x**2 = x (x+1) (2x+1) / 6``, elementwise (0 at ``x = 0`` and ``x = -1``).

    ``T(j) + T(n - j)`` is ``sum_{i=0}^{n} (i - j)**2``: the squared error of a uniform column.
    """
    return x * (x + 1) * (2 * x + 1) // 6


def pyramid(m):
    """``T(0) + T(1) + ... + T(m) = m (m+1)**2 (m+2) / 12``, elementwise (0 for ``m`` in -2..0)."""
    return m * (m + 1) ** 2 * (m + 2) // 12


def floor_squares(j, n: int, f, r):
    """The floor's part of input ``j``'s squared error: ``sum_{i=0}^{n} (i - j)**2 (f + [i < r])``, elementwise.

    ``= f (T(j) + T(n - j)) + sum_{i<r} (i - j)**2`` with the second sum
    ``r j**2 - r (r - 1) j + T(r - 1)`` (expanded over ``i = 0..r-1``).  The cubes of
    ``T(j) + T(n - j) = (n + 1) j (j - n) + T(n)`` cancel, so it is the quadratic
    ``(c2 j + c1) j + c0`` with ``c2 = f (n + 1) + r``, ``c1 = -(f n (n + 1) + r (r - 1))`` and
    ``c0 = f T(n) + T(r - 1)``: four operations per input, which matters for Python integers at
    millions of inputs.  ``f`` and ``r`` may be per-input arrays (each input's own column's floor) or
    numbers.
    """
    c2, c1, c0 = f * (n + 1) + r, -(f * n * (n + 1) + r * (r - 1)), f * square_sum(n) + square_sum(r - 1)
    return (c2 * j + c1) * j + c0


def floor_squares_total(a: int, b: int, n: int, f: int, r: int) -> int:
    """``sum_{j=a}^{b} floor_squares(j, n, f, r)`` (0 when ``a > b``), in Python integers, in O(1).

    The ``T`` parts sum to pyramids (``sum_{j=a}^{b} T(j) = P(b) - P(a - 1)``, and ``T(n - j)``
    likewise over ``n - b .. n - a``); the rest is ``r sum j**2 - r (r - 1) sum j + count T(r - 1)``.
    So a run of inputs sharing one floor costs nothing per input.
    """
    if a > b:
        return 0
    squares = pyramid(b) - pyramid(a - 1) + pyramid(n - a) - pyramid(n - b - 1)
    return (f * squares + r * power_sum(2, a, b) - r * (r - 1) * power_sum(1, a, b)
            + (b - a + 1) * square_sum(r - 1))


def band_count(j, d: int, top):
    """How many rows ``i`` in ``0..top`` lie within ``d`` of ``j`` (``|i - j| <= d``), elementwise (0 if top < 0)."""
    return np.clip(np.minimum(top, j + d) - np.maximum(0, j - d) + 1, 0, None)


def floor_band(j, d: int, n: int, f, r):
    """The floor's weight within ``d`` of input ``j``: ``sum_{|i-j|<=d, 0<=i<=n} (f + [i < r])``, elementwise.

    ``= f * (rows of 0..n in the band) + (rows of 0..r-1 in the band)``: what an input keeps of its
    floor under the L0 (``d = 0``) or L0,d loss.
    """
    return f * band_count(j, d, n) + band_count(j, d, r - 1)


__all__ = ["band_count", "floor_band", "floor_squares", "floor_squares_total", "power_sum", "pyramid", "square_sum"]
