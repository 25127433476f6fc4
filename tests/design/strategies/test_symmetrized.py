"""The symmetrized strategy (countdp.design.strategies.symmetrized): an LP with S answered by
Clarabel's point of the LP without S, averaged with its mirror image, proven with S."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import lp_solve
from countdp.design.constraints import property_rows
from countdp.design.planner import make_context
from countdp.design.reductions.fold_symmetry import SYMMETRIZED
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.symmetrized import STRATEGY
from countdp.privacy.certify import certify
from countdp.privacy.exact import exact_dp_check
from countdp.privacy.rounding import round_to_release
from countdp.values.alpha import exact_alpha
from tests.helpers.design import overriding

GUIDED_SMALL = SolverSettings.of(ipm_min_nnz=0)
"""Small models solved as large ones are: ``guided`` from any size."""

REQUEST = DesignRequest.of(20, 0.9, ("RM", "S"), "L1")


def test_accepts_an_lp_with_s_near_alpha_one_and_says_why_not_otherwise():
    weights = np.linspace(1, 2, 21)
    weights /= weights.sum()
    assert STRATEGY.accepts(REQUEST, DEFAULT_SETTINGS) is None
    assert "S requested" in STRATEGY.accepts(DesignRequest.of(20, 0.9, ("RM",), "L1"), DEFAULT_SETTINGS)
    assert "L0" in STRATEGY.accepts(DesignRequest.of(20, 0.9, ("RM", "S"), "L0"), DEFAULT_SETTINGS)
    assert "symmetric" in STRATEGY.accepts(DesignRequest.of(20, 0.9, ("RM", "S"), "L1", weights), DEFAULT_SETTINGS)
    template = DesignRequest.of(40, 0.2, ("RM", "S"), "L1")  # a guide template fits from template_min_n
    assert STRATEGY.accepts(template, DEFAULT_SETTINGS) is None
    assert "template" in STRATEGY.accepts(template, SolverSettings.of(template_min_n=16))
    asked = DesignRequest.of(20, 0.9, ("RM", "S"), "L1", method="guided")
    assert "method" in STRATEGY.accepts(asked, DEFAULT_SETTINGS)
    assert STRATEGY.attempt(asked, make_context(DEFAULT_SETTINGS)).outcome == "skipped"


def test_a_small_model_solved_by_simplex_is_skipped():
    attempt = STRATEGY.attempt(REQUEST, make_context(DEFAULT_SETTINGS))
    assert attempt.outcome == "skipped" and "guided" in attempt.reason


def test_the_symmetrized_point_is_symmetric_proven_with_s_and_releasable():
    """LP with RM and S, L1, n = 20, alpha = 0.9: symmetric to the last bit, proven on the LP with S
    (dual of the LP without S, S's rows 0) at the optimum of the LP with S solved by simplex on its
    own model, and exactly alpha-DP once released."""
    attempt = STRATEGY.attempt(REQUEST, make_context(GUIDED_SMALL))
    assert attempt.outcome == "proven", attempt
    answer = attempt.answer
    optimality = answer.extra["optimality"]
    assert answer.status == "optimal" and optimality["certified"] and answer.method == "ipm"
    assert answer.extra["reductions"][-1] == SYMMETRIZED
    assert "S's rows given 0" in optimality["dual"]
    P = answer.matrix
    assert np.array_equal(P, P[::-1, ::-1]) and property_rows("S", 20).violation(P.ravel()) == 0
    direct = lp_solve.solve_proven(lp_solve.reduced_lp(REQUEST.problem, fold=False), "simplex",
                                   settings=DEFAULT_SETTINGS)[3]
    assert direct["certified"]
    assert optimality["upper_bound"] == pytest.approx(direct["upper_bound"], rel=1e-8, abs=1e-10)
    released = round_to_release(certify(P, REQUEST.alpha)[0], REQUEST.alpha)
    assert exact_dp_check(released.weights, exact_alpha(REQUEST.alpha), released.K).holds


def test_no_point_without_s_is_a_failed_attempt():
    context = overriding(make_context(GUIDED_SMALL),
                         proven_point=lambda lp, prover=None, what="": (None, {"certified": False,
                                                                               "reason": f"{what}made to fail"}))
    attempt = STRATEGY.attempt(REQUEST, context)
    assert attempt.outcome == "failed" and attempt.answer is None
    assert attempt.info == {"certified": False, "reason": "without S: made to fail"}


def test_a_point_not_proven_without_s_is_not_symmetrized():
    real = make_context(GUIDED_SMALL)

    def unproven(lp, prover=None, what=""):
        run, optimality = real.solves.proven_point(lp, prover=prover, what=what)
        return run, {**optimality, "certified": False}

    attempt = STRATEGY.attempt(REQUEST, overriding(real, proven_point=unproven))
    assert attempt.outcome == "unproven" and attempt.answer is None
    assert attempt.info["reason"] == "without S: not proven"


def test_a_wrong_point_symmetrized_is_not_proven_with_s():
    """The point (and dual) of L2's LP without S, claimed proven for L1's: symmetrized, the check
    on L1's LP with S refuses it."""
    other = lp_solve.reduced_lp(DesignRequest.of(20, 0.9, ("RM",), "L2").problem)
    real = make_context(GUIDED_SMALL)

    def wrong_objective(lp, prover=None, what=""):
        assert lp.A.shape == other.A.shape
        run, optimality = real.solves.proven_point(other, what=what)
        return run, {**optimality, "certified": True}

    attempt = STRATEGY.attempt(REQUEST, overriding(real, proven_point=wrong_objective))
    assert attempt.outcome == "unproven" and attempt.answer is None
    assert attempt.info["certified"] is False and attempt.info["gap"] > 1e-6
