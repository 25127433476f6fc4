"""Exact rational forms of the closed-form mechanisms: GM (with its exact inverse) and EM.

Entries are :class:`~fractions.Fraction`; rows outputs, columns inputs, as everywhere.  GM has
only ``2(n+1)`` distinct entries, so it is also available as an :class:`ExactTable` (distinct
values plus an index matrix), which rounding to integer weights uses to do ``O(n)`` exact work.

``GM(n, alpha) = D S`` with ``S[i, j] = alpha^|i-j|`` (the Kac-Murdock-Szego matrix) and
``D = diag(1/(1+alpha), c, ..., c, 1/(1+alpha))``, ``c = (1-alpha)/(1+alpha)``; ``S^-1`` is
tridiagonal, ``1/(1-alpha^2)`` times ``1`` (corners) or ``1+alpha^2`` on the diagonal and
``-alpha`` beside it, so ``GM^-1 = S^-1 D^-1`` (:func:`gm_inverse`) costs ``O(n^2)``.

EM (:func:`em_table`, :func:`em_exact`) is ``y alpha^e[i, j]`` with the exponents of
:func:`countdp.mechanisms.closed_forms.explicit_fair_exponents` and ``y`` one over the column sum:
as a table, its values are ``y alpha^k`` and its index the exponents.

Matrices with no few-valued closed form become tables too: :func:`fraction_table` (any matrix of
Fractions, such as EM's exact transitions) and :func:`stochastic_table` (a float matrix that is
column-stochastic up to rounding, such as an LP's transition, made exactly column-stochastic).
A large float matrix whose entries are nearly all distinct (a solved transition at n = 1000:
a million values) would cost a million Fractions that way; :func:`grid_table` makes it an exact
:class:`GridTable` instead, int64 numerators over one power of two, in whole-array operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.mechanisms.closed_forms import explicit_fair_exponents
from countdp.validation import check_n
from countdp.values.alpha import exact_alpha


@dataclass(frozen=True, eq=False)
class ExactTable:
    """An exact matrix as its distinct values and an index: ``M[i, j] = values[index[i, j]]``."""

    values: tuple[Fraction, ...]
    index: np.ndarray

    def dense(self) -> np.ndarray:
        """The matrix as an object ndarray of Fractions (entries share the value objects)."""
        table = np.empty(len(self.values), dtype=object)
        table[:] = self.values
        return table[self.index]

    def floats(self) -> np.ndarray:
        """The matrix as floats (each value rounded once), for error bounds and display."""
        return np.array([float(v) for v in self.values])[self.index]


@dataclass(frozen=True, eq=False)
class GridTable:
    """An exact column-stochastic matrix on the grid ``2**-bits``: ``M = weights / 2**bits``.

    ``weights`` are non-negative int64 with every column summing exactly to ``2**bits`` (``bits <= 62``).
    """

    weights: np.ndarray
    bits: int

    def dense(self) -> np.ndarray:
        """The matrix as an object ndarray of Fractions (for tests and small matrices)."""
        return np.frompyfunc(lambda w: Fraction(int(w), 1 << self.bits), 1, 1)(self.weights)

    def floats(self) -> np.ndarray:
        """The matrix as floats (each entry rounded once)."""
        return self.weights / float(1 << self.bits)


def grid_table(S: np.ndarray, bits: int = 62, tolerance: float = 1e-9) -> GridTable:
    """An exactly column-stochastic :class:`GridTable` within ``2**-bits`` per entry of ``S`` (but one per column).

    ``S``: non-negative floats, columns summing to 1 within ``tolerance``.  Every entry is floored
    to the grid (exactly: ``S * 2**bits`` is a float scaled by a power of two, and its floor is an
    integer below ``2**63``); each column's shortfall from ``2**bits`` (its floors and the float
    sums' own error, far below one unit per entry for ``bits`` near 62) goes to its largest entry.
    """
    S = np.asarray(S, dtype=np.float64)
    if not 1 <= bits <= 62:
        raise ValueError(f"a grid table needs 1 <= bits <= 62, got {bits}")
    if S.ndim != 2 or not np.isfinite(S).all() or S.min() < 0:
        raise ValueError("a grid table needs a finite non-negative float matrix")
    if np.max(np.abs(S.sum(axis=0) - 1.0)) > tolerance:
        raise ValueError(f"a grid table needs columns summing to 1 within {tolerance}")
    W = np.floor(S * float(1 << bits)).astype(np.int64)
    shortfall = (1 << bits) - W.sum(axis=0)  # the sums stay near 2**bits: no int64 overflow
    top = S.argmax(axis=0)
    columns = np.arange(S.shape[1])
    W[top, columns] += shortfall
    if W[top, columns].min() < 0:
        raise ValueError("a grid table's column cannot absorb its rounding shortfall")
    W.setflags(write=False)
    return GridTable(W, bits)


def _powers(a: Fraction, count: int) -> list[Fraction]:
    out = [Fraction(1)]
    for _ in range(count - 1):
        out.append(out[-1] * a)
    return out


def boundary_mask(n: int) -> np.ndarray:
    """True for indices 0 and n (the clamped rows and columns of GM)."""
    mask = np.zeros(n + 1, dtype=bool)
    mask[[0, n]] = True
    return mask


def gm_table(n: int, alpha: object) -> ExactTable:
    """GM(n, alpha) exactly: rows ``c alpha^|i-j|`` inside, ``alpha^j/(1+alpha)`` and ``alpha^(n-j)/(1+alpha)`` at 0, n.

    ``values[d] = c alpha^d`` and ``values[n+1+d] = alpha^d/(1+alpha)`` for ``d = 0..n``.
    """
    n, a = check_n(n), exact_alpha(alpha)
    powers = _powers(a, n + 1)
    c = (1 - a) / (1 + a)
    values = tuple([c * p for p in powers] + [p / (1 + a) for p in powers])
    j = np.arange(n + 1)
    index = np.abs(j[:, None] - j[None, :])
    index[0, :] = n + 1 + j
    index[n, :] = n + 1 + (n - j)
    return ExactTable(values, index)


def gm_exact(n: int, alpha: object) -> np.ndarray:
    """GM(n, alpha) as an object ndarray of Fractions (rows outputs, columns inputs)."""
    return gm_table(n, alpha).dense()


def gm_inverse(n: int, alpha: object) -> np.ndarray:
    """``GM(n, alpha)^-1 = S^-1 D^-1`` exactly, from the tridiagonal inverse of ``S = [alpha^|i-j|]``."""
    n, a = check_n(n), exact_alpha(alpha)
    N = n + 1
    edge = boundary_mask(n)
    scale = 1 / (1 - a * a)
    column_factor = np.array([1 + a if e else (1 + a) / (1 - a) for e in edge], dtype=object)  # D^-1
    inverse = np.full((N, N), Fraction(0), dtype=object)
    diagonal = np.array([scale if e else (1 + a * a) * scale for e in edge], dtype=object)
    k = np.arange(N)
    inverse[k, k] = diagonal
    inverse[k[:-1], k[1:]] = -a * scale
    inverse[k[1:], k[:-1]] = -a * scale
    return inverse * column_factor[None, :]


def em_table(n: int, alpha: object) -> ExactTable:
    """EM(n, alpha) exactly: ``values[k] = y alpha^k`` and ``index`` the exponents of EM (Figure 4).

    ``y`` is one over the exact sum of column 0; every column of EM has the same sum (a
    property of the exponents, which the tests check column by column, with the float form).
    """
    n, a = check_n(n), exact_alpha(alpha)
    exponents = explicit_fair_exponents(n).astype(np.int64)
    powers = _powers(a, int(exponents.max()) + 1)
    y = 1 / sum(powers[e] for e in exponents[:, 0])
    return ExactTable(tuple(y * p for p in powers), exponents)


def em_exact(n: int, alpha: object) -> np.ndarray:
    """EM(n, alpha) as an object ndarray of Fractions (rows outputs, columns inputs)."""
    return em_table(n, alpha).dense()


def fraction_table(M: np.ndarray) -> ExactTable:
    """Any exact matrix (an object ndarray of Fractions or ints) as its distinct values and an index.

    A Python loop over the entries: the values are exact objects, hashed as they are.
    """
    M = np.asarray(M, dtype=object)
    codes: dict[Fraction, int] = {}
    index = np.array([[codes.setdefault(Fraction(v), len(codes)) for v in row] for row in M], dtype=np.int64)
    return ExactTable(tuple(codes), index.reshape(M.shape))


def stochastic_table(S: np.ndarray, tolerance: float = 1e-9) -> ExactTable:
    """An exactly column-stochastic table from a non-negative float matrix whose columns sum to 1 within ``tolerance``.

    Every float is a dyadic rational, so ``Fraction(v)`` is exact; each column's exact shortfall
    ``1 - sum`` (a few ulps for a renormalised matrix) is added to the column's largest entry,
    which stays non-negative.  Column sums are formed in Fractions (exactness needs them).
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or not np.isfinite(S).all() or S.min() < 0:
        raise ValueError("a stochastic table needs a finite non-negative float matrix")
    if np.max(np.abs(S.sum(axis=0) - 1.0)) > tolerance:
        raise ValueError(f"a stochastic table needs columns summing to 1 within {tolerance}")
    distinct, inverse = np.unique(S.ravel(), return_inverse=True)
    values = [Fraction(float(v)) for v in distinct]
    index = inverse.reshape(S.shape).astype(np.int64)
    exact = np.empty(len(values), dtype=object)
    exact[:] = values
    top = S.argmax(axis=0)
    for j, total in enumerate(exact[index].sum(axis=0)):
        if total != 1:
            fixed = values[index[top[j], j]] + 1 - total
            if fixed < 0:
                raise ValueError("a stochastic table's column cannot absorb its rounding shortfall")
            index[top[j], j] = len(values)
            values.append(fixed)
    return ExactTable(tuple(values), index)


__all__ = ["ExactTable", "GridTable", "boundary_mask", "em_exact", "em_table", "fraction_table", "gm_exact",
           "gm_inverse", "gm_table", "grid_table", "stochastic_table"]
