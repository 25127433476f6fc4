"""CM relaxed to CH: the multipliers' identity, the proof on the LP with CM, and the fallback."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import cm_relaxation
from countdp.design.backends import interior_point
from countdp.design.constraints import parse_properties, property_rows, property_system
from countdp.design.designer import design_lp, design_named
from countdp.design.fast import _proven_answer, build_reduced_lp, fast_design
from countdp.design.model import DesignProblem
from countdp.privacy.exact import exact_dp_check


@pytest.mark.parametrize("n", [1, 2, 7])
def test_cm_multipliers_combine_the_cm_rows_into_the_ch_rows(n):
    """Each CH row is a sum of CM rows, so the spread multipliers give the same combination of
    rows (and, both right-hand sides being 0, the same dual objective), and stay >= 0."""
    ch, cm = property_system("CH", n), property_system("CM", n)
    assert not ch.b_ub.any() and not cm.b_ub.any()
    u = np.random.default_rng(n).random(ch.A_ub.shape[0])
    v = cm_relaxation.cm_multipliers(n, u)
    assert v.shape == (cm.A_ub.shape[0],) and v.min() >= 0
    np.testing.assert_allclose(cm.A_ub.T @ v, ch.A_ub.T @ u, rtol=0, atol=1e-12)


def test_relaxed_properties_swap_cm_for_ch():
    assert cm_relaxation.relaxed_properties(("RM", "CM", "WH")) == ("RM", "CH", "WH")
    assert cm_relaxation.relaxed_properties(("CH", "CM")) == ("CH",)


CASES = [(("RM", "CM", "WH"), "L1", 0.8), (("CM",), "L2", 0.62), (("RM", "CM", "F"), "L1", 0.5)]


@pytest.mark.parametrize("props,objective,alpha", CASES)
def test_the_relaxations_point_is_proven_on_the_lp_with_cm(props, objective, alpha):
    """Clarabel's point of the LP with CH (S folded in) is proven optimal on the LP with CM, at
    the optimum of that LP solved on its own (simplex on the model with CM, no relaxation)."""
    n = 12
    target = DesignProblem(n, alpha, props, objective)
    relaxed = DesignProblem(n, alpha, cm_relaxation.relaxed_properties(props), objective)
    lp = build_reduced_lp(n, alpha, (*relaxed.properties, "S"), objective, None, "sum")
    _, optimality, _ = _proven_answer(lp, interior_point(lp), "guided", False, cm_relaxation.prover(target, relaxed))
    assert optimality["certified"], optimality
    direct = fast_design(n, alpha, props, objective)
    assert cm_relaxation.RELAXATION not in direct.extra["reductions"]
    assert optimality["upper_bound"] == pytest.approx(direct.solver_objective, rel=1e-8, abs=1e-9)


def test_the_proof_on_the_lp_with_cm_can_fail(monkeypatch):
    """A point that breaks a CM row, or CH multipliers not spread, is not proven."""
    n, alpha, props = 12, 0.8, ("RM", "CM", "WH")
    target = DesignProblem(n, alpha, props, "L1")
    relaxed = DesignProblem(n, alpha, cm_relaxation.relaxed_properties(props), "L1")
    lp = build_reduced_lp(n, alpha, (*relaxed.properties, "S"), "L1", None, "sum")
    run = interior_point(lp)
    prove = cm_relaxation.prover(target, relaxed)
    P, optimality, _ = _proven_answer(lp, run, "guided", False, prove)
    assert optimality["certified"]
    broken = P.copy()
    broken[[5, 6], 3] = broken[[6, 5], 3]  # below the diagonal: now rising away from it
    found = prove(lp, run, broken)
    assert not found["certified"] and found["max_primal_violation"] > 1e-9
    monkeypatch.setattr(cm_relaxation, "cm_multipliers", lambda n, ch: np.zeros(n * (n + 1)))
    assert not prove(lp, run, P)["certified"]


def test_a_relaxed_optimum_off_cm_is_not_proven():
    """LP with WH and CM, L0,1, n = 12, alpha = 0.91: the relaxation has the same optimal value
    (the gap closes) but its point, the centre of a larger optimal face, breaks CM."""
    n, alpha, props = 12, 0.91, ("CM", "WH")
    target = DesignProblem(n, alpha, props, "L0d:1")
    relaxed = DesignProblem(n, alpha, cm_relaxation.relaxed_properties(props), "L0d:1")
    lp = build_reduced_lp(n, alpha, (*relaxed.properties, "S"), "L0d:1", None, "sum")
    P, optimality, _ = _proven_answer(lp, interior_point(lp), "guided", False, cm_relaxation.prover(target, relaxed))
    assert optimality["gap"] <= 1e-12 and optimality["max_primal_violation"] > 1e-6
    assert not optimality["certified"]
    assert property_rows("CM", n).violation(P.ravel()) == optimality["max_primal_violation"]


def test_wm_from_min_n_is_the_relaxations_point_else_the_lp_with_cm(monkeypatch):
    """WM, L1, n = 160, alpha = 0.99 (no template there): answered by the relaxation, proven,
    released weights exactly alpha-DP.  With the CH multipliers not spread the proof fails, the
    LP with CM is solved instead (recorded in ``extra["cm_relaxation"]``), to the same optimum."""
    n, alpha = 160, 0.99
    design = design_named("WM", n, alpha, objective="L1")
    optimality = design.extra["optimality"]
    assert design.status == "optimal" and optimality["certified"]
    assert cm_relaxation.RELAXATION in design.extra["reductions"]
    assert "spread" in optimality["dual"]
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds

    monkeypatch.setattr(cm_relaxation, "cm_multipliers", lambda n, ch: np.zeros(n * (n + 1)))
    fallback = design_named("WM", n, alpha, objective="L1")
    assert fallback.status == "optimal" and fallback.extra["optimality"]["certified"]
    assert cm_relaxation.RELAXATION not in fallback.extra["reductions"]
    assert fallback.extra["cm_relaxation"]["certified"] is False
    assert design.solver_objective == pytest.approx(fallback.solver_objective, rel=1e-9)


def test_l0_near_one_is_the_relaxations_point_and_matches_the_lp_with_cm(monkeypatch):
    """LP with CM, L0, n = 160, alpha = 0.99: too near 1 for the large-n template, so the
    relaxation answers, proven on the LP with CM; with the relaxation switched off, the LP with
    CM gives the same optimum by its own route.  Where a template fits (alpha = 0.5), L0 keeps its
    own paths."""
    n, alpha = 160, 0.99
    design = design_named("LP", n, alpha, properties=("CM",), objective="L0")
    assert design.status == "optimal" and design.extra["optimality"]["certified"]
    assert cm_relaxation.RELAXATION in design.extra["reductions"]
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds
    assert cm_relaxation.relaxed_design(n, 0.5, ("CM",), DesignProblem(n, 0.5, ("CM",), "L0").objective,
                                        None, "sum", True, 0.0) == (None, None)

    monkeypatch.setattr(cm_relaxation, "relaxed_design", lambda *args: (None, None))
    direct = design_named("LP", n, alpha, properties=("CM",), objective="L0")
    assert direct.status == "optimal" and cm_relaxation.RELAXATION not in direct.extra["reductions"]
    assert design.solver_objective == pytest.approx(direct.solver_objective, rel=1e-9)


def _relaxed_run(n, alpha, props, objective):
    target = DesignProblem(n, alpha, props, objective)
    relaxed = DesignProblem(n, alpha, cm_relaxation.relaxed_properties(props), objective)
    lp = build_reduced_lp(n, alpha, parse_properties((*relaxed.properties, "S")), objective, None, "sum")
    return target, relaxed, lp, interior_point(lp)


@pytest.mark.parametrize("props", [("CM", "WH"), ("CM", "WH", "S")])
def test_the_relaxations_optimal_face_holds_a_point_with_cm(props):
    """The case above, with S folded in or requested: on the relaxation's optimal face
    (complementary slackness with its spread dual), Clarabel finds a point that holds CM, proven
    by that same dual, at the optimum of the LP with CM solved on its own."""
    n, alpha = 12, 0.91
    target, relaxed, lp, run = _relaxed_run(n, alpha, props, "L0d:1")
    fold = "S" not in props
    face, found = cm_relaxation.on_face(target, relaxed, lp, run, fold, "L0d:1", None, "sum", True)
    assert found is not None, face
    point, optimality = found
    assert optimality["certified"] and optimality["max_primal_violation"] <= 1e-9
    assert not face.cost.any() and np.sum(face.row_upper == face.row_lower) > np.sum(lp.row_upper == lp.row_lower)
    P = (face.expand @ point.y)[: (n + 1) ** 2]
    assert property_rows("CM", n).violation(P) <= 1e-9
    direct = fast_design(n, alpha, props, "L0d:1")
    assert optimality["upper_bound"] == pytest.approx(direct.solver_objective, rel=1e-9, abs=1e-10)


def test_a_point_whose_gap_closed_goes_to_the_face_without_a_refined_point(monkeypatch):
    """WM, L0, n = 160, alpha = 0.99: the relaxation's first point ends 'AlmostSolved' with its
    gap closed and CM broken.  A refined point would be another centre of the same face, so the
    face is solved next; the answer is proven on the LP with CM and is exactly alpha-DP."""
    from countdp.design import backends

    calls = []
    real = backends.run_clarabel
    monkeypatch.setattr(backends, "run_clarabel", lambda lp, *a: calls.append(a[2:3] == (True,)) or real(lp, *a))
    design = design_named("WM", 160, 0.99)
    assert design.status == "optimal" and design.extra["optimality"]["certified"]
    assert design.extra["reductions"][-2:] == [cm_relaxation.RELAXATION, cm_relaxation.FACE]
    assert calls == [False, False]  # the relaxation's point, then the face's: no refined point
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds


def test_when_the_first_points_face_is_not_proven_the_next_point_is_tried(monkeypatch):
    """The same design with the first point's face made to fail: the refined point comes next, and
    its face is proven."""
    from countdp.design import backends

    real, real_clarabel = cm_relaxation.on_face, backends.run_clarabel
    seen, refined = [], []

    def first_fails(*args):
        seen.append(args[3])
        return ({"certified": False, "reason": "made to fail"}, None) if len(seen) == 1 else real(*args)

    monkeypatch.setattr(cm_relaxation, "on_face", first_fails)
    monkeypatch.setattr(backends, "run_clarabel",
                        lambda lp, *a: refined.append(a[2:3] == (True,)) or real_clarabel(lp, *a))
    design = design_named("WM", 160, 0.99)
    assert len(seen) == 2 and seen[0] is not seen[1]
    assert refined == [False, True, False]  # the point, the refined point, then the second face's point
    assert design.status == "optimal" and cm_relaxation.FACE in design.extra["reductions"]


def test_the_face_of_a_wrong_dual_proves_nothing(monkeypatch):
    """With the CH multipliers not spread, the 'face' is the whole LP with CM: its centre is
    feasible but not optimal, and the check says so."""
    n, alpha, props = 12, 0.91, ("CM", "WH")
    target, relaxed, lp, run = _relaxed_run(n, alpha, props, "L0d:1")
    monkeypatch.setattr(cm_relaxation, "cm_multipliers", lambda n, ch: np.zeros(n * (n + 1)))
    why, found = cm_relaxation.on_face(target, relaxed, lp, run, True, "L0d:1", None, "sum", True)
    assert found is None and why["certified"] is False and why["gap"] > 1e-6


def test_face_model_marks_rows_by_their_multipliers():
    """Rows with a multiplier above FACE_TOL times the largest cost become equalities, columns with
    such a reduced cost are fixed at 0, and nothing else changes."""
    n, alpha = 6, 0.8
    lp = build_reduced_lp(n, alpha, ("CM",), "L1", None, "sum")
    full = lp.problem.lp()
    unit = cm_relaxation.FACE_TOL * np.abs(lp.cost).max()
    u, v = np.zeros(full.b_ub.size), np.zeros(full.b_eq.size)
    inequality = np.flatnonzero(~np.isfinite(lp.row_upper))
    u[lp.row_origin[inequality[:3]]] = [2 * unit, unit / 2, 1.0]
    reduced = np.zeros(lp.A.shape[1])
    reduced[[0, 4]] = [2 * unit, unit / 2]
    face = cm_relaxation.face_model(lp, u, v, reduced)
    np.testing.assert_array_equal(face.row_upper[inequality[:3]], [lp.row_lower[inequality[0]], np.inf,
                                                                     lp.row_lower[inequality[2]]])
    assert np.array_equal(np.isfinite(face.row_upper), np.isfinite(lp.row_upper) | np.isin(
        np.arange(lp.A.shape[0]), inequality[[0, 2]]))
    assert face.col_upper[0] == 0 and face.col_upper[4] == lp.col_upper[4] and not face.cost.any()


def test_l0d_with_f_tries_the_relaxation_before_a_template():
    """L0,d (d >= 1) with F: the relaxation is tried even where a template applies, and answers
    LP with CM and F, L0,1, n = 160, alpha = 0.62, proven on the LP with CM, released weights
    exactly alpha-DP.  Other objectives, or no F, keep the template's simplex."""
    from countdp.design import seed

    n, alpha = 160, 0.62
    relaxed = DesignProblem(n, alpha, ("CH", "F"), "L0d:1")
    assert seed.applies(relaxed) and cm_relaxation.before_template(relaxed)
    assert not cm_relaxation.before_template(DesignProblem(n, alpha, ("CH", "F"), "L1"))
    assert not cm_relaxation.before_template(DesignProblem(n, alpha, ("CH",), "L0d:1"))
    design = design_lp(n, alpha, ("CM", "F"), "L0d:1")
    assert design.status == "optimal" and design.extra["optimality"]["certified"]
    assert cm_relaxation.RELAXATION in design.extra["reductions"]
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds
