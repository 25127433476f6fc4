"""HiGHS on a reduced design LP: simplex, or IPX + crossover, with the basis of the vertex found.

:func:`run_highs` solves the scaled model (:mod:`countdp.design.solvers.scaling`) with HiGHS's
smallest feasibility tolerances (:attr:`~countdp.design.settings.SolverTuning.highs_tol`) and
returns the vertex in the model's units with its basis, which
:func:`countdp.design.solvers.solved.polish_run` turns into the exact vertex.  :func:`highs_lp`
builds a ``highspy.HighsLp`` from arrays and :func:`basis_statuses` reads a HiGHS basis as the
masks of :func:`countdp.design.polish.basis_vertex` (other modules build their own HiGHS models
with them).

HiGHS's ``threads`` option is never set: its thread pool is one per process, fixed by the first
solve, and a later ``Highs`` asking for another count fails ('Not Set').  The pipeline solves in
threads of one Snakemake process, so every model here keeps HiGHS's default.  ``highspy`` is
imported only when a model is solved (:func:`countdp.design.highspy_loader.load_highspy`).
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp

from countdp.design.highspy_loader import load_highspy
from countdp.design.reduce import ReducedLP
from countdp.design.settings import SolverSettings, running
from countdp.design.solvers.scaling import scaled_model, scales
from countdp.design.solvers.solved import Solved
from countdp.design.watch import ProgressLines, TimeLimitReached, current

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


def highs_lp(A: sp.spmatrix, cost: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray,
             row_lower: np.ndarray, row_upper: np.ndarray):
    """A ``highspy.HighsLp`` for ``min cost @ x`` s.t. ``row_lower <= A x <= row_upper`` and column
    bounds; infinite bounds (numpy ``inf``) become HiGHS's infinity."""
    highspy = load_highspy()

    def finite(v: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(v, float), -highspy.kHighsInf, highspy.kHighsInf)

    A = sp.csc_matrix(A)
    A.sort_indices()
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = A.shape[1], A.shape[0]
    model.col_cost_ = np.asarray(cost, float)
    model.col_lower_, model.col_upper_ = finite(col_lower), finite(col_upper)
    model.row_lower_, model.row_upper_ = finite(row_lower), finite(row_upper)
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = A.indptr.astype(np.int32)
    model.a_matrix_.index_ = A.indices.astype(np.int32)
    model.a_matrix_.value_ = A.data
    return model


def work_limits(work: tuple[float, ...], lp: ReducedLP) -> tuple[int, ...]:
    """Iteration limits for a work budget (iterations times rows, e.g.
    :attr:`~countdp.design.settings.SolverTuning.quick_vertex_work`) on ``lp``: an iteration's
    cost grows about with the rows, and iterations, not seconds, keep the path machine-independent."""
    return tuple(int(w / max(1, lp.A.shape[0])) for w in work)


def _configured(highspy, chosen: str, warm_start: bool, warm, primal: bool,
                iterations: int | None, settings: SolverSettings, lines: ProgressLines):
    """A ``Highs`` with :func:`run_highs`'s options set (its docstring): simplex when ``warm_start``
    (a starting basis was asked for), priced for a warm start when there is a basis ``warm``; its
    progress said through ``lines``."""
    h = highspy.Highs()
    current().attach_highs(h, "HiGHS " + ("simplex" if warm_start else chosen), settings.solver.verbose, lines)
    h.setOptionValue("primal_feasibility_tolerance", settings.solver.highs_tol)
    h.setOptionValue("dual_feasibility_tolerance", settings.solver.highs_tol)
    h.setOptionValue("solver", "simplex" if warm_start else chosen)
    if warm is not None:
        h.setOptionValue("simplex_dual_edge_weight_strategy", settings.solver.warm_edge_weights)
    if primal:
        h.setOptionValue("simplex_strategy", 4)
    if chosen == "ipm":
        h.setOptionValue("run_crossover", "on")
    if iterations is not None:
        h.setOptionValue("simplex_iteration_limit", int(iterations))
    return h


def basis_statuses(highspy, basis) -> tuple:
    """``(col_basic, col_at_upper, row_active, row_at_upper)`` of a HiGHS basis (the statuses of
    :func:`countdp.design.polish.basis_vertex`)."""
    basic, upper = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kUpper
    cs, rs = list(basis.col_status), list(basis.row_status)
    return (np.array([c == basic for c in cs]), np.array([c == upper for c in cs]),
            np.array([r != basic for r in rs]), np.array([r == upper for r in rs]))


def run_highs(lp: ReducedLP, chosen: str, tight_from: Solved | None = None, row_boost: float = 1.0,
              start=None, primal: bool = False, iterations: int | None = None, *,
              settings: SolverSettings) -> Solved:
    """HiGHS ``simplex`` or ``ipm`` (+ crossover) on the scaled model, with the basis of the vertex
    found (statuses do not change under scaling); values in ``lp``'s units.

    ``tight_from``: a previous run whose vertex broke a row by up to HiGHS's tolerance; simplex
    restarts from its basis with every row scaled up by ``row_boost`` (one of
    ``settings.solver.tight_row_scales``), so the tolerance allows that much less (a few pivots to a
    feasible basis).  ``start``: a ``highspy.HighsBasis`` simplex starts from (e.g.
    :func:`countdp.design.solvers.basis_guess.guess_basis`).  Both warm starts price with
    ``settings.solver.warm_edge_weights``.  ``primal``: HiGHS's primal simplex instead of its dual
    simplex.  ``iterations``: HiGHS's simplex iteration limit ('Iteration limit reached' raises
    ``RuntimeError``, as every other non-optimal status does).  There is no wall-clock limit: the
    answer, or the failure, is the same on any machine and under any load."""
    running(settings, "HiGHS")
    highspy = load_highspy(settings.solver.verbose)
    warm = start if tight_from is None else tight_from.highs_basis
    lines = current().progress_lines()
    h = _configured(highspy, chosen, tight_from is not None or start is not None, warm, primal,
                    iterations, settings, lines)
    LOG.info("HiGHS %s: %s rows, %s columns%s", "simplex" if warm is not None else chosen, f"{lp.A.shape[0]:,}",
             f"{lp.A.shape[1]:,}", ", from a guessed basis" if warm is not None else "")
    col, row = scales(lp, settings=settings)
    row = row * row_boost
    scaled = scaled_model(lp, col, row)
    h.passModel(highs_lp(scaled.A, scaled.cost, scaled.col_lower, scaled.col_upper, scaled.row_lower,
                         scaled.row_upper))
    if warm is not None:
        h.setBasis(warm)
    began = time.perf_counter()
    with lines:  # the solve's last progress line, held back by the pace, said as it ends
        h.run()
    elapsed = time.perf_counter() - began
    status = h.getModelStatus()
    text = h.modelStatusToString(status)
    if status == highspy.HighsModelStatus.kInterrupt:
        raise TimeLimitReached(f"HiGHS {chosen}", lp, _interrupted(h, col, row, elapsed))
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS {chosen} returned {text!r}")
    solution, basis = h.getSolution(), h.getBasis()
    return Solved(np.asarray(solution.col_value, float) * col, np.asarray(solution.row_dual, float) * row,
                  np.asarray(solution.col_dual, float) / col, text, float(h.getInfo().objective_function_value),
                  elapsed, basis_statuses(highspy, basis) if basis.valid else None,
                  highs_basis=basis if basis.valid else None,
                  pivots=int(h.getInfo().simplex_iteration_count))



def _interrupted(h, col: np.ndarray, row: np.ndarray, elapsed: float) -> Solved | None:
    """The point and duals an interrupted HiGHS run had reached, in the model's units (``None``
    when it had none: interrupted in presolve, or before its first basis)."""
    solution = h.getSolution()
    if not (solution.value_valid and solution.dual_valid):
        return None
    info = h.getInfo()
    return Solved(np.asarray(solution.col_value, float) * col, np.asarray(solution.row_dual, float) * row,
                  np.asarray(solution.col_dual, float) / col, "interrupted", float(info.objective_function_value),
                  elapsed, pivots=int(info.simplex_iteration_count))
