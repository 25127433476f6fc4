"""Exact rational matrices to integer weights over ``2**K``, mixed with the uniform channel for slack.

A matrix ``M`` given exactly (an :class:`~countdp.multilevel.transitions.ExactTable`) is mixed
with the uniform matrix ``U`` (every entry ``1/(n+1)``), ``M' = (1 - lam) M + lam U``, and every
column of ``2**K M'`` is rounded by largest remainder so that it sums to ``2**K`` exactly.  The
floors and remainders are formed in exact rational arithmetic, once per *distinct* value of
``M``; only the remainders' order (which entries of a column are rounded up) uses floats, and
that order cannot move any entry by a full unit: each weight ends within one unit of
``2**K M'``, whatever the order.

**Why mixing gives slack.**  If ``A`` is column-stochastic, ``M' A = (1 - lam) M A + lam U``:
every DP inequality ``alpha X[i, j'] <= X[i, j]`` of ``(1 - lam) M A`` gains
``lam (1 - alpha)/(n+1)``.  A realized marginal differs from its exact target by at most ``e``
units of ``2**-K`` per entry (:func:`mixing_weight` says how ``e`` grows along a chain), which
can take at most ``(1 + alpha) e`` units from an inequality; ``lam`` is chosen to give
``margin`` times that, plus (for a transition found by an LP rather than exactly) ``margin`` times
the amount by which the unrounded level already misses alpha-DP.  The exact certificate
afterwards decides; this only aims it.

A :class:`~countdp.multilevel.exact_forms.GridTable` (int64 numerators over ``2**bits``, every
entry its own value) is rounded the same way in whole-array Python-integer arithmetic
(:func:`round_grid`): one exact numerator per entry over one common denominator.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from countdp.multilevel.exact_forms import ExactTable, GridTable


def mixing_weight(n: int, alpha: Fraction, error_units: float, K: int, margin: float, deficit: float = 0.0) -> Fraction:
    """The dyadic UM weight ``lam`` with ``lam (1 - alpha)/(n+1) >= margin ((1 + alpha) error_units 2**-K + deficit)``.

    ``deficit``: how far the unrounded level already breaks an alpha-DP inequality (0 when its
    transition is exact; for an LP's transition, :func:`dp_deficit` of the float product).
    Raises ``ValueError`` (one line) if that needs ``lam > 1``: alpha too close to 1 for ``2**K``.
    """
    need = margin * ((1 + float(alpha)) * error_units / 2.0**K + deficit) * (n + 1) / (1 - float(alpha))
    lam = Fraction(math.ceil(need * 2.0**72), 2**72)  # a dyadic rational at or above the float need
    if lam > 1:
        raise ValueError(f"alpha = {alpha} is too close to 1 for integer weights over 2^{K} at n = {n}")
    return lam


def dp_deficit(X: np.ndarray, alpha: float) -> float:
    """``max(0, max alpha X[i, j'] - X[i, j])`` over neighbours: how far the float matrix ``X`` is from alpha-DP."""
    forward = alpha * X[:, 1:] - X[:, :-1]
    backward = alpha * X[:, :-1] - X[:, 1:]
    return max(0.0, float(forward.max()), float(backward.max()))


def round_table(table: ExactTable | GridTable, lam: Fraction, K: int) -> np.ndarray:
    """int64 weights, columns summing exactly to ``2**K``, each within one unit of ``2**K ((1-lam) M + lam U)``.

    Exact per distinct value: ``t = 2**K ((1 - lam) v + lam/(n+1))``, its floor and its remainder
    (Fractions); the floors are scattered through the index, and each column's shortfall (an
    integer below ``n+1``) goes, one unit each, to its entries with the largest remainders.
    A :class:`GridTable` goes to :func:`round_grid`.
    """
    if not 0 <= lam <= 1:
        raise ValueError(f"the mixing weight must lie in [0, 1], got {lam}")
    if isinstance(table, GridTable):
        return round_grid(table, lam, K)
    index = table.index
    N = index.shape[0]
    D = 1 << K
    scale, shift = D * (1 - lam), D * lam / N
    floors, remainders = [], []
    for v in table.values:
        if v < 0:
            raise ValueError("a matrix to round must be non-negative")
        t = scale * v + shift
        whole = t.numerator // t.denominator
        floors.append(whole)
        remainders.append(float(t - whole))
    return _largest_remainder(np.array(floors, dtype=np.int64)[index], np.array(remainders)[index], D)


def round_grid(table: GridTable, lam: Fraction, K: int) -> np.ndarray:
    """:func:`round_table` of a :class:`GridTable`: every entry's ``t`` as one exact integer fraction.

    With ``lam = a/b`` and ``M = V / 2**bits``,
    ``t = (2**K (b - a) N V + 2**(K + bits) a) / (b N 2**bits)``: numerators in Python integers
    (object arrays, whole-array operations), floors by one integer division, remainders from them.
    """
    V = np.asarray(table.weights)
    if V.min() < 0:
        raise ValueError("a matrix to round must be non-negative")
    N = V.shape[0]
    lam = Fraction(lam)
    a, b = lam.numerator, lam.denominator
    den = b * N << table.bits
    numerators = V.astype(object) * ((b - a) * N << K) + (a << (K + table.bits))
    whole = numerators // den
    rest = numerators - whole * den
    remainders = (rest / den).astype(np.float64)  # Python's int / int is correctly rounded
    return _largest_remainder(whole.astype(np.int64), remainders, 1 << K)


def _largest_remainder(W: np.ndarray, R: np.ndarray, D: int) -> np.ndarray:
    """The floors ``W`` plus one unit at the entries of largest remainder ``R``, so every column sums to ``D``."""
    N = W.shape[0]
    deficit = D - W.sum(axis=0)  # sum of the floors <= D, so no int64 overflow
    if np.any(deficit < 0) or np.any(deficit >= N):
        raise ValueError("a matrix to round must have columns summing to exactly 1")
    order = np.argsort(-R, axis=0, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(N)[:, None], axis=0)
    return W + (rank < deficit[None, :]).astype(np.int64)


__all__ = ["dp_deficit", "mixing_weight", "round_grid", "round_table"]
