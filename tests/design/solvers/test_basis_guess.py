"""The basis read off an interior point: square, a few pivots from the optimum, and a given prior
taken as it is (flipped only as far as it is not square)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from countdp.design.highspy_loader import load_highspy
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.basis_guess import guess_basis
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.interior import interior_point
from countdp.design.solvers.scaling import scaled_model, scales


def _statuses(basis):
    S = load_highspy().HighsBasisStatus
    return (np.array([s == S.kBasic for s in basis.col_status]), np.array([s != S.kBasic for s in basis.row_status]))


def _scaled(lp, run):
    col, row = scales(lp, settings=DEFAULT_SETTINGS)
    return scaled_model(lp, col, row), replace(run, y=run.y / col, row_dual=run.row_dual / row,
                                               col_dual=run.col_dual * col)


@pytest.mark.parametrize("props, objective", [(("WH", "S"), "L1"), (("F",), "L2"), (("CH", "RM"), "L0d:1")])
def test_guess_from_clarabels_point_is_square_and_near_the_optimum(props, objective):
    """As many basic columns as active rows; the dual simplex from the guess reaches the cold
    simplex's optimal value in fewer pivots than the cold start."""
    lp = build_reduced_lp(30, 0.8, props, objective)
    scaled, point = _scaled(lp, interior_point(lp, settings=DEFAULT_SETTINGS))
    basic, active = _statuses(guess_basis(scaled, point, settings=SolverSettings.of(guess_tail=1e-8)))
    assert basic.sum() == active.sum()
    cold = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    warm = run_highs(lp, "simplex", start=guess_basis(scaled, point, settings=DEFAULT_SETTINGS),
                     settings=DEFAULT_SETTINGS)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9) and warm.pivots < cold.pivots


def test_a_square_prior_is_taken_as_it_is_and_an_uneven_one_flipped_once():
    """Given the statuses of an optimal basis, the guess is that basis: no flips.  With one
    non-basic column marked basic, exactly one decision is flipped back to make it square."""
    lp = build_reduced_lp(30, 0.8, ("WH", "S"), "L1")
    run = run_highs(lp, "simplex", settings=DEFAULT_SETTINGS)
    scaled, point = _scaled(lp, run)
    basic, _, active, _ = run.basis
    got_basic, got_active = _statuses(guess_basis(scaled, point, (basic, active), settings=DEFAULT_SETTINGS))
    assert np.array_equal(got_basic, basic) and np.array_equal(got_active, active)
    extra = basic.copy()
    extra[np.flatnonzero(~basic)[0]] = True
    got_basic, got_active = _statuses(guess_basis(scaled, point, (extra, active), settings=DEFAULT_SETTINGS))
    assert got_basic.sum() == got_active.sum()
    assert (got_basic != extra).sum() + (got_active != active).sum() == 1
