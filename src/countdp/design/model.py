"""The design LP, defined once: constraints, loss matrix, prior, and the sum or max aggregate.

Variables ``x = P.ravel()`` (``P[i, j] = Pr[output i | input j]``, flattened row-major), plus
one variable ``t`` (last) when ``aggregate="max"``.  :class:`DesignProblem` holds the
definition; every backend consumes it:

* :meth:`DesignProblem.system` and :attr:`DesignProblem.column_loss`: the plain formulation
  (non-negativity as rows) that cvxpy (:func:`countdp.design.designer.design_lp`) and the
  unreduced HiGHS model (:class:`countdp.design.highs_model.DesignModel`) solve;
* :meth:`DesignProblem.lp`: the same LP with ``x >= 0`` as a bound, in the row order below,
  which the independent optimality check (:mod:`countdp.design.optimality`) uses and from
  whose rows the reduced model (:mod:`countdp.design.reduce`) selects:

  - ``A_ub x >= b_ub``: the DP rows of :func:`~countdp.design.constraints.dp`, then every
    requested property's inequality rows (in the order of ``properties``), then for ``max``
    the minimax rows ``t - sum_i C[i, j] P[i, j] >= 0``;
  - ``A_eq x == b_eq``: the column sums, then every requested property's equality rows;
  - ``0 <= x <= 1`` (``x <= 1`` is implied by the column sums) and ``0 <= t <= max C``, which
    contains every optimum (a column's loss is at most ``max C``).

The minimax operator ``column_loss`` (row ``j``: ``C[:, j]`` on the entries of column ``j``)
is built here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from countdp.design.constraints import LinearSystem, constraint_system, dp, property_rows, property_system, stochastic
from countdp.values.objectives import Objective, loss_matrix, parse_objective
from countdp.values.properties import parse_properties

AGGREGATES = ("sum", "max")


@dataclass(frozen=True)
class DesignLP:
    """``min c @ x`` s.t. ``A_ub x >= b_ub``, ``A_eq x == b_eq``, ``0 <= x <= upper`` (module docstring)."""

    c: np.ndarray
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    upper: np.ndarray


class DesignProblem:
    """BasicDP + ``properties``, minimising ``objective`` (weighted by ``weights``, default uniform)
    summed over inputs or, with ``aggregate="max"``, for the worst input."""

    def __init__(self, n: int, alpha: float, properties: object = (), objective: object = "L0",
                 weights: np.ndarray | None = None, aggregate: str = "sum"):
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be 'sum' or 'max', got {aggregate!r}")
        self.n, self.alpha, self.aggregate = n, alpha, aggregate
        self.N, self.size = n + 1, (n + 1) ** 2
        self.properties = parse_properties(properties)
        self.objective: Objective = parse_objective(objective)
        self.weights = weights
        self.prior = np.full(self.N, 1.0 / self.N) if weights is None else np.asarray(weights, float)

    @cached_property
    def loss(self) -> np.ndarray:
        """``C[i, j]``: the loss of output ``i`` for input ``j``."""
        return loss_matrix(self.n, self.objective)

    @cached_property
    def column_loss(self) -> sp.csr_matrix:
        """The ``N x size`` operator whose row ``j`` is input ``j``'s loss ``sum_i C[i, j] P[i, j]``."""
        N, size = self.N, self.size
        return sp.csr_matrix((self.loss.ravel(), (np.tile(np.arange(N), N), np.arange(size))), shape=(N, size))

    @cached_property
    def weighted_cost(self) -> np.ndarray:
        """The cost over ``x`` of the prior-weighted sum: ``C[i, j] w[j]``."""
        return (self.loss * self.prior[None, :]).ravel()

    def system(self) -> LinearSystem:
        """The plain constraints: non-negativity and column sums, DP, then each property (Theorem 2)."""
        return constraint_system(self.n, self.alpha, self.properties)

    @cached_property
    def blocks(self) -> dict[str, tuple[str, slice]]:
        """Where each block of :meth:`lp`'s rows lies: ``name -> ("ub" | "eq", rows)``.

        Names: ``"dp"``, ``"sums"``, each property, and ``"max"`` for the minimax rows."""
        n, N = self.n, self.N
        ub, eq = 2 * N * n, N
        out = {"dp": ("ub", slice(0, ub)), "sums": ("eq", slice(0, eq))}
        for name in self.properties:  # row counts only: the matrices took 614 MB at n = 2048 (CH+RM+S)
            rows = property_rows(name, n)
            k = rows.plus.size
            if rows.equal:
                out[name], eq = ("eq", slice(eq, eq + k)), eq + k
            else:
                out[name], ub = ("ub", slice(ub, ub + k)), ub + k
        if self.aggregate == "max":
            out["max"] = ("ub", slice(ub, ub + N))
        return out

    @cached_property
    def _pieces(self) -> list[tuple[str, LinearSystem]]:
        return [(name, property_system(name, self.n)) for name in self.properties]

    @cached_property
    def _lp(self) -> DesignLP:
        sums = stochastic(self.n)  # its inequality rows are x >= 0, a bound here
        system = dp(self.n, self.alpha) + LinearSystem(sp.csr_matrix((0, self.size)), np.zeros(0),
                                                       sums.A_eq, sums.b_eq)
        for _, piece in self._pieces:
            system = system + piece
        A_ub, b_ub, A_eq, b_eq = system.A_ub, system.b_ub, system.A_eq, system.b_eq
        if self.aggregate == "sum":
            return DesignLP(self.weighted_cost, A_ub, b_ub, A_eq, b_eq, np.ones(self.size))
        N = self.N
        A_ub = sp.vstack([sp.hstack([A_ub, sp.csr_matrix((A_ub.shape[0], 1))]),
                          sp.hstack([-self.column_loss, np.ones((N, 1))])], format="csr")
        A_eq = sp.hstack([A_eq, sp.csr_matrix((A_eq.shape[0], 1))], format="csr")
        c = np.zeros(self.size + 1)
        c[-1] = 1.0
        return DesignLP(c, A_ub, np.concatenate([b_ub, np.zeros(N)]), A_eq, b_eq,
                        np.concatenate([np.ones(self.size), [float(self.loss.max())]]))

    def lp(self) -> DesignLP:
        """The LP with ``x >= 0`` as a bound, rows in the order of the module docstring."""
        return self._lp

    def release_lp(self) -> None:
        """Drop the cached :meth:`lp` (rebuilt by the next call): a proof done with one full LP frees
        its matrices (hundreds of MB at ``n = 1024``) before it builds another's."""
        self.__dict__.pop("_lp", None)

    def dual_from(self, other: DesignProblem, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Multipliers ``(u, v)`` of :meth:`lp`'s rows from those of ``other``'s: each block that
        both LPs have copied, every other row 0 (a dual of ``other`` stays one here when this LP
        only adds rows)."""
        full = self.lp()
        out, given = {"ub": np.zeros(full.b_ub.size), "eq": np.zeros(full.b_eq.size)}, {"ub": u, "eq": v}
        for name, (kind, rows) in self.blocks.items():
            if name in other.blocks:
                out[kind][rows] = given[kind][other.blocks[name][1]]
        return out["ub"], out["eq"]

    def point(self, P: np.ndarray) -> np.ndarray:
        """The LP's variables for mechanism ``P``: ``P.ravel()``, plus ``t`` = the worst column loss for ``max``."""
        x = np.asarray(P, float).ravel()
        if self.aggregate == "max":
            x = np.concatenate([x, [float((self.loss * np.asarray(P, float)).sum(axis=0).max())]])
        return x
