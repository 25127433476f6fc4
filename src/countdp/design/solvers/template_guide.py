"""A guide point from a smaller group size, for the basis guess of the guided simplex
(:func:`countdp.design.solvers.guided.run_guided`).

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]`` (rows outputs, columns inputs),
``N = n + 1``, ``alpha = e^-eps``; models are the reduced LPs of :mod:`countdp.design.reduce`, and
duals are in HiGHS's sign convention (``col_dual = cost - A^T row_dual``).

Far from its two corners an optimal design looks like GM: translation invariant along the
diagonal, decaying by ``alpha`` per step away from it (the structure of
:mod:`countdp.design.template`).  So the optimal vertex of the same LP at a smaller
``n0 = 3 W + 4``, spread out by :func:`countdp.design.template.geometry.feature_map` (the entries
within ``W`` of a corner copied, the others taken from the template's middle, times ``alpha`` per
extra step from the diagonal), is close to the optimal vertex at ``n``; and the template's
multipliers, copied unchanged to every row that the same map sends to the template row, are close
to its duals.  The template's basis statuses are copied the same way.  The basis read off them
replaces the one read off Clarabel's point, which costs far more at large ``n``.

The guide only seeds the simplex: a wrong guess costs pivots (then the Clarabel guide is used),
never correctness, since the vertex found is polished and proven on the model at ``n``.  The
structure needs the corners to fit in ``W`` (:func:`countdp.design.policy.guide_width`); no guide
is built where it does not (:func:`countdp.design.policy.guide_applies`).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from countdp.design.policy import guide_applies, guide_width, template_clarabel_tol
from countdp.design.reduce import ReducedLP, build_reduced_lp, row_hashes
from countdp.design.settings import SolverSettings
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.highs import work_limits
from countdp.design.solvers.solved import Solved, polish_run
from countdp.design.template.geometry import feature_map, row_map


def template_guide(lp: ReducedLP, *, settings: SolverSettings):
    """``(guide, basic, active, n0)``: a guide point of ``lp`` (a :class:`~countdp.design.solvers.solved.Solved`
    in ``lp``'s units) and basis statuses from the optimal vertex at ``n0`` (:func:`spread`); ``None``
    when :func:`countdp.design.policy.guide_applies` is false.  The template is solved by
    :func:`countdp.design.solvers.guided.run_guided` guided by this function in turn (so it may be
    guided by a smaller template), within ``settings.template.template_simplex_work``, and polished;
    ``RuntimeError`` when it is not solved."""
    if not guide_applies(lp.problem, settings):
        return None
    problem = lp.problem
    W = guide_width(lp.n, problem.alpha, settings)
    n0 = 3 * W + 4
    small = build_reduced_lp(n0, problem.alpha, problem.properties, problem.objective, None, "sum", lp.folded)
    try:
        run0 = polish_run(small, run_guided(small, work_limits(settings.template.template_simplex_work, small),
                                            tol=template_clarabel_tol(problem, settings),
                                            guide=partial(template_guide, settings=settings), settings=settings))
    except RuntimeError as exc:
        raise RuntimeError(f"the design at n = {n0} was not solved: {exc}") from exc
    return (*spread(lp, small, run0, W), n0)


def spread(lp: ReducedLP, small: ReducedLP, run0: Solved, W: int):
    """``(guide, basic, active)``: the guide point of ``lp`` (size ``n``) from the vertex ``run0`` of
    ``small`` (size ``n0 = 3 W + 4``, the same LP otherwise), and the template's basis statuses
    copied the same way (``None`` without a basis): module docstring."""
    n, n0, alpha = lp.n, small.n, lp.problem.alpha
    N, N0 = n + 1, n0 + 1
    P0 = (small.expand @ run0.y)[: N0 * N0].reshape(N0, N0)
    E = sp.csc_matrix(lp.expand)
    i, j = np.divmod(E.indices[E.indptr[:-1]], N)  # every column's first entry
    i0, j0, extra = feature_map(i, j, n, n0, W)
    y = alpha ** extra.astype(float) * P0[i0, j0]
    rows0 = np.append(reduced_rows(small), -1)[template_rows(lp, small, W)]
    row_dual = np.where(rows0 >= 0, run0.row_dual[rows0], 0.0)
    guide = Solved(y, row_dual, lp.cost - lp.A.T @ row_dual, "template guide", float(lp.cost @ y), 0.0)
    if run0.basis is None:
        return guide, None, None
    col_basic0, _, row_active0, _ = run0.basis
    E0 = sp.csr_matrix(small.expand)
    cols0 = E0.indices[E0.indptr[i0 * N0 + j0]]
    return guide, col_basic0[cols0], np.where(rows0 >= 0, row_active0[rows0], False)


def reduced_rows(lp: ReducedLP) -> np.ndarray:
    """For every row of the full model (:meth:`countdp.design.model.DesignProblem.lp`, inequalities
    then equalities), the reduced row it became, or -1 (a dropped row or a bound).  Rows are
    matched by exact hashes of their images under the reduction's change of variables."""
    full = lp.problem.lp()
    M = sp.csr_matrix(sp.vstack([full.A_ub, full.A_eq], format="csr") @ lp.expand)
    M.sum_duplicates()
    M.data[np.abs(M.data) < 1e-15] = 0.0  # as build_reduced_lp does
    M.eliminate_zeros()
    lo = np.concatenate([full.b_ub, full.b_eq])
    hi = np.concatenate([np.full(full.b_ub.size, np.inf), full.b_eq])
    mine, theirs = row_hashes(M, lo, hi), row_hashes(lp.A, lp.row_lower, lp.row_upper)
    order = np.argsort(theirs, kind="stable")
    pos = np.minimum(np.searchsorted(theirs[order], mine), theirs.size - 1)
    found = (theirs[order][pos] == mine) & (np.diff(M.indptr) >= 2)
    return np.where(found, order[pos], -1)


def template_rows(lp: ReducedLP, small: ReducedLP, W: int) -> np.ndarray:
    """For every row of the reduced model ``lp``, the full-model row of the template ``small`` it
    copies, or -1 where there is none (the S rows of an unfolded model)."""
    problem, template = lp.problem, small.problem
    n, n0 = lp.n, small.n
    full, full0 = problem.lp(), template.lp()
    local = tuple(p for p in problem.properties if p not in ("F", "S"))  # F and S have equalities only
    table = np.full(full.b_ub.size + full.b_eq.size, -1)
    table[: full.b_ub.size] = row_map(n, n0, W, local)
    diagonal = np.arange(n + 1)
    _, cols, _ = feature_map(diagonal, diagonal, n, n0, W + 1)  # column sum j copies column sum j0
    for name, copied in (("sums", cols), ("F", cols[1:] - 1)):  # F: P[i, i] = P[0, 0] is row i - 1
        if name in problem.blocks:
            rows, rows0 = problem.blocks[name][1], template.blocks[name][1]
            table[full.b_ub.size + np.arange(rows.start, rows.stop)] = full0.b_ub.size + rows0.start + copied
    return table[lp.row_origin]
