"""The square-corner template's two small LPs, and the proof of their answer on the full model.

**Primal.**  The design LP restricted to ``x = E z`` for the square-corner map
(:func:`countdp.design.template.square_geometry.primal_map`, mirror symmetric: S holds by
construction), every inequality row of the full model copied and exact duplicates merged
(:func:`countdp.design.template.geometry.merge_rows`); of the column sums, those of the corner
columns, the middle ones replaced by the two rows they span
(:func:`~countdp.design.template.square_geometry.middle_rows`).  Solved by Clarabel
(:func:`countdp.design.template.restricted.clarabel_point`).

**Dual.**  The dual of the LP without S and with CH in place of CM
(:func:`countdp.design.template.restricted.dual_properties`) restricted to copies of one multiplier
per class of rows (:func:`~countdp.design.template.square_geometry.row_classes`) and of column sums,
further restricted by complementary slackness with the primal found: a class with a row slack at
``x`` (by more than :attr:`~countdp.design.settings.TemplateTuning.square_slack_tol` of its
magnitude) gets no multiplier, and a positive entry of ``x`` no reduced cost.  What is left is a
small LP (its optimum is the full optimum only if the guess is right), solved by Clarabel.

**Proof.**  Neither answer is trusted: ``x`` (after the float DP certificate) and the copied dual,
CH's multipliers spread over the CM rows and S's set to 0, are checked by the independent
weak-duality routine on the full model (:func:`countdp.design.template.proof.certify_expansion`).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignLP, DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.settings import SolverSettings
from countdp.design.template.geometry import cancel, merge_rows
from countdp.design.template.proof import certify_expansion
from countdp.design.template.restricted import clarabel_point, dual_properties, ipm_vertex
from countdp.design.template.square_geometry import column_classes, middle_rows, primal_map, row_classes
from countdp.design.template.square_trim import trim_sizes, trimmed_map


def square_width(alpha: float, settings: SolverSettings) -> int:
    """The corner width ``W = ceil(k / (1 - alpha)) + margin``
    (:attr:`~TemplateTuning.square_width_factor`, :attr:`~TemplateTuning.square_width_margin`)."""
    return math.ceil(settings.template.square_width_factor / (1.0 - alpha)) + settings.template.square_width_margin


def essential_properties(props: tuple[str, ...]) -> tuple[str, ...]:
    """``props`` without the properties another of them implies: CH with CM (a column that falls away
    from its diagonal has its largest entry there) and RH with RM (the same along a row).  The LP
    keeps the same feasible set and loses their rows; the template is solved on it, and its answer
    proven on the LP as asked (a dual of the smaller LP, the dropped rows given 0, is one there)."""
    implied = {"CH"} if "CM" in props else set()
    if "RM" in props:
        implied.add("RH")
    return tuple(p for p in props if p not in implied)


def prove_square(problem: DesignProblem, W: int, *, settings: SolverSettings) -> dict:
    """The square-corner template of width ``W`` for ``problem`` (mirror-symmetric L0, with S or
    not, uniform prior, the sum): the restricted primal, the complementary-slackness dual and the
    certificate on ``problem``'s full LP (module docstring).  Returns the certificate of
    :func:`countdp.design.template.proof.certify_expansion` (with the ``"matrix"`` proven, the stage
    ``"seconds"`` and the template's sizes), or ``{"certified": False, "reason": ...}``."""
    began, seconds = time.perf_counter(), {}
    n, alpha, N = problem.n, problem.alpha, problem.N
    props = essential_properties(problem.properties)
    full = problem.lp() if props == problem.properties else DesignProblem(n, alpha, props, problem.objective).lp()
    x, info = square_primal(full, n, W, alpha, settings)
    seconds["template primal"] = time.perf_counter() - began
    if x is None:
        return not_proven(f"W={W}: {info}")
    dual_props = dual_properties(tuple(p for p in props if p != "S"))
    dual_lp = DesignProblem(n, alpha, dual_props, problem.objective).lp()
    try:
        y, dual_info = square_dual(dual_lp, x, n, W, dual_props, settings)
    except ValueError as exc:  # a complementary-slackness guess with no feasible multipliers
        return not_proven(f"W={W}: {exc}")
    seconds["template dual"] = time.perf_counter() - began - sum(seconds.values())
    if y is None:
        return not_proven(f"W={W}: the restricted dual not solved")
    info = {"template": "square corners", "width": W, **info, **dual_info}
    if dual_props != problem.properties:
        info["dual"] = "the template's with CH in place of CM (no S), CH's multipliers spread over the CM rows"
    result = certify_expansion(problem, x.reshape(N, N), y, dual_props, info)
    seconds["certificate"] = time.perf_counter() - began - sum(seconds.values())
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result


def square_primal(full: DesignLP, n: int, W: int, alpha: float, settings: SolverSettings,
                  vertex: bool = False,
                  trim: tuple[float, float, float] | None = None) -> tuple[np.ndarray | None, dict | str]:
    """``(x, info)``: the restricted primal's optimum expanded to the full size (flat ``N * N``), or
    ``(None, reason)`` (module docstring).  ``vertex``: HiGHS's interior point and crossover, then
    the exact vertex of its basis (:func:`countdp.design.template.restricted.ipm_vertex`), in place
    of Clarabel's point: every row held to rounding, where Clarabel may stop short of its
    tolerances on wide corners.  ``trim``: the square trimmed by these factors
    (:mod:`countdp.design.template.square_trim`), not the full square."""
    N = n + 1
    col, weight, k = primal_map(n, W, alpha) if trim is None else trimmed_map(n, W, alpha, trim)
    corner_columns = np.r_[0: W + 2, n - W - 1: N]
    middle, rhs = middle_rows(n, W, alpha)
    A = sp.vstack([cancel(full.A_ub, col, weight, k), cancel(full.A_eq[corner_columns], col, weight, k),
                   cancel(middle, col, weight, k)], format="csr")
    sums = full.b_eq[corner_columns]
    lo = np.concatenate([full.b_ub, sums, rhs])
    hi = np.concatenate([np.full(full.b_ub.size, np.inf), sums, rhs])
    scale = 1.0 / np.maximum(abs(A).max(axis=1).toarray().ravel(), 1e-300)  # exact merging of scaled copies
    A, lo, hi = merge_rows(sp.diags(scale) @ A, lo * scale, hi * scale)
    keep = strongest_pairs(A, lo, hi)
    A, lo, hi = A[keep], lo[keep], hi[keep]
    E = sp.csr_matrix((weight, (np.arange(N * N), col)), shape=(N * N, k))
    if vertex:
        found = ipm_vertex(A, E.T @ full.c, np.zeros(k), np.full(k, np.inf), lo, hi, settings=settings)
        z = None if found is None else np.maximum(found[0], 0.0)
    else:
        z = clarabel_point(A, E.T @ full.c, np.zeros(k), np.full(k, np.inf), lo, hi, settings=settings)
    if z is None:
        return None, "the restricted primal not solved"
    info = {"primal_unknowns": k, "primal_rows": int(A.shape[0])}
    return E @ z, info if trim is None else {**info, "trim": "T, B, C = {}, {}, {}".format(*trim_sizes(alpha, trim))}


def strongest_pairs(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The rows of ``lo <= A z <= hi`` (``z >= 0``) left after dropping every row ``p z_a - q z_b >= 0``
    (``p, q > 0``) implied by another on the same pair with a larger ``q / p``: ``z_a >= r z_b`` with
    ``r`` largest implies the others, as ``z_b >= 0``.  (Such families come from rows copied along a
    tail, e.g. CH's rows between a diagonal entry and a row tail, and from DP rows implied by RM.)"""
    A = A.tocsr()
    A.sort_indices()
    nnz = np.diff(A.indptr)
    pair = np.flatnonzero((nnz == 2) & (lo == 0) & np.isinf(hi))
    first, second = A.indptr[pair], A.indptr[pair] + 1
    a_first, a_second = A.data[first], A.data[second]
    opposite = (a_first > 0) != (a_second > 0)
    pair, first, second, a_first, a_second = (v[opposite] for v in (pair, first, second, a_first, a_second))
    positive = np.where(a_first > 0, A.indices[first], A.indices[second])
    negative = np.where(a_first > 0, A.indices[second], A.indices[first])
    ratio = np.abs(np.where(a_first > 0, a_second / a_first, a_first / a_second))
    order = np.lexsort((-ratio, negative, positive))  # per pair, the largest ratio first
    key = positive[order].astype(np.int64) * A.shape[1] + negative[order]
    dominated = np.zeros(A.shape[0], dtype=bool)
    dominated[pair[order][1:][key[1:] == key[:-1]]] = True
    return np.flatnonzero(~dominated)


def square_dual(dual_lp: DesignLP, x: np.ndarray, n: int, W: int, props: tuple[str, ...],
                settings: SolverSettings) -> tuple[np.ndarray | None, dict]:
    """``(y, info)``: multipliers of ``dual_lp``'s inequality rows, then of its ``N`` column sums,
    copied from the classes of :mod:`countdp.design.template.square_geometry` and restricted by
    complementary slackness with ``x`` (module docstring); ``y`` is ``None`` when Clarabel does not
    solve the restricted dual.  Raises ``ValueError`` when an entry that must have no reduced cost
    has no multiplier left (the guess is wrong)."""
    N = n + 1
    classes, columns = row_classes(n, W, props), column_classes(n, W)
    activity = dual_lp.A_ub @ x
    magnitude = np.maximum(abs(dual_lp.A_ub) @ x + np.abs(dual_lp.b_ub), 1e-300)
    slack = activity - dual_lp.b_ub > settings.template.square_slack_tol * magnitude
    dead = np.zeros(int(classes.max()) + 1, dtype=bool)
    np.logical_or.at(dead, classes, slack)
    live = np.flatnonzero(~dead)
    c0 = int(columns.max()) + 1
    F_ub = sp.csr_matrix((np.ones(classes.size), (np.arange(classes.size), classes)), shape=(classes.size, dead.size))
    F = sp.block_diag([F_ub[:, live], sp.csr_matrix((np.ones(N), (np.arange(N), columns)), shape=(N, c0))],
                      format="csr")
    A_rows = sp.vstack([dual_lp.A_ub, dual_lp.A_eq[:N]], format="csr")
    tight_cost = np.where(x > 0, dual_lp.c, -np.inf)  # a positive entry keeps no reduced cost
    D, dlo, dhi = merge_rows((A_rows.T @ F).tocsr(), tight_cost, dual_lp.c.copy())
    gain = F.T @ np.concatenate([dual_lp.b_ub, dual_lp.b_eq[:N]])
    ylo = np.concatenate([np.zeros(live.size), np.full(c0, -np.inf)])
    yhi = np.full(ylo.size, np.inf)
    # in units where the costs are 1 (Clarabel's tolerances act relative to them)
    y0 = clarabel_point(D, -gain * n, ylo, yhi, dlo * n, dhi * n, settings=settings)
    info = {"dual_unknowns": int(ylo.size), "dual_rows": int(D.shape[0])}
    return (None if y0 is None else F @ (y0 / n)), info
