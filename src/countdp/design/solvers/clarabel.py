"""Clarabel's interior point method on a reduced design LP, or on a plain LP given as arrays.

An interior point is not a vertex and has no basis; Clarabel's ``AlmostSolved`` is returned too,
since the caller proves the point optimal (:mod:`countdp.design.lp_solve`) or falls back.  The
factorisation of its KKT system is :attr:`~countdp.design.settings.SolverTuning.clarabel_direct_method`.
``clarabel`` itself is imported only when a model is solved.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from countdp.design.implied_bounds import implied_nonnegative
from countdp.design.reduce import ReducedLP
from countdp.design.settings import SolverSettings, running
from countdp.design.solvers.solved import Solved
from countdp.design.watch import TimeLimitReached, current
from countdp.mechanisms.closed_forms import geometric
from countdp.values.objectives import objective_value

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


@dataclass
class ClarabelPoint:
    """Clarabel's answer to :func:`clarabel_lp`: the point ``x``, its duals in HiGHS's sign convention
    (``col_dual = cost - A^T row_dual``), Clarabel's status text, the objective, the seconds of the
    solve and Clarabel's relative primal residual at its last iterate."""

    x: np.ndarray
    row_dual: np.ndarray
    col_dual: np.ndarray
    status: str
    objective: float
    seconds: float
    primal_residual: float

    @property
    def solved(self) -> bool:
        """Whether Clarabel ended 'Solved' or 'AlmostSolved'."""
        return self.status.endswith("Solved")


def clarabel_lp(A: sp.spmatrix, cost: np.ndarray, col_lo: np.ndarray, col_hi: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, tol: float, method: str, refine: bool = True, cost_scale: float = 1.0,
                lower: np.ndarray | None = None, verbose: bool = False) -> ClarabelPoint:
    """Clarabel on ``min cost @ x`` s.t. ``lo <= A x <= hi``, ``col_lo <= x <= col_hi`` (infinite bounds
    left out), gap and feasibility tolerances ``tol``, KKT factorisation ``method``, iterative
    refinement ``refine``.  Clarabel minimises ``cost / cost_scale``; duals and objective are
    returned in ``cost``'s units.  ``lower``: the columns whose finite lower bound is given to
    Clarabel (default: all of them).  ``verbose``: Clarabel prints its progress (else nothing).  Never
    raises for Clarabel's status: see ``ClarabelPoint.solved``."""
    import clarabel  # lazy: the solver is loaded only when a model is solved

    eq = np.isfinite(hi) & (hi == lo)
    has_hi = np.isfinite(hi) & ~eq
    has_lo = np.isfinite(lo) & ~eq
    k = A.shape[1]
    eye = sp.identity(k, format="csr")
    fin_lo = np.isfinite(col_lo) if lower is None else lower
    fin_hi = np.isfinite(col_hi)
    M = sp.vstack([A[eq], -A[has_lo], A[has_hi], -eye[fin_lo], eye[fin_hi]], format="csc")
    rhs = [lo[eq], -lo[has_lo], hi[has_hi], -col_lo[fin_lo], col_hi[fin_hi]]
    cones = [clarabel.ZeroConeT(int(eq.sum())), clarabel.NonnegativeConeT(M.shape[0] - int(eq.sum()))]
    options = clarabel.DefaultSettings()
    options.verbose = bool(verbose)
    options.tol_gap_abs = options.tol_gap_rel = options.tol_feas = tol
    options.direct_solve_method = method
    options.iterative_refinement_enable = refine
    start, watch = time.perf_counter(), current()
    solver = clarabel.DefaultSolver(sp.csc_matrix((k, k)), np.asarray(cost, float) / cost_scale, M,
                                    np.concatenate(rhs), cones, options)
    lines = watch.progress_lines()
    solver.set_termination_callback(watch.clarabel_callback(f"Clarabel ({A.shape[0]:,} rows)", lines, cost_scale))
    with lines:  # the solve's last progress line, held back by the pace, said as it ends
        solution = solver.solve()
    elapsed = time.perf_counter() - start
    z = np.asarray(solution.z, float) * cost_scale
    sizes = np.cumsum([eq.sum(), has_lo.sum(), has_hi.sum(), fin_lo.sum()])
    z_eq, z_lo, z_hi, z_cl, z_ch = np.split(z, sizes)
    row_dual = np.zeros(A.shape[0])
    row_dual[eq], row_dual[has_lo] = -z_eq, z_lo
    row_dual[has_hi] -= z_hi
    col_dual = np.zeros(k)
    col_dual[fin_lo] += z_cl
    col_dual[fin_hi] -= z_ch
    point = ClarabelPoint(np.asarray(solution.x, float), row_dual, col_dual, str(solution.status),
                          float(solution.obj_val) * cost_scale, elapsed, float(solution.r_prim))
    if not point.solved and watch.expired():
        raise TimeLimitReached("Clarabel's interior point method", None, point)
    return point


def run_clarabel(lp: ReducedLP, cost_scale: float = 1.0, tol: float | None = None, refine: bool = False, *,
                 drop_implied_bounds: bool = False, settings: SolverSettings) -> Solved:
    """Clarabel's interior point method on ``lp`` (not a vertex, no basis); ``AlmostSolved`` is
    returned too, any other status raises ``RuntimeError``.  ``cost_scale``: Clarabel minimises
    ``cost / cost_scale`` (e.g. :func:`objective_scale`); duals and objective are returned in
    ``lp``'s units.  ``tol``: the gap and feasibility tolerances (default ``settings.solver.clarabel_tol``).

    ``refine``: Clarabel's iterative refinement of its KKT solves.  It costs time, and the answer
    is proven afterwards or another method is tried, so it is off unless asked for; it gives
    better duals where a point ends 'AlmostSolved'.

    ``drop_implied_bounds``: leave out the bounds ``y >= 0`` that the DP rows imply
    (:func:`countdp.design.implied_bounds.implied_nonnegative`; their duals are 0), which makes
    Clarabel faster.  The caller asks for it where the point is the answer (alpha too near 1 for a
    template, :func:`countdp.design.policy.too_near_one`); elsewhere the points guide a simplex or
    are repaired, with methods tuned on the model with the bounds."""
    running(settings, "Clarabel")
    A, lo, hi = lp.A, lp.row_lower, lp.row_upper
    lower = np.isfinite(lp.col_lower)
    if drop_implied_bounds:
        lower &= ~implied_nonnegative(A, lo, hi, lp.col_lower)
    LOG.info("Clarabel's interior point method: %s rows, %s columns%s", f"{A.shape[0]:,}", f"{A.shape[1]:,}",
             ", refined" if refine else "")
    tuning = settings.solver
    try:
        point = clarabel_lp(A, lp.cost, lp.col_lower, lp.col_upper, lo, hi, tuning.clarabel_tol if tol is None else tol,
                            tuning.clarabel_direct_method, refine, cost_scale, lower, tuning.verbose)
    except TimeLimitReached as stop:
        raise stop.mapped(lp, lambda p: Solved(p.x, p.row_dual, p.col_dual, p.status, p.objective, p.seconds,
                                                primal_residual=p.primal_residual)) from None
    if not point.solved:
        raise RuntimeError(f"Clarabel returned {point.status!r}")
    return Solved(point.x, point.row_dual, point.col_dual, point.status, point.objective, point.seconds,
                  primal_residual=point.primal_residual)


def objective_scale(lp: ReducedLP) -> float:
    """The objective of GM (truncated geometric) for ``lp``'s problem, at least 1 (1 without a
    problem): GM is a BasicDP mechanism, so this is of the order of the optimum.  Clarabel's
    tolerances are not reached on L2's costs (up to ``n^2``) unless the cost is divided by it;
    objectives below 1 (L0, L0,d) are not scaled up."""
    problem = lp.problem
    if problem is None:
        return 1.0
    value = objective_value(geometric(problem.n, problem.alpha), problem.objective, problem.weights,
                            problem.aggregate)
    return max(1.0, float(value)) if np.isfinite(value) else 1.0
