"""The planner: the reduced model's strategies give the plain cvxpy model's optimum (another
solver on another formulation), each attempt is recorded, and the settings passed in are honoured."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from countdp.design.constraints import constraint_system
from countdp.design.designer import design_lp, design_named
from countdp.design.planner import DENSE_PLAN, REDUCED_MODEL_PLAN, plan, solve
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.privacy.certify import is_alpha_dp
from countdp.values.objectives import objective_value
from countdp.values.properties import PROPERTIES

TOL = 1e-7

PROPERTY_SETS = [(), ("WH",), ("WH", "S"), ("RM", "CM", "WH", "S"), ("RM", "CM", "WH"),
                 ("RH", "RM", "CH", "CM", "F", "WH", "S"), ("RH", "CH", "WH"), ("RM", "S"), ("CM", "WH", "S"),
                 ("F", "S")]


def agree(n, alpha, props, objective, weights=None, aggregate="sum"):
    """The reduced model's design against the plain cvxpy model's, on the full constraint system."""
    ref = design_lp(n, alpha, props, objective, weights=weights, aggregate=aggregate, backend="cvxpy")
    fast = design_lp(n, alpha, props, objective, weights=weights, aggregate=aggregate, backend="highs")
    assert fast.certificate.certified and is_alpha_dp(fast.matrix, alpha)
    assert fast.extra["backend"] == "highs" and ref.extra["backend"] == "cvxpy"
    assert fast.objective_value == pytest.approx(ref.objective_value, abs=TOL)
    assert fast.solver_objective == pytest.approx(ref.solver_objective, abs=TOL)
    assert constraint_system(n, alpha, fast.properties_requested).violation(fast.matrix.ravel()) < 1e-7
    return ref, fast


@pytest.mark.parametrize("n, alpha", [(2, 0.5), (5, 0.62), (6, 0.91), (9, 0.76), (12, 0.91)])
@pytest.mark.parametrize("props", PROPERTY_SETS, ids=lambda p: "+".join(p) or "none")
def test_l0_matches_cvxpy(n, alpha, props):
    agree(n, alpha, props, "L0")


@pytest.mark.parametrize("objective", ["L1", "L2", "L0d:1", "L0d:2"])
@pytest.mark.parametrize("props", [(), ("WH", "S"), ("RM", "CM", "WH", "S"), ("F", "S"), ("RH", "CH")],
                         ids=lambda p: "+".join(p) or "none")
@pytest.mark.parametrize("n, alpha", [(5, 0.62), (8, 0.91)])
def test_other_objectives_match_cvxpy(n, alpha, props, objective):
    agree(n, alpha, props, objective)


@pytest.mark.parametrize("props", [(), ("WH", "S"), ("RM", "CM", "WH", "S"), ("F", "S"), ("F",)],
                         ids=lambda p: "+".join(p) or "none")
@pytest.mark.parametrize("objective", ["L0", "L1"])
def test_weights_and_max_match_cvxpy(props, objective):
    n, alpha = 7, 0.8
    skewed = np.random.default_rng(7).dirichlet(np.ones(n + 1))
    agree(n, alpha, props, objective, weights=skewed)  # S folding is exact for any weights
    agree(n, alpha, props, objective, aggregate="max")


def test_every_property_subset_small():
    """Every property subset at one small size: the plain formulation's L0 optimum."""
    n, alpha = 5, 0.76
    for r in range(len(PROPERTIES) + 1):
        for props in itertools.combinations(PROPERTIES, r):
            ref = design_lp(n, alpha, props, "L0", backend="cvxpy")
            fast = design_lp(n, alpha, props, "L0", backend="highs")
            assert fast.certificate.certified
            assert fast.objective_value == pytest.approx(ref.objective_value, abs=TOL), props
            assert objective_value(fast.matrix, "L0") == pytest.approx(ref.solver_objective, abs=TOL)


def test_unreduced_model_matches_reduced():
    n, alpha, props = 9, 0.7, ("RH", "RM", "CM", "WH", "S")
    a = solve(DesignRequest.of(n, alpha, props, "L1", use_closed_forms=False, backend="highs"), DEFAULT_SETTINGS)
    b = solve(DesignRequest.of(n, alpha, props, "L1", use_closed_forms=False, fold_symmetry=False,
                               drop_implied=False, backend="highs"), DEFAULT_SETTINGS)
    assert a.solver_objective == pytest.approx(b.solver_objective, abs=TOL)
    assert "symmetry-folded" in a.extra["reductions"] and "symmetry-folded" not in b.extra["reductions"]


@pytest.mark.parametrize("method", ["simplex", "ipm", "clarabel", "guided"])
def test_methods_agree(method):
    n, alpha = 20, 0.91
    ref = design_named("WM", n, alpha, backend="cvxpy")
    fast = solve(DesignRequest.of(n, alpha, ("RM", "CM", "WH", "S"), method=method), DEFAULT_SETTINGS)
    assert fast.solver_objective == pytest.approx(ref.solver_objective, abs=TOL)
    assert {"simplex": "simplex", "ipm": "ipm+crossover", "clarabel": "ipm",
            "guided": "simplex guided by clarabel"}[method] == fast.method
    if method in ("simplex", "ipm"):
        assert design_named("WM", n, alpha, backend="highs", method=method).method == fast.method


def test_the_plan_follows_backend_solver_and_size():
    settings = SolverSettings()
    assert plan(DesignRequest.of(4, 0.9), settings) == DENSE_PLAN
    assert plan(DesignRequest.of(16, 0.9), settings) == REDUCED_MODEL_PLAN
    assert plan(DesignRequest.of(16, 0.9, solver="CLARABEL"), settings) == DENSE_PLAN
    assert plan(DesignRequest.of(4, 0.9, backend="highs"), settings) == REDUCED_MODEL_PLAN
    assert plan(DesignRequest.of(16, 0.9), SolverSettings.of(auto_min_n=17)) == DENSE_PLAN
    assert design_named("WM", 4, 0.91).extra["backend"] == "cvxpy"
    assert design_named("WM", 16, 0.91).extra["backend"] == "highs"
    assert design_lp(16, 0.91, ("WH",), settings=SolverSettings.of(auto_min_n=17)).extra["backend"] == "cvxpy"
    with pytest.raises(ValueError, match="backend"):
        design_lp(4, 0.5, backend="gurobi")
    with pytest.raises(ValueError, match="HIGHS"):
        design_lp(4, 0.5, backend="highs", solver="CLARABEL")
    with pytest.raises(ValueError, match="method"):
        DesignRequest.of(20, 0.5, method="barrier")


def test_every_attempt_is_recorded_with_its_outcome():
    """GM answers WH+S at n = 20, alpha = 0.76 (Theorem 3, Lemma 2): one proven attempt; switched
    off, the closed form is recorded as skipped and a later strategy answers."""
    answer = solve(DesignRequest.of(20, 0.76, ("WH", "S")), DEFAULT_SETTINGS)
    assert [a["outcome"] for a in answer.extra["attempted"]] == ["proven"]
    assert answer.method == "GM"
    other = solve(DesignRequest.of(20, 0.76, ("WH", "S"), use_closed_forms=False), DEFAULT_SETTINGS)
    outcomes = {a["strategy"]: a["outcome"] for a in other.extra["attempted"]}
    assert outcomes["closed form"] == "skipped" and "proven" in outcomes.values()
    assert other.solver_objective == pytest.approx(answer.solver_objective, abs=TOL)


def test_the_settings_passed_in_choose_the_method():
    """WM at n = 64 (L0) is above the interior-point threshold: Clarabel by default, HiGHS IPX +
    crossover when the settings name it, simplex when the threshold is raised; the same optimum."""
    request = DesignRequest.of(64, 0.62, ("RM", "CM", "WH", "S"), method="auto", use_closed_forms=False)
    default = solve(request, DEFAULT_SETTINGS)
    ipm = solve(request, SolverSettings.of(large_method="ipm", template_min_n=10**6))
    simplex = solve(request, SolverSettings.of(ipm_min_nnz=10**12, template_min_n=10**6))
    assert ipm.method == "ipm+crossover" and simplex.method == "simplex"
    assert ipm.solver_objective == pytest.approx(default.solver_objective, abs=TOL)
    assert simplex.solver_objective == pytest.approx(default.solver_objective, abs=TOL)
