"""Fairness substituted out of a reduced model for Clarabel, and Clarabel's answer lifted back.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]`` (rows outputs, columns inputs),
``alpha = e^-eps``; models are the reduced LPs of :mod:`countdp.design.reduce` (possibly scaled,
:func:`countdp.design.solvers.scaling.scaled_model`), duals in HiGHS's sign convention
(``col_dual = cost - A^T row_dual``).

F's rows ``P[i, i] - P[0, 0] = 0`` are, in a reduced model, equalities ``a_d y_d + a_z y_z = 0``
between a diagonal column ``d`` and ``P[0, 0]``'s column ``z``.  :func:`substitution` replaces
each ``y_d`` by ``(-a_z / a_d) y_z``: the F rows vanish, and every other row and the cost are
the same LP in fewer variables (an exact change of variables).  :func:`lift` maps a solve of
that model back: ``y_d`` from ``y_z``, the other rows' multipliers unchanged, and each F row the
multiplier that sets its diagonal column's reduced cost to 0, which leaves on ``z`` the
substituted column's reduced cost (``>= 0`` when that dual is feasible).  The lifted point holds F
exactly, and the proof on the full model (:mod:`countdp.design.optimality`) decides the rest.

Why: with F's rows in the model, Clarabel's duals can be poor; neither formulation is always the
better (:func:`countdp.design.solvers.interior.interior_points` tries both), and the simplex
keeps F's rows (templates' bases guided worse without them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from countdp.design.reduce import ReducedLP
from countdp.design.reductions.chain import Reduction, Unchanged


def fair_rows(lp: ReducedLP) -> np.ndarray:
    """The rows of the reduced model ``lp`` that come from F's rows of the full model."""
    problem = lp.problem
    if problem is None or "F" not in problem.blocks or lp.row_origin is None:
        return np.zeros(0, int)
    _, block = problem.blocks["F"]
    first = problem.lp().b_ub.size
    return np.flatnonzero((lp.row_origin >= first + block.start) & (lp.row_origin < first + block.stop))


def _pairs(lp: ReducedLP, rows: np.ndarray, z: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(cols, ratio)``: each F row's diagonal column and ``-a_z / a_d``; ``None`` when the rows are
    not equalities ``a_d y_d + a_z y_z = 0`` on distinct columns with a positive ratio."""
    F = lp.A[rows].tocsr()
    if np.any(np.diff(F.indptr) != 2) or np.any(F[:, z].toarray().ravel() == 0):
        return None
    F.sort_indices()
    pairs = F.indices.reshape(-1, 2)
    values = F.data.reshape(-1, 2)
    other = pairs[:, 0] == z
    cols = np.where(other, pairs[:, 1], pairs[:, 0])
    a_d = np.where(other, values[:, 1], values[:, 0])
    a_z = np.where(other, values[:, 0], values[:, 1])
    ratio = -a_z / a_d
    if (np.unique(cols).size != cols.size or np.any(ratio <= 0) or np.any(lp.row_lower[rows] != 0)
            or np.any(lp.row_upper[rows] != 0)):
        return None
    return cols, ratio


def substitution(lp: ReducedLP):
    """``(sub, M, rows, cols)``: ``lp`` with F's rows substituted out (module docstring), ``y = M @ y_sub``
    (``M``: ``lp``'s columns by ``sub``'s), and F's rows and their diagonal columns in ``lp``;
    ``None`` when ``lp`` has no F rows or they are not of that form.  ``sub`` is for a solver
    only: its ``singletons`` still name ``lp``'s columns, so its answer goes through :func:`lift`."""
    rows = fair_rows(lp)
    if rows.size == 0:
        return None
    z = int(lp.expand[0].indices[0])  # P[0, 0]'s column
    found = _pairs(lp, rows, z)
    if found is None:
        return None
    cols, ratio = found
    m = lp.A.shape[1]
    keep = np.setdiff1d(np.arange(m), cols)
    index = np.full(m, -1)
    index[keep] = np.arange(keep.size)
    target = np.where(np.isin(np.arange(m), cols), index[z], index)
    weight = np.ones(m)
    weight[cols] = ratio
    M = sp.csr_matrix((weight, (np.arange(m), target)), shape=(m, keep.size))
    others = np.setdiff1d(np.arange(lp.A.shape[0]), rows)
    A = (lp.A[others] @ M).tocsr()
    A.sum_duplicates()
    if np.any(np.diff(A.indptr) == 0):
        return None  # a row left with nothing: keep the model as it is
    col_lower, col_upper = lp.col_lower[keep].copy(), lp.col_upper[keep].copy()
    zz = index[z]
    col_lower[zz] = max(col_lower[zz], float(np.max(lp.col_lower[cols] / ratio)))
    col_upper[zz] = min(col_upper[zz], float(np.min(lp.col_upper[cols] / ratio)))
    sub = replace(lp, cost=M.T @ lp.cost, A=A, row_lower=lp.row_lower[others], row_upper=lp.row_upper[others],
                  col_lower=col_lower, col_upper=col_upper, expand=(lp.expand @ M).tocsr(),
                  row_origin=lp.row_origin[others])
    return sub, M, rows, cols


def lifted_dual(lp: ReducedLP, found, row_dual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row_dual, col_dual)`` of ``lp`` from the row duals of ``found[0]`` (:func:`substitution` of
    ``lp``): the other rows' multipliers unchanged, each F row's setting its diagonal column's
    reduced cost to 0."""
    _, _, rows, cols = found
    others = np.setdiff1d(np.arange(lp.A.shape[0]), rows)
    full = np.zeros(lp.A.shape[0])
    full[others] = row_dual
    reduced = lp.cost - lp.A.T @ full
    F = lp.A[rows].tocsc()[:, cols]
    full[rows] = reduced[cols] / F.diagonal()  # each F row's coefficient on its own diagonal column
    return full, lp.cost - lp.A.T @ full


def lift(lp: ReducedLP, found, run):
    """A solve ``run`` of ``found[0]`` (:func:`substitution` of ``lp``) as a solve of ``lp`` (module docstring)."""
    row_dual, col_dual = lifted_dual(lp, found, run.row_dual)
    return replace(run, y=found[1] @ run.y, row_dual=row_dual, col_dual=col_dual)


@dataclass(frozen=True)
class Lift:
    """The way back from the model with F substituted out to ``lp`` (``found``: :func:`substitution`)."""

    lp: ReducedLP
    found: tuple

    def invert_primal(self, y: np.ndarray) -> np.ndarray:
        """A point of the substituted model as one of ``lp`` (``y = M @ y_sub``)."""
        return self.found[1] @ y

    def invert_dual(self, row_dual: np.ndarray, col_dual: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row duals of the substituted model as ``(row_dual, col_dual)`` of ``lp`` (:func:`lifted_dual`;
        the column duals are recomputed, so ``col_dual`` is not used)."""
        return lifted_dual(self.lp, self.found, row_dual)

    def invert_run(self, run):
        """A whole solve of the substituted model as one of ``lp`` (:func:`lift`)."""
        return lift(self.lp, self.found, run)


class SubstituteF(Reduction):
    """Substitute F's rows out of a reduced model (module docstring)."""

    def accepts(self, lp: ReducedLP) -> bool:
        """A model with F rows of the substitutable form."""
        return substitution(lp) is not None

    def apply(self, lp: ReducedLP) -> tuple[ReducedLP, Lift | Unchanged]:
        """``(sub, inverse)``; ``lp`` unchanged when it has no F rows of the substitutable form."""
        found = substitution(lp)
        return (lp, Unchanged()) if found is None else (found[0], Lift(lp, found))
