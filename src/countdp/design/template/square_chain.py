"""L1 and L2 at large ``n`` with wide corners: the square-corner primal of the relaxed LP, its dual by
chain elimination on the full LP, and the certificate on the full target LP.

**Relaxed.**  As for the relaxed template (:mod:`countdp.design.template.relaxed_proof`): CM becomes
CH, S and WH are dropped.  What is left (RM, RH, CH, the column sums, a uniform prior) is mirror
symmetric.

**Primal.**  The relaxed LP restricted to the square-corner form
(:func:`countdp.design.template.square_proof.square_primal`): a free ``(W + 1) x (W + 1)`` square at
each corner, mirror images, their rows and columns going on as geometric tails, GM in the middle.
Its unknowns grow as ``W^2``, where the relaxed template's LP grows as ``9 W^2`` in unknowns and far
faster in simplex work (its vertex took 20 s at ``W = 56`` for L2 and minutes wider); Clarabel
solves this one, an interior point is enough.

**Dual.**  Every entry of an L1 or L2 optimum is positive, so every reduced cost is zero.  In each
output row the DP rows tight at the primal (slack at most a fraction ``tol`` of their terms' size)
join adjacent entries into paths, and the chain elimination of
:mod:`countdp.design.template.chain_support` solves the multipliers along each path from the column
sums and the coupling rows.  Only DP rows form the paths: an RM row tight where two entries are
equal may carry no multiplier at the optimum, and a path through it would force one.  The other
tight rows (RM, RH, CH) are the candidates of the completion
(:mod:`countdp.design.template.support_completion`), which adds those the path conditions need with
non-negative multipliers.  The tolerances of :attr:`~ChainTuning.square_chain_tight_tols` are tried
in turn, since an interior point's nearly tight rows are told from the tight ones only within its
accuracy.

**Proof.**  The chain's vertex and dual, CH's multipliers spread over the CM rows and S's and WH's set
to 0, are checked on the target's full LP by the independent weak-duality routine
(:func:`countdp.design.template.proof.certify_expansion`).  Nothing above is trusted: a wrong guess
leaves the gap open, and the next strategy runs.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.settings import SolverSettings, running
from countdp.design.template.proof import certify_expansion
from countdp.design.template.relaxed_proof import chain_dual, relaxed_problem
from countdp.design.template.square_proof import square_primal


def dp_rows(A_ub: sp.spmatrix, N: int, alpha: float) -> np.ndarray:
    """Which inequality rows are DP rows: two entries of one output row, coefficients ``1`` and ``-alpha``."""
    A = sp.csr_matrix(A_ub)
    A.sort_indices()
    count = np.diff(A.indptr)
    two = count == 2
    first, last = A.indices[A.indptr[:-1][two]] // N, A.indices[A.indptr[1:][two] - 1] // N
    smallest = np.minimum(np.abs(A.data[A.indptr[:-1][two]]), np.abs(A.data[A.indptr[:-1][two] + 1]))
    mask = np.zeros(A.shape[0], dtype=bool)
    mask[np.flatnonzero(two)] = (first == last) & (np.abs(smallest - alpha) <= 1e-12 * max(alpha, 1e-300))
    return mask


def tight_rows(full, x: np.ndarray, tol: float) -> np.ndarray:
    """The inequality rows of ``full`` whose slack at ``x`` is at most ``tol`` of their terms' size."""
    slack = full.A_ub @ x - full.b_ub
    size = abs(full.A_ub) @ np.abs(x) + np.abs(full.b_ub)
    return np.flatnonzero(slack <= tol * size)


def prove_square_chain(target: DesignProblem, W: int, *, settings: SolverSettings) -> dict:
    """The square-corner primal of width ``W`` of ``target``'s relaxed LP, its chain dual, and the
    certificate on ``target``'s full LP (module docstring).  Returns the certificate of
    :func:`countdp.design.template.proof.certify_expansion` (with the ``"matrix"`` proven and the
    stage ``"seconds"``), or ``{"certified": False, "reason": ...}``."""
    began, seconds = time.perf_counter(), {}
    n, N, alpha = target.n, target.N, target.alpha
    problem = relaxed_problem(target)
    full = problem.lp()
    x, info = square_primal(full, n, W, alpha, settings)
    seconds["template primal"] = time.perf_counter() - began
    if x is None:
        return not_proven(f"W={W}: {info}")
    info = {"template": "square corners, chain dual", "width": W, **info,
            "template_properties": "+".join(problem.properties)}
    is_dp, edges = dp_rows(full.A_ub, N, alpha), N * (N - 1)
    closure = target.objective.name in settings.chains.closure_objectives
    result = not_proven(f"W={W}: no tolerance tried")
    for tol in settings.chains.square_chain_tight_tols:
        running(settings, "the square corners' chain dual")
        tight = tight_rows(full, x, tol)
        support, candidates = tight[is_dp[tight]], tight[~is_dp[tight]]
        if edges - support.size > settings.chains.square_chain_max_breaks:
            result = not_proven(f"W={W}, tol={tol:g}: {edges - support.size:,} DP edges not tight, more than "
                                f"{settings.chains.square_chain_max_breaks:,}")
            continue
        try:
            y, vertex = chain_dual(full, support, np.ones(N, dtype=bool), settings, candidates)
        except ValueError as exc:
            result = not_proven(f"W={W}, tol={tol:g}: {exc}")
            continue
        if vertex is None:
            result = not_proven(f"W={W}, tol={tol:g}: the support singles out no vertex")
            continue
        result = certify_expansion(target, vertex.reshape(N, N), y, problem.properties,
                                   {**info, "tight_tol": tol}, closure_first=closure)
        if result.get("certified"):
            break
    seconds["chain dual and certificate"] = time.perf_counter() - began - seconds["template primal"]
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result
