"""The LP designer against the theorems and an independent scipy formulation."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from conftest import reference_lp, uniform_l0_loss

from countdp.design.designer import DesignError, design_lp, design_named
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.mechanisms.properties import check_all, check_dp, gupte_sundararajan_violation, is_gm_derivable
from countdp.privacy.certify import is_alpha_dp
from countdp.validation import BeyondMemory
from countdp.values.objectives import loss_matrix, objective_value


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("alpha", [0.3, 0.62, 0.91])
def test_theorem_3_basic_dp_l0_optimum_is_gm(n, alpha):
    result = design_lp(n, alpha)
    assert result.objective_value == pytest.approx(2 * alpha / (1 + alpha), abs=1e-9)
    np.testing.assert_allclose(result.matrix, geometric(n, alpha), atol=1e-7)  # unique optimum
    assert result.certificate.certified and is_alpha_dp(result.matrix, alpha)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 12])
@pytest.mark.parametrize("alpha", [0.5, 0.91])
def test_theorem_4_fairness_alone_reaches_em(n, alpha):
    result = design_lp(n, alpha, ["F"])
    assert result.objective_value == pytest.approx(objective_value(explicit_fair(n, alpha)), abs=1e-8)


@pytest.mark.parametrize("n", [2, 4, 7, 10])
@pytest.mark.parametrize("alpha", [0.62, 0.76, 0.91])
@pytest.mark.parametrize("name", ["WM", "WH"])
def test_named_designs_agree_with_independent_lp(name, n, alpha):
    props = {"WM": {"WH", "RM", "CM", "S"}, "WH": {"WH", "S"}}[name]
    expected, _ = reference_lp(n, alpha, props, uniform_l0_loss(n))
    result = design_named(name, n, alpha)
    assert result.objective_value == pytest.approx(expected, abs=1e-6)
    assert result.certificate.certified and is_alpha_dp(result.matrix, alpha)
    checks = check_all(result.matrix, tol=1e-7)
    assert all(checks[p].holds for p in props)


@pytest.mark.parametrize("props", [("RH",), ("CH",), ("RM", "CH"), ("CM", "F"), ("WH", "RH", "CH")])
@pytest.mark.parametrize("objective", ["L0", "L0d:1", "L1", "L2"])
def test_any_property_set_and_objective_agrees_with_independent_lp(props, objective):
    n, alpha = 5, 0.7
    expected, _ = reference_lp(n, alpha, set(props), loss_matrix(n, objective) / (n + 1))
    result = design_lp(n, alpha, props, objective)
    assert result.objective_value == pytest.approx(expected, abs=1e-6)
    assert all(check_all(result.matrix, tol=1e-7)[p].holds for p in props)


def test_weights_are_a_prior():
    n, alpha = 6, 0.8
    w = np.arange(1, n + 2, dtype=float)
    w /= w.sum()
    expected, _ = reference_lp(n, alpha, {"WH"}, loss_matrix(n, "L0") * w[None, :])
    assert design_lp(n, alpha, ["WH"], weights=w).objective_value == pytest.approx(expected, abs=1e-6)


def test_wh_alone_equals_gm_beyond_lemma_2_threshold():
    # n >= 2a/(1-a): GM is weakly honest, so the WH LP reaches GM's L0 = 2a/(1+a).
    alpha = 0.76  # threshold 6.33
    assert design_named("WH", 7, alpha).objective_value == pytest.approx(2 * alpha / (1 + alpha), abs=1e-8)
    assert design_named("WH", 6, alpha).objective_value > 2 * alpha / (1 + alpha) + 1e-4


def test_wm_sits_between_gm_and_em():
    for n, alpha in [(4, 0.91), (8, 0.67), (15, 0.9)]:
        wm = design_named("WM", n, alpha).objective_value
        assert 2 * alpha / (1 + alpha) - 1e-9 <= wm <= objective_value(explicit_fair(n, alpha)) + 1e-9


def test_clarabel_agrees_with_highs():
    a = design_named("WM", 6, 0.9)
    b = design_named("WM", 6, 0.9, solver="CLARABEL")
    assert b.solver == "CLARABEL" and b.method == "ipm"
    assert a.objective_value == pytest.approx(b.objective_value, abs=1e-6)
    assert b.certificate.certified


def test_minimax_objective_is_below_sum_for_worst_column():
    n, alpha = 5, 0.8
    mm = design_lp(n, alpha, (), "L0", aggregate="max")
    gm_worst = objective_value(geometric(n, alpha), "L0", aggregate="max")
    assert mm.objective_value <= gm_worst + 1e-9
    column_loss = (loss_matrix(n, "L0") * mm.matrix).sum(axis=0)
    assert mm.objective_value == pytest.approx(column_loss.max())


def test_gupte_sundararajan_gm_derivable_em_wm_not():
    for n in (2, 4, 7):
        a = 0.8
        assert is_gm_derivable(geometric(n, a), a)
        assert gupte_sundararajan_violation(explicit_fair(n, a), a) > 1e-6
        assert gupte_sundararajan_violation(design_named("WM", n, a).matrix, a) > 1e-6


def test_theorem_1_symmetrising_keeps_properties_and_l0():
    n, alpha = 7, 0.62
    P = design_lp(n, alpha, (), "L1").matrix  # a vertex, generally not symmetric
    S = (P + P[::-1, ::-1]) / 2
    before, after = check_all(P, 1e-9), check_all(S, 1e-9)
    assert all(after[p].holds for p in before if before[p].holds) and after["S"].holds
    assert objective_value(S, "L0") == pytest.approx(objective_value(P, "L0"))
    assert check_dp(S, alpha, tol=1e-15).holds  # an average of two DP matrices is DP


def test_failed_solve_raises_design_error_naming_parameters(monkeypatch):
    def broken(self, *args, **kwargs):
        raise cp.error.SolverError("simulated failure")

    monkeypatch.setattr(cp.Problem, "solve", broken)
    with pytest.raises(DesignError, match=r"n=4, alpha=0.9, properties=WH\+S"):
        design_named("WH", 4, 0.9)


def test_non_optimal_status_raises(monkeypatch):
    def infeasible(self, *args, **kwargs):
        self._status = cp.INFEASIBLE

    monkeypatch.setattr(cp.Problem, "solve", infeasible)
    with pytest.raises(DesignError, match="infeasible"):
        design_lp(3, 0.5, ["F"])


@pytest.mark.parametrize("kwargs, word", [
    ({"properties": ["XX"]}, "unknown property"),
    ({"objective": "L3"}, "unknown objective"),
    ({"solver": "GLPK"}, "unknown solver"),
    ({"solver": "HIGHS", "method": "barrier"}, "no method"),
    ({"aggregate": "median"}, "aggregate"),
    ({"weights": [0.5, 0.5]}, "weights"),
])
def test_bad_design_arguments(kwargs, word):
    with pytest.raises(ValueError, match=word):
        design_lp(3, 0.5, **kwargs)


def test_unknown_named_mechanism():
    with pytest.raises(ValueError, match="unknown mechanism"):
        design_named("XM", 3, 0.5)


@pytest.mark.parametrize("mechanism, serves", [("WM", "under L0 beyond n = "), ("GM", "for groups of any size")])
def test_a_size_beyond_the_machine_is_told_apart_by_its_type_and_names_what_serves_it(mechanism, serves):
    """The advice on what draws the mechanism without its matrix follows the refusal's type
    (:class:`~countdp.validation.BeyondMemory`), not words matched in its text."""
    with pytest.raises(BeyondMemory, match=f"n = 100000 is beyond this machine: .*; countdp release draws {mechanism} "
                                           f"{serves}"):
        design_named(mechanism, 100_000, "9/10", representation="matrix")
