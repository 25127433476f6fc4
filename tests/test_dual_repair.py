"""The dual repair before the optimality check: it proves an optimal matrix whose dual is noisy,
and never a matrix that is not optimal (the weak-duality check still decides)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.dual_repair import prove_dual
from countdp.design.fast import build_reduced_lp, solve_proven
from countdp.design.polish import full_dual
from countdp.evaluate.metrics import objective_value
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform


def _optimal(n, alpha, props):
    """The full LP, the proven optimal matrix's point and the exact dual of its vertex."""
    lp = build_reduced_lp(n, alpha, props, "L0")
    P, _, run, opt = solve_proven(lp, "simplex")
    assert opt["certified"] and run.polished
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return lp.problem.lp(), lp.problem.point(P), u, v


def _noisy(u, v, size, seed=0):
    """The dual with an interior point's kind of error: every active multiplier and every
    equality multiplier off by up to ``size`` relative, so reduced costs of the entries that
    carry the mass are no longer 0."""
    rng = np.random.default_rng(seed)
    active = u > 0
    u = u.copy()
    u[active] *= 1 + size * rng.uniform(-1, 1, int(active.sum()))
    return u, v * (1 + size * rng.uniform(-1, 1, v.size))


@pytest.mark.parametrize(("n", "alpha"), [(24, 0.62), (40, 0.5), (40, 0.91)])
def test_noisy_dual_of_the_fair_optimum_is_repaired_and_brackets_theorem_4(n, alpha):
    """LP with F, L0: EM is optimal (Theorem 4).  The vertex's exact dual with 2e-9 of relative
    noise leaves the certificate open (gaps of 2.5e-9 to 3.3e-9, like Clarabel's unproven
    points); repaired, it closes, and the proven interval contains EM's objective."""
    full, x, u, v = _optimal(n, alpha, ("F",))
    nu, nv = _noisy(u, v, 2e-9)
    plain = prove_dual(full, x, nu, nv, repair=False)
    assert not plain["certified"] and 1e-9 < plain["gap"] < 1e-8
    repaired = prove_dual(full, x, nu, nv)
    assert repaired["certified"] and "dual_repair" in repaired
    em = objective_value(explicit_fair(n, alpha), "L0")
    assert repaired["lower_bound"] - 1e-12 <= em <= repaired["upper_bound"] + 1e-12
    assert repaired["upper_bound"] - repaired["lower_bound"] <= 1e-9 * max(1.0, em)


@pytest.mark.parametrize("lam", [1e-3, 1e-7])
def test_repair_does_not_prove_a_matrix_that_is_not_optimal(lam):
    """BasicDP, L0: GM is optimal (Theorem 3).  A DP mixture with UM, ``lam`` of it, costs
    ``lam`` times the difference of their objectives: no dual, repaired or not, proves it."""
    n, alpha = 30, 0.62
    full, x, u, v = _optimal(n, alpha, ("RH",))
    mixed = (1 - lam) * geometric(n, alpha) + lam * uniform(n)
    gm, um = objective_value(geometric(n, alpha), "L0"), objective_value(uniform(n), "L0")
    assert lam * (um - gm) > 1e-9  # the mixture is that far from optimal
    xm = mixed.ravel()
    for du, dv in ((u, v), _noisy(u, v, 2e-9)):
        found = prove_dual(full, xm, du, dv)
        assert not found["certified"]
        assert found["lower_bound"] <= gm + 1e-12  # weak duality: never above the optimum


def test_no_repair_for_a_large_gap_or_a_broken_row(monkeypatch):
    """A dual far from optimal (1e-3 of noise), or a matrix that breaks a DP row, is left to the
    next method: no repair is tried (it could not help, and costs LSQR runs)."""
    from countdp.design import dual_repair

    n, alpha = 24, 0.62
    full, x, u, v = _optimal(n, alpha, ("F",))

    def refuse(*args):
        raise AssertionError("repair tried")

    monkeypatch.setattr(dual_repair, "repaired_dual", refuse)
    assert not prove_dual(full, x, *_noisy(u, v, 1e-3))["certified"]
    broken = x.copy()
    broken[1] = broken[0] / alpha * (1 + 1e-6)  # P[0, 1] above P[0, 0] / alpha
    found = prove_dual(full, broken, *_noisy(u, v, 1e-9))
    assert not found["certified"] and found["max_primal_violation"] > 1e-9


def test_fast_design_proves_a_noisy_interior_point_by_repair(monkeypatch):
    """Clarabel's point at a looser tolerance (1e-11) on LP with RM+CH+F, L0,1, n = 80,
    alpha = 0.5, offered first (threshold lowered to n = 60): its own dual leaves the
    certificate open, the repaired one closes it, the artifact says so, and the value is the
    plain cvxpy LP's optimum."""
    from countdp.design import backends, dual_repair, seed
    from countdp.design.designer import design_lp
    from countdp.design.fast import fast_design

    monkeypatch.setattr(seed, "MIN_N", 60)
    monkeypatch.setattr(backends, "GUIDE_CLARABEL_TOL", 1e-11)
    args = (80, 0.5, ("RM", "CH", "F"), "L0d:1")
    found = fast_design(*args)
    opt = found.extra["optimality"]
    assert opt["certified"] and opt["guide"].startswith(backends.INTERIOR_GUIDE)
    assert opt["dual_repair"] == {"tau": 1e-6, "iterations": 300}
    reference = design_lp(*args, backend="cvxpy")
    assert opt["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-7)
    monkeypatch.setattr(dual_repair, "REPAIRS", ())  # without it no point is proven: a template's vertex
    unrepaired = fast_design(*args).extra["optimality"]
    assert unrepaired["certified"] and unrepaired["guide"].startswith("the design at n = ")
    assert unrepaired["primal_objective"] == pytest.approx(opt["primal_objective"], abs=1e-9)
