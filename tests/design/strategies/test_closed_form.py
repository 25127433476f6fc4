"""Closed forms: GM where Theorem 3 (with Lemma 2) applies, EM where Theorem 4 does, GM remapped
for any prior and objective without properties, each checked against the plain LP (cvxpy)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.designer import design_lp
from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.closed_form import REMAPPED_GM, STRATEGY, closed_form, satisfies
from countdp.mechanisms.closed_forms import explicit_fair, geometric

S = SolverSettings()


def found(n, alpha, props, objective="L0", weights=None, aggregate="sum"):
    return closed_form(DesignRequest.of(n, alpha, props, objective, weights, aggregate), S)


def test_gm_where_theorem_3_and_lemma_2_apply():
    alpha = 0.76  # WH holds for GM from n >= 2a/(1-a) = 6.33
    for n in (7, 10):
        name, P = found(n, alpha, ("WH", "S"))
        assert name == "GM"
        np.testing.assert_array_equal(P, geometric(n, alpha))
    assert found(6, alpha, ("WH", "S")) is None  # below the threshold
    assert found(10, alpha, ("CM",)) is None  # GM is not column monotone for alpha > 1/2
    attempt = STRATEGY.attempt(DesignRequest.of(10, alpha, ("WH", "S")), make_context(DEFAULT_SETTINGS))
    assert attempt.proven and attempt.answer.method == "GM"
    assert attempt.answer.solver_objective == pytest.approx(2 * alpha / (1 + alpha), abs=1e-12)  # L0 of GM
    assert attempt.answer.extra["optimality"]["checked"]


@pytest.mark.parametrize("n", [4, 5, 8, 9])
def test_em_where_theorem_4_applies(n):
    name, P = found(n, 0.91, ("F", "RM"), aggregate="max")
    assert name == "EM"
    np.testing.assert_array_equal(P, explicit_fair(n, 0.91))
    plain = design_lp(n, 0.91, ("F",), "L0", backend="cvxpy")
    attempt = STRATEGY.attempt(DesignRequest.of(n, 0.91, ("F",)), make_context(DEFAULT_SETTINGS))
    assert attempt.answer.method == "EM"
    assert attempt.answer.solver_objective == pytest.approx(plain.objective_value, abs=1e-7)


@pytest.mark.parametrize("objective", ["L1", "L2", "L0d:2"])
def test_gm_remapped_is_the_plain_lp_optimum(objective):
    n, alpha = 9, 0.7
    weights = np.random.default_rng(3).dirichlet(np.ones(n + 1))
    name, _ = found(n, alpha, (), objective, weights)
    assert name == REMAPPED_GM
    attempt = STRATEGY.attempt(DesignRequest.of(n, alpha, (), objective, weights), make_context(DEFAULT_SETTINGS))
    plain = design_lp(n, alpha, (), objective, weights=weights, backend="cvxpy")
    assert attempt.proven and attempt.answer.solver_objective == pytest.approx(plain.objective_value, abs=1e-7)


def test_a_property_the_closed_form_breaks_is_detected():
    """GM breaks CM for alpha > 1/2 by far more than the tolerance; a zero tolerance still accepts
    GM's WH (it holds exactly from the threshold)."""
    P = geometric(10, 0.76)
    assert not satisfies(P, ("CM",), S)
    assert satisfies(P, ("WH", "S"), SolverSettings.of(gm_tol=0.0))


def test_switched_off_and_out_of_reach():
    assert STRATEGY.accepts(DesignRequest.of(10, 0.5, use_closed_forms=False), S) is not None
    attempt = STRATEGY.attempt(DesignRequest.of(10, 0.76, ("CM",)), make_context(DEFAULT_SETTINGS))
    assert attempt.outcome == "skipped"


def test_an_asymmetric_prior_gets_no_closed_form_with_s():
    """GM remapped under an increasing prior is not mirror symmetric, so it cannot answer with S."""
    n, alpha = 12, 0.8
    weights = np.linspace(1, 3, n + 1)
    weights /= weights.sum()
    assert found(n, alpha, ("S",), "L1", weights) is None  # an asymmetric prior's remap is not symmetric
