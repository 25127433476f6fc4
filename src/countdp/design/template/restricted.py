"""The two restricted LPs of a large-n template: the design LP's primal restricted to copies of a
template, its dual to copies of the template's multipliers, each an exact LP of template size.

The primal is restricted to ``x = E z`` with ``x[i, j] = alpha^e z[i0, j0]`` (``E`` is a weighted
copy map, :func:`template_maps`; ``z`` is the template entry over its natural size ``alpha^e0``);
the dual to ``u = F y0``, every constraint row of the big model taking the multiplier of the
template row that its first entry maps to (level ``W + 1``; S-multipliers 0: by Theorem 1 the LP
without S has the same optimum).  Rows of the big model that become identical are merged
(:func:`countdp.design.template.geometry.merge_rows`); each restricted LP gives a feasible point
of the big primal, resp. dual, so their optimal values bracket the big optimum.

For L0 two cheaper LPs stand in, both proven on the full model all the same.  The template is
solved without S (the feature map is not mirror symmetric, so S's rows would tie unrelated
template entries) and ``E z`` averaged with its mirror image (Theorem 1).  With CM the restricted
dual is that of the LP with CH in place of CM, its multipliers spread over the CM rows
(:func:`dual_properties`).  The other objectives take only the restricted primal from here; their
dual is :mod:`countdp.design.template.support_dual`.

Each restricted LP is a plain LP ``min cost @ x`` s.t. ``row_lo <= A x <= row_hi``, ``col_lo <= x
<= col_hi``, solved by HiGHS's primal simplex to an exact vertex (:func:`simplex_vertex`) or by
Clarabel's interior point (:func:`clarabel_point`).  Neither answer is trusted: both are expanded
to the full model and proven there (:mod:`countdp.design.template.proof`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from countdp.design.highspy_loader import load_highspy
from countdp.design.optimality import design_lp_model
from countdp.design.polish import basis_vertex
from countdp.design.reductions.relax_cm import relaxed_properties
from countdp.design.settings import SolverSettings, running
from countdp.design.solvers.clarabel import clarabel_lp
from countdp.design.solvers.highs import basis_statuses, highs_lp
from countdp.design.template.geometry import cancel, feature_map, merge_rows, row_map
from countdp.design.watch import current


class TemplateMaps(NamedTuple):
    """The copy maps between a size-``n`` design LP and its template (:func:`template_maps`)."""

    E: sp.csr_matrix
    """Entries <- template entries, weights ``alpha^|i-j|``."""
    F: sp.csr_matrix
    """Inequality rows and column sums <- template rows and the template's column sums."""
    r0: int
    """The number of template inequality rows (``F``'s first block of columns)."""
    col: np.ndarray
    """The template entry (flat index) of every entry."""
    weight: np.ndarray
    """``alpha^|i-j|`` of every entry."""


def dual_properties(props: tuple[str, ...]) -> tuple[str, ...]:
    """The property set whose restricted dual proves L0 with ``props``: with CM, the LP with CH
    in place of CM (:mod:`countdp.design.reductions.relax_cm`; its dual, CH's multipliers spread
    over the CM rows, is a dual of the LP with CM), else ``props``.  Its restricted dual is cheaper
    and more accurate."""
    return relaxed_properties(props) if "CM" in props else props


def template_maps(n: int, n0: int, W: int, alpha: float, props: tuple[str, ...]) -> TemplateMaps:
    """``(E, F, r0, col, weight)``: ``E`` (entries <- template entries, weights ``alpha^|i-j|``)
    and ``F`` (the inequality rows and column sums of the LP with ``props`` <- its ``r0`` template
    rows and the template's column sums), as sparse matrices."""
    N, N0 = n + 1, n0 + 1
    ii, jj = np.indices((N, N), dtype=np.int32)
    i0, j0, _ = feature_map(ii.ravel(), jj.ravel(), n, n0, W)
    col = i0 * N0 + j0
    weight = (alpha ** np.arange(N, dtype=float))[np.abs(ii - jj).ravel()]
    E = sp.csr_matrix((weight, (np.arange(N * N), col)), shape=(N * N, N0 * N0))
    rows_ub = row_map(n, n0, W, props)
    r0 = int(rows_ub.max()) + 1
    cols_eq, _, _ = feature_map(np.arange(N), np.arange(N), n, n0, W + 1)  # column sum j copies j0
    m = rows_ub.size
    F = sp.block_diag([sp.csr_matrix((np.ones(m), (np.arange(m), rows_ub)), shape=(m, r0)),
                       sp.csr_matrix((np.ones(N), (np.arange(N), cols_eq)), shape=(N, N0))], format="csr")
    return TemplateMaps(E, F, r0, col, weight)


def solve_template(full, maps: TemplateMaps, n: int, alpha: float, props: tuple[str, ...], W: int, m: int,
                   l0: bool = True, *, settings: SolverSettings):
    """``(z, duals, info)``: the optimal template primal and candidates for the template dual
    (:func:`copied_duals`) of the two restricted LPs (module docstring); ``(None, None, reason)``
    when the restricted primal is not solved.

    The local rows (DP, RM, CM, RH, CH, S: two entries each) and the restricted dual are built
    at size ``m <= n``, where they are the same rows as at size ``n`` (every map is local); the
    rows that are not local (column sums, WH's ``1/(n+1)``) and the cost are those of size ``n``
    (``full``).  Each dual is in units of size ``m``'s costs ``1/m``; ``duals`` is ``None`` for
    objectives other than L0 (``l0`` false), whose dual the support dual builds on the full model.
    With CM, they are duals of the LP with CH in place of CM (:func:`dual_properties`)."""
    # L0: S is free (Theorem 1), so the template is solved without it and E z averaged with its
    # mirror image (countdp.design.template.proof); the dual's S multipliers are 0
    template_props = tuple(p for p in props if p != "S") if l0 else props
    small = full if m == n and template_props == props else design_lp_model(m, alpha, template_props)
    small_maps = maps if m == n else template_maps(m, 3 * W + 4, W, alpha, template_props)
    z, info = restricted_primal(full, small, maps, small_maps, n, m, W, settings=settings)
    if z is None:
        return None, None, info
    if not l0:
        return z, None, info
    dual_props = dual_properties(template_props)
    if dual_props != template_props:
        small, small_maps = design_lp_model(m, alpha, dual_props), template_maps(m, 3 * W + 4, W, alpha, dual_props)
    return z, copied_duals(small, small_maps, m, W, settings=settings), info


def restricted_primal(full, small, maps: TemplateMaps, small_maps: TemplateMaps, n: int, m: int, W: int, *,
                      settings: SolverSettings):
    """``(z, info)``: min ``c^T E z`` s.t. ``A E z >= b`` (rows merged), ``z >= 0`` (module
    docstring), solved by Clarabel; ``(None, reason)`` when it is not solved."""
    N, Nm, N0 = n + 1, m + 1, 3 * W + 5
    _, _, _, col, weight = maps
    _, _, _, col_m, weight_m = small_maps
    local = np.flatnonzero(np.diff(small.A_ub.indptr) >= 2)  # all but WH's one-entry rows
    one = np.flatnonzero(np.diff(full.A_ub.indptr) == 1)
    parts = [cancel(small.A_ub[local], col_m, weight_m, N0 * N0), cancel(full.A_ub[one], col, weight, N0 * N0),
             cancel(full.A_eq[:N], col, weight, N0 * N0)]
    if small.A_eq.shape[0] > Nm:
        parts.append(cancel(small.A_eq[Nm:], col_m, weight_m, N0 * N0))
    A = sp.vstack(parts, format="csr")
    lo = np.concatenate([small.b_ub[local], full.b_ub[one], full.b_eq[:N], small.b_eq[Nm:]])
    hi = np.concatenate([np.full(local.size + one.size, np.inf), full.b_eq[:N], small.b_eq[Nm:]])
    scale = 1.0 / np.maximum(abs(A).max(axis=1).toarray().ravel(), 1e-300)  # exact merging of scaled copies
    A, lo, hi = merge_rows(sp.diags(scale) @ A, lo * scale, hi * scale)
    k = A.shape[1]
    z = clarabel_point(A, maps[0].T @ full.c, np.zeros(k), np.full(k, np.inf), lo, hi, settings=settings)
    if z is None:
        return None, f"W={W}: restricted primal not solved"
    return z, {"primal_rows": int(A.shape[0])}


def copied_duals(small, small_maps: TemplateMaps, m: int, W: int, *, settings: SolverSettings):
    """Solutions ``y0`` of the restricted dual, max ``b^T F y0`` s.t. ``(A^T F y0)_p <= c_p`` for
    every entry ``p``, ``y0_ub >= 0`` (L0: ``small`` has the L0 costs of size ``m``), computed
    lazily, the cheaper first: up to :attr:`~TemplateTuning.dual_simplex_rows` rows HiGHS's vertex
    (its exact duals, polished, close the gap best; its work limited by
    :attr:`~TemplateTuning.dual_simplex_work`), then Clarabel's point; on wider templates
    Clarabel's point first."""
    Nm, N0 = m + 1, 3 * W + 5
    _, F, r0, _, _ = small_maps
    A_rows = sp.vstack([small.A_ub, small.A_eq[:Nm]], format="csr")
    D, dlo, dhi = merge_rows((A_rows.T @ F).tocsr(), np.full(Nm * Nm, -np.inf), small.c.copy())
    gain = F.T @ np.concatenate([small.b_ub, small.b_eq[:Nm]])
    ylo = np.concatenate([np.zeros(r0), np.full(N0, -np.inf)])
    yhi = np.full(r0 + N0, np.inf)

    def vertex():
        found = simplex_vertex(D, -gain, ylo, yhi, dlo, dhi, settings.template.dual_simplex_work, settings=settings)
        return None if found is None else found[0]

    def point():  # in units where the costs are 1 (Clarabel's tolerances act relative to them)
        found = clarabel_point(D, -gain, ylo, yhi, dlo * m, dhi * m, settings=settings)
        return None if found is None else found / m

    for solve in (vertex, point) if D.shape[0] <= settings.template.dual_simplex_rows else (point, vertex):
        y0 = solve()
        if y0 is not None:
            yield y0


def simplex_vertex(A, cost, col_lo, col_hi, row_lo, row_hi, work: float, *,
                   settings: SolverSettings) -> tuple[np.ndarray, np.ndarray] | None:
    """HiGHS primal simplex, then the exact vertex and duals of its basis (:mod:`countdp.design.polish`);
    ``None`` past ``work`` (iterations times rows; no wall-clock limit).

    The restricted dual is wide (about six columns per row); primal simplex is faster than dual
    simplex on it."""
    options = {"simplex_iteration_limit": int(work / max(1, A.shape[0])), "simplex_strategy": 4}
    return highs_vertex(A, cost, col_lo, col_hi, row_lo, row_hi, options, "HiGHS primal simplex, a template",
                        settings=settings)


def ipm_vertex(A, cost, col_lo, col_hi, row_lo, row_hi, *,
               settings: SolverSettings) -> tuple[np.ndarray, np.ndarray] | None:
    """HiGHS's interior point with crossover (HiGHS's own iteration limit, no wall-clock limit but the
    caller's), then the exact vertex and duals of its basis; ``None`` when HiGHS does not end
    optimal.  Where Clarabel's interior point stops short of its tolerances
    (``AlmostSolved``, rows broken by 1e-8), the vertex holds every row to rounding."""
    options = {"solver": "ipm", "run_crossover": "on"}
    return highs_vertex(A, cost, col_lo, col_hi, row_lo, row_hi, options, "HiGHS interior point, a template",
                        settings=settings)


def highs_vertex(A, cost, col_lo, col_hi, row_lo, row_hi, options: dict, what: str, *,
                 settings: SolverSettings) -> tuple[np.ndarray, np.ndarray] | None:
    """HiGHS with ``options`` (and its smallest feasibility tolerances) on ``row_lo <= A x <= row_hi``,
    then the exact vertex and duals of its basis, or HiGHS's own point where the basis gives none;
    ``None`` when HiGHS does not end optimal."""
    running(settings, what)
    highspy = load_highspy(settings.solver.verbose)

    h = highspy.Highs()
    watch = current()
    lines = watch.progress_lines()
    watch.attach_highs(h, what, settings.solver.verbose, lines)
    h.setOptionValue("primal_feasibility_tolerance", settings.solver.highs_tol)
    h.setOptionValue("dual_feasibility_tolerance", settings.solver.highs_tol)
    for key, value in options.items():
        h.setOptionValue(key, value)
    h.passModel(highs_lp(A, cost, col_lo, col_hi, row_lo, row_hi))
    with lines:  # the solve's last progress line, held back by the pace, said as it ends
        h.run()
    watch.check(what)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    lp = SimpleNamespace(A=sp.csr_matrix(A), cost=np.asarray(cost, float), col_lower=col_lo, col_upper=col_hi,
                         row_lower=row_lo, row_upper=row_hi)
    found = basis_vertex(lp, *basis_statuses(highspy, h.getBasis()))
    if found is None:
        sol = h.getSolution()
        return np.asarray(sol.col_value, float), np.asarray(sol.row_dual, float)
    return found[0], found[1]


def clarabel_point(A, cost, col_lo, col_hi, lo, hi, *,
                   settings: SolverSettings) -> np.ndarray | None:
    """Clarabel (interior point, tolerances :attr:`~SolverTuning.clarabel_tol`, iterative
    refinement on) on a restricted LP: the point clipped to its bounds, or ``None``.  For the
    primal: column sums carry coefficients down to ``alpha^n``, which HiGHS drops
    (``small_matrix_value`` >= 1e-12), making the model look infeasible; Clarabel keeps them.  For
    the dual it is the fallback when HiGHS's simplex is slow (wide templates).  Neither point needs
    to be a vertex: the certificate checks both."""
    running(settings, "Clarabel, a template")
    tuning = settings.solver
    point = clarabel_lp(A, cost, col_lo, col_hi, lo, hi, tuning.clarabel_tol, tuning.clarabel_direct_method,
                        refine=True, verbose=tuning.verbose)
    if not point.solved:
        return None
    return np.clip(point.x, col_lo, col_hi)
