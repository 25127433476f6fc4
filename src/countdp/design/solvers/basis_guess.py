"""A simplex basis read off an interior point of the reduced design LP (both in scaled units).

An interior point is not a vertex, but it says which bounds and rows an optimal vertex is near:
a column whose distance to a bound is smaller than its reduced cost is non-basic there, a row
whose slack is smaller than its multiplier is active.  HiGHS's simplex started from that guess
needs a few pivots where a cold start grinds.  A wrong guess costs pivots, not correctness: the
vertex found is polished and proven afterwards.
"""

from __future__ import annotations

import numpy as np

from countdp.design.highspy_loader import load_highspy
from countdp.design.reduce import ReducedLP, dp_rows_kept
from countdp.design.settings import SolverSettings
from countdp.design.solvers.solved import Solved

TINY = 1e-300
"""Floor of distances, slacks and multipliers before their logarithms are taken."""


def _scores(lp: ReducedLP, run: Solved) -> tuple[np.ndarray, ...]:
    """``(c_score, r_score, to_lo, to_hi, s_lo, s_hi, eq)``: each column's log-ratio of bound distance
    to reduced cost (> 0: basic), each row's log-ratio of multiplier to slack (> 0: active;
    equalities infinite), the distances and slacks themselves, and the equality mask."""
    x, z, pi = run.y, run.col_dual, run.row_dual
    lo, hi = lp.col_lower, lp.col_upper
    to_lo, to_hi = np.maximum(x - lo, TINY), np.maximum(hi - x, TINY)
    c_score = np.where(z >= 0, np.log(to_lo) - np.log(np.maximum(z, TINY)),
                       np.log(to_hi) - np.log(np.maximum(-z, TINY)))  # > 0: basic
    a = lp.A @ x
    eq = lp.row_lower == lp.row_upper
    s_lo, s_hi = np.maximum(a - lp.row_lower, TINY), np.maximum(lp.row_upper - a, TINY)
    r_score = np.where(pi >= 0, np.log(np.maximum(pi, TINY)) - np.log(s_lo),
                       np.log(np.maximum(-pi, TINY)) - np.log(s_hi))  # > 0: active
    r_score[eq] = np.inf
    return c_score, r_score, to_lo, to_hi, s_lo, s_hi, eq


def _balanced(c_score: np.ndarray, r_score: np.ndarray, eq: np.ndarray, tail: np.ndarray,
              tail_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(col_basic, row_active)`` from the scores, the decisions nearest their threshold (basic
    columns or free rows alike, not the tail's) flipped until as many columns are basic as rows active."""
    col_basic, row_active = c_score > 0, r_score > 0
    excess = int(col_basic.sum()) - int(row_active.sum())
    if excess:
        sign = 1 if excess > 0 else -1
        cols = np.flatnonzero((col_basic if excess > 0 else ~col_basic) & ~tail)
        rows = np.flatnonzero((~row_active if excess > 0 else row_active) & ~eq & ~tail_rows)
        margin = np.concatenate([sign * c_score[cols], -sign * r_score[rows]])
        pick = np.argsort(margin, kind="stable")[: abs(excess)]
        col_basic[cols[pick[pick < cols.size]]] = excess < 0
        row_active[rows[pick[pick >= cols.size] - cols.size]] = excess > 0
    return col_basic, row_active


def guess_basis(lp: ReducedLP, run: Solved, prior: tuple[np.ndarray, np.ndarray] | None = None, *,
                settings: SolverSettings):
    """A ``highspy.HighsBasis`` read off an interior point ``run`` of ``lp`` (both in scaled units).

    A column is non-basic at the bound whose distance is smaller than its reduced cost, a row
    active at the bound whose slack is smaller than its multiplier (equalities always).  Tail
    entries (scaled value below ``settings.solver.guess_tail``: too small for their slacks and multipliers
    to tell active rows from inactive ones) are basic and decay away from the diagonal as in GM:
    of the DP rows on them, those bounding the entry farther from the diagonal from below
    (:func:`countdp.design.reduce.dp_rows_kept`) are active, the others and the property rows
    inactive.  Last, the most ambiguous of the other decisions (the ratio nearest 1) are flipped
    until there are as many basic columns as active rows.  ``prior``: ``(basic, active)`` statuses
    to start from instead (a template's basis,
    :func:`countdp.design.solvers.template_guide.spread`), the scores then only ranking which to flip."""
    highspy = load_highspy()

    c_score, r_score, to_lo, to_hi, s_lo, s_hi, eq = _scores(lp, run)
    tail = np.abs(run.y) < settings.solver.guess_tail
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
    col_basic, row_active = _balanced(c_score, r_score, eq, tail, tail_rows)
    col_upper = ~col_basic & (to_hi < to_lo)
    row_upper = row_active & ~eq & (s_hi < s_lo)
    S = highspy.HighsBasisStatus
    basis = highspy.HighsBasis()
    status = np.array([S.kLower, S.kUpper, S.kBasic], dtype=object)  # indexed by 0, 1, 2
    basis.col_status = status[np.where(col_basic, 2, col_upper.astype(int))].tolist()
    basis.row_status = status[np.where(row_active, row_upper.astype(int), 2)].tolist()
    basis.valid = True
    return basis
