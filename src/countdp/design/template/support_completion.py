"""Completing a copied support whose chain system is short of rows: the few rows a degenerate
template vertex left at zero that the full-size dual needs.

The support the relaxed template copies (:mod:`countdp.design.template.relaxed_proof`) is read off
an optimal *vertex* of the template-size LP.  Where that vertex is degenerate, the simplex gives a
multiplier to some of its tight rows and none to others, and that choice need not carry over to
size ``n``.  With CM kept, L2's corner shows it: at ``alpha = 0.9`` two output rows are equal from
the diagonal on, every CM row between them is tight, the template's dual uses none of them, and
at ``n = 512`` or ``1024`` the path conditions of those two rows cannot be met without one.  The
chain system (:mod:`countdp.design.template.chain_support`) then has more paths than coupling
unknowns and its least-squares solution leaves a residual on them.

The completion takes the rows whose template copy is tight at the template's vertex (the
*candidates*: rows that may carry a multiplier at an optimum of the same shape), keeps those that
touch a path left with a residual and couple paths (a row inside one path adds nothing), and solves
the small LP ``min 1^T s_c`` s.t. ``R s + R_c s_c = W c``, every inequality multiplier
non-negative (the column sums free).  The rows to which its basic solution gives a multiplier
join the support.  A basic solution may spread the residual over more new rows than the support
lacks, leaving some of its own coupling rows at zero: the support then has more coupling rows than
path conditions, and no dual is singled out.  There, the support's coupling rows that the solution
leaves at zero are dropped: the rows left are those with a multiplier, and the solution is the
chain system's.  Nothing is trusted: the certificate on the full model checks the dual that follows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from countdp.design.settings import SolverSettings
from countdp.design.template.chain_support import ChainSystem, build, path_conditions, path_residual
from countdp.design.template.restricted import highs_vertex


def completed(full, support: np.ndarray, used: np.ndarray, candidates: np.ndarray,
              settings: SolverSettings) -> tuple[np.ndarray, ChainSystem]:
    """``(support, system)``: ``support`` (rows of ``full``'s inequalities) with the candidate rows
    that the completion LP uses added when the chain system on the ``used`` output rows leaves a
    path residual above :attr:`~ChainTuning.completion_tol` of the largest path condition
    (module docstring), and the chain system of the result; where the rows added leave more
    coupling rows than conditions (or a singular system), without the support's coupling rows
    that the completion LP leaves at zero.  The support is returned unchanged
    when it is consistent, when no candidate touches the paths left short, or when the completion
    LP finds no non-negative solution within :attr:`~ChainTuning.completion_iterations` simplex
    iterations (the certificate then reports the failure)."""
    N, tol, dense = used.size, settings.chains.completion_tol, settings.chains.chain_dense_max_bytes
    live, A_sums = np.repeat(used, N), full.A_eq[:N]
    system = build(full.A_ub[support], full.b_ub[support], A_sums, live, dense)
    rhs = system.W @ full.c[live]
    short = np.abs(path_residual(system, full.c)) > tol * max(np.abs(rhs).max(), 1e-300)
    if system.square or not short.any():
        return support, system
    on_short = np.zeros(N * N)
    on_short[np.flatnonzero(live)[short[system.comp]]] = 1.0
    chosen = np.zeros(full.b_ub.size, dtype=bool)  # masks, not set operations: there are millions of rows
    chosen[candidates] = True
    chosen[support] = False
    extra = np.flatnonzero(chosen & (abs(full.A_ub) @ on_short > 0))
    rows = full.A_ub[extra]
    R_extra = path_conditions(system, rows).tocsc()
    # a row between two entries of one path adds nothing (its path sums cancel to rounding): only the
    # rows whose largest path sum is above tol of its terms' size are offered
    size = path_conditions(system, abs(rows)).max(axis=0).toarray().ravel()
    offered = np.flatnonzero(abs(R_extra).max(axis=0).toarray().ravel() > tol * size)
    if offered.size == 0:
        return support, system
    found = _completion(system, R_extra[:, offered], rhs, settings)
    if found is None:
        return support, system
    kept, added = found
    chosen[:] = False
    chosen[support] = True
    chosen[extra[offered[added]]] = True
    grown = np.flatnonzero(chosen)
    try:
        return grown, build(full.A_ub[grown], full.b_ub[grown], A_sums, live, dense)
    except ValueError:  # more coupling rows than conditions, or singular: only the rows with a multiplier
        chosen[support[system.coupling[~kept]]] = False
        pruned = np.flatnonzero(chosen)
        return pruned, build(full.A_ub[pruned], full.b_ub[pruned], A_sums, live, dense)


def _completion(system: ChainSystem, R_extra: sp.csc_matrix, rhs: np.ndarray,
                settings: SolverSettings) -> tuple[np.ndarray, np.ndarray] | None:
    """``(kept, added)``: which of the system's coupling rows (a mask) and which of the extra rows
    (columns of ``R_extra``, indices) a basic solution of the completion LP gives a multiplier above
    :attr:`~ChainTuning.completion_tol` of the largest of its kind; ``None`` when
    the LP has no solution within :attr:`~ChainTuning.completion_iterations` iterations (a count, not
    seconds: the same under any load).  HiGHS's dual simplex answers first, and the exact vertex of
    its basis is read (:func:`~countdp.design.template.restricted.highs_vertex`); where it does not end
    optimal (the path sums of square corners' tails reach ``alpha^n``), HiGHS's interior point with
    crossover solves the LP with each condition scaled to its largest coefficient."""
    kept, sums, k = system.coupling.size, system.N, R_extra.shape[1]
    cost = np.concatenate([np.zeros(kept + sums), np.ones(k)])
    lower = np.concatenate([np.zeros(kept), np.full(sums, -np.inf), np.zeros(k)])
    upper = np.full(cost.size, np.inf)
    A_eq = sp.hstack([system.R, R_extra], format="csr")
    limit = settings.chains.completion_iterations
    found = highs_vertex(A_eq.tocsc(), cost, lower, upper, rhs, rhs,
                         {"simplex_strategy": 1, "simplex_iteration_limit": limit},
                         "HiGHS dual simplex, the completion", settings=settings)
    if found is None:  # numerical trouble: path sums span alpha^n to 1; each condition scaled, interior point
        scale = 1.0 / np.maximum(abs(A_eq).max(axis=1).toarray().ravel(), 1e-300)
        found = highs_vertex((sp.diags(scale) @ A_eq).tocsc(), cost, lower, upper, rhs * scale, rhs * scale,
                             {"solver": "ipm", "run_crossover": "on", "ipm_iteration_limit": limit,
                              "simplex_iteration_limit": limit},
                             "HiGHS interior point, the completion", settings=settings)
    if found is None:
        return None
    own, new = found[0][:kept], found[0][kept + sums:]
    tol = settings.chains.completion_tol
    return own > tol * max(own.max(initial=0.0), 1e-300), np.flatnonzero(new > tol * max(new.max(), 1e-300))
