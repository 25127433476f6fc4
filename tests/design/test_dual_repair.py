"""The dual repair before the optimality check: it proves an optimal matrix whose dual is noisy,
never a matrix that is not optimal (the weak-duality check still decides), and is not tried on a
dual far from optimal or a matrix that breaks a row."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.designer import design_lp
from countdp.design.dual_repair import prove_dual, repaired_dual
from countdp.design.lp_solve import proven_point, solve_proven
from countdp.design.polish import full_dual
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.solved import INTERIOR_GUIDE
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.values.objectives import objective_value


def _optimal(n, alpha, props):
    """The full LP, the proven optimal matrix's point and the exact dual of its vertex."""
    lp = build_reduced_lp(n, alpha, props, "L0")
    P, _, run, opt = solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    assert opt["certified"] and run.polished
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return lp.problem.lp(), lp.problem.point(P), u, v


def _noisy(u, v, size, seed=0):
    """The dual with an interior point's kind of error: every active multiplier and every equality
    multiplier off by up to ``size`` relative, so the reduced costs of the mass are no longer 0."""
    rng = np.random.default_rng(seed)
    active = u > 0
    u = u.copy()
    u[active] *= 1 + size * rng.uniform(-1, 1, int(active.sum()))
    return u, v * (1 + size * rng.uniform(-1, 1, v.size))


@pytest.mark.parametrize(("n", "alpha"), [(24, 0.62), (40, 0.91)])
def test_noisy_dual_of_the_fair_optimum_is_repaired_and_brackets_theorem_4(n, alpha):
    """LP with F, L0: EM is optimal (Theorem 4).  The vertex's exact dual with 2e-9 of relative
    noise leaves the certificate open; repaired, it closes, and the proven interval contains EM's
    objective.  Without repair tiers (settings) it stays open."""
    full, x, u, v = _optimal(n, alpha, ("F",))
    nu, nv = _noisy(u, v, 2e-9)
    plain = prove_dual(full, x, nu, nv, repair=False, settings=DEFAULT_SETTINGS)
    assert not plain["certified"] and 1e-9 < plain["gap"] < 1e-8
    repaired = prove_dual(full, x, nu, nv, settings=DEFAULT_SETTINGS)
    assert repaired["certified"] and repaired["dual_repair"]["tau"] in (1e-6, 1e-5, 1e-7)
    em = objective_value(explicit_fair(n, alpha), "L0")
    assert repaired["lower_bound"] - 1e-12 <= em <= repaired["upper_bound"] + 1e-12
    assert repaired["upper_bound"] - repaired["lower_bound"] <= 1e-9 * max(1.0, em)
    assert not prove_dual(full, x, nu, nv, settings=SolverSettings.of(dual_repairs=()))["certified"]


@pytest.mark.parametrize("lam", [1e-3, 1e-7])
def test_repair_does_not_prove_a_matrix_that_is_not_optimal(lam):
    """BasicDP, L0: GM is optimal (Theorem 3).  A DP mixture with UM, ``lam`` of it, costs ``lam``
    times the difference of their objectives: no dual, repaired or not, proves it."""
    n, alpha = 30, 0.62
    full, x, u, v = _optimal(n, alpha, ("RH",))
    mixed = (1 - lam) * geometric(n, alpha) + lam * uniform(n)
    gm, um = objective_value(geometric(n, alpha), "L0"), objective_value(uniform(n), "L0")
    assert lam * (um - gm) > 1e-9  # the mixture is that far from optimal
    for du, dv in ((u, v), _noisy(u, v, 2e-9)):
        found = prove_dual(full, mixed.ravel(), du, dv, settings=DEFAULT_SETTINGS)
        assert not found["certified"]
        assert found["lower_bound"] <= gm + 1e-12  # weak duality: never above the optimum


def test_no_repair_for_a_large_gap_or_a_broken_row():
    """A noisy dual that the repair closes under the default gap limit is left alone under a gap
    limit below its gap; a dual far from optimal (1e-3 of noise), or a matrix that breaks a DP row,
    is never certified."""
    n, alpha = 24, 0.62
    full, x, u, v = _optimal(n, alpha, ("F",))
    nu, nv = _noisy(u, v, 2e-9)
    assert prove_dual(full, x, nu, nv, settings=DEFAULT_SETTINGS)["certified"]
    assert not prove_dual(full, x, nu, nv, settings=SolverSettings.of(repair_gap_limit=1e-10))["certified"]
    assert not prove_dual(full, x, *_noisy(u, v, 1e-3), settings=DEFAULT_SETTINGS)["certified"]
    broken = x.copy()
    broken[1] = broken[0] / alpha * (1 + 1e-6)  # P[0, 1] above P[0, 0] / alpha
    found = prove_dual(full, broken, *_noisy(u, v, 1e-9), settings=DEFAULT_SETTINGS)
    assert not found["certified"] and found["max_primal_violation"] > 1e-9


def test_repaired_dual_keeps_row_multipliers_non_negative():
    n, alpha = 24, 0.62
    full, x, u, v = _optimal(n, alpha, ("F",))
    nu, nv = _noisy(u, v, 2e-9)
    ru, rv = repaired_dual(full, x, nu, nv, 1e-6, 300)
    assert ru.min() >= 0.0 and rv.shape == nv.shape and not np.array_equal(ru, nu)


def test_a_noisy_interior_point_is_proven_by_repair():
    """Clarabel's point at a loose tolerance (1e-10) on LP with RM+CH+F, L0,1, n = 32, alpha = 0.5:
    its own dual leaves the certificate open, the repaired one closes it, and the value is the plain
    cvxpy LP's optimum.  Without repair tiers the same points are not proven."""
    args = (32, 0.5, ("RM", "CH", "F"), "L0d:1")
    loose = SolverSettings.of(guide_clarabel_tol=1e-10)
    run, optimality = proven_point(build_reduced_lp(*args), settings=loose)
    assert optimality["certified"] and run.guide.startswith(INTERIOR_GUIDE)
    assert optimality["dual_repair"] == {"tau": 1e-6, "iterations": 300}
    reference = design_lp(*args, backend="cvxpy")
    assert optimality["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-7)
    _, unrepaired = proven_point(build_reduced_lp(*args), settings=loose.with_values(dual_repairs=()))
    assert not unrepaired["certified"] and "dual_repair" not in unrepaired
