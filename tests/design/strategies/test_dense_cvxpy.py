"""The plain cvxpy model: proven by the solver's own duals (checked independently), or by a dual of
the reduced model where there are none (minimax); a wrong matrix is not proven."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.dense_cvxpy import STRATEGY, solver_dual_certificate
from countdp.mechanisms.closed_forms import geometric


def test_the_solvers_own_duals_prove_the_answer():
    request = DesignRequest.of(8, 0.8, ("WH", "S"), "L1", solver="HIGHS", backend="cvxpy", method="simplex")
    attempt = STRATEGY.attempt(request, make_context(DEFAULT_SETTINGS))
    assert attempt.proven
    optimality = attempt.answer.extra["optimality"]
    assert optimality["certified"] and optimality["dual_from"].startswith("cvxpy")


def test_minimax_is_proven_by_the_reduced_models_dual():
    request = DesignRequest.of(8, 0.8, ("F",), "L1", aggregate="max", backend="cvxpy", method="simplex")
    attempt = STRATEGY.attempt(request, make_context(DEFAULT_SETTINGS))
    assert attempt.proven and attempt.answer.extra["optimality"]["dual_from"].startswith("reduced model")


def test_clarabel_through_cvxpy_agrees_with_highs():
    highs = STRATEGY.attempt(DesignRequest.of(7, 0.7, ("RH",), "L2", backend="cvxpy", method="simplex"),
                             make_context(DEFAULT_SETTINGS))
    clarabel = STRATEGY.attempt(DesignRequest.of(7, 0.7, ("RH",), "L2", solver="CLARABEL", backend="cvxpy",
                                                 method="ipm"), make_context(DEFAULT_SETTINGS))
    assert clarabel.answer.solver_objective == pytest.approx(highs.answer.solver_objective, abs=1e-6)


def test_a_suboptimal_matrix_is_not_proven():
    """GM is optimal for L0 without properties but not for L2 with RH: the certificate refuses it
    with the duals of the true optimum."""
    import cvxpy as cp

    request = DesignRequest.of(6, 0.7, (), "L2", backend="cvxpy", method="simplex")
    model = request.problem
    system = model.system()
    x = cp.Variable(49)
    constraints = [system.A_ub @ x >= system.b_ub, system.A_eq @ x == system.b_eq]
    cp.Problem(cp.Minimize(model.weighted_cost @ x), constraints).solve(solver=cp.HIGHS)
    good = solver_dual_certificate(model, constraints, x.value.reshape(7, 7), "HIGHS", settings=SolverSettings())
    bad = solver_dual_certificate(model, constraints, geometric(6, 0.7), "HIGHS", settings=SolverSettings())
    assert good["certified"] and not bad["certified"]
    assert not np.allclose(x.value.reshape(7, 7), geometric(6, 0.7))
