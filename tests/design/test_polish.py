"""Polishing: the exact vertex of a basis, the DP closure of a nearly DP matrix, the closure tried
only where certify's UM repair was needed, and reduced duals mapped to the full model."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.optimality import check_optimality, lower_column_multipliers
from countdp.design.polish import basis_vertex, certified_and_proven, dp_closure, full_dual
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.solvers.highs import run_highs
from countdp.mechanisms.closed_forms import geometric, uniform
from countdp.privacy.certify import certify, is_alpha_dp


def test_basis_vertex_solves_the_basis_exactly_and_declines_a_non_square_one():
    lp = build_reduced_lp(16, 0.8, ("RM", "CM", "WH", "S"), "L1")
    run = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    y, row_dual, col_dual = basis_vertex(lp, *run.basis)
    col_basic, col_upper, row_active, row_upper = run.basis
    bound = np.where(row_upper, lp.row_upper, lp.row_lower)[row_active]
    np.testing.assert_allclose((lp.A @ y)[row_active], bound, rtol=0, atol=1e-15)
    np.testing.assert_allclose(lp.cost[col_basic], (lp.A.T @ row_dual)[col_basic], rtol=0, atol=1e-15)
    assert lp.cost @ y == pytest.approx(run.objective, rel=1e-9) and np.all(col_dual[col_basic] == 0.0)
    fewer = row_active.copy()
    fewer[np.flatnonzero(row_active)[0]] = False
    assert basis_vertex(lp, col_basic, col_upper, fewer, row_upper) is None


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_dp_closure_keeps_a_dp_matrix_to_rounding(alpha):
    """GM meets every DP row with equality outward from the diagonal and its columns sum to 1."""
    P = geometric(40, alpha)
    closed = dp_closure(P, alpha)
    np.testing.assert_allclose(closed, P, rtol=0, atol=1e-14)
    np.testing.assert_allclose(closed.sum(axis=0), 1.0, rtol=0, atol=1e-14)


def test_dp_closure_sets_column_sums_without_um():
    """GM with each diagonal entry lowered by a different 1e-11: columns sum short, and certify's
    UM mixture is needed; the closure puts each shortfall back on its diagonal: GM again, DP."""
    alpha, n = 0.62, 64
    G = geometric(n, alpha)
    P = G.copy()
    P[np.arange(n + 1), np.arange(n + 1)] -= 1e-11 * (1 + np.arange(n + 1) % 3)
    assert not is_alpha_dp(P, alpha)
    _, mixed = certify(P, alpha)
    closed = dp_closure(P, alpha)
    np.testing.assert_allclose(closed, G, rtol=0, atol=1e-14)
    assert is_alpha_dp(closed, alpha)
    assert certify(closed, alpha)[1].repair_lambda == 0.0 < 1e-10 < mixed.repair_lambda


def test_dp_closure_repairs_a_broken_tail_without_um():
    """A tail entry of GM halved breaks a DP row; the closure raises it back to alpha times its
    neighbour and takes the mass off the diagonal."""
    alpha, n = 0.5, 60
    P = geometric(n, alpha)
    P[50, 10] *= 0.5
    assert not is_alpha_dp(P, alpha)
    closed = dp_closure(P, alpha)
    assert closed[50, 10] == alpha * closed[50, 11] and is_alpha_dp(certify(closed, alpha)[0], alpha)
    assert P[10, 10] - closed[10, 10] == pytest.approx(P[50, 10], rel=1e-3)


def test_the_closure_is_tried_only_where_the_um_repair_was_needed_and_the_proof_failed():
    """A matrix certify must mix with UM, whose proof fails: the closure is proven next and kept
    when it closes.  Not asked for (``closure=False``), or for a matrix already DP, it is not tried."""
    alpha, n = 0.62, 30
    raw = geometric(n, alpha)
    raw[np.arange(n + 1), np.arange(n + 1)] -= 1e-11
    calls = []

    def second_passes(P):
        calls.append(P)
        return {"certified": len(calls) > 1}

    matrix, P, certificate, optimality = certified_and_proven(raw, alpha, second_passes)
    assert len(calls) == 2 and optimality["dp_closure"] and certificate.repair_lambda == 0.0
    np.testing.assert_array_equal(matrix, dp_closure(raw, alpha))
    calls.clear()
    matrix, _, _, optimality = certified_and_proven(raw, alpha, second_passes, closure=False)
    assert len(calls) == 1 and matrix is raw and not optimality["certified"]
    calls.clear()
    assert certify(uniform(n), alpha)[1].repair_lambda == 0.0  # UM is DP with room to spare
    certified_and_proven(uniform(n), alpha, lambda P: calls.append(P) or {"certified": False})
    assert len(calls) == 1


@pytest.mark.parametrize("props", [("RM", "CM", "WH", "S"), ("F", "WH")])
def test_full_dual_of_an_optimal_vertex_proves_it_on_the_full_model(props):
    """Folded, halved and bound rows mapped back: the weak-duality check on the full model closes;
    with the reduced row duals zeroed it does not."""
    lp = build_reduced_lp(16, 0.7, props, "L1")
    run = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    y, row_dual, col_dual = basis_vertex(lp, *run.basis)
    full = lp.problem.lp()
    N = lp.n + 1
    x = lp.problem.point(certify((lp.expand @ y)[: N * N].reshape(N, N), 0.7)[0])
    u, v = full_dual(lp, row_dual, col_dual)
    assert check_optimality(full, x, u, lower_column_multipliers(full, u, v))["certified"]
    u0, v0 = full_dual(lp, np.zeros_like(row_dual), col_dual)
    assert not check_optimality(full, x, u0, lower_column_multipliers(full, u0, v0))["certified"]
