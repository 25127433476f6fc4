"""Vertex polishing and dual recovery for the reduced design LP of :mod:`countdp.design.reduce`.

A simplex (or crossover) answer is a *basis*: the active rows ``R`` (non-basic row
activities, at a bound) and the basic columns ``B``, ``|R| = |B|``.  HiGHS accepts a vertex
whose rows are broken by up to its feasibility tolerance; the exact vertex of that basis is
the solution of the square sparse system ``A[R, B] y_B = bound_R - A[R, N] y_N`` (one sparse LU,
plus one step of iterative refinement), and its duals solve ``A[R, B]^T pi_R = cost_B``.
Polishing thus removes the solver's tolerance from the released matrix (the DP rows that
are active hold to rounding) and gives duals accurate to rounding for the certificate.

:func:`full_dual` maps reduced duals back to the rows of the full model,
:meth:`countdp.design.model.DesignProblem.lp`: a dropped row (implied, duplicate, halved by RM)
gets multiplier 0, a row turned into a bound gets the bound's reduced cost, and with
symmetry folded the S equalities get ``(r_k - r_k') / 2`` for the orbit ``{k, k'}``, which
splits the folded reduced cost ``r_k + r_k' >= 0`` evenly between the two entries.  Last,
each column-sum multiplier is lowered by its column's largest negative reduced cost (an
interior point's duals are feasible only to its tolerance), which makes the dual exactly
feasible at the cost of one deficit per column in the dual objective.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from countdp.privacy.certify import certify


def basis_vertex(lp, col_basic: np.ndarray, col_at_upper: np.ndarray, row_active: np.ndarray,
                 row_at_upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(y, row_dual, col_dual)`` of the basis, or ``None`` if it is not square and regular."""
    A = lp.A.tocsc()
    if int(col_basic.sum()) != int(row_active.sum()) or not col_basic.any():
        return None
    y = np.where(col_at_upper, lp.col_upper, lp.col_lower)
    y = np.where(np.isfinite(y), y, 0.0)
    y[col_basic] = 0.0
    bound = np.where(row_at_upper, lp.row_upper, lp.row_lower)[row_active]
    if not np.all(np.isfinite(bound)):
        return None
    rows = sp.csr_matrix(A)[row_active]
    K = rows[:, col_basic].tocsc()
    rhs = bound - rows @ y
    try:
        lu = spla.splu(K)
    except RuntimeError:  # singular basis matrix
        return None
    yb = lu.solve(rhs)
    yb = yb + lu.solve(rhs - K @ yb)  # one step of iterative refinement
    y[col_basic] = yb
    cb = lp.cost[col_basic]
    pi = lu.solve(cb, trans="T")
    pi = pi + lu.solve(cb - K.T @ pi, trans="T")
    row_dual = np.zeros(lp.A.shape[0])
    row_dual[row_active] = pi
    col_dual = lp.cost - lp.A.T @ row_dual
    col_dual[col_basic] = 0.0
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(row_dual))):
        return None
    return y, row_dual, col_dual


def dp_closure(P: np.ndarray, alpha: float) -> np.ndarray:
    """``P`` with each column's sum set to 1 on its diagonal entry, then every entry off the
    diagonal raised, outward from the diagonal, to at least ``alpha`` times its neighbour nearer the
    diagonal (computed in floating point as the DP test computes it), and each column's added mass
    taken off its diagonal entry (never added to it).

    Rows are outputs, columns inputs.  A vertex whose exact solve left rounding in an active DP
    row otherwise needs a UM mixture ``lambda ~ violation * N / (1 - alpha)``, which costs
    ``lambda`` times UM's loss (~n^2/6 for L2), often more than the optimality gap allows.
    Raising the entries moves each column by about the violation instead, and no raised pair
    breaks the other direction (``alpha^2 <= 1``).  Lowering a diagonal entry loosens the rows
    bounding its neighbours and tightens only its own ``P[i, i] >= alpha P[i, i +/- 1]``, which
    have slack in these designs (the diagonal is its row's largest entry); the DP test that
    follows checks it.

    The column sums come first for interior points, whose columns may sum to ``1 +/- 1e-11``:
    dividing each by its sum, as :func:`countdp.privacy.certify.certify` does, would break the
    tight DP rows between columns of different sums, and UM's repair of that would cost the
    gap.  Set on the diagonal (a raised diagonal entry tightens only its neighbours' rows, which
    the closure then raises), no repair is needed."""
    out = np.array(P, float)
    N = out.shape[0]
    rows = np.arange(N)
    out[rows, rows] += 1.0 - out.sum(axis=0)
    for j in range(N - 2, -1, -1):  # left of the diagonal (rows i > j), outward
        below = rows > j
        out[below, j] = np.maximum(out[below, j], alpha * out[below, j + 1])
    for j in range(1, N):  # right of the diagonal (rows i < j), outward
        above = rows < j
        out[above, j] = np.maximum(out[above, j], alpha * out[above, j - 1])
    # only ever lowered here: a column the loops left alone can sum to 1 - 2e-16 in floating point,
    # and raising its diagonal by that would break the tight rows P[i, i -/+ 1] >= alpha P[i, i]
    out[rows, rows] -= np.maximum(out.sum(axis=0) - 1.0, 0.0)
    return out


def certified_and_proven(raw: np.ndarray, alpha: float, prove, closure: bool = True):
    """``(matrix, P, certificate, optimality)``: ``raw`` (rows outputs, columns inputs) made exactly
    alpha-DP by :func:`countdp.privacy.certify.certify` (``P``, its ``certificate``) and the optimality
    certificate ``prove(P)``.  When the DP repair (a UM mixture, which costs its weight times UM's
    loss) keeps that proof from closing and ``closure`` is set, :func:`dp_closure` of ``raw`` is
    certified and proven instead, and kept if it closes: ``matrix`` is then the closure and
    ``optimality["dp_closure"]`` is True.  Otherwise ``matrix`` is ``raw``."""
    P, certificate = certify(raw, alpha)
    optimality = prove(P)
    if closure and not optimality["certified"] and certificate.repair_lambda > 0:
        closed = dp_closure(raw, alpha)
        P_closed, closed_certificate = certify(closed, alpha)
        closed_optimality = prove(P_closed)
        if closed_optimality["certified"]:
            closed_optimality["dp_closure"] = True
            return closed, P_closed, closed_certificate, closed_optimality
    return raw, P, certificate, optimality


def full_dual(lp, row_dual: np.ndarray, col_dual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)``: the reduced LP's duals as multipliers of the full model's rows (docstring)."""
    problem = lp.problem
    full = problem.lp()
    n_ub = full.b_ub.size
    mult = np.zeros(n_ub + full.b_eq.size)
    np.add.at(mult, lp.row_origin, row_dual)
    s = lp.singletons
    if s["var"].size:  # a bound from a singleton row: give it the column's reduced cost
        d = col_dual[s["var"]]
        at_lo = (d > 0) & (s["coef"] > 0) & (s["lo"] / s["coef"] == lp.col_lower[s["var"]])
        at_lo |= (d > 0) & (s["coef"] < 0) & (s["hi"] / s["coef"] == lp.col_lower[s["var"]])
        at_hi = (d < 0) & (s["coef"] > 0) & (s["hi"] / s["coef"] == lp.col_upper[s["var"]])
        at_hi |= (d < 0) & (s["coef"] < 0) & (s["lo"] / s["coef"] == lp.col_upper[s["var"]])
        use = np.flatnonzero((at_lo | at_hi) & ((lp.col_lower[s["var"]] != 0) | (d < 0)))
        _, first = np.unique(s["var"][use], return_index=True)  # one row per bounded column
        use = use[first]
        np.add.at(mult, s["origin"][use], d[use] / s["coef"][use])
    u, v = mult[:n_ub], mult[n_ub:]
    if lp.folded:  # balance each orbit's reduced cost with the S equalities' multipliers
        r = full.c - full.A_ub.T @ u - full.A_eq.T @ v
        flat = np.arange(problem.size)
        half = flat < flat[::-1]
        a, b = flat[half], flat[::-1][half]
        v = v.copy()
        v[problem.blocks["S"][1]] = (r[a] - r[b]) / 2.0
    # An approximate dual (an interior point's) leaves reduced costs slightly negative; each
    # entry is in exactly one column-sum row (coefficient 1, right-hand side 1), so lowering
    # that row's multiplier by its column's worst deficit makes the column dual feasible at a
    # cost of the max, not the sum, of the deficits.
    N = problem.N
    r = full.c - full.A_ub.T @ u - full.A_eq.T @ v
    deficit = np.maximum(0.0, -r[: N * N].reshape(N, N).min(axis=0))
    v = v.copy()
    v[:N] -= deficit * (1 + 1e-12)
    return u, v

