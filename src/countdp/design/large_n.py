"""Large-n designs by aggregation onto a small template, with a certificate of optimality.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]``, ``N = n + 1``, ``x = P.ravel()``,
``alpha = e^-eps``; the LP is :func:`countdp.design.optimality.design_lp_model` for objective L0,
L0d, L1 or L2 (:data:`OBJECTIVES`), uniform weights and ``aggregate="sum"``.

**Structure used.**  Far from the two corners an optimal design looks like GM: along the
diagonal it is translation invariant, and away from the diagonal it decays by ``alpha`` per
step.  An entry ``(i, j)`` is described by three distances: ``a = min(i, j)`` (to the top-left
corner), ``b = n - max(i, j)`` (to the bottom-right one) and ``e = |i - j|`` (to the diagonal),
``a + e + b = n``.  Clipping each at a width ``W`` and giving the remainder to one unclipped
distance (``e`` first, then ``a``, then ``b``) sends ``(i, j)`` to an entry ``(i0, j0)`` of a
template of size ``n0 + 1`` (``n0 = 3 W + 4``) with the same clipped distances, the same side of
the diagonal, and ``e - e0`` extra diagonal steps (:func:`feature_map`).

**Two small LPs.**  The primal is restricted to ``x = E z`` with ``x[i, j] = alpha^e z[i0, j0]``
(``E`` is a weighted copy map; ``z`` is the template entry over its natural size ``alpha^e0``);
the dual to ``u = F y0``, every constraint row of the big model taking the multiplier of the
template row that its first entry maps to (level ``W + 1``; S-multipliers 0: by Theorem 1 the
LP without S has the same optimum).  Both restrictions are exact LPs of template size (rows of the
big model that become identical are merged); each gives a feasible point of the big primal,
resp. dual, so their optimal values bracket the big optimum.

For L0 two cheaper LPs stand in, both proven on the full model all the same.  The template is
solved without S (the feature map is not mirror symmetric, so S's rows would tie unrelated
template entries: LP with CH and S, n = 256, alpha = 0.93 did not close, gap 4.6e-9) and ``E z``
averaged with its mirror image (Theorem 1).  With CM the restricted dual is that of the LP with
CH in place of CM, its multipliers spread over the CM rows (:func:`dual_properties`).

**Other objectives: the support dual.**  For L0d, L1 and L2 the restricted primal is still exact
(the optimal designs have the same structure), but copying multipliers is not: far from the
diagonal L0's costs are constant, theirs grow with ``|i - j|``, and so do the DP multipliers.
Only *which* rows carry a multiplier is taken from the template (the general LP's dual at size
``n0``, copied by ``F``); the values, and the exact vertex, solve the complementary-slackness
system on the full model by one sparse LU (:func:`_support_dual`).  Measured (n = 128 and 256,
WM and LP with CH, RM): this closes for alpha in about [0.6, 0.7]; below, the template's dual
misses active rows (degenerate there), above, its corners are wider than ``W`` and copying spreads
property multipliers to rows that need none.  Each failure costs about 1 s at n = 256 and is
reported; the caller then solves the general LP.

**Correctness does not rest on the structure.**  The expanded primal ``E z`` (after the float
DP certificate of :func:`countdp.privacy.certify.certify`) and the expanded dual ``F y0`` are checked by
the independent weak-duality routine :func:`countdp.design.optimality.check_optimality` on the full
model (or the support dual's vertex and dual); only a closed gap (``<= 1e-9`` relative) is
reported as optimal.  If the structure does
not hold (corners wider than ``W``, ``alpha`` near 1, ``n`` too small), the gap stays open, the
next ``W`` is tried, and in the end ``None`` is returned with the reason: the caller falls back
to the general LP.
"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from countdp.design.constraints import parse_properties
from countdp.design.model import DesignProblem

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

OBJECTIVES = ("L0", "L0d", "L1", "L2")
"""Objectives of the path: L0 with the copied dual, the others with the support dual."""

CORNER_DECAY = 0.25
"""L0's template width ``W`` is the smallest multiple of 4 (at least :data:`MIN_WIDTH`) with
``alpha^W`` at most this (:func:`template_widths`): the optimal corners are about
``log(0.27) / log(alpha)`` wide, so a narrower template cannot close.  Measured (L0, WM, n = 512,
widths 16/32/64, alpha from 0.8 to 0.98): every width that closed had ``alpha^W <= 0.271``
(alpha = 0.96, W = 32), every one that failed ``>= 0.274`` (0.98, W = 64; next 0.313: 0.93, W = 16).
At n = 1024, alpha = 0.98, LP with CH and WM: W = 64 (0.274) did not close (gap 1.6e-8), W = 72
(0.233) closed in 14 and 21 s."""

MIN_WIDTH = 16
"""The narrowest template width (alpha <= 0.917)."""

WIDENING = 1.5
"""When the first width does not close, one template this much wider is tried (if it fits)."""

SUPPORT_CORNER_DECAY = 0.05
""":data:`CORNER_DECAY` for the other objectives, whose support dual needs the corners well inside
``W``.  Measured at n = 256 (L1, L2, L0,1 on LP with RH+CM, WM, LP with CH+RM; alpha 0.55 to
0.91): it closed in 2 of 9 at alpha = 0.8 (``alpha^16 = 0.028``), in none at 0.85 (0.074) and
0.91 (0.22), where each failure cost 0.2 to 1.1 s."""

SUPPORT_WIDTHS = (16,)
"""Template widths tried for the other objectives: the support dual solves the general LP at
template size, which at ``W = 32`` (``n = 100``) costs most of what the path saves at ``n = 256``."""

DUAL_SIMPLEX_WORK = 5e8
"""Work (simplex iterations times rows) given to HiGHS's primal simplex on the restricted dual
(:func:`_copied_duals`): a count, not a time, so that the path taken is the same on any machine
and under any load.  Measured (L0, n = 256 and 512, alpha 0.5 to 0.95, WM, WH, LP with CH+RM, CM,
RH+CH, the dual of CM's LP itself): W = 16 (about 1,900 rows) at most 6,090 iterations (0.6 s);
W = 32 (about 7,000 rows) 17,761 to 27,869 (1.2e8 to 2e8: 2.9 to 8.8 s); W = 64 (25,873 rows)
61,196 (37 s).  With CM's dual taken on CH, LP with CM, n = 128, alpha = 0.95, W = 32: 3.3 s,
between 1.6e8 (stopped) and 1e9."""

DUAL_SIMPLEX_ROWS = 4000
"""Restricted duals with more rows than this (template entries: about 2,000 at ``W = 16``, 7,000
at 32, 26,000 at 64) go straight to Clarabel.  Measured with CM's dual taken on CH
(:func:`dual_properties`), n = 256, alpha = 0.95, W = 32: LP with CM, simplex 2.3 s, Clarabel
0.46 s (both proven); before, the simplex on the CM dual used up its :data:`DUAL_SIMPLEX_WORK`
in 3.8 s and Clarabel answered."""

SUPPORT_TOL = 1e-9
"""A template multiplier below this fraction of the largest counts as zero (rounding of its dual)."""

MAX_PINNED = 8
"""Most surplus support rows the support dual pins by dense random rows (else it gives up);
measured 0 or 2 where it closes."""

REFINEMENTS = 3
"""Steps of iterative refinement of the support dual's sparse solve."""

MIN_N = 160
"""The hook in :func:`countdp.design.fast.fast_design` tries this path from this ``n``: WM at
alpha = 0.91 measured 1.0 / 2.8 / 4.4 s on the general path and 1.8 / 2.0 / 1.9 s here at
n = 128 / 160 / 192 (one run, quiet machine)."""


def applies(n: int, properties: tuple[str, ...], objective, weights, aggregate: str) -> bool:
    """True when the large-n path is meant for this LP: L0, L0d, L1 or L2, uniform weights, sum,
    CM or CH, no F."""
    from countdp.design.fast import _is_uniform
    from countdp.evaluate.metrics import parse_objective

    obj = parse_objective(objective)
    props = set(properties)
    return (obj.name in OBJECTIVES and aggregate == "sum" and _is_uniform(weights, n) and "F" not in props
            and bool(props & {"CM", "CH"}))


def template_widths(alpha: float, objective: object = "L0") -> tuple[int, ...]:
    """The template widths tried in turn: for L0 the narrowest that holds the corners
    (:data:`CORNER_DECAY`) and one :data:`WIDENING` times wider; for the other objectives
    :data:`SUPPORT_WIDTHS` where ``alpha^W <=`` :data:`SUPPORT_CORNER_DECAY`."""
    if not _is_l0(objective):
        return tuple(W for W in SUPPORT_WIDTHS if alpha ** W <= SUPPORT_CORNER_DECAY)
    corner = np.log(CORNER_DECAY) / np.log(alpha) if 0 < alpha < 1 else 0.0
    W = max(MIN_WIDTH, 4 * int(np.ceil(corner / 4)))
    return W, 4 * int(np.ceil(WIDENING * W / 4))


def dual_properties(props: tuple[str, ...]) -> tuple[str, ...]:
    """The property set whose restricted dual proves L0 with ``props``: with CM, the LP with CH
    in place of CM (:mod:`countdp.design.cm_relaxation`; its dual, CH's multipliers spread over the
    CM rows, is a dual of the LP with CM), else ``props``.  Its restricted dual is cheaper and more
    accurate: LP with CM, n = 256, alpha = 0.95, W = 32: Clarabel 0.46 s against 1.3 s
    ('AlmostSolved', after 3.8 s of simplex past its budget), gaps 4e-11 and 6e-12; LP with RH
    and CM, n = 1024, alpha = 0.97, W = 64: 6.4 s 'Solved', gap 1.2e-12, against 27 s
    'AlmostSolved', gap 1.9e-8 (not proven; the general path then ran out of time)."""
    from countdp.design.cm_relaxation import relaxed_properties

    return relaxed_properties(props) if "CM" in props else props


def _is_l0(objective) -> bool:
    from countdp.evaluate.metrics import parse_objective

    return parse_objective(objective).name == "L0"


def feature_map(i: np.ndarray, j: np.ndarray, n: int, n0: int, W: int) -> tuple[np.ndarray, ...]:
    """Template entry ``(i0, j0)`` of entry ``(i, j)`` and the extra distance ``e - e0`` (docstring)."""
    a, b, d = np.minimum(i, j), n - np.maximum(i, j), i - j
    e = np.abs(d)
    a1, b1, e1 = np.minimum(a, W), np.minimum(b, W), np.minimum(e, W)
    e0 = np.where(e >= W, n0 - a1 - b1, e1)
    a0 = np.where((e < W) & (a >= W), n0 - e1 - b1, a1)
    b0 = n0 - a0 - e0
    lo, hi = a0, n0 - b0
    return np.where(d >= 0, hi, lo), np.where(d >= 0, lo, hi), e - e0


def _row_entries(n: int, props: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first entry ``(i, j)`` of every inequality row of the full model, block by block."""
    N = n + 1
    i, j = np.divmod(np.arange(N * n), n)
    blocks = [(i, j), (i, j)]  # DP forward, DP backward
    ii, jj = np.indices((N, N))
    for name in props:
        if name in ("RM", "CM"):
            first, second = (jj < ii, jj > ii) if name == "RM" else (ii > jj, ii < jj)
            blocks.append((np.concatenate([ii[first], ii[second]]), np.concatenate([jj[first], jj[second]])))
        elif name in ("RH", "CH"):
            off = ii != jj
            blocks.append((ii[off], jj[off]))
        elif name == "WH":
            blocks.append((np.arange(N), np.arange(N)))
        elif name != "S":
            raise ValueError(f"large-n path does not handle property {name}")
    return blocks


def _row_map(n: int, n0: int, W: int, props: tuple[str, ...]) -> np.ndarray:
    """For every inequality row of the size-``n`` model, the template row it copies."""
    N0 = n0 + 1
    out, offset = [], 0
    for (pi, pj), (qi, qj) in zip(_row_entries(n, props), _row_entries(n0, props), strict=True):
        table = np.full((N0, N0), -1)
        table[qi, qj] = offset + np.arange(qi.size)
        i0, j0, _ = feature_map(pi, pj, n, n0, W + 1)
        rows = table[i0, j0]
        if np.any(rows < 0):
            raise ValueError("template row missing")  # pragma: no cover - the map keeps the block
        out.append(rows)
        offset += qi.size
    return np.concatenate(out)


def _cancel(A: sp.csr_matrix, col: np.ndarray, weight: np.ndarray, ncol: int) -> sp.csr_matrix:
    """``A @ E`` (``E`` maps entry ``k`` to ``weight[k] * z[col[k]]``) with the coefficients
    that cancel in exact arithmetic (``alpha^(k+1)`` against ``alpha * alpha^k``) set to zero: a
    rounding residue would otherwise become a spurious row ``-tiny * z >= 0`` once rows are
    normalised."""
    A = A.tocoo()
    if A.nnz == 0:  # e.g. no one-entry rows: a property set without WH
        return sp.csr_matrix((A.shape[0], ncol))
    key = A.row.astype(np.int64) * ncol + col[A.col]
    order = np.argsort(key, kind="stable")
    key, terms = key[order], (A.data * weight[A.col])[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    value = np.add.reduceat(terms, first)
    size = np.add.reduceat(np.abs(terms), first)
    keep = np.abs(value) > 1e-12 * size
    rows, cols = np.divmod(key[first][keep], ncol)
    return sp.csr_matrix((value[keep], (rows, cols)), shape=(A.shape[0], ncol))


def _merge_rows(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray):
    """``A``, ``lo``, ``hi`` without exact duplicate rows and without empty rows (checked)."""

    A = A.tocsr()
    A.sum_duplicates()
    A.eliminate_zeros()
    empty = np.diff(A.indptr) == 0
    if np.any(lo[empty] > 0) or np.any(hi[empty] < 0):
        raise ValueError("restricted LP has an infeasible empty row")
    keep = np.flatnonzero(~empty)
    A, lo, hi = A[keep], lo[keep], hi[keep]
    keep = _first_of_each(A, lo, hi)
    return A[keep], lo[keep], hi[keep]


def _first_of_each(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row ``(A[r], lo[r], hi[r])``: rows are
    grouped by a 64-bit hash of their exact bits, then every row is compared with its group's
    first row (a collision falls back to :func:`countdp.design.reduce._dedup_rows`)."""
    from countdp.design.reduce import _dedup_rows, row_hashes

    A.sort_indices()  # the comparison below goes entry by entry
    h = row_hashes(A, lo, hi)
    nnz = np.diff(A.indptr)
    row = np.repeat(np.arange(A.shape[0]), nnz)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    rep = first[inverse]
    same = (nnz == nnz[rep]) & (lo == lo[rep]) & (hi == hi[rep])
    start, rstart = A.indptr[row], A.indptr[rep[row]]
    other = np.minimum(rstart + np.arange(A.nnz) - start, max(A.nnz - 1, 0))
    same_entry = (A.indices == A.indices[other]) & (A.data == A.data[other])
    ok = same.copy()
    np.logical_and.at(ok, row, same_entry)
    if not ok.all():
        return _dedup_rows(A, lo, hi)  # pragma: no cover - a 64-bit hash collision
    return np.sort(first)


def _solve(A, cost, col_lo, col_hi, row_lo, row_hi, work: float,
           time_limit: float) -> tuple[np.ndarray, np.ndarray] | None:
    """HiGHS primal simplex, then the exact vertex and duals of its basis (:mod:`countdp.design.polish`);
    ``None`` past ``work`` (iterations times rows) or ``time_limit`` seconds.

    The restricted dual is wide (about six columns per row); primal simplex measured 2-6x faster
    than dual simplex on it (WM, n = 256, alpha in {0.62, 0.8, 0.91, 0.95}; one run)."""
    from countdp.design.backends import HIGHS_TOL, highs_lp
    from countdp.design.highspy_loader import load_highspy
    from countdp.design.polish import basis_vertex

    highspy = load_highspy()

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", HIGHS_TOL)
    h.setOptionValue("dual_feasibility_tolerance", HIGHS_TOL)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("simplex_iteration_limit", int(work / max(1, A.shape[0])))
    h.setOptionValue("simplex_strategy", 4)  # primal simplex
    h.passModel(highs_lp(A, cost, col_lo, col_hi, row_lo, row_hi))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    basis = h.getBasis()
    basic, upper = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kUpper
    cs, rs = list(basis.col_status), list(basis.row_status)
    lp = SimpleNamespace(A=sp.csr_matrix(A), cost=np.asarray(cost, float), col_lower=col_lo, col_upper=col_hi,
                         row_lower=row_lo, row_upper=row_hi)
    found = basis_vertex(lp, np.array([c == basic for c in cs]), np.array([c == upper for c in cs]),
                         np.array([r != basic for r in rs]), np.array([r == upper for r in rs]))
    if found is None:
        sol = h.getSolution()
        return np.asarray(sol.col_value, float), np.asarray(sol.row_dual, float)
    return found[0], found[1]


def _solve_ipm(A, cost, col_lo, col_hi, lo, hi) -> np.ndarray | None:
    """Clarabel (interior point, tolerances 1e-12, iterative refinement on) on a restricted LP:
    the point clipped to its bounds, or ``None``.  For the primal: column sums carry
    coefficients down to ``alpha^n``, which HiGHS drops (``small_matrix_value`` >= 1e-12),
    making the model look infeasible; Clarabel keeps them.  For the dual it is the fallback
    when HiGHS's simplex is slow (measured 10-20x slower on wide templates).  Neither point
    needs to be a vertex: the certificate checks both."""
    import clarabel

    from countdp.design.backends import CLARABEL_DIRECT_METHOD, CLARABEL_TOL

    eq = np.isfinite(hi) & (hi == lo)
    has_lo, has_hi = np.isfinite(lo) & ~eq, np.isfinite(hi) & ~eq
    eye = sp.identity(A.shape[1], format="csr")
    fin_lo, fin_hi = np.isfinite(col_lo), np.isfinite(col_hi)
    M = sp.vstack([A[eq], -A[has_lo], A[has_hi], -eye[fin_lo], eye[fin_hi]], format="csc")
    rhs = np.concatenate([lo[eq], -lo[has_lo], hi[has_hi], -col_lo[fin_lo], col_hi[fin_hi]])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = CLARABEL_TOL
    settings.direct_solve_method = CLARABEL_DIRECT_METHOD
    cones = [clarabel.ZeroConeT(int(eq.sum())), clarabel.NonnegativeConeT(M.shape[0] - int(eq.sum()))]
    k = A.shape[1]
    solution = clarabel.DefaultSolver(sp.csc_matrix((k, k)), np.asarray(cost, float), M, rhs, cones,
                                      settings).solve()
    if not str(solution.status).endswith("Solved"):
        return None
    return np.clip(np.asarray(solution.x, float), col_lo, col_hi)


def _maps(n: int, n0: int, W: int, alpha: float, props: tuple[str, ...]):
    """``(E, F, r0, col, weight)``: ``E`` (entries <- template entries, weights ``alpha^|i-j|``)
    and ``F`` (the inequality rows and column sums of the LP with ``props`` <- its ``r0`` template
    rows and the template's column sums), as sparse matrices."""
    N, N0 = n + 1, n0 + 1
    ii, jj = np.indices((N, N), dtype=np.int32)
    i0, j0, _ = feature_map(ii.ravel(), jj.ravel(), n, n0, W)
    col = i0 * N0 + j0
    weight = (alpha ** np.arange(N, dtype=float))[np.abs(ii - jj).ravel()]
    E = sp.csr_matrix((weight, (np.arange(N * N), col)), shape=(N * N, N0 * N0))
    rows_ub = _row_map(n, n0, W, props)
    r0 = int(rows_ub.max()) + 1
    cols_eq, _, _ = feature_map(np.arange(N), np.arange(N), n, n0, W + 1)  # column sum j copies j0
    m = rows_ub.size
    F = sp.block_diag([sp.csr_matrix((np.ones(m), (np.arange(m), rows_ub)), shape=(m, r0)),
                       sp.csr_matrix((np.ones(N), (np.arange(N), cols_eq)), shape=(N, N0))], format="csr")
    return E, F, r0, col, weight


def _template(full, maps, n: int, alpha: float, props: tuple[str, ...], W: int, m: int, time_limit: float,
              l0: bool = True):
    """``(z, duals, info)``: the optimal template primal and candidates for the template dual
    (:func:`_copied_duals`) of the two restricted LPs (docstring).

    The local rows (DP, RM, CM, RH, CH, S: two entries each) and the restricted dual are built
    at size ``m <= n``, where they are the same rows as at size ``n`` (every map is local); the
    rows that are not local (column sums, WH's ``1/(n+1)``) and the cost are those of size ``n``
    (``full``).  Each dual is in units of size ``m``'s costs ``1/m``; ``duals`` is ``None`` for
    objectives other than L0, whose dual :func:`_support_dual` builds on the full model.  With CM,
    they are duals of the LP with CH in place of CM (:func:`dual_properties`)."""
    from countdp.design.optimality import design_lp_model

    # L0: S is free (Theorem 1), so the template is solved without it and E z averaged with its
    # mirror image (:func:`_attempt`); the dual's S multipliers are 0
    template_props = tuple(p for p in props if p != "S") if l0 else props
    small = full if m == n and template_props == props else design_lp_model(m, alpha, template_props)
    small_maps = maps if m == n else _maps(m, 3 * W + 4, W, alpha, template_props)
    z, info = _restricted_primal(full, small, maps, small_maps, n, m, W)
    if z is None:
        return None, None, info
    if not l0:
        return z, None, info
    dual_props = dual_properties(template_props)
    if dual_props != template_props:
        small, small_maps = design_lp_model(m, alpha, dual_props), _maps(m, 3 * W + 4, W, alpha, dual_props)
    return z, _copied_duals(small, small_maps, m, W, time_limit), info


def _restricted_primal(full, small, maps, small_maps, n: int, m: int, W: int):
    """``(z, info)``: min ``c^T E z`` s.t. ``A E z >= b`` (rows merged), ``z >= 0`` (docstring)."""
    N, Nm, N0 = n + 1, m + 1, 3 * W + 5
    _, _, _, col, weight = maps
    _, _, _, col_m, weight_m = small_maps
    local = np.flatnonzero(np.diff(small.A_ub.indptr) >= 2)  # all but WH's one-entry rows
    one = np.flatnonzero(np.diff(full.A_ub.indptr) == 1)
    parts = [_cancel(small.A_ub[local], col_m, weight_m, N0 * N0), _cancel(full.A_ub[one], col, weight, N0 * N0),
             _cancel(full.A_eq[:N], col, weight, N0 * N0)]
    if small.A_eq.shape[0] > Nm:
        parts.append(_cancel(small.A_eq[Nm:], col_m, weight_m, N0 * N0))
    A = sp.vstack(parts, format="csr")
    lo = np.concatenate([small.b_ub[local], full.b_ub[one], full.b_eq[:N], small.b_eq[Nm:]])
    hi = np.concatenate([np.full(local.size + one.size, np.inf), full.b_eq[:N], small.b_eq[Nm:]])
    scale = 1.0 / np.maximum(abs(A).max(axis=1).toarray().ravel(), 1e-300)  # exact merging of scaled copies
    A, lo, hi = _merge_rows(sp.diags(scale) @ A, lo * scale, hi * scale)
    k = A.shape[1]
    z = _solve_ipm(A, maps[0].T @ full.c, np.zeros(k), np.full(k, np.inf), lo, hi)
    if z is None:
        return None, f"W={W}: restricted primal not solved"
    return z, {"primal_rows": int(A.shape[0])}


def _copied_duals(small, small_maps, m: int, W: int, time_limit: float):
    """Solutions ``y0`` of the restricted dual, max ``b^T F y0`` s.t. ``(A^T F y0)_p <= c_p`` for
    every entry ``p``, ``y0_ub >= 0`` (L0: ``small`` has the L0 costs of size ``m``), computed
    lazily, the cheaper first: up to :data:`DUAL_SIMPLEX_ROWS` rows HiGHS's vertex (its exact
    duals, polished, close the gap best), then Clarabel's point; on wider templates Clarabel's
    point first (LP with RM and CM, n = 256, alpha = 0.93, W = 32: gap 7.2e-10, the vertex's 8.9e-13)."""
    from countdp.design.backends import SIMPLEX_SAFETY_SECONDS

    Nm, N0 = m + 1, 3 * W + 5
    _, F, r0, _, _ = small_maps
    A_rows = sp.vstack([small.A_ub, small.A_eq[:Nm]], format="csr")
    D, dlo, dhi = _merge_rows((A_rows.T @ F).tocsr(), np.full(Nm * Nm, -np.inf), small.c.copy())
    gain = F.T @ np.concatenate([small.b_ub, small.b_eq[:Nm]])
    ylo = np.concatenate([np.zeros(r0), np.full(N0, -np.inf)])
    yhi = np.full(r0 + N0, np.inf)

    def vertex():
        found = _solve(D, -gain, ylo, yhi, dlo, dhi, DUAL_SIMPLEX_WORK, min(time_limit, SIMPLEX_SAFETY_SECONDS))
        return None if found is None else found[0]

    def point():  # in units where the costs are 1 (Clarabel's tolerances act relative to them)
        found = _solve_ipm(D, -gain, ylo, yhi, dlo * m, dhi * m)
        return None if found is None else found / m

    for solve in (vertex, point) if D.shape[0] <= DUAL_SIMPLEX_ROWS else (point, vertex):
        y0 = solve()
        if y0 is not None:
            yield y0


def _attempt(problem: DesignProblem, W: int, time_limit: float, template_size: int | None = None) -> dict:
    """One template width: the restricted LPs (at ``template_size``, default ``n``), then the
    expansion to size ``n`` and the certificate on the full model, ``problem.lp()`` (module docstring)."""
    n, alpha, props, objective, full = problem.n, problem.alpha, problem.properties, problem.objective, problem.lp()
    N, n0 = n + 1, 3 * W + 4
    m = min(n, template_size or n)
    l0 = _is_l0(objective)
    dual_props = dual_properties(props) if l0 else props
    maps = _maps(n, n0, W, alpha, dual_props)  # F copies the rows of the LP whose dual is copied
    z, duals, info = _template(full, maps, n, alpha, props, W, m, time_limit, l0)
    if z is None:
        return {"certified": False, "reason": info}
    info = {"template_n": n0, "width": W, "solved_at_n": m, **info}
    E, F = maps[0], maps[1]
    raw = (E @ z).reshape(N, N)
    if not l0:
        try:
            y, raw = _support_dual(full, maps, raw, alpha, props, objective, W)
        except ValueError as exc:
            return {"certified": False, "reason": f"W={W}: {exc}"}
        return _checked(problem, raw, y, props, info)
    if "S" in props:  # the template was solved without S (:func:`_template`)
        raw = (raw + raw[::-1, ::-1]) / 2.0
    if dual_props != props:
        info["dual"] = "the template's with CH in place of CM, CH's multipliers spread over the CM rows"
    result = {"certified": False, "reason": f"W={W}: restricted dual not solved"}
    for y0 in duals:  # the objective's costs are 1/n: the same dual, rescaled
        result = _checked(problem, raw, F @ (y0 * (m / n)), dual_props, info)
        if result["certified"]:
            break
    return result


def _checked(problem: DesignProblem, raw: np.ndarray, y: np.ndarray, dual_props: tuple[str, ...],
             info: dict) -> dict:
    """The certificate of ``certify(raw)`` on ``problem``'s LP with the multipliers ``y`` of the
    inequality rows and column sums of the LP with ``dual_props`` (CH's spread over CM's rows)."""
    from countdp.design.cm_relaxation import spread_dual
    from countdp.design.optimality import check_optimality, lower_column_multipliers
    from countdp.design.polish import certified_and_proven

    full, N = problem.lp(), problem.N
    u, v = y[: y.size - N], np.concatenate([y[y.size - N:], np.zeros(full.b_eq.size - N)])
    if dual_props != problem.properties:  # a dual of the LP with CM
        relaxed = DesignProblem(problem.n, problem.alpha, dual_props, problem.objective, problem.weights,
                                problem.aggregate)
        u, v = spread_dual(relaxed, problem, u, v)
    # Tiny dual infeasibility (rounding) is moved into each column's sum multiplier (as polish does).
    v = lower_column_multipliers(full, u, v)
    # UM's repair of an interior point costs lambda times UM's loss; where that keeps the gap open
    # the DP closure, which moves each column by about the violation, is proven instead
    raw, _, repair, result = certified_and_proven(
        raw, problem.alpha, lambda P: check_optimality(full, P.ravel(), u, v))
    result.update({"repair_lambda": repair.repair_lambda, **info})
    result["matrix"], result["u"], result["v"] = raw, u, v
    return result


def _support_dual(full, maps, P: np.ndarray, alpha: float, props: tuple[str, ...], objective,
                  W: int) -> tuple[np.ndarray, np.ndarray]:
    """``(y, vertex)``: multipliers ``y`` of the full model's inequality rows and column sums that
    leave no reduced cost on the positive rows of ``P``, and the matrix ``vertex`` on which their
    rows are active; raises ``ValueError`` (with the reason) when the support does not fit.

    Complementary slackness: an optimal dual is zero on slack rows and, as every entry of a used
    output row is positive (DP), leaves no reduced cost there.  *Which* rows carry a multiplier
    is read off the general LP's dual at template size (without S, whose multipliers may be 0 by
    Theorem 1), copied by ``F``, plus the DP rows tight at every ``E z``; the *values* are not
    copied (for L1 and L2 the far DP multipliers grow with ``|i - j|``, unlike L0's) but solved
    on the full model, ``A_T^T u_T + A_eq^T v = c``, by one sparse LU (:func:`_solve_support`).
    The vertex solves the transposed system with the same LU: ``P`` is an interior point's
    answer, whose DP repair would cost L2 more than the gap allows."""
    N, N0 = P.shape[0], 3 * W + 5
    _, F, _, col, weight = maps
    u0, v0 = _general_dual(N0 - 1, alpha, tuple(p for p in props if p != "S"), objective)
    y = (F @ np.concatenate([u0, v0[:N0]]))[: full.b_ub.size]
    tight = np.diff(_cancel(full.A_ub, col, weight, N0 * N0).indptr) == 0
    live = np.repeat(P.max(axis=1) > 0, N)  # an all-zero output row needs no zero reduced cost
    support = np.flatnonzero(((y > SUPPORT_TOL * y.max()) | tight) & (abs(full.A_ub) @ live > 0))
    M = sp.hstack([full.A_ub[support].T, full.A_eq[:N].T], format="csr")[live]
    b = np.concatenate([full.b_ub[support], full.b_eq[:N]])
    dual, vertex = _solve_support(M, full.c[live], b)
    out = np.zeros(full.b_ub.size + N)
    out[support], out[full.b_ub.size:] = dual[: support.size], dual[support.size:]
    point = np.zeros(N * N)
    point[live] = vertex
    return out, np.maximum(point, 0.0).reshape(N, N)


def _solve_support(M: sp.csr_matrix, c: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(y, x)`` with ``M y = c`` and ``M^T x = b`` by one LU (plus :data:`REFINEMENTS` steps).

    A support with ``k <= MAX_PINNED`` more rows than equations (a degenerate dual) gets ``k``
    seeded random rows ``pin y = 0`` that single out one solution; then ``x`` solves
    ``M^T x + pin^T w = b``, whose ``w`` is 0 when ``M^T x = b`` is solvable (the certificate
    checks the result either way)."""
    import scipy.sparse.linalg as spla

    extra = M.shape[1] - M.shape[0]
    if not 0 <= extra <= MAX_PINNED:
        raise ValueError(f"support has {extra:+d} rows against the equations")
    K = sp.vstack([M, sp.csr_matrix(np.random.default_rng(0).standard_normal((extra, M.shape[1])))], format="csc")
    try:
        lu = spla.splu(K)
    except RuntimeError as exc:  # singular: not the optimal support
        raise ValueError(f"support system singular ({exc})") from None
    rhs = np.concatenate([c, np.zeros(extra)])
    y, x = lu.solve(rhs), lu.solve(b, trans="T")
    for _ in range(REFINEMENTS):
        y += lu.solve(rhs - K @ y)
        x += lu.solve(b - K.T @ x, trans="T")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(x))):
        raise ValueError("support system singular (non-finite solution)")
    return y, x[: M.shape[0]]


def _general_dual(n: int, alpha: float, props: tuple[str, ...], objective) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)``: the general path's dual of the design LP at size ``n`` on the full model's rows."""
    from countdp.design.backends import CLARABEL_TOL
    from countdp.design.fast import choose_method, solve_proven
    from countdp.design.polish import full_dual
    from countdp.design.reduce import build_reduced_lp

    lp = build_reduced_lp(n, alpha, props, objective, None, "sum")
    chosen = choose_method(lp)
    if chosen == "guided":  # the support was measured on Clarabel's interior dual (simplex where it fails)
        chosen = "simplex" if alpha ** n < CLARABEL_TOL else "clarabel"
    _, _, run, _ = solve_proven(lp, chosen)
    return full_dual(lp, run.row_dual, run.col_dual)


def large_n_design(n: int, alpha: float, properties: object, widths: tuple[int, ...] | None = None,
                   time_limit: float = 120.0, objective: object = "L0",
                   at_full_size: bool = True) -> tuple[np.ndarray | None, dict]:
    """``(P, info)``: a proven-optimal design (an objective of :data:`OBJECTIVES`), or
    ``(None, info)`` with ``info["reason"]``.  ``widths`` default: :func:`template_widths`.

    A template is solved at twice its size (the rows of every kind appear there).  One that does
    not fit twice in ``n`` costs about as much as the general path: the first width is then
    solved at ``n`` itself if ``at_full_size``, else not at all (the fast designer's choice:
    n = 256, alpha = 0.97, W = 48 measured 3.0-7.8 s on the twelve sets with CM or CH, the
    general path 1.7-7.8 s); a wider one never.

    ``P`` is the expanded template solution before :func:`countdp.privacy.certify.certify` (as
    :func:`countdp.design.fast.fast_design` returns matrices), or its DP closure
    (``info["optimality"]["dp_closure"]``); ``info["optimality"]`` is the certificate of
    :func:`countdp.design.optimality.check_optimality` on the full model, with the expanded dual,
    for ``certify(P)`` (deterministic, so for the matrix the caller releases).
    """
    props = parse_properties(properties)
    start = time.perf_counter()
    tried = []
    if widths is None:
        widths = template_widths(alpha, objective)
        if not widths:
            return None, {"used": False, "tried": [], "seconds": time.perf_counter() - start,
                          "reason": f"alpha^W > {SUPPORT_CORNER_DECAY} for every width W in {SUPPORT_WIDTHS}: "
                                    "corners wider than every template"}
    problem = None
    for k, W in enumerate(widths):
        if 3 * W + 4 > n or ((k or not at_full_size) and 2 * (3 * W + 4) > n):
            break
        if problem is None:
            problem = DesignProblem(n, alpha, props, objective)
        LOG.info("large n: the template of width %d (n = %d), proven on the full model", W, 3 * W + 4)
        result = _attempt(problem, W, max(1.0, time_limit - (time.perf_counter() - start)),
                          template_size=2 * (3 * W + 4))
        P = result.pop("matrix", None)
        result.pop("u", None), result.pop("v", None)
        tried.append({"width": W, "gap": result.get("gap"), "certified": result["certified"],
                      **({"reason": result["reason"]} if "reason" in result else {})})
        if result["certified"]:
            return P, {"used": True, "width": W, "template_n": 3 * W + 4, "tried": tried,
                       "seconds": time.perf_counter() - start, "optimality": result}
        if time.perf_counter() - start > time_limit or 2 * (3 * W + 4) >= n:
            break  # a wider template would be most of the model: the general path is as good
    if tried:
        reason = "no template width closed the certificate"
    else:
        twice = "twice " if not at_full_size else ""
        reason = (f"n={n} below {twice}the template of width {widths[0]} (n = {3 * widths[0] + 4}), "
                  f"as wide as the corners at alpha = {alpha:g}")
    return None, {"used": False, "reason": reason, "tried": tried, "seconds": time.perf_counter() - start}
