"""The fast design path gives the plain cvxpy formulation's optimum, certified alpha-DP."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from countdp.design.constraints import constraint_system
from countdp.design.designer import design_lp, design_named
from countdp.design.fast import build_reduced_lp, choose_method, closed_form, fast_design, implied_drops
from countdp.evaluate.metrics import objective_value
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.certify import is_alpha_dp

TOL = 1e-7

PROPERTY_SETS = [
    (),
    ("WH",),
    ("WH", "S"),
    ("RM", "CM", "WH", "S"),  # WM
    ("RM", "CM", "WH"),  # WM without S: no folding, implied rows still dropped
    ("RH", "RM", "CH", "CM", "F", "WH", "S"),  # all seven
    ("RH", "CH", "WH"),
    ("RM", "S"),
    ("CM", "WH", "S"),
    ("F", "S"),
]


def _agree(n, alpha, props, objective, weights=None, aggregate="sum"):
    ref = design_lp(n, alpha, props, objective, weights=weights, aggregate=aggregate, backend="cvxpy")
    fast = design_lp(n, alpha, props, objective, weights=weights, aggregate=aggregate, backend="highs")
    assert fast.certificate.certified and is_alpha_dp(fast.matrix, alpha)
    assert fast.extra["backend"] == "highs" and ref.extra["backend"] == "cvxpy"
    assert fast.objective_value == pytest.approx(ref.objective_value, abs=TOL)
    assert fast.solver_objective == pytest.approx(ref.solver_objective, abs=TOL)
    # the answer is feasible for the *full* constraint system (every dropped row holds)
    assert constraint_system(n, alpha, fast.properties_requested).violation(fast.matrix.ravel()) < 1e-7
    return ref, fast


@pytest.mark.parametrize("n, alpha", [(2, 0.5), (5, 0.62), (6, 0.91), (9, 0.76), (12, 0.91)])
@pytest.mark.parametrize("props", PROPERTY_SETS, ids=lambda p: "+".join(p) or "none")
def test_l0_matches_cvxpy(n, alpha, props):
    _agree(n, alpha, props, "L0")


@pytest.mark.parametrize("objective", ["L1", "L2", "L0d:1", "L0d:2"])
@pytest.mark.parametrize("props", [(), ("WH", "S"), ("RM", "CM", "WH", "S"), ("F", "S"), ("RH", "CH")],
                         ids=lambda p: "+".join(p) or "none")
@pytest.mark.parametrize("n, alpha", [(5, 0.62), (8, 0.91)])
def test_other_objectives_match_cvxpy(n, alpha, props, objective):
    _agree(n, alpha, props, objective)


@pytest.mark.parametrize("props", [(), ("WH", "S"), ("RM", "CM", "WH", "S"), ("F", "S"), ("F",)],
                         ids=lambda p: "+".join(p) or "none")
@pytest.mark.parametrize("objective", ["L0", "L1"])
def test_weights_and_max_match_cvxpy(props, objective):
    n, alpha = 7, 0.8
    rng = np.random.default_rng(7)
    skewed = rng.dirichlet(np.ones(n + 1))
    _agree(n, alpha, props, objective, weights=skewed)  # S folding is exact for any weights
    _agree(n, alpha, props, objective, aggregate="max")


def test_gm_closed_form_where_theorem_3_applies():
    alpha = 0.76  # WH threshold 2a/(1-a) = 6.33
    for n in (7, 10):
        found = closed_form(n, alpha, ("WH", "S"), "L0", None, "sum")
        assert found is not None and found[0] == "GM"
        np.testing.assert_array_equal(found[1], geometric(n, alpha))
    assert closed_form(6, alpha, ("WH", "S"), "L0", None, "sum") is None  # below the threshold
    assert closed_form(10, alpha, ("WH",), "L1", None, "sum") is None  # other objective
    assert closed_form(10, alpha, ("CM",), "L0", None, "sum") is None  # GM not CM for a > 1/2
    ref, fast = _agree(10, alpha, ("WH", "S"), "L0")
    assert fast.method == "GM" and fast.objective_value == pytest.approx(2 * alpha / (1 + alpha), abs=1e-12)


@pytest.mark.parametrize("n", [4, 5, 8, 9])
def test_em_closed_form_where_theorem_4_applies(n):
    found = closed_form(n, 0.91, ("F", "RM"), "L0", None, "max")
    assert found is not None and found[0] == "EM"
    np.testing.assert_array_equal(found[1], explicit_fair(n, 0.91))
    ref, fast = _agree(n, 0.91, ("F",), "L0")
    assert fast.method == "EM"


def test_reduction_shrinks_wm():
    lp = build_reduced_lp(32, 0.91, ("RM", "CM", "WH", "S"))
    assert lp.shape[1] == (33 * 33 + 1) // 2
    assert lp.shape[0] < lp.full_rows / 3
    assert {"implied:WH", "dp-halved-by-RM", "symmetry-folded"} <= set(lp.reductions)
    assert implied_drops(("RH", "RM", "CH", "CM", "WH")) == ("RH", "CH", "WH")


def test_unreduced_model_matches_reduced():
    n, alpha, props = 9, 0.7, ("RH", "RM", "CM", "WH", "S")
    a = fast_design(n, alpha, props, "L1", use_closed_forms=False)
    b = fast_design(n, alpha, props, "L1", use_closed_forms=False, fold_symmetry=False, drop_implied=False)
    assert a.solver_objective == pytest.approx(b.solver_objective, abs=TOL)
    assert b.extra["reductions"] == [] or "symmetry-folded" not in b.extra["reductions"]


@pytest.mark.parametrize("method", ["simplex", "ipm", "clarabel", "guided"])
def test_methods_agree(method):
    n, alpha = 20, 0.91
    ref = design_named("WM", n, alpha, backend="cvxpy")
    fast = fast_design(n, alpha, ("RM", "CM", "WH", "S"), method=method)
    assert fast.solver_objective == pytest.approx(ref.solver_objective, abs=TOL)
    assert {"simplex": "simplex", "ipm": "ipm+crossover", "clarabel": "ipm",
            "guided": "simplex guided by clarabel"}[method] == fast.method
    if method in ("simplex", "ipm"):
        assert design_named("WM", n, alpha, backend="highs", method=method).method == fast.method


def test_auto_backend_dispatch():
    small = design_named("WM", 4, 0.91)
    assert small.extra["backend"] == "cvxpy"
    big = design_named("WM", 16, 0.91)
    assert big.extra["backend"] == "highs"
    assert design_named("WM", 16, 0.91, solver="CLARABEL").extra["backend"] == "cvxpy"
    with pytest.raises(ValueError, match="backend"):
        design_lp(4, 0.5, backend="gurobi")
    with pytest.raises(ValueError, match="HIGHS"):
        design_lp(4, 0.5, backend="highs", solver="CLARABEL")


def test_grid_of_all_subsets_small():
    """Every property subset at one small size: same L0 optimum as the plain formulation."""
    from countdp.design.constraints import PROPERTIES

    n, alpha = 5, 0.76
    for r in range(len(PROPERTIES) + 1):
        for props in itertools.combinations(PROPERTIES, r):
            ref = design_lp(n, alpha, props, "L0", backend="cvxpy")
            fast = design_lp(n, alpha, props, "L0", backend="highs")
            assert fast.certificate.certified
            assert fast.objective_value == pytest.approx(ref.objective_value, abs=TOL), props
            assert objective_value(fast.matrix, "L0") == pytest.approx(ref.solver_objective, abs=TOL)


@pytest.mark.parametrize("n", [5, 9, 16, 24])
@pytest.mark.parametrize("alpha", [0.62, 0.91])
@pytest.mark.parametrize("props", [("RM", "CM", "WH", "S"), ("RM", "CM", "WH"), ("WH", "S"), ("CM", "S")],
                         ids=lambda p: "+".join(p))
def test_clarabel_qdldl_matches_cvxpy(n, alpha, props):
    """The large-model path (Clarabel, QDLDL factorisation) gives the plain optimum, certified."""
    from countdp.privacy.certify import certify

    ref = design_lp(n, alpha, props, "L0", backend="cvxpy")
    fast = fast_design(n, alpha, props, "L0", method="clarabel", use_closed_forms=False)
    assert fast.extra["kkt_solver"] == "qdldl"
    assert fast.solver_objective == pytest.approx(ref.solver_objective, rel=TOL, abs=TOL)
    matrix, certificate = certify(fast.matrix, alpha)
    assert certificate.certified and is_alpha_dp(matrix, alpha)
    assert objective_value(matrix, "L0") == pytest.approx(ref.objective_value, rel=TOL, abs=TOL)


@pytest.mark.parametrize("props, objective, alpha", [(("WH", "S"), "L1", 0.91), (("RM", "CM", "WH", "S"), "L2", 0.91),
                                                     (("F",), "L0d:1", 0.62), (("CH", "RM"), "L1", 0.5)])
def test_guided_simplex_is_a_proven_vertex_of_the_plain_lp(props, objective, alpha):
    """The default for objectives other than L0 on larger models: Clarabel's scaled point seeds
    HiGHS's basis.  Its value is the plain cvxpy model's, and its certificate closes."""
    n = 64
    lp = build_reduced_lp(n, alpha, props, objective, None, "sum")
    assert choose_method(lp) == "guided"
    fast = fast_design(n, alpha, props, objective)
    ref = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert fast.method == "simplex guided by clarabel" and fast.extra["optimality"]["certified"]
    assert fast.solver_objective == pytest.approx(ref.solver_objective, rel=1e-7)


@pytest.mark.parametrize("props, objective, alpha", [(("F",), "L0d:1", 0.99), (("CH", "RM"), "L1", 0.99),
                                                     (("CH", "RM"), "L2", 0.62)])
def test_interior_point_is_proven_when_the_simplex_does_not_end(monkeypatch, props, objective, alpha):
    """With no time for the simplex from Clarabel's basis, Clarabel's point itself is proven (DP
    closure where certify's UM repair costs too much): the plain cvxpy model's value, a closed
    certificate, and released weights that pass the exact alpha-DP test."""
    from countdp.design import backends
    from countdp.privacy.exact import exact_dp_check

    monkeypatch.setattr(backends, "QUICK_VERTEX_WORK", (0, 0))
    n = 64
    design = design_named("LP", n, alpha, objective=objective, properties=props)
    optimality = design.extra["optimality"]
    assert optimality["certified"] and design.status == "optimal"
    assert optimality["guide"].startswith(backends.INTERIOR_GUIDE) and design.method == "ipm"
    ref = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert objective_value(design.matrix, objective) == pytest.approx(ref.solver_objective, rel=1e-7)
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds


def test_a_rejected_interior_point_is_followed_by_the_simplex(monkeypatch):
    """Below ``seed.MIN_N``, ``accept`` sees Clarabel's point only after the quick simplex fails;
    rejected, the simplex goes on to a vertex (with a basis); accepted, the point is returned
    without one.  From ``MIN_N`` the point is offered first."""
    from countdp.design import backends, seed

    monkeypatch.setattr(backends, "QUICK_VERTEX_WORK", (0, 0))
    lp = build_reduced_lp(64, 0.99, ("F", "S"), "L0d:1", None, "sum")
    seen = []
    vertex = backends.run_guided(lp, template=False, accept=lambda point: seen.append(point) or False)
    assert len(seen) == 1 and seen[0].basis is None and vertex.basis is not None and vertex.guide == "clarabel"
    interior = backends.run_guided(lp, template=False, accept=lambda point: True)
    assert interior.basis is None and interior.guide == backends.INTERIOR_GUIDE
    assert interior.objective == pytest.approx(vertex.objective, rel=1e-8)
    monkeypatch.setattr(backends, "QUICK_VERTEX_WORK", (1e12, 1e12))
    quick = backends.run_guided(lp, template=False, accept=lambda point: seen.append(point) or True)
    assert quick.basis is not None and len(seen) == 1  # a vertex in time: the point is not offered
    monkeypatch.setattr(seed, "MIN_N", 60)  # from MIN_N the point is offered before any simplex
    first = backends.run_guided(lp, template=False, accept=lambda point: seen.append(point) or True)
    assert first.basis is None and len(seen) == 2


def test_simplex_limits_count_iterations():
    """The limits that choose between a vertex and Clarabel's point count simplex iterations, so
    the choice does not depend on the machine: a limit of one iteration stops HiGHS."""
    from countdp.design import backends

    lp = build_reduced_lp(64, 0.8, ("WH", "S"), "L1", None, "sum")
    with pytest.raises(RuntimeError, match="Iteration limit reached"):
        backends.run_highs(lp, "simplex", None, iterations=1)
    assert backends.run_highs(lp, "simplex", None, iterations=10**6).status == "Optimal"


def test_an_inaccurate_point_rejected_from_min_n_ends_the_guided_methods(monkeypatch):
    """From ``MIN_N``, a rejected point that Clarabel left 'AlmostSolved' is not followed by the
    simplex from its basis, and the folded path's guided methods then end without an answer
    (the LP without S is solved next), never reaching the cold simplex or IPX."""
    import dataclasses

    from countdp.design import backends, fast, seed

    monkeypatch.setattr(seed, "MIN_N", 60)
    lp = build_reduced_lp(64, 0.99, ("F", "S"), "L0d:1", None, "sum")
    real = backends.run_clarabel
    monkeypatch.setattr(backends, "run_clarabel",
                        lambda *a, **k: dataclasses.replace(real(*a, **k), status="AlmostSolved"))

    def no_simplex(*args, **kwargs):
        raise AssertionError("a simplex ran")

    monkeypatch.setattr(backends, "run_highs", no_simplex)
    monkeypatch.setattr(fast, "run_highs", no_simplex)
    with pytest.raises(RuntimeError, match="AlmostSolved"):
        backends.run_guided(lp, template=False, accept=lambda point: False)
    monkeypatch.setattr(fast, "_proven_answer", lambda *a, **k: (None, {"certified": False}, False))
    with pytest.raises(RuntimeError, match="AlmostSolved"):
        fast.solve_proven(lp, "guided", methods=("guided", fast.CLARABEL_GUIDED))


def test_wm_l2_near_one_is_clarabels_point_with_scaled_costs(monkeypatch):
    """WM, L2, n = 128, alpha = 0.99 (43 s on the cold simplex before): Clarabel, on costs divided
    by GM's L2 loss, gives a point that is proven as it is; released weights exactly alpha-DP.
    (The quick simplex is skipped, to save its seconds.)"""
    from countdp.design import backends
    from countdp.privacy.exact import exact_dp_check

    monkeypatch.setattr(backends, "QUICK_VERTEX_WORK", (0, 0))
    n, alpha = 128, 0.99
    lp = build_reduced_lp(n, alpha, ("RM", "CM", "WH", "S"), "L2", None, "sum")
    assert backends.objective_scale(lp) == pytest.approx(objective_value(geometric(n, alpha), "L2"), rel=1e-12)
    design = design_named("WM", n, alpha, objective="L2")
    optimality = design.extra["optimality"]
    assert design.status == "optimal" and optimality["certified"]
    assert optimality["guide"].startswith(backends.INTERIOR_GUIDE) and design.method == "ipm"
    assert optimality["gap"] <= 1e-9 * optimality["upper_bound"]
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds



def test_fairness_substituted_for_clarabel_and_lifted_back():
    """Clarabel solves a model with F's rows substituted out (one variable for the diagonal) and
    the answer is lifted back: the diagonal constant, F's rows given the multipliers that zero the
    diagonal's reduced costs, the rest of the dual as it was.  The lifted dual closes the
    certificate on the full LP (F's rows included) at cvxpy's optimum of the unreduced LP; with F's
    multipliers set to 0 it does not."""
    from countdp.design import fairness
    from countdp.design.backends import run_clarabel
    from countdp.design.fast import prove, vertex_matrix
    from countdp.privacy.certify import certify

    n, alpha, props = 12, 0.62, ("RH", "F")
    lp = build_reduced_lp(n, alpha, props, "L0d:1")
    sub, M, rows, cols = fairness.substitution(lp)
    assert rows.size == n and sub.A.shape == (lp.A.shape[0] - n, lp.A.shape[1] - n)
    run = fairness.lift(lp, (sub, M, rows, cols), run_clarabel(sub))
    P = vertex_matrix(lp, run)
    assert np.ptp(np.diag(P)) == 0.0
    ref, _ = _agree(n, alpha, props, "L0d:1")
    optimality = prove(lp, run, certify(P, alpha)[0])
    assert optimality["certified"] and optimality["upper_bound"] == pytest.approx(ref.objective_value, abs=1e-9)
    run.row_dual[rows] = 0.0
    assert not prove(lp, run, certify(P, alpha)[0])["certified"]


def test_interior_points_next_formulation_only_after_almost_solved(monkeypatch):
    """Clarabel's points come one after another only while the last ended 'AlmostSolved' (forced
    here): F substituted out first, then the same refined, then F's rows kept; the other way
    round, F's rows kept, then substituted out; without F, the point and then the same refined,
    unless the first stalled with a primal residual above ``REFINE_MAX_RESIDUAL`` (forced too);
    a point 'Solved' ends the list.  Each point, lifted back, is proven on the full LP."""
    from countdp.design import backends
    from countdp.design.fast import prove, vertex_matrix
    from countdp.privacy.certify import certify

    calls, status, residual = [], {"as": "AlmostSolved"}, {"as": None}
    real = backends.run_clarabel

    def forced(lp, cost_scale=1.0, tol=None, refine=False):
        calls.append((lp.A.shape[0], refine))
        point = replace(real(lp, cost_scale, tol, refine), status=status["as"])
        return point if residual["as"] is None else replace(point, primal_residual=residual["as"])

    monkeypatch.setattr(backends, "run_clarabel", forced)
    n, alpha = 12, 0.62
    lp = build_reduced_lp(n, alpha, ("RH", "F"), "L0d:1")
    rows, sub = lp.A.shape[0], lp.A.shape[0] - n
    for first, expected in ((True, [(sub, False), (sub, True), (rows, False)]),
                            (False, [(rows, False), (sub, False)])):
        calls.clear()
        points = list(backends.interior_points(lp, substituted_first=first))
        assert calls == expected
        assert all(prove(lp, run, certify(vertex_matrix(lp, run), alpha)[0])["certified"] for run in points)
    no_f = build_reduced_lp(n, alpha, ("RH",), "L0d:1")
    calls.clear()
    points = list(backends.interior_points(no_f, substituted_first=True))
    assert calls == [(no_f.A.shape[0], False), (no_f.A.shape[0], True)]
    assert points[0].primal_residual <= backends.REFINE_MAX_RESIDUAL
    assert all(prove(no_f, run, certify(vertex_matrix(no_f, run), alpha)[0])["certified"] for run in points)
    residual["as"] = 10 * backends.REFINE_MAX_RESIDUAL
    calls.clear()
    list(backends.interior_points(no_f, substituted_first=True))
    assert calls == [(no_f.A.shape[0], False)]
    residual["as"] = None
    status["as"] = "Solved"
    calls.clear()
    list(backends.interior_points(lp, substituted_first=True))
    assert calls == [(sub, False)]
