"""Clarabel on the reduced model and on plain LPs: the optimum, duals in HiGHS's convention, the
cost scale undone, the implied bounds left out only when asked; and those implied bounds themselves."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.implied_bounds import implied_nonnegative
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.clarabel import clarabel_lp, objective_scale, run_clarabel
from countdp.mechanisms.closed_forms import geometric
from countdp.values.objectives import objective_value


def test_clarabel_lp_solves_a_hand_made_lp_with_duals_in_highs_convention():
    """min -x0 - x1 s.t. x0 + 2 x1 <= 4, 3 x0 + x1 <= 6, 0 <= x: optimum (8/5, 6/5), value -14/5;
    the row duals (by hand: -2/5, -1/5) satisfy ``cost - A^T row_dual = col_dual = 0``."""
    A = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 1.0]]))
    point = clarabel_lp(A, np.array([-1.0, -1.0]), np.zeros(2), np.full(2, np.inf), np.full(2, -np.inf),
                        np.array([4.0, 6.0]), 1e-12, "qdldl", cost_scale=7.0)
    assert point.solved and point.objective == pytest.approx(-2.8, abs=1e-9)
    np.testing.assert_allclose(point.x, [1.6, 1.2], atol=1e-9)
    np.testing.assert_allclose(point.row_dual, [-0.4, -0.2], atol=1e-9)
    np.testing.assert_allclose(point.col_dual, 0.0, atol=1e-9)


def test_an_infeasible_lp_is_reported_and_run_clarabel_raises():
    """x0 >= 1 and x0 <= 0: Clarabel's status says so; on a reduced model the run raises."""
    point = clarabel_lp(sp.csr_matrix(np.array([[1.0]])), np.ones(1), np.zeros(1), np.zeros(1), np.ones(1),
                        np.full(1, np.inf), 1e-12, "qdldl")
    assert not point.solved
    lp = build_reduced_lp(10, 0.7, ("WH",), "L1")
    with pytest.raises(RuntimeError, match="Clarabel returned"):
        run_clarabel(replace(lp, col_upper=np.full(lp.A.shape[1], 1e-3)), settings=DEFAULT_SETTINGS)


@pytest.mark.parametrize("cost_scale", [1.0, 50.0])
def test_point_has_the_theorem_3_optimum_in_the_models_units(cost_scale):
    """WH with S, L0, n = 16, alpha = 0.62: GM's value (Theorem 3), whatever the cost scale, and the
    duals in the model's units (``col_dual = cost - A^T row_dual`` up to Clarabel's tolerance)."""
    n, alpha = 16, 0.62
    lp = build_reduced_lp(n, alpha, ("WH", "S"), "L0")
    run = run_clarabel(lp, cost_scale, settings=DEFAULT_SETTINGS)
    assert run.objective == pytest.approx(objective_value(geometric(n, alpha), "L0"), abs=1e-9)
    np.testing.assert_allclose(run.col_dual, lp.cost - lp.A.T @ run.row_dual, atol=1e-8)


def test_implied_bounds_left_out_only_when_asked():
    """LP with RM, L2: leaving out the bounds the DP rows imply keeps the optimum, and those
    columns get no bound dual; with the bounds kept, some of them carry one."""
    lp = build_reduced_lp(20, 0.9, ("RM",), "L2")
    implied = implied_nonnegative(lp.A, lp.row_lower, lp.row_upper, lp.col_lower)
    kept = run_clarabel(lp, objective_scale(lp), settings=DEFAULT_SETTINGS)
    dropped = run_clarabel(lp, objective_scale(lp), drop_implied_bounds=True, settings=SolverSettings())
    assert implied.sum() > 0 and dropped.objective == pytest.approx(kept.objective, rel=1e-8)
    assert np.all(dropped.col_dual[implied] == 0.0) and np.any(kept.col_dual[implied] != 0.0)


def test_objective_scale_is_gms_objective_at_least_one():
    """L2: GM's L2 loss (above 1); L0: below 1, so 1; no problem attached: 1."""
    n, alpha = 30, 0.9
    lp = build_reduced_lp(n, alpha, ("WH",), "L2")
    gm = objective_value(geometric(n, alpha), "L2")
    assert gm > 1 and objective_scale(lp) == pytest.approx(gm, rel=1e-12)
    assert objective_scale(build_reduced_lp(n, alpha, ("WH",), "L0")) == 1.0
    assert objective_scale(replace(lp, problem=None)) == 1.0
