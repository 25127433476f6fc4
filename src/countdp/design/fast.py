"""Fast LP mechanism design: the same optimum as :func:`countdp.design.designer.design_lp`, a smaller model.

The plain formulation (``design_lp(..., backend="cvxpy")``) hands cvxpy one variable per entry
of ``P`` and every constraint of :func:`countdp.design.constraints.constraint_system`.  This module
builds an *equivalent* LP directly as a sparse matrix and passes it to HiGHS (``highspy``)
without a modelling layer.  Every step below either keeps the feasible set exactly, or is an
exact change of variables, so the optimal value is unchanged (tests compare against the cvxpy
formulation to 1e-7 on a grid of ``n``, ``alpha``, property sets and objectives).

Reductions (each recorded in ``Design.extra["reductions"]``):

1. **Closed forms** (no LP at all), only where a theorem gives the optimum:

   * ``GM``: objective L0 (= L0d:0), uniform weights, ``aggregate="sum"`` and GM satisfies
     every requested property (checked numerically on GM's matrix with the same operators as
     the LP, tolerance 1e-12).  Theorem 3: GM is an L0-optimal BasicDP mechanism, so the LP
     optimum with extra properties is >= L0(GM); GM is feasible, so it is optimal.  This covers
     BasicDP alone, and WH (+S, +RM, +RH) when ``n >= 2a/(1-a)`` (Lemma 2).
   * ``EM``: objective L0 and ``F`` requested, any weights and either aggregate.  Under F
     every column's L0 loss is ``(n+1)/n (1 - y)``, independent of the weights, so the sum and
     the max are both that value; Theorem 4: EM maximises ``y`` among fair BasicDP mechanisms,
     and EM has all seven properties, so it is feasible for any property subset.

2. **Implied constraints dropped** (the feasible set is unchanged; ``x >= 0`` is a bound):

   * RM => RH: ``P[i,i] - P[i,j]`` is a telescoping sum of RM rows, so every RH row is a
     non-negative combination of RM rows.  Likewise CM => CH.
   * CH => WH: summing ``P[j,j] >= P[i,j]`` over ``i`` gives ``(n+1) P[j,j] >= 1``.
   * RM halves the DP rows.  Left of the diagonal (``j+1 <= i``) RM gives
     ``P[i,j+1] >= P[i,j]``, hence ``P[i,j+1] >= P[i,j] >= alpha P[i,j]`` (``P >= 0``,
     ``alpha < 1``): the DP row ``P[i,j+1] >= alpha P[i,j]`` is implied.  Right of the diagonal
     (``j >= i``) RM gives ``P[i,j] >= P[i,j+1] >= alpha P[i,j+1]``: the DP row
     ``P[i,j] >= alpha P[i,j+1]`` is implied.  Only the rows bounding the entry *farther* from
     the diagonal from below (``far >= alpha near``) remain.

3. **Symmetry folded** (only when ``S`` is requested): the feasible set lies in
   ``{x : P[i,j] = P[n-i,n-j]}``, parametrised exactly by one variable per orbit
   ``{k, N*N-1-k}``: ``x = E y``.  Substituting gives ``(A E) y >= b`` and cost ``E^T c``,
   for *any* objective and weights (it is a change of variables on the feasible set, not the
   Theorem 1 argument, so it needs S requested but not a symmetric objective).  A row and its
   mirror image become identical and are dropped, and the S equalities become ``0 = 0``.

4. **Clean-up**: rows with one non-zero become variable bounds (WH's ``P[i,i] >= 1/N``, the
   DP rows whose two entries fold into one orbit), empty rows are dropped after checking
   them, exact duplicate rows are dropped.

The algorithm is chosen by size (``method="auto"``): HiGHS dual simplex (a vertex) for small
models, Clarabel's interior point method (tolerances 1e-10, QDLDL factorisation: see
:data:`CLARABEL_DIRECT_METHOD`; an optimal point, not necessarily a vertex) from
:data:`IPM_MIN_NNZ` non-zeros, which measured several times faster than HiGHS simplex or HiGHS
IPX + crossover on these models from n ~ 64 (benchmarks/).  An explicit
``method="simplex"`` or ``"ipm"`` (HiGHS IPX + crossover, a vertex) is honoured, so the figures
that need vertex solutions keep them.  The final matrix is certified alpha-DP with
:func:`countdp.privacy.certify.certify` like every other design.

**Accuracy and proof** (:func:`solve_proven`).  HiGHS runs on a scaled copy of the model
(column scale ``alpha^|i-j|``, floor :data:`COL_SCALE_FLOOR`; row scale 1/max coefficient)
with feasibility tolerances :data:`HIGHS_TOL`; its vertex is then recomputed exactly from the
basis by one sparse LU (:mod:`countdp.design.polish`), which also gives the duals.  The duals are
mapped to the rows of the full model and checked by the independent weak-duality routine of
:mod:`countdp.design.optimality` on the matrix after :func:`countdp.privacy.certify.certify`; the result is
``extra["optimality"]``.  If the gap does not close (or a solver fails, e.g. Clarabel's
``AlmostSolved``), the next method of :data:`FALLBACKS` is tried; an answer no method proves
is returned with ``status = "not proven optimal"`` and every attempt listed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from countdp.design.constraints import LinearSystem, dp, parse_properties, property_system
from countdp.design.polish import full_dual
from countdp.evaluate.metrics import loss_matrix, parse_objective

METHODS = ("auto", "simplex", "ipm", "clarabel")
"""Algorithms for the reduced model: HiGHS dual simplex, HiGHS interior point + crossover
(both vertices), or Clarabel's interior point (not a vertex); ``auto`` picks by model size
(see :func:`choose_method`)."""

IPM_MIN_NNZ = 8_000
"""``method="auto"`` uses an interior point method from this many constraint non-zeros (n ~ 48)."""

LARGE_METHOD = "clarabel"
"""The interior point method ``auto`` uses on large models (measured fastest: benchmarks/)."""

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

AUTO_MIN_N = 16
"""``design_lp(backend="auto")`` uses the fast path from this ``n`` (smaller models go to cvxpy,
whose vertex choice the small-n figures were made with; both give the same optimal value)."""

CHECK_CLOSED_FORM_MAX_N = 128
"""Up to this ``n`` a closed-form shortcut is also checked with an LP dual (one reduced solve);
above it the theorem alone stands (``extra["optimality"]["checked"] = False``)."""

GM_TOL = 1e-12
"""Largest property violation of GM's matrix accepted by the GM closed-form shortcut."""


@dataclass
class ReducedLP:
    """``min cost @ y`` s.t. ``row_lower <= A y <= row_upper``, ``col_lower <= y <= col_upper``.

    ``expand`` maps ``y`` back to ``x = P.ravel()`` (plus the minimax variable, if any, as the
    last entry), so ``x = expand @ y``.  ``row_origin[r]`` is the row of the full model of
    :func:`countdp.design.optimality.design_lp_model` (inequalities first, then equalities) that row
    ``r`` comes from; ``singletons`` holds the rows turned into bounds (``var``, ``coef``,
    ``lo``, ``hi``, ``origin``); ``model`` the arguments that rebuild the full model.
    """

    cost: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    expand: sp.csr_matrix
    n: int
    reductions: list[str] = field(default_factory=list)
    full_rows: int = 0
    full_cols: int = 0
    row_origin: np.ndarray | None = None
    singletons: dict | None = None
    model: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape


@dataclass
class FastResult:
    """What the fast path found: ``matrix`` (uncertified), how, and the LP's size."""

    matrix: np.ndarray
    solver: str
    method: str
    status: str
    solve_time: float
    build_time: float
    solver_objective: float
    extra: dict


def _is_uniform(weights: np.ndarray | None, n: int) -> bool:
    return weights is None or bool(np.allclose(weights, 1.0 / (n + 1), rtol=0, atol=1e-15))


def _pruned_dp(n: int, alpha: float, row_monotone: bool) -> tuple[LinearSystem, np.ndarray]:
    """The DP rows without those implied by RM (module docstring, item 2), and the kept rows' indices."""
    system = dp(n, alpha)
    if not row_monotone:
        return system, np.arange(system.A_ub.shape[0])
    N = n + 1
    i, j = np.divmod(np.arange(N * n), n)  # rows of each block: row i, pair (j, j+1)
    keep_forward = j < i  # P[i,j] >= a P[i,j+1]: implied by RM when j >= i
    keep_backward = j >= i  # P[i,j+1] >= a P[i,j]: implied by RM when j+1 <= i
    keep = np.flatnonzero(np.concatenate([keep_forward, keep_backward]))
    return LinearSystem(system.A_ub[keep], system.b_ub[keep], system.A_eq, system.b_eq), keep


def implied_drops(properties: tuple[str, ...]) -> tuple[str, ...]:
    """Requested properties whose rows are implied by other requested ones (RH, CH, WH)."""
    props = set(properties)
    drops = []
    if "RH" in props and "RM" in props:
        drops.append("RH")
    if "CH" in props and "CM" in props:
        drops.append("CH")
    if "WH" in props and ({"CH", "CM"} & props):
        drops.append("WH")
    return tuple(drops)


def _dedup_rows(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row ``(A[r], lo[r], hi[r])``."""
    A.sort_indices()
    nnz = np.diff(A.indptr)
    keep = []
    for k in np.unique(nnz):
        rows = np.flatnonzero(nnz == k)
        if k == 0:
            keep.append(rows[:1])
            continue
        pos = A.indptr[rows][:, None] + np.arange(k)[None, :]
        key = np.hstack([A.indices[pos].astype(float), A.data[pos], lo[rows, None], hi[rows, None]])
        _, first = np.unique(key, axis=0, return_index=True)
        keep.append(rows[np.sort(first)])
    return np.sort(np.concatenate(keep)) if keep else np.zeros(0, int)


def build_reduced_lp(n: int, alpha: float, properties: object = (), objective: object = "L0",
                     weights: np.ndarray | None = None, aggregate: str = "sum",
                     fold_symmetry: bool = True, drop_implied: bool = True) -> ReducedLP:
    """The design LP of :func:`countdp.design.designer.design_lp`, reduced (module docstring, 2-4)."""
    props = parse_properties(properties)
    obj = parse_objective(objective)
    N = n + 1
    size = N * N
    w = np.full(N, 1.0 / N) if weights is None else np.asarray(weights, float)
    reductions: list[str] = []

    drops = implied_drops(props) if drop_implied else ()
    if drops:
        reductions.append("implied:" + ",".join(drops))
    rm = drop_implied and "RM" in props
    if rm:
        reductions.append("dp-halved-by-RM")
    fold = fold_symmetry and "S" in props
    dp_rows, dp_kept = _pruned_dp(n, alpha, rm)
    pieces = [dp_rows]
    idx = np.arange(size).reshape(N, N)
    cols = sp.csr_matrix((np.ones(size), (np.tile(np.arange(N), N), idx.ravel())), shape=(N, size))
    pieces.append(LinearSystem(sp.csr_matrix((0, size)), np.zeros(0), cols, np.ones(N)))
    ub_origin, eq_origin = [dp_kept], [np.arange(N)]
    ub_off, eq_off = 2 * N * n, N  # offsets in the full model's inequality / equality rows
    for name in props:
        piece = property_system(name, n)
        if not (name in drops or (fold and name == "S")):
            pieces.append(piece)
            ub_origin.append(ub_off + np.arange(piece.A_ub.shape[0]))
            eq_origin.append(eq_off + np.arange(piece.A_eq.shape[0]))
        ub_off += piece.A_ub.shape[0]
        eq_off += piece.A_eq.shape[0]
    if aggregate == "max":
        ub_origin.append(ub_off + np.arange(N))
        ub_off += N
    origin = np.concatenate(ub_origin + [ub_off + o for o in eq_origin])
    system = pieces[0]
    for piece in pieces[1:]:
        system = system + piece
    full_rows = sum(constraint_rows(n, props))

    C = loss_matrix(n, obj)
    A_ub, b_ub, A_eq, b_eq = system.A_ub, system.b_ub, system.A_eq, system.b_eq
    if aggregate == "sum":
        cost = (C * w[None, :]).ravel()
        extra_cols = 0
    elif aggregate == "max":  # t - sum_i C[i,j] P[i,j] >= 0 for every column j; minimise t
        column_loss = sp.csr_matrix((C.ravel(), (np.tile(np.arange(N), N), np.arange(size))), shape=(N, size))
        A_ub = sp.vstack([sp.hstack([A_ub, sp.csr_matrix((A_ub.shape[0], 1))]),
                          sp.hstack([-column_loss, np.ones((N, 1))])], format="csr")
        b_ub = np.concatenate([b_ub, np.zeros(N)])
        A_eq = sp.hstack([A_eq, sp.csr_matrix((A_eq.shape[0], 1))], format="csr")
        cost = np.concatenate([np.zeros(size), [1.0]])
        extra_cols = 1
    else:
        raise ValueError(f"aggregate must be 'sum' or 'max', got {aggregate!r}")

    if fold:
        flat = np.arange(size)
        rep = np.minimum(flat, size - 1 - flat)
        _, orbit = np.unique(rep, return_inverse=True)
        m = int(orbit.max()) + 1
        E = sp.csr_matrix((np.ones(size), (flat, orbit)), shape=(size, m))
        reductions.append("symmetry-folded")
    else:
        m = size
        E = sp.identity(size, format="csr")
    if extra_cols:
        E = sp.block_diag([E, sp.identity(1)], format="csr")
    A = sp.vstack([A_ub, A_eq], format="csr") @ E
    A = A.tocsr()
    A.sum_duplicates()
    A.data[np.abs(A.data) < 1e-15] = 0.0
    A.eliminate_zeros()
    lo = np.concatenate([b_ub, b_eq])
    hi = np.concatenate([np.full(b_ub.size, np.inf), b_eq])
    cost = E.T @ cost
    ncol = m + extra_cols
    col_lo = np.concatenate([np.zeros(m), np.full(extra_cols, -np.inf)])
    col_hi = np.full(ncol, np.inf)

    nnz = np.diff(A.indptr)
    empty = np.flatnonzero(nnz == 0)
    if np.any(lo[empty] > 1e-12) or np.any(hi[empty] < -1e-12):
        raise ValueError("reduced LP has an infeasible empty row")  # pragma: no cover - cannot happen
    single = np.flatnonzero(nnz == 1)
    var = A.indices[A.indptr[single]]
    coef = A.data[A.indptr[single]]
    if single.size:
        low, high = lo[single] / coef, hi[single] / coef
        low, high = np.where(coef > 0, low, high), np.where(coef > 0, high, low)
        np.maximum.at(col_lo, var, low)
        np.minimum.at(col_hi, var, high)
        reductions.append("singletons-to-bounds")
    singletons = {"var": var, "coef": coef, "lo": lo[single], "hi": hi[single], "origin": origin[single]}
    multi = np.flatnonzero(nnz >= 2)
    A, lo, hi, origin = A[multi], lo[multi], hi[multi], origin[multi]
    keep = _dedup_rows(A, lo, hi)
    if keep.size < A.shape[0]:
        reductions.append("duplicate-rows")
    A, lo, hi, origin = A[keep], lo[keep], hi[keep], origin[keep]
    model = {"n": n, "alpha": alpha, "properties": props, "objective": obj, "weights": weights,
             "aggregate": aggregate, "folded": fold}
    return ReducedLP(cost=np.asarray(cost, float), A=A.tocsr(), row_lower=lo, row_upper=hi,
                     col_lower=col_lo, col_upper=col_hi, expand=E, n=n, reductions=reductions,
                     full_rows=full_rows + (N if extra_cols else 0), full_cols=size + extra_cols,
                     row_origin=origin, singletons=singletons, model=model)


def constraint_rows(n: int, properties: tuple[str, ...]) -> list[int]:
    """Rows of the plain formulation: non-negativity, column sums, DP, then each property."""
    N = n + 1
    rows = [N * N, N, 2 * N * n]
    rows += [sum(s.shape[0] for s in (property_system(p, n).A_ub, property_system(p, n).A_eq))
             for p in properties]
    return rows


def choose_method(lp: ReducedLP) -> str:
    """``simplex`` below :data:`IPM_MIN_NNZ` constraint non-zeros, else :data:`LARGE_METHOD`."""
    return "simplex" if lp.A.nnz < IPM_MIN_NNZ else LARGE_METHOD


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


def _solve_clarabel(lp: ReducedLP) -> Solved:
    """Clarabel's interior point method (not a vertex, no basis); ``AlmostSolved`` is returned
    too: the caller proves it optimal or falls back."""
    import clarabel

    A, lo, hi = lp.A, lp.row_lower, lp.row_upper
    eq = np.isfinite(hi) & (hi == lo)
    has_hi = np.isfinite(hi) & ~eq
    has_lo = np.isfinite(lo) & ~eq
    k = A.shape[1]
    eye = sp.identity(k, format="csr")
    fin_lo, fin_hi = np.isfinite(lp.col_lower), np.isfinite(lp.col_upper)
    blocks = [A[eq], -A[has_lo], A[has_hi], -eye[fin_lo], eye[fin_hi]]
    rhs = [lo[eq], -lo[has_lo], hi[has_hi], -lp.col_lower[fin_lo], lp.col_upper[fin_hi]]
    M = sp.vstack(blocks, format="csc")
    cones = [clarabel.ZeroConeT(int(eq.sum())), clarabel.NonnegativeConeT(M.shape[0] - int(eq.sum()))]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = CLARABEL_TOL
    settings.direct_solve_method = CLARABEL_DIRECT_METHOD
    # Iterative refinement of the KKT solves costs ~25% of the time; the answer is proven
    # optimal afterwards (or another method is tried), so it is not needed.
    settings.iterative_refinement_enable = False
    start = time.perf_counter()
    solution = clarabel.DefaultSolver(sp.csc_matrix((k, k)), lp.cost, M, np.concatenate(rhs), cones,
                                      settings).solve()
    elapsed = time.perf_counter() - start
    status = str(solution.status)
    if not status.endswith("Solved"):
        raise RuntimeError(f"Clarabel returned {status!r}")
    z = np.asarray(solution.z, float)
    sizes = np.cumsum([eq.sum(), has_lo.sum(), has_hi.sum(), fin_lo.sum()])
    z_eq, z_lo, z_hi, z_cl, z_ch = np.split(z, sizes)
    row_dual = np.zeros(A.shape[0])
    row_dual[eq], row_dual[has_lo] = -z_eq, z_lo
    row_dual[has_hi] -= z_hi
    col_dual = np.zeros(k)
    col_dual[fin_lo] += z_cl
    col_dual[fin_hi] -= z_ch
    return Solved(np.asarray(solution.x, float), row_dual, col_dual, status, float(solution.obj_val), elapsed)


def highs_lp(A: sp.spmatrix, cost: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray,
             row_lower: np.ndarray, row_upper: np.ndarray):
    """A ``highspy.HighsLp`` for ``min cost @ x`` s.t. ``row_lower <= A x <= row_upper`` and column
    bounds; infinite bounds (numpy ``inf``) become HiGHS's infinity."""
    import highspy

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


COL_SCALE_FLOOR = 1e-3
"""Smallest column scale: HiGHS's dual tolerance acts on ``scale * reduced cost``, so a tinier
scale would let it accept a basis whose reduced costs are wrong by ``1e-10 / scale``."""


def _scales(lp: ReducedLP) -> tuple[np.ndarray, np.ndarray]:
    """Column scales ``alpha^|i-j|`` (an entry's natural size: DP ties it to its row's diagonal
    by that factor) and row scales ``1 / max |coefficient|`` of the column-scaled rows.

    HiGHS's tolerances are absolute; without this an entry of size ``alpha^40 ~ 1e-12``
    (alpha = 1/2) can be left 0 beside a neighbour of 1e-10, breaking a DP row by ~1e-10."""
    N = lp.n + 1
    E = sp.csc_matrix(lp.expand)
    first = E.indices[E.indptr[:-1]]
    i, j = np.divmod(np.minimum(first, N * N - 1), N)
    d = np.where(first < N * N, np.abs(i - j), 0)
    col = np.maximum(lp.model["alpha"] ** d.astype(float), COL_SCALE_FLOOR)
    scaled = sp.csr_matrix(lp.A @ sp.diags(col))
    row = 1.0 / np.maximum(abs(scaled).max(axis=1).toarray().ravel(), 1e-300)
    return col, row


def _highs(lp: ReducedLP, chosen: str, threads: int | None, time_limit: float | None) -> Solved:
    """HiGHS ``simplex`` or ``ipm`` (+ crossover) on the scaled model (:func:`_scales`), with the
    basis of the vertex found (statuses do not change under scaling); values in ``lp``'s units."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", HIGHS_TOL)
    h.setOptionValue("dual_feasibility_tolerance", HIGHS_TOL)
    h.setOptionValue("solver", chosen)
    if chosen == "ipm":
        h.setOptionValue("run_crossover", "on")
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    col, row = _scales(lp)
    h.passModel(highs_lp(sp.diags(row) @ lp.A @ sp.diags(col), lp.cost * col, lp.col_lower / col,
                         lp.col_upper / col, lp.row_lower * row, lp.row_upper * row))
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
                  elapsed, pattern)


def _polish(lp: ReducedLP, run: Solved) -> Solved:
    """The exact vertex and duals of ``run``'s basis (:func:`countdp.design.polish.basis_vertex`), if any."""
    from countdp.design.polish import basis_vertex

    if run.basis is None:
        return run
    found = basis_vertex(lp, *run.basis)
    if found is None:
        return run
    y, row_dual, col_dual = found
    return Solved(y, row_dual, col_dual, run.status, float(lp.cost @ y), run.seconds, run.basis, True)


def solve_reduced(lp: ReducedLP, method: str = "auto", threads: int | None = None,
                  time_limit: float | None = None) -> tuple[np.ndarray, str, str, float, float]:
    """Solve (no polishing); return ``(x, method, status, objective, seconds)``; raise on failure."""
    chosen = choose_method(lp) if method == "auto" else method
    if chosen not in METHODS[1:]:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    run = _solve_clarabel(lp) if chosen == "clarabel" else _highs(lp, chosen, threads, time_limit)
    if chosen == "clarabel" and "Almost" in run.status:
        raise RuntimeError(f"Clarabel returned {run.status!r}")
    return lp.expand @ run.y, chosen, run.status, run.objective, run.seconds


FALLBACKS = {"clarabel": ("clarabel", "ipm", "simplex"), "simplex": ("simplex", "ipm"), "ipm": ("ipm", "simplex")}
"""Methods tried in turn until one answer is proven optimal (its certificate closes)."""


def prove(lp: ReducedLP, run: Solved, P: np.ndarray) -> dict:
    """The optimality certificate of the final matrix ``P`` with ``run``'s duals (independent check)."""
    from countdp.design.optimality import check_optimality, design_lp_model
    from countdp.design.polish import full_dual

    m = lp.model
    full = design_lp_model(m["n"], m["alpha"], m["properties"], m["objective"], m["weights"], m["aggregate"])
    x = P.ravel()
    if m["aggregate"] == "max":
        x = np.concatenate([x, [float((loss_matrix(m["n"], m["objective"]) * P).sum(axis=0).max())]])
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return check_optimality(full, x, u, v)


def solve_proven(lp: ReducedLP, method: str, threads: int | None = None) -> tuple[np.ndarray, str, Solved, dict]:
    """Solve, polish and prove, falling back along :data:`FALLBACKS`.

    Returns ``(P, method, run, optimality)`` for the first proven answer, else for the last
    answer found with ``optimality["certified"] = False`` and every attempt listed; raises
    ``RuntimeError`` if no method returned an answer at all.
    """
    from countdp.privacy.certify import certify

    N = lp.n + 1
    attempts, last = [], None
    for chosen in FALLBACKS[method]:
        try:
            run = _solve_clarabel(lp) if chosen == "clarabel" else _highs(lp, chosen, threads, None)
        except RuntimeError as exc:
            attempts.append(f"{chosen}: {exc}")
            continue
        run = _polish(lp, run)
        P, _ = certify((lp.expand @ run.y)[: N * N].reshape(N, N), lp.model["alpha"])
        optimality = prove(lp, run, P)
        optimality["method"], optimality["polished"] = chosen, run.polished
        last = (P, chosen, run, optimality)
        if optimality["certified"]:
            break
        attempts.append(f"{chosen}: certificate did not close (gap {optimality.get('gap')})")
    if last is None:
        raise RuntimeError("; ".join(attempts))
    if attempts:
        last[3]["attempts"] = attempts
    return last


def closed_form(n: int, alpha: float, properties: tuple[str, ...], objective: object,
                weights: np.ndarray | None, aggregate: str) -> tuple[str, np.ndarray] | None:
    """``("GM"|"EM", matrix)`` when a theorem says it is an optimum of this LP (docstring, 1)."""
    from countdp.mechanisms.closed_forms import explicit_fair, geometric

    obj = parse_objective(objective)
    if not (obj.name == "L0" or (obj.name == "L0d" and obj.d == 0)):
        return None
    if "F" in properties:
        return "EM", explicit_fair(n, alpha)
    if aggregate != "sum" or not _is_uniform(weights, n):
        return None
    P = geometric(n, alpha)
    x = P.ravel()
    if all(property_system(p, n).violation(x) <= GM_TOL for p in properties):
        return "GM", P
    return None


def fast_design(n: int, alpha: float, properties: object = (), objective: object = "L0",
                weights: np.ndarray | None = None, aggregate: str = "sum", method: str = "auto",
                use_closed_forms: bool = True, fold_symmetry: bool = True,
                drop_implied: bool = True, threads: int | None = None) -> FastResult:
    """Solve the design LP on the reduced model (or by a closed form), polished and proven.

    ``matrix`` is the polished answer before :func:`countdp.privacy.certify.certify` (which the caller
    applies; it is deterministic, so the certificate in ``extra["optimality"]`` is for the
    matrix the caller releases).  ``status`` is ``"optimal"`` only when that certificate
    closes, else ``"not proven optimal"``.
    """
    props = parse_properties(properties)
    start = time.perf_counter()
    if use_closed_forms:
        found = closed_form(n, alpha, props, objective, weights, aggregate)
        if found is not None:
            name, P = found
            theorem = "Theorem 4" if name == "EM" else "Theorem 3"
            from countdp.evaluate.metrics import objective_value

            value = objective_value(P, objective, weights, aggregate)
            optimality = {"certified": True, "proof": theorem, "checked": False}
            if n <= CHECK_CLOSED_FORM_MAX_N:  # also check it with an LP dual (weak duality)
                from countdp.privacy.certify import certify

                checked = prove_matrix(n, alpha, props, objective, weights, aggregate, certify(P, alpha)[0])
                optimality = {**checked, "proof": theorem, "checked": True}
            return FastResult(P, "closed-form", name, "optimal", time.perf_counter() - start, 0.0, value,
                              {"backend": "highs", "reductions": [f"closed-form:{name} ({theorem})"],
                               "optimality": optimality})
    large = None
    from countdp.design import large_n  # large n, L0: a small template LP, proven on the full model

    if (method == "auto" and use_closed_forms and n >= large_n.MIN_N
            and large_n.applies(n, props, objective, weights, aggregate)):
        P, large = large_n.large_n_design(n, alpha, props)
        if P is not None:
            return FastResult(P, "CLARABEL", "large-n template", "optimal",
                              time.perf_counter() - start, 0.0, large["optimality"]["primal_objective"],
                              {"backend": "highs", "reductions": ["large-n template"],
                               "optimality": large.pop("optimality"), "large_n": large})
    lp = build_reduced_lp(n, alpha, props, objective, weights, aggregate, fold_symmetry, drop_implied)
    build = time.perf_counter() - start
    chosen = choose_method(lp) if method == "auto" else method
    if chosen not in METHODS[1:]:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    _, used, run, optimality = solve_proven(lp, chosen, threads)
    N = n + 1
    P = (lp.expand @ run.y)[: N * N].reshape(N, N)
    extra = {"backend": "highs", "reductions": lp.reductions, "rows": int(lp.A.shape[0]),
             "cols": int(lp.A.shape[1]), "nnz": int(lp.A.nnz), "full_rows": int(lp.full_rows),
             "full_cols": int(lp.full_cols), "build_time": build, "optimality": optimality}
    if used == "clarabel":
        extra["kkt_solver"] = CLARABEL_DIRECT_METHOD
    solver, label = {"simplex": ("HIGHS", "simplex"), "ipm": ("HIGHS", "ipm+crossover"),
                     "clarabel": ("CLARABEL", "ipm")}[used]
    if large is not None:
        extra["large_n"] = large
    status = "optimal" if optimality["certified"] else "not proven optimal"
    return FastResult(P, solver, label, status, run.seconds, build, run.objective, extra)


def prove_matrix(n: int, alpha: float, properties: object, objective: object, weights: np.ndarray | None,
                 aggregate: str, matrix: np.ndarray) -> dict:
    """``extra["optimality"]`` for a matrix found elsewhere (e.g. the plain cvxpy model).

    A dual of the design LP is computed on the reduced model (:func:`solve_proven`) and the
    independent check of :mod:`countdp.design.optimality` is run with *that* dual against ``matrix``:
    weak duality does not care where the dual came from, so this proves ``matrix`` optimal
    (to the gap) or reports that it is not.
    """
    from countdp.design.optimality import check_optimality, design_lp_model

    props = parse_properties(properties)
    lp = build_reduced_lp(n, alpha, props, objective, weights, aggregate)
    try:
        _, used, run, _ = solve_proven(lp, choose_method(lp))
    except RuntimeError as exc:
        return {"certified": False, "reason": f"no dual: {exc}"}
    full = design_lp_model(n, alpha, props, objective, weights, aggregate)
    x = np.asarray(matrix, float).ravel()
    if aggregate == "max":
        x = np.concatenate([x, [float((loss_matrix(n, objective) * matrix).sum(axis=0).max())]])
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    result = check_optimality(full, x, u, v)
    result["dual_from"] = f"reduced model, {used}"
    return result
