"""The general path on the reduced model, and its cold stage: the plain model's optimum (cvxpy),
proven; the staging rule; the cold methods on the guided stage's model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from countdp.design.designer import design_lp
from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.reduced_lp import COLD, STRATEGY, staged

S = SolverSettings()


@pytest.mark.parametrize("props, objective", [(("RH", "CH"), "L1"), (("F",), "L2"), (("WH",), "L0d:1")])
def test_the_reduced_model_gives_the_plain_optimum(props, objective):
    request = DesignRequest.of(20, 0.7, props, objective, use_closed_forms=False)
    attempt = STRATEGY.attempt(request, make_context(DEFAULT_SETTINGS))
    plain = design_lp(20, 0.7, props, objective, backend="cvxpy")
    assert attempt.proven and attempt.answer.status == "optimal"
    assert attempt.answer.solver_objective == pytest.approx(plain.objective_value, abs=1e-7)
    assert attempt.answer.extra["optimality"]["certified"]


def test_staging_only_for_s_with_the_guided_method_chosen():
    assert staged(DesignRequest.of(48, 0.9, ("WH", "S"), "L1"), "guided")
    assert not staged(DesignRequest.of(48, 0.9, ("WH",), "L1"), "guided")
    assert not staged(DesignRequest.of(48, 0.9, ("WH", "S"), "L1"), "simplex")
    assert not staged(DesignRequest.of(48, 0.9, ("WH", "S"), "L1", method="guided"), "guided")


def test_the_cold_stage_runs_on_the_guided_stages_model():
    """WM under L1 at n = 48 is guided: the guided stage leaves its model, and the cold simplex on
    it finds the same optimum (a vertex, proven)."""
    request = DesignRequest.of(48, 0.8, ("RM", "CM", "WH", "S"), "L1")
    context = make_context(DEFAULT_SETTINGS)
    guided = STRATEGY.attempt(request, context)
    assert guided.stage is not None and guided.proven and not guided.final
    cold = COLD.attempt(request, replace(context, earlier=(guided,)))
    assert cold.proven and cold.answer.method == "simplex"
    assert cold.answer.solver_objective == pytest.approx(guided.answer.solver_objective, rel=1e-8)
    assert COLD.attempt(request, context).outcome == "skipped"  # no earlier stage


def test_an_unstaged_reduced_lp_ends_the_plan():
    """Where the guided methods are not staged, the reduced LP's attempt is final: no later strategy."""
    request = DesignRequest.of(24, 0.62, ("WH",), "L1", use_closed_forms=False)
    attempt = STRATEGY.attempt(request, make_context(DEFAULT_SETTINGS))
    assert attempt.final and attempt.stage is None


def test_the_method_asked_for_is_honoured():
    request = DesignRequest.of(24, 0.62, ("WH", "S"), "L1", method="ipm", use_closed_forms=False)
    attempt = STRATEGY.attempt(request, make_context(DEFAULT_SETTINGS))
    assert attempt.answer.method == "ipm+crossover" and attempt.proven
    assert COLD.accepts(DesignRequest.of(24, 0.62, ("WH", "S"), "L1", method="ipm"), S) is not None
