"""The scaled model: column scales alpha^|i-j| (floored), rows of largest coefficient 1, and the
inverse that maps a solve of it back to the model's units."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.highs import highs_lp
from countdp.design.solvers.scaling import Scaling, scaled_model, scales


def solve_highs_lp(model):
    """HiGHS's default simplex on a ``HighsLp``: ``(x, row_dual, col_dual, value)``."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    solution = h.getSolution()
    return (np.array(solution.col_value), np.array(solution.row_dual), np.array(solution.col_dual),
            h.getInfo().objective_function_value)


def test_column_scales_are_the_natural_sizes_of_the_entries():
    """Without folding, column k is entry (i, j) = divmod(k, N): its scale is alpha^|i-j|, at least the floor."""
    n, alpha = 20, 0.5
    lp = build_reduced_lp(n, alpha, ("WH",), "L1", fold_symmetry=False)
    col, row = scales(lp, settings=SolverSettings.of(col_scale_floor=1e-3))
    i, j = np.divmod(np.arange((n + 1) ** 2), n + 1)
    np.testing.assert_array_equal(col, np.maximum(alpha ** np.abs(i - j).astype(float), 1e-3))
    scaled = scaled_model(lp, col, row)
    np.testing.assert_allclose(abs(scaled.A).max(axis=1).toarray().ravel(), 1.0, rtol=1e-15)
    lower = scales(lp, settings=SolverSettings.of(col_scale_floor=1e-9))[0]
    assert lower.min() < 1e-3 == col.min()  # the floor decides


@pytest.mark.parametrize("props, objective", [(("RM", "CM", "WH", "S"), "L1"), (("F",), "L2")])
def test_a_solve_of_the_scaled_model_maps_back_to_an_optimum_of_the_model(props, objective):
    """Scaling is a change of units: the scaled model's optimum, mapped back, is feasible for the
    model and has the model's own optimal value (both solved by HiGHS, unscaled and scaled), and
    the mapped duals keep ``col_dual = cost - A^T row_dual``."""
    lp = build_reduced_lp(14, 0.8, props, objective)
    scaled, inverse = Scaling(DEFAULT_SETTINGS, row_boost=10.0).apply(lp)
    y_s, row_s, col_s, value_s = solve_highs_lp(highs_lp(scaled.A, scaled.cost, scaled.col_lower, scaled.col_upper,
                                                         scaled.row_lower, scaled.row_upper))
    _, _, _, value = solve_highs_lp(highs_lp(lp.A, lp.cost, lp.col_lower, lp.col_upper, lp.row_lower, lp.row_upper))
    y = inverse.invert_primal(y_s)
    assert lp.cost @ y == pytest.approx(value, rel=1e-8) and value_s == pytest.approx(value, rel=1e-8)
    assert np.min(lp.A @ y - lp.row_lower) >= -1e-8
    row_dual, col_dual = inverse.invert_dual(row_s, col_s)
    np.testing.assert_allclose(col_dual, lp.cost - lp.A.T @ row_dual, atol=1e-7)
