"""Solver backends for the reduced design LP: HiGHS (simplex, IPX + crossover) and Clarabel.

Each run returns a :class:`Solved`: the point, its duals in HiGHS's sign convention, the
basis when there is one, and what ran.  :func:`polish_run` recomputes a basis's vertex and
duals exactly (:mod:`countdp.design.polish`).  The solver modules (``highspy``, ``clarabel``)
are imported only when a model is solved.

HiGHS's ``threads`` option is never set: its thread pool is one per process, fixed by the
first solve, and a later ``Highs`` asking for another count fails ('Not Set').  The pipeline
solves in threads of one Snakemake process, and highspy 1.16's default pool (all cores) differs
from any fixed count, so every model here keeps HiGHS's default.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from countdp.design.highspy_loader import load_highspy
from countdp.design.implied_bounds import implied_nonnegative
from countdp.design.reduce import ReducedLP

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

CLARABEL_TOL = 1e-12
"""Clarabel's gap and feasibility tolerances on the reduced model.  At 1e-10 the optimality
certificate missed 1e-9 by a hair at n = 256 (WM, alpha = 0.91: gap 1.3e-9); at 1e-12 it
closes (n = 128: gap 2.9e-12 in about the same time; n = 256 ends 'AlmostSolved' with gap
5.3e-10, accepted because it is proven)."""

CLARABEL_DIRECT_METHOD = "qdldl"
"""Clarabel's sparse LDL^T factorisation of the KKT system.  Clarabel 0.11's ``"auto"`` picks
``"faer"``, which measured ~4x slower than ``"qdldl"`` on the WM models (alpha = 0.91, one or
two threads alike): n = 256, 26 s -> 6.4 s; n = 512, 116 s -> 50 s; same iterates and optimal
value to 1e-11 (benchmarks/)."""


@dataclass
class Solved:
    """One solver run on the reduced model: ``y`` and its duals (HiGHS sign convention:
    ``col_dual = cost - A^T row_dual``), the basis if there is one, and what ran."""

    y: np.ndarray
    row_dual: np.ndarray
    col_dual: np.ndarray
    status: str
    objective: float
    seconds: float
    basis: tuple | None = None
    polished: bool = False
    highs_basis: object = None
    guide: str = ""  # what seeded run_guided's basis guess
    dp_closure: bool = False  # the matrix released is polish.dp_closure of the vertex
    primal_residual: float = 0.0  # Clarabel's relative primal residual at its last iterate (0: not Clarabel)
    pivots: int = 0  # HiGHS's simplex iterations (0: not a simplex run)


def run_clarabel(lp: ReducedLP, cost_scale: float = 1.0, tol: float | None = None, refine: bool = False) -> Solved:
    """Clarabel's interior point method (not a vertex, no basis); ``AlmostSolved`` is returned
    too: the caller proves it optimal or falls back.  ``cost_scale``: Clarabel minimises
    ``cost / cost_scale`` (e.g. :func:`objective_scale`); duals and objective are returned in
    ``lp``'s units.  ``tol``: the gap and feasibility tolerances (default :data:`CLARABEL_TOL`).

    ``refine``: Clarabel's iterative refinement of its KKT solves.  It costs 10% to 2x the time
    (LP with F, L0,1, n = 256, alpha = 0.91: 5.5 s -> 9.8 s), and the answer is proven afterwards
    or another method is tried, so it is off unless asked for.  It gives better duals where a
    point ends 'AlmostSolved': at n = 256, L0,1, F substituted out (:func:`interior_points`), the
    certificate's gap fell from 2.4e-9 to 3.2e-10 for LP with RM+CH+F at alpha = 0.5, from
    1.6e-9 to 3.6e-10 for RM+F+WH at 0.5, and from 1.6e-9 to 2.2e-10 for RM+CH+F at 0.62.

    Where alpha is too near 1 for a template (:func:`countdp.design.seed.too_near_one`), the
    bounds ``y >= 0`` that the DP rows imply are left out
    (:func:`countdp.design.implied_bounds.implied_nonnegative`; their duals are 0).  At n = 256,
    alpha = 0.99 that took LP with RM, L2 from 20.8 to 12.2 s (the model without S: 12.4 to
    8.3 s) and LP with RH, L2, from 17 to 5 s, whose folded point now ends 'Solved'.  Elsewhere
    the points guide a simplex or are repaired, with methods tuned on the model with the bounds,
    so it keeps them."""
    import clarabel

    from countdp.design.seed import too_near_one

    A, lo, hi = lp.A, lp.row_lower, lp.row_upper
    eq = np.isfinite(hi) & (hi == lo)
    has_hi = np.isfinite(hi) & ~eq
    has_lo = np.isfinite(lo) & ~eq
    k = A.shape[1]
    eye = sp.identity(k, format="csr")
    fin_lo = np.isfinite(lp.col_lower)
    if lp.problem is not None and too_near_one(lp.n, lp.problem.alpha):  # the point is the answer
        fin_lo &= ~implied_nonnegative(A, lo, hi, lp.col_lower)
    fin_hi = np.isfinite(lp.col_upper)
    blocks = [A[eq], -A[has_lo], A[has_hi], -eye[fin_lo], eye[fin_hi]]
    rhs = [lo[eq], -lo[has_lo], hi[has_hi], -lp.col_lower[fin_lo], lp.col_upper[fin_hi]]
    M = sp.vstack(blocks, format="csc")
    cones = [clarabel.ZeroConeT(int(eq.sum())), clarabel.NonnegativeConeT(M.shape[0] - int(eq.sum()))]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = CLARABEL_TOL if tol is None else tol
    settings.direct_solve_method = CLARABEL_DIRECT_METHOD
    settings.iterative_refinement_enable = refine
    LOG.info("Clarabel's interior point method: %s rows, %s columns%s", f"{A.shape[0]:,}", f"{k:,}",
             ", refined" if refine else "")
    start = time.perf_counter()
    solution = clarabel.DefaultSolver(sp.csc_matrix((k, k)), lp.cost / cost_scale, M, np.concatenate(rhs), cones,
                                      settings).solve()
    elapsed = time.perf_counter() - start
    status = str(solution.status)
    if not status.endswith("Solved"):
        raise RuntimeError(f"Clarabel returned {status!r}")
    z = np.asarray(solution.z, float) * cost_scale
    sizes = np.cumsum([eq.sum(), has_lo.sum(), has_hi.sum(), fin_lo.sum()])
    z_eq, z_lo, z_hi, z_cl, z_ch = np.split(z, sizes)
    row_dual = np.zeros(A.shape[0])
    row_dual[eq], row_dual[has_lo] = -z_eq, z_lo
    row_dual[has_hi] -= z_hi
    col_dual = np.zeros(k)
    col_dual[fin_lo] += z_cl
    col_dual[fin_hi] -= z_ch
    return Solved(np.asarray(solution.x, float), row_dual, col_dual, status, float(solution.obj_val) * cost_scale,
                  elapsed, primal_residual=float(solution.r_prim))


def objective_scale(lp: ReducedLP) -> float:
    """The objective of GM (truncated geometric) for ``lp``'s problem, at least 1: GM is a
    BasicDP mechanism, so this is of the order of the optimum (L2, n = 256, alpha = 0.99: 7,095
    against WM's 5,234).

    Clarabel's 1e-12 tolerances are not reached on L2's costs (up to n^2): WM, L2, alpha = 0.99
    ended 'AlmostSolved' after 1.4 s at n = 128 and 39 s at n = 256 (gaps 1e-4, 9e-3); with the
    cost divided by this scale, 'Solved' in 0.9 s and 9.4 s, and proven.  Objectives below 1
    (L0, L0,d) are not scaled up: LP with F, L0,1, n = 128, alpha = 0.62 then ended
    'AlmostSolved' with a basis guess the simplex could not use."""
    from countdp.evaluate.metrics import objective_value
    from countdp.mechanisms.closed_forms import geometric

    problem = lp.problem
    if problem is None:
        return 1.0
    value = objective_value(geometric(problem.n, problem.alpha), problem.objective, problem.weights,
                            problem.aggregate)
    return max(1.0, float(value)) if np.isfinite(value) else 1.0


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


HIGHS_TOL = 1e-10
"""HiGHS primal and dual feasibility tolerances (its smallest allowed; default 1e-7 left DP rows
broken by up to 9e-8).  The vertex is then recomputed exactly from its basis (:mod:`countdp.design.polish`)."""


TIGHT_ROW_SCALES = (1e3, 1e6)
"""Row scale factors of the tightened re-solves (:func:`run_highs` ``tight_from``), tried in
turn: HiGHS's feasibility tolerance then allows 1e-13 (1e-16) per unit of a row's largest
scaled coefficient, not 1e-10.  Measured: L2 at n = 64, alpha = 0.62 (WH) left a zero beside
1.5e-13, breaking a DP row by 9.5e-14, whose UM repair (lambda 1.6e-11) cost 1.5e-9 of the
objective; L1 with F at alpha = 0.5 left a column sum off by 3.9e-11.  At 1e3: violations
<= 2e-16, gaps ~1e-11.  L2 with F at n = 128, alpha = 0.62 still needed lambda = 1.5e-11 at
1e3 (relative gap 5.2e-9), hence the second factor."""

COL_SCALE_FLOOR = 1e-3
"""Smallest column scale: HiGHS's dual tolerance acts on ``scale * reduced cost``, so a tinier
scale would let it accept a basis whose reduced costs are wrong by ``1e-10 / scale``."""


def scales(lp: ReducedLP) -> tuple[np.ndarray, np.ndarray]:
    """Column scales ``alpha^|i-j|`` (an entry's natural size: DP ties it to its row's diagonal
    by that factor) and row scales ``1 / max |coefficient|`` of the column-scaled rows.

    HiGHS's tolerances are absolute; without this an entry of size ``alpha^40 ~ 1e-12``
    (alpha = 1/2) can be left 0 beside a neighbour of 1e-10, breaking a DP row by ~1e-10."""
    N = lp.n + 1
    E = sp.csc_matrix(lp.expand)
    first = E.indices[E.indptr[:-1]]
    i, j = np.divmod(np.minimum(first, N * N - 1), N)
    d = np.where(first < N * N, np.abs(i - j), 0)
    col = np.maximum(lp.problem.alpha ** d.astype(float), COL_SCALE_FLOOR)
    scaled = sp.csr_matrix(lp.A @ sp.diags(col))
    row = 1.0 / np.maximum(abs(scaled).max(axis=1).toarray().ravel(), 1e-300)
    return col, row


WARM_EDGE_WEIGHTS = 1
"""HiGHS's dual edge weight strategy when simplex starts from a given basis: Devex.  Its default,
dual steepest edge, first computes the exact weight of every row of a non-slack basis (one
solve with the basis per row): 20 s of the 21 s on a 33,025-column model (n = 256, WH, L1)
that then needed 4 pivots; with Devex the same run took 0.6 s."""


def scaled_model(lp: ReducedLP, col: np.ndarray, row: np.ndarray) -> ReducedLP:
    """``lp`` in scaled units: ``y = col * y_scaled``, row ``r`` multiplied by ``row[r]``."""
    return replace(lp, A=sp.csr_matrix(sp.diags(row) @ lp.A @ sp.diags(col)), cost=lp.cost * col,
                   col_lower=lp.col_lower / col, col_upper=lp.col_upper / col,
                   row_lower=lp.row_lower * row, row_upper=lp.row_upper * row)


GUESS_TAIL = 1e-8
"""Entries whose scaled value in Clarabel's point is below this are the tail: too small (below the
column-scale floor, ``alpha^e`` down to 1e-77 at n = 256) for their slacks and multipliers to
tell active rows from inactive ones, so :func:`guess_basis` completes them by structure."""


def guess_basis(lp: ReducedLP, run: Solved, prior: tuple[np.ndarray, np.ndarray] | None = None):
    """A ``highspy.HighsBasis`` read off an interior point ``run`` of ``lp`` (both in scaled units).

    A column is non-basic at the bound whose distance is smaller than its reduced cost, a row
    active at the bound whose slack is smaller than its multiplier (equalities always).  Tail
    entries (:data:`GUESS_TAIL`) are basic and decay away from the diagonal as in GM: of the DP
    rows on them, those bounding the entry farther from the diagonal from below
    (:func:`countdp.design.reduce.dp_rows_kept`) are active, the others and the property rows
    inactive.  Last, the most ambiguous of the other decisions (the ratio nearest 1) are
    flipped until there are as many basic columns as active rows.  ``prior``: ``(basic, active)``
    statuses to start from instead (a template's basis, :func:`countdp.design.seed.spread`), the
    scores then only ranking which to flip.  A wrong guess costs simplex pivots, not correctness."""
    from countdp.design.reduce import dp_rows_kept

    highspy = load_highspy()

    tiny = 1e-300
    x, z, pi = run.y, run.col_dual, run.row_dual
    lo, hi = lp.col_lower, lp.col_upper
    to_lo, to_hi = np.maximum(x - lo, tiny), np.maximum(hi - x, tiny)
    c_score = np.where(z >= 0, np.log(to_lo) - np.log(np.maximum(z, tiny)),
                       np.log(to_hi) - np.log(np.maximum(-z, tiny)))  # > 0: basic
    a = lp.A @ x
    eq = lp.row_lower == lp.row_upper
    s_lo, s_hi = np.maximum(a - lp.row_lower, tiny), np.maximum(lp.row_upper - a, tiny)
    r_score = np.where(pi >= 0, np.log(np.maximum(pi, tiny)) - np.log(s_lo),
                       np.log(np.maximum(-pi, tiny)) - np.log(s_hi))  # > 0: active
    r_score[eq] = np.inf
    tail = np.abs(x) < GUESS_TAIL
    tail_rows = (abs(lp.A) @ tail.astype(float)) > 0
    n_dp = 2 * lp.n * (lp.n + 1)
    decay = np.zeros(n_dp + 1, bool)
    decay[dp_rows_kept(lp.n, True)] = True
    origin = lp.row_origin if lp.row_origin is not None else np.full(lp.A.shape[0], n_dp)
    if prior is None:
        c_score[tail] = np.inf
        r_score[tail_rows & ~eq] = np.where(decay[np.minimum(origin, n_dp)], np.inf, -np.inf)[tail_rows & ~eq]
    else:  # the statuses given decide; the scores only rank the decisions to flip
        basic, active = prior
        c_score = np.where(basic, 1.0, -1.0) * (np.abs(c_score) + 1.0)
        r_score = np.where(eq, np.inf, np.where(active, 1.0, -1.0) * (np.abs(r_score) + 1.0))
        tail, tail_rows = np.zeros_like(tail), np.zeros_like(tail_rows)
    col_basic, row_active = c_score > 0, r_score > 0
    excess = int(col_basic.sum()) - int(row_active.sum())
    if excess:  # flip the decisions nearest their threshold, basic columns or free rows alike
        sign = 1 if excess > 0 else -1
        cols = np.flatnonzero((col_basic if excess > 0 else ~col_basic) & ~tail)
        rows = np.flatnonzero((~row_active if excess > 0 else row_active) & ~eq & ~tail_rows)
        margin = np.concatenate([sign * c_score[cols], -sign * r_score[rows]])
        pick = np.argsort(margin, kind="stable")[: abs(excess)]
        col_basic[cols[pick[pick < cols.size]]] = excess < 0
        row_active[rows[pick[pick >= cols.size] - cols.size]] = excess > 0
    col_upper = ~col_basic & (to_hi < to_lo)
    row_upper = row_active & ~eq & (s_hi < s_lo)
    S = highspy.HighsBasisStatus
    basis = highspy.HighsBasis()
    status = np.array([S.kLower, S.kUpper, S.kBasic], dtype=object)  # indexed by 0, 1, 2
    basis.col_status = status[np.where(col_basic, 2, col_upper.astype(int))].tolist()
    basis.row_status = status[np.where(row_active, row_upper.astype(int), 2)].tolist()
    basis.valid = True
    return basis


INTERIOR_GUIDE = "no vertex: clarabel's interior point, proven as it is"
"""``Solved.guide`` of the interior point :func:`run_guided` returns when its ``accept`` passes."""

SIMPLEX_SAFETY_SECONDS = 60.0
"""Wall-clock bound on each iteration-limited simplex (:data:`QUICK_VERTEX_WORK`,
:data:`GUIDED_SIMPLEX_ITERATIONS`, :data:`countdp.design.seed.SIMPLEX_ITERATIONS`,
:data:`countdp.design.seed.TEMPLATE_SIMPLEX_WORK` and :data:`countdp.design.large_n.DUAL_SIMPLEX_WORK`).
The iteration limits decide which path answers, the same on any machine and under any load (with
time limits a loaded machine turned vertices into interior points); this bound only stops a
machine many times slower than this one, where those limits take 2 to 10 s."""

QUICK_VERTEX_WORK = (7.5e7, 3e7)
"""Below :data:`countdp.design.seed.MIN_N`, the work :func:`run_guided` gives the dual and then
the primal simplex from Clarabel's basis before it offers Clarabel's interior point to
``accept``, as iterations times the model's rows (an iteration's cost grows about with the
rows): a vertex (exact zeros) where a few pivots find one, the interior point where the simplex
would grind (WM, L2, n = 128, alpha = 0.99: 43 s before).  About 2 s each on this machine:
measured at n = 128 (24,833 rows; 3,020 and 1,208 iterations) the dual made 0.68 ms and the
primal 1.7 ms per iteration, at n = 64 (4,225 rows) the primal 0.21 ms.  Over the L0,1, L1 and L2
designs at n = 128 the vertices found took at most 2,685 dual iterations (16,641 rows, limit
4,507); LP with F, L0,1, n = 64, alpha = 0.62 needs more than 1,000 primal iterations."""

GUIDE_CLARABEL_TOL = 1e-14
"""Clarabel's tolerances in :func:`run_guided`.  Its interior point is proven as it is only when
its duals are accurate: the check lowers each column's multiplier by its worst reduced-cost
deficit, so ~1e-11 of noise per column cost L0,1 at n = 256, alpha = 0.91 gaps of 2e-9 to 3.5e-9
at 1e-12 (WH, LP+F, WM); at 1e-14, 1.5e-12 to 5.8e-12, in the same time (1.3 to 10.8 s)."""

REFINE_MAX_RESIDUAL = 1e-11
"""A model without F's rows whose Clarabel point ended 'AlmostSolved' with at most this relative
primal residual (Clarabel's ``r_prim``) is solved again with iterative refinement
(:func:`interior_points`).  Measured at n = 256, alpha = 0.99, S folded in: LP with RH, L2 stalled
at 2.3e-12 (its active DP rows left 2e-12 slack under multipliers of ~7,000: gap 3.3e-4, which no
dual repair closes); refined, it ended 'Solved' and was proven (5.7 s, then 9.2 s, where the model
without S that followed took 15.6 s).  LP with RM, L1 and L2, stalled at 1.3e-10 to 1.8e-10, and
refined they stalled again (gaps 2.1e-6, 1.8e-4): above this limit the retry is skipped."""

GUIDED_SIMPLEX_ITERATIONS = 6000
"""Simplex iterations :func:`run_guided` gives each simplex from Clarabel's basis (after the
quick ones, or where its point is not offered): a good guess needs a few pivots (0.6 s at
n = 256); one that sends it grinding is abandoned for the next method (6,000 dual iterations
are about 10 s at n = 256)."""


def work_limits(work: tuple[float, ...], lp: ReducedLP) -> tuple[int, ...]:
    """Iteration limits for a work budget (iterations times rows, e.g. :data:`QUICK_VERTEX_WORK`) on ``lp``."""
    return tuple(int(w / max(1, lp.A.shape[0])) for w in work)


def unscaled(run: Solved, col: np.ndarray, row: np.ndarray, guide: str = INTERIOR_GUIDE) -> Solved:
    """``run`` (a solve of :func:`scaled_model`) in the units of the model it was scaled from."""
    return replace(run, y=run.y * col, row_dual=run.row_dual * row, col_dual=run.col_dual / col, guide=guide)


def interior_points(lp: ReducedLP, note: str = "", substituted_first: bool = False) -> Iterator[Solved]:
    """Clarabel's points on the scaled model (scales of :func:`scales`, cost divided by
    :func:`objective_scale`, tolerances :data:`GUIDE_CLARABEL_TOL`), in ``lp``'s units, marked
    :data:`INTERIOR_GUIDE` (+ ``note``); each next one only while the last ended 'AlmostSolved'.
    A model without F's rows has two: the point, then the same refined (``run_clarabel(refine=True)``)
    when the first stalled with a primal residual of at most :data:`REFINE_MAX_RESIDUAL`.  With
    them, either formulation's duals can be the poorer:
    at n = 256, L0,1, alpha = 0.62 F substituted out (:mod:`countdp.design.fairness`) proved LP
    with RH+CH+F and RH+F+WH (gaps 1.4e-10 to 3.6e-10, against 2.6e-9 to 5.3e-9 with F's rows),
    F's rows kept proved RM+CH+F (4.3e-10, against 1.6e-9).  So:

    * ``substituted_first``: F substituted out, then the same refined
      (``run_clarabel(refine=True)``, which proved RM+CH+F too), then F's rows kept.  The
      substituted model is the faster (2.5 s against 3.8 to 7 s for the CH relaxations of LP
      with CM+F, RH+CM+F and RM+CM+F at alpha = 0.5).
    * else F's rows kept, then substituted out: where a basis is guessed from the point, the
      templates were tuned on the model with F's rows (LP with RM+F+WH, L0,1, alpha = 0.5: the
      substituted point's guess at n = 70 was singular, 3.6 s became 14.5 s)."""
    col, row = scales(lp)
    for point in _scaled_points(lp, scaled_model(lp, col, row), substituted_first):
        yield unscaled(point, col, row, INTERIOR_GUIDE + note)


def _scaled_points(lp: ReducedLP, scaled: ReducedLP, substituted_first: bool,
                   tol: float | None = None) -> Iterator[Solved]:
    """:func:`interior_points` in the units of ``scaled`` (:func:`scaled_model` of ``lp``), at
    Clarabel's tolerance ``tol`` (default :data:`GUIDE_CLARABEL_TOL`)."""
    from countdp.design import fairness

    tol = GUIDE_CLARABEL_TOL if tol is None else tol

    found = fairness.substitution(scaled)

    def solve(substitute: bool, refine: bool) -> Solved:
        if substitute:
            sub = run_clarabel(found[0], objective_scale(lp), tol, refine)
            return fairness.lift(scaled, found, sub)
        return run_clarabel(scaled, objective_scale(lp), tol, refine)

    if found is None:
        tries = ((False, False), (False, True))
    elif substituted_first:
        tries = ((True, False), (True, True), (False, False))
    else:
        tries = ((False, False), (True, False))
    for substitute, refine in tries:
        point = solve(substitute, refine)
        yield point
        if point.status == "Solved" or (found is None and point.primal_residual > REFINE_MAX_RESIDUAL):
            break


def interior_point(lp: ReducedLP) -> Solved:
    """Clarabel's first point of :func:`interior_points`, as :func:`run_guided` computes it."""
    return next(interior_points(lp))


def run_guided(lp: ReducedLP,
               iterations: int | tuple[int, int] | None = GUIDED_SIMPLEX_ITERATIONS, template: bool = True,
               accept: Callable[[Solved], bool] | None = None, tol: float | None = None) -> Solved:
    """HiGHS simplex from the basis :func:`guess_basis` reads off a guide point: a vertex (with its
    basis, for polishing) in a few pivots when the guess is good.

    The guide is the optimal vertex of the same LP at a smaller ``n``, spread out
    (:func:`countdp.design.seed.template_guide`) where that applies (and ``template``) and its
    simplex (dual, limited to :data:`countdp.design.seed.SIMPLEX_ITERATIONS`) ends optimal: with
    the template's basis statuses copied too, else (their basis was ill-conditioned: measured
    for WM, L0,1, n = 256, alpha = 0.91) from its point alone; else Clarabel's point on the
    scaled model (its ``AlmostSolved`` is fine: the point only seeds the basis).  Raises
    ``RuntimeError`` when the simplex fails from Clarabel's basis or runs out of ``iterations``
    (one limit, or the dual's and the primal's; the dual simplex, then the primal one: HiGHS's
    dual simplex stops at the huge duals of an ill-conditioned guess, measured in 14 of 48 cases
    at n = 64, which primal simplex solved).  ``Solved.guide`` says which guide was used, and why a template was not.

    ``accept``: a test of Clarabel's point (in ``lp``'s units); when it passes, that point is
    returned as it is (no basis; ``guide`` :data:`INTERIOR_GUIDE`), else the simplex goes on.
    The caller's proof of optimality goes there: Clarabel's point, DP-closed, is often proven
    outright where the simplex grinds (large optimal faces of L0,d; alpha = 0.99).  From
    :data:`countdp.design.seed.MIN_N` the point is tested first (a simplex costs seconds there),
    and when Clarabel ended 'AlmostSolved' nothing else is tried (``RuntimeError``: LP with RM,
    L1, n = 256, alpha = 0.99 ground through both 10 s simplices from that basis); below, only
    when the simplex from its basis has not ended within :data:`QUICK_VERTEX_WORK` (a
    vertex has exact zeros).  Where :func:`countdp.design.seed.point_before_template`, from
    ``MIN_N`` Clarabel's points (F substituted out first: :func:`interior_points`) are offered
    before a template is built.  Every limit counts iterations (:data:`SIMPLEX_SAFETY_SECONDS`).
    ``tol``: Clarabel's tolerances for its points (default :data:`GUIDE_CLARABEL_TOL`, which a point proven
    as it is needs; a template's own solve passes :func:`countdp.design.seed.template_clarabel_tol`)."""
    from countdp.design import seed

    col, row = scales(lp)
    scaled = scaled_model(lp, col, row)
    began, note, spent = time.perf_counter(), "", 0.0
    early = accept is not None and lp.n >= seed.MIN_N and seed.point_before_template(lp.problem)
    scaled_points, offered = _scaled_points(lp, scaled, early, tol), []
    if early:  # Clarabel's points (F substituted first) offered before any template
        for point in scaled_points:
            offered.append(point)
            interior = unscaled(point, col, row)
            if accept(interior):
                interior.seconds = time.perf_counter() - began
                return interior
        spent = time.perf_counter() - began
    began = time.perf_counter()
    try:
        found = seed.template_guide(lp) if template else None
    except RuntimeError as exc:
        found, note = None, f" ({exc})"
    spent += time.perf_counter() - began
    if found is not None:
        guide, basic, active, n0 = found
        point = replace(guide, y=guide.y / col, row_dual=guide.row_dual / row, col_dual=guide.col_dual * col)
        for prior in ((basic, active), None) if basic is not None else (None,):
            began = time.perf_counter()
            try:
                run = run_highs(lp, "simplex", SIMPLEX_SAFETY_SECONDS, start=guess_basis(scaled, point, prior),
                                iterations=seed.SIMPLEX_ITERATIONS)
            except RuntimeError as exc:
                spent += time.perf_counter() - began
                note = f" (the design at n = {n0} did not guide: {exc})"
                if "limit reached" in str(exc):
                    break  # the guess was feasible to work with, just far: the other one is no nearer
            else:
                run.seconds += spent
                run.guide = f"the design at n = {n0}" + ("" if prior is not None else ", its point only")
                return run
    ipm = offered[0] if offered else next(scaled_points)
    began, start = time.perf_counter(), []  # start: the basis read off ipm, once a simplex needs it
    interior = () if offered else (unscaled(ipm, col, row, INTERIOR_GUIDE + note),)
    points = (unscaled(point, col, row, INTERIOR_GUIDE + note) for point in scaled_points)

    def simplex(limit: int | None, primal: bool = False) -> Solved:
        if not start:
            start.append(guess_basis(scaled, ipm))
        return run_highs(lp, "simplex", SIMPLEX_SAFETY_SECONDS, start=start[0], primal=primal,
                         iterations=limit)

    dual_limit, primal_limit = iterations if isinstance(iterations, tuple) else (iterations, iterations)
    if accept is None:  # the dual simplex, then the primal one (the dual stops at huge duals)
        order = ((dual_limit, False), (primal_limit, True))
    elif lp.n < seed.MIN_N:  # a vertex if a few pivots find one, then the point, then more pivots
        quick_dual, quick_primal = work_limits(QUICK_VERTEX_WORK, lp)
        order = ((quick_dual, False), (quick_primal, True), ("point", None), (primal_limit, True))
    elif ipm.status == "Solved":
        order = (("point", None), (dual_limit, False), (primal_limit, True))
    else:  # an inaccurate point: its basis sends the simplex grinding
        order = (("point", None),)
    for step, (limit, primal) in enumerate(order, 1):
        if limit == "point":  # Clarabel's points not yet offered (interior_points)
            for point in itertools.chain(interior, points):
                if accept(point):
                    point.seconds += spent + time.perf_counter() - began
                    return point
            if step == len(order):
                raise RuntimeError(f"Clarabel's point ({ipm.status}) not proven; its basis not tried")
            continue
        try:
            run = simplex(limit, primal)
            break
        except RuntimeError:
            if step == len(order):  # the last simplex failed too
                raise
    run.seconds = ipm.seconds + spent + time.perf_counter() - began
    run.guide = "clarabel" + note
    return run


def run_highs(lp: ReducedLP, chosen: str, time_limit: float | None,
              tight_from: Solved | None = None, row_boost: float = 1.0, start=None, primal: bool = False,
              iterations: int | None = None) -> Solved:
    """HiGHS ``simplex`` or ``ipm`` (+ crossover) on the scaled model (:func:`scales`), with the
    basis of the vertex found (statuses do not change under scaling); values in ``lp``'s units.

    ``tight_from``: a previous run whose vertex broke a row by up to HiGHS's tolerance; simplex
    restarts from its basis with every row scaled up by ``row_boost`` (one of
    :data:`TIGHT_ROW_SCALES`), so the tolerance allows that much less (a few pivots to a
    feasible basis).  ``start``: a ``highspy.HighsBasis`` simplex starts from (e.g.
    :func:`guess_basis`).  Both warm starts price with :data:`WARM_EDGE_WEIGHTS`.  ``primal``:
    HiGHS's primal simplex instead of its dual simplex.  ``iterations``: HiGHS's simplex iteration
    limit ('Iteration limit reached' raises, as 'Time limit reached' does)."""
    highspy = load_highspy()

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", HIGHS_TOL)
    h.setOptionValue("dual_feasibility_tolerance", HIGHS_TOL)
    warm = start if tight_from is None else tight_from.highs_basis
    h.setOptionValue("solver", "simplex" if tight_from is not None or start is not None else chosen)
    if warm is not None:
        h.setOptionValue("simplex_dual_edge_weight_strategy", WARM_EDGE_WEIGHTS)
    if primal:
        h.setOptionValue("simplex_strategy", 4)
    if chosen == "ipm":
        h.setOptionValue("run_crossover", "on")
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if iterations is not None:
        h.setOptionValue("simplex_iteration_limit", int(iterations))
    LOG.info("HiGHS %s: %s rows, %s columns%s", "simplex" if warm is not None else chosen, f"{lp.A.shape[0]:,}",
             f"{lp.A.shape[1]:,}", ", from a guessed basis" if warm is not None else "")
    col, row = scales(lp)
    row = row * row_boost
    scaled = scaled_model(lp, col, row)
    h.passModel(highs_lp(scaled.A, scaled.cost, scaled.col_lower, scaled.col_upper, scaled.row_lower,
                         scaled.row_upper))
    if warm is not None:
        h.setBasis(warm)
    began = time.perf_counter()
    h.run()
    elapsed = time.perf_counter() - began
    status = h.getModelStatus()
    text = h.modelStatusToString(status)
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS {chosen} returned {text!r}")
    solution, basis = h.getSolution(), h.getBasis()
    basic, upper = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kUpper
    cs, rs = list(basis.col_status), list(basis.row_status)
    pattern = (np.array([c == basic for c in cs]), np.array([c == upper for c in cs]),
               np.array([r != basic for r in rs]), np.array([r == upper for r in rs]))
    if not basis.valid:
        pattern = None
    return Solved(np.asarray(solution.col_value, float) * col, np.asarray(solution.row_dual, float) * row,
                  np.asarray(solution.col_dual, float) / col, text, float(h.getInfo().objective_function_value),
                  elapsed, pattern, highs_basis=basis if basis.valid else None,
                  pivots=int(h.getInfo().simplex_iteration_count))


def polish_run(lp: ReducedLP, run: Solved) -> Solved:
    """The exact vertex and duals of ``run``'s basis (:func:`countdp.design.polish.basis_vertex`), if any."""
    from countdp.design.polish import basis_vertex

    if run.basis is None:
        return run
    found = basis_vertex(lp, *run.basis)
    if found is None:
        return run
    y, row_dual, col_dual = found
    return Solved(y, row_dual, col_dual, run.status, float(lp.cost @ y), run.seconds, run.basis, True, run.highs_basis,
                  run.guide)
