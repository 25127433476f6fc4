"""Fairness substituted out for Clarabel and the answer lifted back: an exact change of variables
whose lifted dual proves the full LP (F's rows included), and which declines rows not of its form."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from countdp.design.designer import design_lp
from countdp.design.lp_solve import prove, vertex_matrix
from countdp.design.reduce import build_reduced_lp
from countdp.design.reductions.substitute_f import SubstituteF, fair_rows, lift, substitution
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.solvers.clarabel import run_clarabel
from countdp.privacy.certify import certify


def test_fairness_substituted_for_clarabel_and_lifted_back():
    """Clarabel solves the model with F's rows substituted out (one variable for the diagonal); the
    answer lifted back has a constant diagonal, and its dual closes the certificate on the full LP
    at cvxpy's optimum of the unreduced LP; with F's multipliers set to 0 it does not."""
    n, alpha, props = 12, 0.62, ("RH", "F")
    lp = build_reduced_lp(n, alpha, props, "L0d:1")
    sub, M, rows, cols = substitution(lp)
    assert rows.size == n and sub.A.shape == (lp.A.shape[0] - n, lp.A.shape[1] - n)
    run = lift(lp, (sub, M, rows, cols), run_clarabel(sub, settings=DEFAULT_SETTINGS))
    P = vertex_matrix(lp, run)
    assert np.ptp(np.diag(P)) == 0.0
    reference = design_lp(n, alpha, props, "L0d:1", backend="cvxpy")
    optimality = prove(lp, run, certify(P, alpha)[0], settings=DEFAULT_SETTINGS)
    assert optimality["certified"]
    assert optimality["upper_bound"] == pytest.approx(reference.objective_value, abs=1e-9)
    run.row_dual[rows] = 0.0
    assert not prove(lp, run, certify(P, alpha)[0], settings=DEFAULT_SETTINGS)["certified"]


def test_the_reduction_object_maps_points_and_duals_back():
    """``SubstituteF().apply``: the substituted model and its inverse; the lifted dual leaves every
    diagonal column of F a reduced cost of exactly 0 (up to rounding), and the point holds F."""
    lp = build_reduced_lp(10, 0.7, ("F",), "L1")
    sub, inverse = SubstituteF().apply(lp)
    run = run_clarabel(sub, settings=DEFAULT_SETTINGS)
    y = inverse.invert_primal(run.y)
    np.testing.assert_allclose(lp.A[fair_rows(lp)] @ y, 0.0, atol=1e-15)
    row_dual, col_dual = inverse.invert_dual(run.row_dual, run.col_dual)
    np.testing.assert_allclose(col_dual[inverse.found[3]], 0.0, atol=1e-12)
    lifted = inverse.invert_run(run)
    np.testing.assert_array_equal(lifted.y, y)
    np.testing.assert_array_equal(lifted.row_dual, row_dual)
    assert lp.cost @ y == pytest.approx(run.objective, rel=1e-9)


def test_no_substitution_without_f_or_for_rows_not_of_its_form():
    """No F: nothing to substitute.  An F row whose right-hand side is not 0 (a broken model) is not
    the equality ``a_d y_d + a_z y_z = 0``: the model is kept as it is."""
    plain = build_reduced_lp(10, 0.7, ("RH",), "L1")
    assert substitution(plain) is None and not SubstituteF().accepts(plain)
    assert SubstituteF().apply(plain)[0] is plain
    lp = build_reduced_lp(10, 0.7, ("F",), "L1")
    assert substitution(lp) is not None
    lower, upper = lp.row_lower.copy(), lp.row_upper.copy()
    lower[fair_rows(lp)[0]] = upper[fair_rows(lp)[0]] = 1e-3
    assert substitution(replace(lp, row_lower=lower, row_upper=upper)) is None
