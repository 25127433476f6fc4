"""Polishing a run from its basis: the exact vertex of that basis, or the run unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.solved import polish_run
from countdp.mechanisms.closed_forms import geometric
from countdp.values.objectives import objective_value


def _row_violation(lp, y):
    a = lp.A @ y
    return max(np.max(lp.row_lower - a, initial=0.0), np.max(a - lp.row_upper, initial=0.0),
               np.max(lp.col_lower - y, initial=0.0))


def test_polished_vertex_is_exact_and_optimal():
    """WH with S, L0, n = 12, alpha = 0.62: GM is optimal (Theorem 3: n >= 2a/(1-a)).  The polished
    vertex breaks no row beyond rounding, has GM's value, and its duals satisfy
    ``col_dual = cost - A^T row_dual`` with zero reduced cost on the basic columns."""
    n, alpha = 12, 0.62
    lp = build_reduced_lp(n, alpha, ("WH", "S"), "L0")
    run = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    polished = polish_run(lp, run)
    assert polished.polished and not run.polished
    assert _row_violation(lp, polished.y) <= 1e-15
    assert polished.objective == pytest.approx(objective_value(geometric(n, alpha), "L0"), abs=1e-13)
    np.testing.assert_allclose(polished.col_dual, lp.cost - lp.A.T @ polished.row_dual, atol=1e-15)
    assert np.all(polished.col_dual[run.basis[0]] == 0.0)


def test_a_run_without_a_usable_basis_is_returned_as_it_is():
    """No basis (an interior point), or a basis that is not square (one column flipped to basic):
    nothing to polish."""
    lp = build_reduced_lp(10, 0.7, ("WH", "S"), "L1")
    run = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    assert polish_run(lp, replace(run, basis=None)).polished is False
    col_basic, col_upper, row_active, row_upper = run.basis
    flipped = col_basic.copy()
    flipped[np.flatnonzero(~col_basic)[0]] = True
    unchanged = replace(run, basis=(flipped, col_upper, row_active, row_upper))
    assert polish_run(lp, unchanged) is unchanged
