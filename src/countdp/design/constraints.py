"""Every constraint of the design LP as a sparse linear operator on the flattened matrix.

A mechanism ``P`` of size ``N = n+1`` is flattened row-major, ``x = P.ravel()``, so entry
``P[i, j]`` is ``x[i*N + j]``.  A :class:`LinearSystem` means ``A_ub @ x >= b_ub`` and
``A_eq @ x == b_eq``.  The same operators drive the property checkers, the LP model of
:mod:`countdp.design.model` and every solver path, so a property is defined exactly once.

The seven properties are rows of the form ``x[plus] - coef x[minus] >= rhs`` (or ``==``),
:class:`PairRows`, plain numpy index arrays: checking a property needs numpy only, and
scipy.sparse is imported only when a :class:`LinearSystem` is built (for a solver).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from countdp.values.properties import PROPERTIES

if TYPE_CHECKING:
    import scipy.sparse as sp


@dataclass(frozen=True)
class LinearSystem:
    """``A_ub @ x >= b_ub`` and ``A_eq @ x == b_eq`` over ``x = P.ravel()``."""

    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray

    @staticmethod
    def empty(size: int) -> LinearSystem:
        import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

        return LinearSystem(sp.csr_matrix((0, size)), np.zeros(0), sp.csr_matrix((0, size)), np.zeros(0))

    def __add__(self, other: LinearSystem) -> LinearSystem:
        import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

        return LinearSystem(
            sp.vstack([self.A_ub, other.A_ub], format="csr"),
            np.concatenate([self.b_ub, other.b_ub]),
            sp.vstack([self.A_eq, other.A_eq], format="csr"),
            np.concatenate([self.b_eq, other.b_eq]),
        )

    def violation(self, x: np.ndarray) -> float:
        """Largest amount by which ``x`` breaks any row (0.0 when all hold exactly)."""
        worst = 0.0
        if self.A_ub.shape[0]:
            worst = max(worst, float(np.max(self.b_ub - self.A_ub @ x)))
        if self.A_eq.shape[0]:
            worst = max(worst, float(np.max(np.abs(self.A_eq @ x - self.b_eq))))
        return worst


def _difference(size: int, plus: np.ndarray, minus: np.ndarray, coef: float = 1.0) -> sp.csr_matrix:
    """Rows ``x[plus[k]] - coef * x[minus[k]]``, one per pair."""
    import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

    plus, minus = np.ravel(plus), np.ravel(minus)
    rows = np.arange(plus.size)
    data = np.concatenate([np.ones(plus.size), np.full(minus.size, -coef)])
    return sp.csr_matrix(
        (data, (np.concatenate([rows, rows]), np.concatenate([plus, minus]))), shape=(plus.size, size)
    )


def _rows(A: sp.csr_matrix, b: np.ndarray | float, equal: bool) -> LinearSystem:
    """``A x >= b`` (or ``== b`` when ``equal``) as a :class:`LinearSystem`."""
    import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

    rhs = np.broadcast_to(np.asarray(b, float), (A.shape[0],)).copy()
    none = sp.csr_matrix((0, A.shape[1]))
    return LinearSystem(none, np.zeros(0), A, rhs) if equal else LinearSystem(A, rhs, none, np.zeros(0))


def _grid(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    N = n + 1
    idx = np.arange(N * N).reshape(N, N)
    i, j = np.indices((N, N))
    return idx, i, j


def stochastic(n: int) -> LinearSystem:
    """Entries non-negative and every column summing to one."""
    import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

    N = n + 1
    idx, _, j = _grid(n)
    cols = sp.csr_matrix((np.ones(N * N), (j.ravel(), idx.ravel())), shape=(N, N * N))
    return _rows(sp.identity(N * N, format="csr"), 0.0, False) + _rows(cols, 1.0, True)


def dp(n: int, alpha: float) -> LinearSystem:
    """Row-wise alpha-DP: ``P[i, j] >= alpha P[i, j+1]`` and ``P[i, j+1] >= alpha P[i, j]``."""
    import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

    idx, _, _ = _grid(n)
    left, right = idx[:, :-1], idx[:, 1:]
    A = sp.vstack([_difference(idx.size, left, right, alpha), _difference(idx.size, right, left, alpha)])
    return _rows(A.tocsr(), 0.0, False)


def basic_dp(n: int, alpha: float) -> LinearSystem:
    """BasicDP: a column-stochastic matrix satisfying alpha-DP (constraints (4)-(6))."""
    return stochastic(n) + dp(n, alpha)


def _diagonal_of(idx: np.ndarray, axis: int) -> np.ndarray:
    """For every entry, the index of the diagonal entry in its row (axis=1) or column (axis=0)."""
    d = np.diag(idx)
    return np.broadcast_to(d[:, None] if axis == 1 else d[None, :], idx.shape)


@dataclass(frozen=True)
class PairRows:
    """Rows ``x[plus[k]] - coef x[minus[k]] >= rhs`` (``== rhs`` when ``equal``) over ``x = P.ravel()``;
    ``minus[k] < 0`` means the row has no second term.  numpy only."""

    plus: np.ndarray
    minus: np.ndarray
    coef: float
    rhs: float
    equal: bool
    size: int

    def values(self, x: np.ndarray) -> np.ndarray:
        """Every row's left-hand side at ``x``."""
        second = np.where(self.minus >= 0, x[np.maximum(self.minus, 0)], 0.0)
        return x[self.plus] - self.coef * second

    def violation(self, x: np.ndarray) -> float:
        """Largest amount by which ``x`` breaks a row (0.0 when all hold exactly)."""
        gap = self.values(np.asarray(x, float)) - self.rhs
        return float(np.max(np.abs(gap) if self.equal else -gap, initial=0.0)) + 0.0  # + 0.0: -0.0 becomes 0.0

    def system(self) -> LinearSystem:
        """The rows as a sparse :class:`LinearSystem` (imports scipy.sparse)."""
        import scipy.sparse as sp  # lazy: keeps scipy out of the property checks and the CLI

        pair = self.minus >= 0
        if pair.all():
            A = _difference(self.size, self.plus, self.minus, self.coef)
        else:  # single-entry rows (WH): x[plus] >= rhs
            A = sp.csr_matrix((np.ones(self.plus.size), (np.arange(self.plus.size), self.plus)),
                              shape=(self.plus.size, self.size))
        return _rows(A, self.rhs, self.equal)


def property_rows(name: str, n: int) -> PairRows:
    """The rows that define property ``name`` for group size ``n`` (numpy only)."""
    idx, i, j = _grid(n)
    size = idx.size
    off = i != j

    def rows(plus, minus, rhs: float = 0.0, equal: bool = False) -> PairRows:
        return PairRows(np.ravel(plus), np.ravel(minus), 1.0, rhs, equal, size)

    if name == "RH":  # P[i, i] >= P[i, j]
        return rows(_diagonal_of(idx, 1)[off], idx[off])
    if name == "CH":  # P[j, j] >= P[i, j]
        return rows(_diagonal_of(idx, 0)[off], idx[off])
    if name == "RM":  # entries grow towards the diagonal along each row
        below = j < i  # P[i, j+1] >= P[i, j]
        above = j > i  # P[i, j-1] >= P[i, j]
        plus = np.concatenate([idx[below] + 1, idx[above] - 1])
        return rows(plus, np.concatenate([idx[below], idx[above]]))
    if name == "CM":  # entries grow towards the diagonal along each column
        N = n + 1
        below = i > j  # P[i-1, j] >= P[i, j]
        above = i < j  # P[i+1, j] >= P[i, j]
        plus = np.concatenate([idx[below] - N, idx[above] + N])
        return rows(plus, np.concatenate([idx[below], idx[above]]))
    if name == "F":  # all diagonal entries equal
        d = np.diag(idx)
        return rows(d[1:], np.full(n, d[0]), equal=True)
    if name == "WH":  # P[i, i] >= 1/(n+1)
        return rows(np.diag(idx), np.full(n + 1, -1), 1.0 / (n + 1))
    if name == "S":  # P[i, j] == P[n-i, n-j]
        flat = idx.ravel()
        mirror = flat[::-1]
        half = flat < mirror
        return rows(flat[half], mirror[half], equal=True)
    raise ValueError(f"unknown property {name!r}; allowed: {', '.join(PROPERTIES)}")


def property_system(name: str, n: int) -> LinearSystem:
    """The linear constraints that define property ``name`` for group size ``n``."""
    return property_rows(name, n).system()


def constraint_system(n: int, alpha: float, properties: tuple[str, ...] = ()) -> LinearSystem:
    """BasicDP plus every property named (Theorem 2: still a linear program)."""
    system = basic_dp(n, alpha)
    for name in properties:
        system = system + property_system(name, n)
    return system
