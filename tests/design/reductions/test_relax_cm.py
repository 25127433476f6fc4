"""CM relaxed to CH (countdp.design.reductions.relax_cm): the multipliers' identity, the proof on
the LP with CM, and the optimal face."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import lp_solve
from countdp.design.constraints import property_rows, property_system
from countdp.design.model import DesignProblem
from countdp.design.polish import full_dual
from countdp.design.reductions.fold_symmetry import FoldS
from countdp.design.reductions.relax_cm import (
    RelaxCM,
    check_with,
    cm_multipliers,
    face_model,
    only_cm_broken,
    prover,
    relaxed_properties,
    spread_dual,
    target_dual,
)
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings


@pytest.mark.parametrize("n", [1, 2, 7])
def test_cm_multipliers_combine_the_cm_rows_into_the_ch_rows(n):
    """Each CH row is a sum of CM rows, so the spread multipliers give the same combination of
    rows (and, both right-hand sides being 0, the same dual objective), and stay >= 0."""
    ch, cm = property_system("CH", n), property_system("CM", n)
    assert not ch.b_ub.any() and not cm.b_ub.any()
    u = np.random.default_rng(n).random(ch.A_ub.shape[0])
    v = cm_multipliers(n, u)
    assert v.shape == (cm.A_ub.shape[0],) and v.min() >= 0
    np.testing.assert_allclose(cm.A_ub.T @ v, ch.A_ub.T @ u, rtol=0, atol=1e-12)


def test_relaxed_properties_swap_cm_for_ch():
    assert relaxed_properties(("RM", "CM", "WH")) == ("RM", "CH", "WH")
    assert relaxed_properties(("CH", "CM")) == ("CH",)


def test_the_reduction_relaxes_and_its_inverse_spreads():
    """apply: CM replaced by CH; invert_dual: the spread dual, 0 on the target's own CH rows, and
    the same combination of rows as the relaxation's dual (so the same reduced costs)."""
    n = 5
    target = DesignProblem(n, 0.7, ("CH", "CM", "RM"), "L1")
    relaxed, inverse = RelaxCM().apply(target)
    assert set(relaxed.properties) == {"RM", "CH"}
    rng = np.random.default_rng(1)
    full = relaxed.lp()
    u, v = rng.random(full.b_ub.size), rng.random(full.b_eq.size)
    out_u, out_v = inverse.invert_dual(u, v)
    expected = spread_dual(relaxed, target, u, v)
    assert np.array_equal(out_u, expected[0]) and np.array_equal(out_v, expected[1])
    assert not out_u[target.blocks["CH"][1]].any()
    big = target.lp()
    np.testing.assert_allclose(big.A_ub.T @ out_u + big.A_eq.T @ out_v, full.A_ub.T @ u + full.A_eq.T @ v,
                               rtol=0, atol=1e-12)


def _relaxation(n, alpha, props, objective):
    """The target, the relaxation, and the relaxation's reduced model with S folded in."""
    target = DesignProblem(n, alpha, props, objective)
    relaxed, _ = RelaxCM().apply(target)
    return target, relaxed, lp_solve.reduced_lp(FoldS().apply(relaxed)[0])


CASES = [(("RM", "CM", "WH"), "L1", 0.8), (("CM",), "L2", 0.62), (("RM", "CM", "F"), "L1", 0.5)]


@pytest.mark.parametrize("props,objective,alpha", CASES)
def test_the_relaxations_point_is_proven_on_the_lp_with_cm(props, objective, alpha):
    """Clarabel's point of the LP with CH (S folded in) is proven optimal on the LP with CM, at
    the optimum of that LP solved on its own (simplex on the model with CM, no relaxation)."""
    n = 12
    target, relaxed, lp = _relaxation(n, alpha, props, objective)
    run, optimality = lp_solve.proven_point(lp, prover=prover(target, relaxed, settings=DEFAULT_SETTINGS),
                                            settings=DEFAULT_SETTINGS)
    assert optimality["certified"], optimality
    direct = lp_solve.solve_proven(lp_solve.reduced_lp(target), "simplex", settings=DEFAULT_SETTINGS)[3]
    assert direct["certified"]
    assert optimality["upper_bound"] == pytest.approx(direct["upper_bound"], rel=1e-8, abs=1e-9)


def test_the_proof_on_the_lp_with_cm_can_fail():
    """A point that breaks a CM row, or CH multipliers not spread (CM rows given 0), is not proven."""
    n, alpha, props = 12, 0.8, ("RM", "CM", "WH")
    target, relaxed, lp = _relaxation(n, alpha, props, "L1")
    prove = prover(target, relaxed, settings=DEFAULT_SETTINGS)
    run, optimality = lp_solve.proven_point(lp, prover=prove, settings=DEFAULT_SETTINGS)
    assert optimality["certified"]
    P = lp_solve.vertex_matrix(lp, run)
    assert prove(lp, run, P)["certified"]
    broken = P.copy()
    broken[[5, 6], 3] = broken[[6, 5], 3]  # below the diagonal: now rising away from it
    found = prove(lp, run, broken)
    assert not found["certified"] and found["max_primal_violation"] > 1e-9
    u, v = target_dual(target, relaxed, lp, run)
    unspread = u.copy()
    unspread[target.blocks["CM"][1]] = 0.0
    assert check_with(target, u, v, P, settings=DEFAULT_SETTINGS)["certified"]
    assert not check_with(target, unspread, v, P, settings=DEFAULT_SETTINGS)["certified"]


def test_a_relaxed_optimum_off_cm_is_not_proven():
    """LP with WH and CM, L0,1, n = 12, alpha = 0.91: the relaxation has the same optimal value
    (the gap closes) but its point, the centre of a larger optimal face, breaks CM."""
    n, alpha, props = 12, 0.91, ("CM", "WH")
    target, relaxed, lp = _relaxation(n, alpha, props, "L0d:1")
    run, optimality = next(lp_solve.proven_points(lp, prover=prover(target, relaxed, settings=DEFAULT_SETTINGS),
                                                  settings=DEFAULT_SETTINGS))
    assert optimality["gap"] <= 1e-12 and optimality["max_primal_violation"] > 1e-6
    assert not optimality["certified"] and only_cm_broken(optimality)
    P = lp_solve.vertex_matrix(lp, run)
    assert property_rows("CM", n).violation(P.ravel()) > 1e-6


def test_only_cm_broken_needs_a_closed_gap_and_a_broken_row():
    base = {"gap": 1e-12, "gap_tolerance_rel": 1e-9, "upper_bound": 2.0, "max_primal_violation": 1e-5,
            "primal_tolerance": 1e-9}
    assert only_cm_broken(base)
    assert not only_cm_broken({**base, "gap": 1e-3})
    assert not only_cm_broken({**base, "max_primal_violation": 1e-12})
    assert not only_cm_broken({k: v for k, v in base.items() if k != "gap"})


def test_face_model_marks_rows_by_their_multipliers():
    """Rows with a multiplier above face_tol times the largest cost become equalities, columns with
    such a reduced cost are fixed at 0, and nothing else changes; a larger face_tol marks fewer."""
    n, alpha = 6, 0.8
    lp = lp_solve.reduced_lp(DesignProblem(n, alpha, ("CM",), "L1"))
    full = lp.problem.lp()
    settings = SolverSettings()
    unit = settings.proof.face_tol * np.abs(lp.cost).max()
    u, v = np.zeros(full.b_ub.size), np.zeros(full.b_eq.size)
    inequality = np.flatnonzero(~np.isfinite(lp.row_upper))
    u[lp.row_origin[inequality[:3]]] = [2 * unit, unit / 2, 1.0]
    reduced = np.zeros(lp.A.shape[1])
    reduced[[0, 4]] = [2 * unit, unit / 2]
    face = face_model(lp, u, v, reduced, settings=settings)
    np.testing.assert_array_equal(face.row_upper[inequality[:3]], [lp.row_lower[inequality[0]], np.inf,
                                                                     lp.row_lower[inequality[2]]])
    assert np.array_equal(np.isfinite(face.row_upper), np.isfinite(lp.row_upper) | np.isin(
        np.arange(lp.A.shape[0]), inequality[[0, 2]]))
    assert face.col_upper[0] == 0 and face.col_upper[4] == lp.col_upper[4] and not face.cost.any()
    coarse = face_model(lp, u, v, reduced, settings=SolverSettings.of(face_tol=4 * settings.proof.face_tol))
    assert np.isinf(coarse.row_upper[inequality[0]]) and coarse.col_upper[0] == lp.col_upper[0]


def test_the_spread_dual_of_a_solve_closes_on_the_lp_with_cm():
    """The relaxation solved by simplex (no S): its dual, spread, proves the LP with CM's own
    optimum (solved separately), and the raw dual copied by block name (CM rows 0) does not."""
    n, alpha = 8, 0.7
    target = DesignProblem(n, alpha, ("RM", "CM"), "L1")
    relaxed, inverse = RelaxCM().apply(target)
    lp = lp_solve.reduced_lp(relaxed)
    _, _, run, _ = lp_solve.solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    P = lp_solve.solve_proven(lp_solve.reduced_lp(target), "simplex", settings=DEFAULT_SETTINGS)[0]
    assert check_with(target, *inverse.invert_dual(u, v), P, settings=DEFAULT_SETTINGS)["certified"]
    assert not check_with(target, *target.dual_from(relaxed, u, v), P, settings=DEFAULT_SETTINGS)["certified"]


def test_a_dual_that_cannot_be_unfolded_proves_nothing():
    """A folded solve of another relaxation (CH alone, not RH and CH): its dual has no multipliers
    for RH's rows, so there is no target dual and the prover says why."""
    n, alpha = 8, 0.7
    target = DesignProblem(n, alpha, ("RH", "CM"), "L1")
    relaxed, _ = RelaxCM().apply(target)
    lp = lp_solve.reduced_lp(DesignProblem(n, alpha, ("CH", "S"), "L1"))
    P, _, run, _ = lp_solve.solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    assert target_dual(target, relaxed, lp, run) is None
    found = prover(target, relaxed, settings=DEFAULT_SETTINGS)(lp, run, P)
    assert not found["certified"] and "mirror" in found["reason"]
