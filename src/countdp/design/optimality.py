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

Floating point is accounted for by explicit bounds (Higham, *Accuracy and Stability*, 3.1):
a computed ``k``-term dot product ``s`` obeys ``|s - exact| <= gamma_k sum |terms|`` with
``gamma_k = k u / (1 - k u)``, ``u = 2^-53``.  ``r`` is lowered by twice that bound (the factor
2 covers rounding in evaluating the bound itself, whose relative error is ``<= gamma_k << 1``);
the scalar sums use :func:`math.fsum` (correctly rounded), so only the products' rounding
(``u |term|`` each) and the final rounding remain, and are subtracted from ``LB`` (added to
``UB``).  The check is one pass over the constraint matrix (``O(non-zeros)``).
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

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


def _gamma(k: int | np.ndarray) -> np.ndarray:
    k = np.asarray(k, float)
    return k * UNIT / (1.0 - k * UNIT)


def design_lp_model(n: int, alpha: float, properties: object = (), objective: object = "L0",
                    weights: np.ndarray | None = None, aggregate: str = "sum") -> DesignLP:
    """The design LP (:meth:`countdp.design.model.DesignProblem.lp`)."""
    return DesignProblem(n, alpha, properties, objective, weights, aggregate).lp()


ROUNDING_ALLOWANCE = 16
""":func:`lower_column_multipliers` lowers each column-sum multiplier by this many units of
rounding (``2^-53``) times its column's largest term, beyond the deficit measured: the check
lowers reduced costs by twice its own rounding bound."""


def lower_column_multipliers(lp: DesignLP, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` with each column-sum multiplier (the first ``N`` entries, ``N^2`` variables ``P``)
    lowered by its column's worst deficit plus :data:`ROUNDING_ALLOWANCE`: every reduced cost is
    then non-negative beyond the check's rounding bound, at the cost of one deficit per column
    (not per entry, as the box term ``min(0, r) * 1`` would charge)."""
    AT = lp.A_ub.T.tocsr()
    r = lp.c - AT @ u - lp.A_eq.T @ v
    size = np.abs(lp.c) + abs(AT) @ np.abs(u) + abs(lp.A_eq.T) @ np.abs(v)
    need = np.maximum(0.0, -r) + ROUNDING_ALLOWANCE * UNIT * size
    N = math.isqrt(lp.c.size)
    out = np.array(v, float)
    out[:N] -= need[: N * N].reshape(N, N).max(axis=0)
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
    AT_ub, AT_eq = lp.A_ub.T.tocsr(), lp.A_eq.T.tocsr()
    r = lp.c - AT_ub @ u - AT_eq @ v
    terms = np.diff(AT_ub.indptr) + np.diff(AT_eq.indptr) + 1
    magnitude = np.abs(lp.c) + abs(AT_ub) @ u + abs(AT_eq) @ np.abs(v)
    r_low = r - 2.0 * _gamma(terms + 1) * magnitude
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
