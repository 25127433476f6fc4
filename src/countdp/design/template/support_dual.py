"""The support dual: a dual of the full design LP for L0d, L1 and L2 whose support comes from a
template and whose values solve complementary slackness on the full model.

For these objectives the restricted primal (:mod:`countdp.design.template.restricted`) is still
exact (the optimal designs have the same structure), but copying multipliers is not: far from the
diagonal L0's costs are constant, theirs grow with ``|i - j|``, and so do the DP multipliers.
Only *which* rows carry a multiplier is taken from the template (the general LP's dual at size
``n0``, copied by ``F``); the values, and the exact vertex, solve the complementary-slackness
system on the full model by one sparse LU (:func:`support_dual`).  This closes for a middle band
of ``alpha``: below it the template's dual misses active rows (degenerate there), above it its
corners are wider than ``W`` and copying spreads property multipliers to rows that need none.  A
failure is reported (``ValueError`` with the reason, or a certificate that does not close) and
the caller solves the general LP.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from countdp.design.model import DesignProblem
from countdp.design.polish import full_dual
from countdp.design.settings import SolverSettings, running
from countdp.design.strategy import SolveContext
from countdp.design.template.geometry import cancel
from countdp.design.template.restricted import TemplateMaps


def support_dual(full, maps: TemplateMaps, P: np.ndarray, alpha: float, props: tuple[str, ...], objective,
                 W: int, context: SolveContext) -> tuple[np.ndarray, np.ndarray]:
    """``(y, vertex)``: multipliers ``y`` of the full model's inequality rows and column sums that
    leave no reduced cost on the positive rows of ``P``, and the matrix ``vertex`` on which their
    rows are active; raises ``ValueError`` (with the reason) when the support does not fit.

    Complementary slackness: an optimal dual is zero on slack rows and, as every entry of a used
    output row is positive (DP), leaves no reduced cost there.  *Which* rows carry a multiplier
    is read off the general LP's dual at template size (:func:`general_dual`, without S, whose
    multipliers may be 0 by Theorem 1), copied by ``F``, plus the DP rows tight at every ``E z``;
    the *values* are not copied (for L1 and L2 the far DP multipliers grow with ``|i - j|``, unlike
    L0's) but solved on the full model, ``A_T^T u_T + A_eq^T v = c``, by one sparse LU
    (:func:`solve_support`).  The vertex solves the transposed system with the same LU: ``P`` is
    an interior point's answer, whose DP repair would cost L2 more than the gap allows."""
    settings = context.settings
    N, N0 = P.shape[0], 3 * W + 5
    _, F, _, col, weight = maps
    u0, v0 = general_dual(N0 - 1, alpha, tuple(p for p in props if p != "S"), objective, context)
    y = (F @ np.concatenate([u0, v0[:N0]]))[: full.b_ub.size]
    tight = np.diff(cancel(full.A_ub, col, weight, N0 * N0).indptr) == 0
    live = np.repeat(P.max(axis=1) > 0, N)  # an all-zero output row needs no zero reduced cost
    support = np.flatnonzero(((y > settings.template.support_tol * y.max()) | tight) & (abs(full.A_ub) @ live > 0))
    M = sp.hstack([full.A_ub[support].T, full.A_eq[:N].T], format="csr")[live]
    b = np.concatenate([full.b_ub[support], full.b_eq[:N]])
    dual, vertex = solve_support(M, full.c[live], b, settings=settings)
    out = np.zeros(full.b_ub.size + N)
    out[support], out[full.b_ub.size:] = dual[: support.size], dual[support.size:]
    point = np.zeros(N * N)
    point[live] = vertex
    return out, np.maximum(point, 0.0).reshape(N, N)


def solve_support(M: sp.csr_matrix, c: np.ndarray, b: np.ndarray, *,
                  settings: SolverSettings) -> tuple[np.ndarray, np.ndarray]:
    """``(y, x)`` with ``M y = c`` and ``M^T x = b`` by one LU (plus
    :attr:`~TemplateTuning.support_refinements` steps of iterative refinement).

    A support with ``k <=`` :attr:`~TemplateTuning.max_pinned` more rows than equations (a
    degenerate dual) gets ``k`` seeded random rows ``pin y = 0`` that single out one solution; then
    ``x`` solves ``M^T x + pin^T w = b``, whose ``w`` is 0 when ``M^T x = b`` is solvable (the
    certificate checks the result either way).  Raises ``ValueError`` for a support with too many
    or too few rows, or a singular system."""
    running(settings, "the support dual")
    extra = M.shape[1] - M.shape[0]
    if not 0 <= extra <= settings.template.max_pinned:
        raise ValueError(f"support has {extra:+d} rows against the equations")
    K = sp.vstack([M, sp.csr_matrix(np.random.default_rng(0).standard_normal((extra, M.shape[1])))], format="csc")
    try:
        lu = spla.splu(K)
    except RuntimeError as exc:  # singular: not the optimal support
        raise ValueError(f"support system singular ({exc})") from None
    rhs = np.concatenate([c, np.zeros(extra)])
    y, x = lu.solve(rhs), lu.solve(b, trans="T")
    for _ in range(settings.template.support_refinements):
        y += lu.solve(rhs - K @ y)
        x += lu.solve(b - K.T @ x, trans="T")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(x))):
        raise ValueError("support system singular (non-finite solution)")
    return y, x[: M.shape[0]]


def general_dual(n: int, alpha: float, props: tuple[str, ...], objective,
                 context: SolveContext) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)``: the general path's dual of the design LP at size ``n`` (uniform prior, sum) on
    the full model's rows, solved through the context's shared sub-solves (the reduced model and
    the proven solve with its fallbacks).  ``guided`` is replaced by Clarabel's interior dual (the
    support is read off it), or by the simplex where ``alpha^n`` is below Clarabel's tolerance."""
    lp = context.solves.reduced_lp(DesignProblem(n, alpha, props, objective, None, "sum"), fold=True, drop_implied=True)
    chosen = context.solves.choose_method(lp)
    if chosen == "guided":  # the support is read off Clarabel's interior dual (simplex where it fails)
        chosen = "simplex" if alpha ** n < context.settings.solver.clarabel_tol else "clarabel"
    _, _, run, _ = context.solves.solve_proven(lp, chosen)
    return full_dual(lp, run.row_dual, run.col_dual)
