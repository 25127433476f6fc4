"""Certificate of optimality of a design LP: an independent weak-duality check.

The LP is the model's definition, :meth:`countdp.design.model.DesignProblem.lp` (built from
:mod:`countdp.design.constraints`, not from any solver's model or reduction): variables
``x = P.ravel()`` (plus ``t``, last, for ``aggregate="max"``), ``A_ub x >= b_ub``,
``A_eq x == b_eq`` and ``0 <= x <= upper``.

For *any* ``u`` (one per ``A_ub`` row) and ``v`` (one per ``A_eq`` row), with ``u`` clipped
at 0 and ``r = c - A_ub^T u - A_eq^T v``, every feasible ``x`` has
``c^T x = r^T x + u^T A_ub x + v^T A_eq x >= b_ub^T u + b_eq^T v + sum_k min(0, r_k hi_k)``
(weak duality with the box ``0 <= x <= hi``).  That lower bound ``LB`` on the optimum needs no
trust in the solver; a mechanism whose objective ``UB`` is within ``GAP_REL`` of ``LB`` is
optimal to that accuracy.

Floating point is accounted for by explicit bounds.  The reduced costs ``r`` are computed in
double-double arithmetic (:func:`reduced_costs`: each product split exactly by Dekker's
``TwoProduct``, each sum by Knuth's ``TwoSum``), so their error is ``u |r|`` from the final
rounding plus ``(k + 2)^2 u^2`` times the entry's magnitude ``|c| + sum |a u|`` (``u = 2^-53``,
``k`` the entry's terms), and ``r`` is lowered by twice that.  A plain float dot product would
carry ``gamma_k = k u / (1 - k u)`` times the magnitude instead (Higham, *Accuracy and
Stability*, 3.1): for L2 at ``n`` near 1000, where the magnitudes are about ``n``, that
allowance summed over the columns alone exceeds the gap allowed.  The scalar sums use
:func:`math.fsum` (correctly rounded), so only the products' rounding (``u |term|`` each) and the
final rounding remain, and are subtracted from ``LB`` (added to ``UB``).  The check is a few
passes over the constraint matrix (``O(non-zeros)``).
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignLP, DesignProblem

GAP_REL = 1e-9
"""Largest accepted ``(UB - LB) / max(1, |UB|)``."""

PRIMAL_TOL = 1e-9
"""Largest accepted violation of any row of the LP by the mechanism checked."""

UNIT = 2.0**-53


class OptimalityProof(TypedDict, total=False):
    """A certificate of optimality, as every path of the engine records it in
    ``Design.extra["optimality"]`` (and the artifact stores it verbatim, so it stays a JSON-ready
    mapping).  :func:`check_optimality` fills the numbers; the engine adds how the dual was found.

    ``certified`` is the verdict: the design's objective is within ``gap_tolerance_rel`` of the
    weak-duality bound and it breaks no row by more than ``primal_tolerance``.  Without a dual to
    check, ``reason`` says why (:func:`not_proven`)."""

    certified: bool
    reason: str
    primal_objective: float
    dual_objective: float
    lower_bound: float
    upper_bound: float
    gap: float
    gap_tolerance_rel: float
    max_dual_infeasibility: float
    max_primal_violation: float
    primal_tolerance: float
    proof: str  # the theorem behind a closed form, when one stands
    checked: bool  # whether a closed form's theorem was also confirmed by a dual
    method: str  # the solver method whose dual it is
    guide: str  # what guided that solve
    dual_from: str  # where the dual came from, when not from the answer's own solve
    dual: str  # how the dual was mapped from another LP
    dual_repair: dict  # the repair tier that closed it
    dp_closure: bool  # the DP closure of the point was proven instead of its repair
    polished: bool  # the vertex was recomputed exactly from its basis
    tightened: bool  # re-solved with tightened rows
    attempts: list  # the methods tried before, and why they did not prove


def not_proven(reason: str) -> OptimalityProof:
    """The certificate of an answer with no dual to check: not certified, and why."""
    return {"certified": False, "reason": reason}



def design_lp_model(n: int, alpha: float, properties: object = (), objective: object = "L0",
                    weights: np.ndarray | None = None, aggregate: str = "sum") -> DesignLP:
    """The design LP (:meth:`countdp.design.model.DesignProblem.lp`)."""
    return DesignProblem(n, alpha, properties, objective, weights, aggregate).lp()


SPLITTER = 2.0**27 + 1.0
"""Dekker's splitting constant for binary64: ``a * SPLITTER`` splits ``a`` into two halves of 26
bits whose products are exact."""

TINY = 2.0**-960
"""Per term, a bound on what underflow may cost ``TwoProduct`` (exact only above ``2^-969``)."""


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's ``TwoSum``: ``s + e == a + b`` exactly, ``s = fl(a + b)``."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's ``TwoProduct``: ``p + e == a * b`` exactly (no overflow, no underflow), ``p = fl(a b)``."""
    p = a * b
    t = SPLITTER * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    t = SPLITTER * b
    b_hi = t - (t - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def reduced_costs(lp: DesignLP, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r = c - A_ub^T u - A_eq^T v`` and a bound ``err`` with ``|r - exact| <= err`` entrywise.

    Each entry's terms are subtracted one at a time (the ``k``-th non-zero of every row at once)
    into a double-double ``hi + lo``: the products are split exactly and ``hi`` is kept exact by
    ``TwoSum``, so only ``lo``'s roundings (each ``u`` times a quantity of size ``k u`` times the
    magnitude) and the final rounding of ``hi + lo`` are lost.  ``err`` is twice
    ``u |r| + (k + 2)^2 u^2 magnitude`` (the factor 2 covers the bound's own rounding) plus
    :data:`TINY` per term."""
    M = sp.vstack([lp.A_ub, lp.A_eq]).T.tocsr()
    y = np.concatenate([np.asarray(u, float), np.asarray(v, float)])
    hi, lo, size = np.array(lp.c, float), np.zeros(lp.c.size), np.abs(lp.c)
    lengths = np.diff(M.indptr)
    for k in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > k)
        at = M.indptr[rows] + k
        p, e = _two_product(M.data[at], y[M.indices[at]])
        hi[rows], t = _two_sum(hi[rows], -p)
        lo[rows] += t - e
        size[rows] += np.abs(p)  # |M| |y| summed here: no copy of the matrix for it
    r = hi + lo
    magnitude = size * (1.0 + 1e-6)
    k = lengths + 2.0
    return r, 2.0 * (UNIT * np.abs(r) + k * k * UNIT * UNIT * magnitude) + TINY * k


def lower_column_multipliers(lp: DesignLP, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` with each column-sum multiplier (the first ``N`` entries, ``N^2`` variables ``P``)
    lowered by its column's worst deficit, counted below the rounding bound of
    :func:`reduced_costs` (twice it, for the check's recomputation), plus the rounding of the
    subtraction itself: every reduced cost is then non-negative beyond the check's bound, at the
    cost of one deficit per column (not per entry, as the box term ``min(0, r) * 1`` would charge)."""
    u = np.maximum(np.asarray(u, float), 0.0)
    r, err = reduced_costs(lp, u, v)
    need = np.maximum(0.0, 2.0 * err - r)
    N = math.isqrt(lp.c.size)
    out = np.array(v, float)
    lowered = need[: N * N].reshape(N, N).max(axis=0)
    out[:N] -= lowered + 2.0 * UNIT * (np.abs(out[:N]) + lowered)
    return out


def _fsum_bound(terms: np.ndarray) -> tuple[float, float]:
    """``(fsum(terms), bound on |fsum - exact sum of the exact products|)`` for rounded products."""
    total = math.fsum(terms)
    return total, UNIT * float(np.abs(terms).sum()) * (1 + 1e-6) + UNIT * abs(total)


def check_optimality(lp: DesignLP, x: np.ndarray, u: np.ndarray, v: np.ndarray,
                     gap_rel: float = GAP_REL, primal_tol: float = PRIMAL_TOL) -> OptimalityProof:
    """Check the dual ``(u, v)`` against the primal ``x`` (module docstring): the certificate.

    ``certified`` is true iff ``(UB - LB) / max(1, |UB|) <= gap_rel`` and ``x`` breaks no row
    by more than ``primal_tol``.  ``max_dual_infeasibility`` is the largest ``-u_k`` or
    ``-r_k`` (before clipping); it does not decide the verdict, the gap does.
    """
    x, u, v = (np.asarray(a, float) for a in (x, u, v))
    if u.shape != lp.b_ub.shape or v.shape != lp.b_eq.shape or x.shape != lp.c.shape:
        raise ValueError("dual or primal vector of the wrong length")
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v)) and np.all(np.isfinite(x))):
        return not_proven("non-finite vector")
    u_raw_infeasible = float(max(0.0, -u.min())) if u.size else 0.0
    u = np.maximum(u, 0.0)
    r, err = reduced_costs(lp, u, v)
    r_low = r - err
    r_infeasible = float(max(0.0, -r.min()))
    dual_b, err_b = _fsum_bound(np.concatenate([lp.b_ub * u, lp.b_eq * v]))
    box, err_box = _fsum_bound(np.minimum(0.0, r_low) * lp.upper)
    lower = dual_b + box - err_b - err_box
    primal, err_p = _fsum_bound(lp.c * x)
    upper = primal + err_p
    viol = max(float(np.max(lp.b_ub - lp.A_ub @ x, initial=0.0)),
               float(np.max(np.abs(lp.A_eq @ x - lp.b_eq), initial=0.0)),
               float(np.max(-x, initial=0.0)))
    gap = upper - lower
    certified = bool(gap <= gap_rel * max(1.0, abs(upper)) and viol <= primal_tol)
    return {"certified": certified, "primal_objective": primal, "dual_objective": dual_b + box,
            "lower_bound": lower, "upper_bound": upper, "gap": gap, "gap_tolerance_rel": gap_rel,
            "max_dual_infeasibility": max(u_raw_infeasible, r_infeasible),
            "max_primal_violation": viol, "primal_tolerance": primal_tol}
