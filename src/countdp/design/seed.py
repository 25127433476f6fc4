"""A guide point from a smaller group size, for the basis guess of :func:`countdp.design.backends.run_guided`.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]`` (rows outputs, columns inputs),
``N = n + 1``, ``alpha = e^-eps``; models are the reduced LPs of :mod:`countdp.design.reduce`, and
duals are in HiGHS's sign convention (``col_dual = cost - A^T row_dual``).

Far from its two corners an optimal design looks like GM: translation invariant along the
diagonal, decaying by ``alpha`` per step away from it (the structure of
:mod:`countdp.design.large_n`).  So the optimal vertex of the same LP at a smaller
``n0 = 3 W + 4``, spread out by :func:`countdp.design.large_n.feature_map` (the entries within
``W`` of a corner copied, the others taken from the template's middle, times ``alpha`` per extra
step from the diagonal), is close to the optimal vertex at ``n``; and the template's multipliers,
copied unchanged to every row that the same map sends to the template row, are close to its
duals (rescaling them by ``N0 / N``, the ratio of the uniform costs, measured no better anywhere
and worse for WM, L0,1, alpha = 0.91).  The template's basis statuses are copied the same way.
The basis :func:`countdp.design.backends.guess_basis` reads off them replaces the one read off
Clarabel's point, which costs 9 to 18 s at ``n = 256`` on WM's model (98,817 rows), while the
template costs 1 to 3 s.

The guide only seeds the simplex: a wrong guess costs pivots (then the Clarabel guide is used),
never correctness, since the vertex found is polished and proven on the model at ``n``.  The
structure needs the corners to fit in ``W``: the width is at least the distance over which
``alpha^W`` falls to :data:`DECAY`, and no guide is built when that makes the template nearly as
large as the model (``alpha`` near 1).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

MIN_N = 160
"""Smallest ``n`` guided from a template: below it Clarabel's guide costs at most ~2 s."""

DECAY = 1e-2
"""The corner width ``W`` is at least ``log(DECAY) / log(alpha)``.  Measured at n = 256, alpha =
0.91 (WM, L2): ``W = 41`` (``alpha^W = 0.021``) gave an ill-conditioned basis (dual simplex:
"Not Set"), ``W = 52`` (0.0075) needed 0.5 s."""

MIN_WIDTH_FRACTION = 0.2
"""``W`` is at least this fraction of ``n`` (``n0 ~ 0.6 n``): a smaller template saves little and
its middle is too short to hold the interior's pattern."""

MAX_TEMPLATE_FRACTION = 0.7
"""No guide when the template would exceed this fraction of ``n``."""

TEMPLATE_SIMPLEX_WORK = (5e8, 3e7)
"""Work given to the dual and then the primal simplex of the template's own guided solve, as
iterations times the template's rows (:data:`countdp.design.backends.QUICK_VERTEX_WORK`): the
templates of the L0,1, L1 and L2 designs at n = 256 took at most 1,736 dual iterations (38,721
rows, 2.1 s; limit 2,582) and no primal ones, while LP with RH and CH, L2, alpha = 0.91 spent
10.9 s of primal simplex on its template (51,521 rows; 1,940 primal iterations took 8 s).
With a dual budget of 1e8 (1,937 iterations on 51,601 rows), the templates of LP with RH and CM
at alpha = 0.91 (L1, L2, with and without S) ran out, and Clarabel's point of the model with CM
answered in 15 to 18.6 s; with 5e8 (2026-11-24) they guide, 8.8 to 11.2 s, LP with RH and CH, L2,
takes 3.6 s instead of 8.2 s and RM+CH, L2, 4.1 s instead of 6.7 s.
Iterations, not seconds, so that the path does not depend on the machine
(:data:`countdp.design.backends.SIMPLEX_SAFETY_SECONDS`)."""

SIMPLEX_ITERATIONS = 5000
"""Simplex iterations given to each dual simplex at ``n`` from the template's guess (its
statuses, then its point alone) before Clarabel's guide is used instead (at most 1,488, 2.4 s,
over the L0,1, L1 and L2 designs at n = 256)."""


FACE_ALPHA = 0.9
"""L0,d with ``d >= 1`` gets no template from this alpha: its loss is a 0/1 step, the optimal face
is large, and a vertex is costly to reach from any guess, while Clarabel's point is proven as it
is.  Measured at n = 256, alpha = 0.91 (template / Clarabel's point): WM 13 to 28 s / 12 s, LP
with F 10.4 / 4 s, LP with CH and RM 12.9 / 5.5 s (its template at n = 160 not solved in time).
WH took 2.0 s either way."""


TEMPLATE_CLARABEL_TOL = 1e-12
"""Clarabel's tolerances for the point that only seeds the basis of an L1 or L2 template's own
simplex (:func:`template_clarabel_tol`).  At 1e-14 (what a point proven as it is needs) the
basis read off the point sent several templates' dual simplex grinding.  Measured on the
templates at n0 = 160 (for n = 256) of WM, WH, LP with RH+CM, RH+CH, RM+CH, F, RM, RH, CM+F,
RH+CH+F at alpha 0.5, 0.62, 0.91, dual simplex iterations from the guess at 1e-14 / 1e-12: LP
with RH+CM, alpha = 0.91, L1 5,387 / 694 and L2 4,975 / 326 (4.4 s / 0.3 s); RM+CH, L2 2,646 /
774; RH+CH, L1 1,574 / 120; RH, L2, alpha = 0.5 1,455 / 30; the worst the other way F, L1,
alpha = 0.62, 134 / 1,031 (0.07 / 0.38 s).  Clarabel itself is up to 1.5 s faster at 1e-12.
Not for L0,d: at 1e-12 three of its 20 guesses (F, RM, CM+F at 0.62) were singular bases
(HiGHS 'Not Set') that 1e-14 solved."""


def template_clarabel_tol(problem) -> float:
    """Clarabel's tolerances for the guide point of ``problem``'s template solve:
    :data:`TEMPLATE_CLARABEL_TOL` for L1 and L2, else the tolerance of a point proven as it is
    (:data:`countdp.design.backends.GUIDE_CLARABEL_TOL`)."""
    from countdp.design.backends import GUIDE_CLARABEL_TOL

    return TEMPLATE_CLARABEL_TOL if problem.objective.name in ("L1", "L2") else GUIDE_CLARABEL_TOL


def point_before_template(problem) -> bool:
    """Whether :func:`countdp.design.backends.run_guided` offers Clarabel's points to the proof
    before it builds a template: L0,d (``d >= 1``) with F.  Measured at n = 256, L0,1, on the 24
    distinct property sets with F, two designs at a time (load 2, the same hour for both orders):
    with the template first, 40 of the 72 designs at alpha in {0.5, 0.62, 0.91} took over 10 s
    (medians 9.2, 14.5 and 10.0 s; LP with RH+CH+F 33 to 35 s), their templates at n = 160
    unsolved or their bases singular; with the points first, 20 (medians 7.1, 7.7 and 8.6 s),
    and 22 (7.5, 8.8 and 8.0 s) in a later sweep with the refined point added.  The template
    still answers where no point is proven."""
    objective = problem.objective
    return objective.name == "L0d" and objective.d >= 1 and "F" in problem.properties


def template_width(n: int, alpha: float) -> int | None:
    """The corner width ``W`` of the template (``n0 = 3 W + 4``), or ``None`` when no guide is built."""
    if n < MIN_N or not 0.0 < alpha < 1.0:
        return None
    W = max(int(np.ceil(np.log(DECAY) / np.log(alpha))), int(np.ceil(MIN_WIDTH_FRACTION * n)))
    return W if 3 * W + 4 <= MAX_TEMPLATE_FRACTION * n else None


def too_near_one(n: int, alpha: float) -> bool:
    """Whether ``n`` is large enough for a template (:data:`MIN_N`) but ``alpha`` too near 1 for
    one (:func:`template_width`): Clarabel's point is then the answer, not a simplex's guide."""
    return n >= MIN_N and 0.0 < alpha < 1.0 and template_width(n, alpha) is None


def applies(problem) -> bool:
    """Whether a template guide can be built for the :class:`countdp.design.model.DesignProblem`
    ``problem`` (``None``: no) and is worth it: the sum aggregate, uniform weights (the template
    has its own uniform prior), a template width (:func:`template_width`), and not L0,d
    (``d >= 1``) from :data:`FACE_ALPHA`."""
    from countdp.design.fast import _is_uniform

    if problem is None:
        return False
    objective = problem.objective
    large_face = objective.name == "L0d" and objective.d >= 1 and problem.alpha >= FACE_ALPHA
    return (problem.aggregate == "sum" and _is_uniform(problem.weights, problem.n) and not large_face
            and template_width(problem.n, problem.alpha) is not None)


def template_guide(lp):
    """``(guide, basic, active, n0)``: a guide point of ``lp`` (a
    :class:`countdp.design.backends.Solved` in ``lp``'s units) and basis statuses from the optimal
    vertex at ``n0`` (:func:`spread`); ``None`` when :func:`applies` is false.  The template is
    solved by :func:`countdp.design.backends.run_guided` itself (so it may be guided by a smaller
    template in turn) and polished; ``RuntimeError`` when it is not solved."""
    from countdp.design.backends import polish_run, run_guided, work_limits
    from countdp.design.reduce import build_reduced_lp

    if not applies(lp.problem):
        return None
    problem = lp.problem
    W = template_width(lp.n, problem.alpha)
    n0 = 3 * W + 4
    small = build_reduced_lp(n0, problem.alpha, problem.properties, problem.objective, None, "sum", lp.folded)
    try:
        run0 = polish_run(small, run_guided(small, work_limits(TEMPLATE_SIMPLEX_WORK, small),
                                            tol=template_clarabel_tol(problem)))
    except RuntimeError as exc:
        raise RuntimeError(f"the design at n = {n0} was not solved: {exc}") from exc
    return (*spread(lp, small, run0, W), n0)


def spread(lp, small, run0, W: int):
    """``(guide, basic, active)``: the guide point of ``lp`` (size ``n``) from the vertex ``run0``
    of ``small`` (size ``n0 = 3 W + 4``, the same LP otherwise), and the template's basis
    statuses copied the same way (``None`` without a basis): module docstring."""
    from countdp.design.backends import Solved
    from countdp.design.large_n import feature_map

    n, n0, alpha = lp.n, small.n, lp.problem.alpha
    N, N0 = n + 1, n0 + 1
    P0 = (small.expand @ run0.y)[: N0 * N0].reshape(N0, N0)
    E = sp.csc_matrix(lp.expand)
    i, j = np.divmod(E.indices[E.indptr[:-1]], N)  # every column's first entry
    i0, j0, extra = feature_map(i, j, n, n0, W)
    y = alpha ** extra.astype(float) * P0[i0, j0]
    rows0 = np.append(_reduced_rows(small), -1)[_template_rows(lp, small, W)]
    row_dual = np.where(rows0 >= 0, run0.row_dual[rows0], 0.0)
    guide = Solved(y, row_dual, lp.cost - lp.A.T @ row_dual, "template guide", float(lp.cost @ y), 0.0)
    if run0.basis is None:
        return guide, None, None
    col_basic0, _, row_active0, _ = run0.basis
    E0 = sp.csr_matrix(small.expand)
    cols0 = E0.indices[E0.indptr[i0 * N0 + j0]]
    return guide, col_basic0[cols0], np.where(rows0 >= 0, row_active0[rows0], False)


def _reduced_rows(lp) -> np.ndarray:
    """For every row of the full model (:meth:`countdp.design.model.DesignProblem.lp`, inequalities
    then equalities), the reduced row it became, or -1 (a dropped row or a bound).  Rows are
    matched by exact hashes of their images under the reduction's change of variables."""
    from countdp.design.reduce import row_hashes

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


def _template_rows(lp, small, W: int) -> np.ndarray:
    """For every row of the reduced model ``lp``, the full-model row of the template ``small`` it
    copies, or -1 where there is none (the S rows of an unfolded model)."""
    from countdp.design.large_n import _row_map, feature_map

    problem, template = lp.problem, small.problem
    n, n0 = lp.n, small.n
    full, full0 = problem.lp(), template.lp()
    local = tuple(p for p in problem.properties if p not in ("F", "S"))  # F and S have equalities only
    table = np.full(full.b_ub.size + full.b_eq.size, -1)
    table[: full.b_ub.size] = _row_map(n, n0, W, local)
    diagonal = np.arange(n + 1)
    _, cols, _ = feature_map(diagonal, diagonal, n, n0, W + 1)  # column sum j copies column sum j0
    for name, copied in (("sums", cols), ("F", cols[1:] - 1)):  # F: P[i, i] = P[0, 0] is row i - 1
        if name in problem.blocks:
            rows, rows0 = problem.blocks[name][1], template.blocks[name][1]
            table[full.b_ub.size + np.arange(rows.start, rows.stop)] = full0.b_ub.size + rows0.start + copied
    return table[lp.row_origin]
