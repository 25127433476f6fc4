"""Repair of an interior point's approximate dual by complementary slackness, then the check.

An interior point's multipliers are optimal only to its tolerance.  Where Clarabel ends
'AlmostSolved', they can leave small reduced costs on the entries that carry the mass: the dual
is feasible but short of the optimum by more than :data:`countdp.design.optimality.GAP_REL`
allows, although the primal is optimal to the solver's tolerance.

At an optimum, every entry with ``x_k > 0`` has reduced cost 0, and only rows with zero
slack carry a multiplier.  So with ``M`` the rows of ``A_ub`` marked active (multiplier above
slack: at an interior point their product is the barrier parameter, so the larger of the two
says which vanishes in the limit) and all of ``A_eq``, and ``S`` the entries above ``tau``
(entries are probabilities, so ``tau`` is absolute),
the correction ``delta`` of least norm with ``M[:, S]^T delta = r[S]`` (``r = c - A_ub^T u -
A_eq^T v``) moves the dual onto that face.  LSQR (``scipy.sparse.linalg.lsqr``, a few hundred
sparse products) finds it; stopping early keeps it from fitting the noise of the point
(:attr:`~countdp.design.settings.ProofTuning.dual_repairs`: ``(tau, iterations)`` tiers tried
in turn).  Entries at or below ``tau`` (the decaying tail) keep their reduced costs, which are positive there.

Nothing here is trusted: the repaired dual is one more candidate for the independent
weak-duality check of :mod:`countdp.design.optimality`, which decides.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import lsqr

from countdp.design.model import DesignLP
from countdp.design.optimality import OptimalityProof, check_optimality, lower_column_multipliers
from countdp.design.settings import SolverSettings, running


def repaired_dual(lp: DesignLP, x: np.ndarray, u: np.ndarray, v: np.ndarray, tau: float,
                  iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)`` moved by the least-norm correction of the module docstring (``u`` clipped at 0)."""
    u = np.maximum(np.asarray(u, float), 0.0)
    v = np.asarray(v, float)
    active = u > lp.A_ub @ x - lp.b_ub
    M = sp.vstack([lp.A_ub[active], lp.A_eq])
    r = lp.c - lp.A_ub.T @ u - lp.A_eq.T @ v
    support = x > tau
    delta = lsqr(M.T.tocsr()[support], r[support], atol=0.0, btol=0.0, iter_lim=iterations)[0]
    u_new = u.copy()
    u_new[active] += delta[: int(active.sum())]
    return np.maximum(u_new, 0.0), v + delta[int(active.sum()):]


def prove_dual(lp: DesignLP, x: np.ndarray, u: np.ndarray, v: np.ndarray, repair: bool = True, *,
               settings: SolverSettings) -> OptimalityProof:
    """:func:`countdp.design.optimality.check_optimality` of ``x`` with ``(u, v)``, column
    multipliers lowered first (:func:`countdp.design.optimality.lower_column_multipliers`).

    ``repair``: when that certificate does not close only for its gap (``x`` breaks no row), and
    the relative gap is at most ``settings.proof.repair_gap_limit`` (above it the dual is far from
    optimal, not noisy), the repaired duals of ``settings.proof.dual_repairs`` are checked in turn; the
    first that closes is returned, with ``dual_repair = {"tau", "iterations"}``; else the first
    certificate."""
    running(settings, "the dual proof")
    first = check_optimality(lp, x, u, lower_column_multipliers(lp, u, v))
    if first["certified"] or not repair or "gap" not in first:
        return first
    breaks_rows = first["max_primal_violation"] > first["primal_tolerance"]
    if breaks_rows or first["gap"] > settings.proof.repair_gap_limit * max(1.0, abs(first["upper_bound"])):
        return first
    for tau, iterations in settings.proof.dual_repairs:
        u_new, v_new = repaired_dual(lp, x, u, v, tau, iterations)
        found = check_optimality(lp, x, u_new, lower_column_multipliers(lp, u_new, v_new))
        if found["certified"]:
            found["dual_repair"] = {"tau": tau, "iterations": iterations}
            return found
    return first
