"""The folded strategy (countdp.design.strategies.folded): a mirror-symmetric LP without S solved
with S folded in and proven without it (Theorem 1)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import lp_solve
from countdp.design.planner import make_context
from countdp.design.reductions.fold_symmetry import FOLDED
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.folded import STRATEGY
from tests.helpers.design import overriding

GUIDED_SMALL = SolverSettings.of(ipm_min_nnz=0)
"""Small models solved as large ones are: ``guided`` (L0: Clarabel) from any size."""


def _unfolded_optimum(request: DesignRequest) -> float:
    """The optimum of the LP without S, by simplex on its own model (not folded)."""
    optimality = lp_solve.solve_proven(lp_solve.reduced_lp(request.problem, fold=False), "simplex",
                                       settings=DEFAULT_SETTINGS)[3]
    assert optimality["certified"]
    return optimality["upper_bound"]


def test_accepts_a_symmetric_lp_without_s_and_says_why_not_otherwise():
    weights = np.linspace(1, 2, 21)
    weights /= weights.sum()
    near_one = SolverSettings.of(template_min_n=16)
    assert STRATEGY.accepts(DesignRequest.of(20, 0.62, ("F",), "L1"), DEFAULT_SETTINGS) is None
    assert STRATEGY.accepts(DesignRequest.of(20, 0.99, ("CH",), "L0"), near_one) is None
    assert "L0" in STRATEGY.accepts(DesignRequest.of(20, 0.99, ("CH",), "L0"), DEFAULT_SETTINGS)
    assert "L0" in STRATEGY.accepts(DesignRequest.of(40, 0.2, ("CH",), "L0"), near_one)  # a template fits
    assert "symmetric" in STRATEGY.accepts(DesignRequest.of(20, 0.62, ("F",), "L1", weights), DEFAULT_SETTINGS)
    assert "S requested" in STRATEGY.accepts(DesignRequest.of(20, 0.62, ("F", "S"), "L1"), DEFAULT_SETTINGS)
    off = DesignRequest.of(20, 0.62, ("F",), "L1", fold_symmetry=False)
    assert "switched off" in STRATEGY.accepts(off, DEFAULT_SETTINGS)
    asked = DesignRequest.of(20, 0.62, ("F",), "L1", method="simplex")
    assert "method" in STRATEGY.accepts(asked, DEFAULT_SETTINGS)
    assert STRATEGY.attempt(asked, make_context(DEFAULT_SETTINGS)).outcome == "skipped"


def test_a_small_model_solved_by_simplex_is_skipped():
    """Below ipm_min_nnz the folded model would be solved by simplex, not ``guided``: not tried."""
    attempt = STRATEGY.attempt(DesignRequest.of(20, 0.62, ("F",), "L1"), make_context(DEFAULT_SETTINGS))
    assert attempt.outcome == "skipped" and "guided" in attempt.reason and attempt.answer is None


@pytest.mark.parametrize("props, objective, alpha, settings", [
    (("F",), "L1", 0.62, GUIDED_SMALL),
    (("CH",), "L0", 0.99, GUIDED_SMALL.with_values(template_min_n=16)),  # alpha too near 1 for a template
])
def test_the_folded_answer_is_proven_at_the_lp_without_s_optimum(props, objective, alpha, settings):
    """Solved folded, proven on the LP without S with the unfolded dual, at the optimum the LP
    without S reaches by simplex on its own model (Theorem 1: folding keeps the optimum)."""
    request = DesignRequest.of(20, alpha, props, objective)
    attempt = STRATEGY.attempt(request, make_context(settings))
    assert attempt.outcome == "proven", attempt
    answer = attempt.answer
    optimality = answer.extra["optimality"]
    assert answer.status == "optimal" and optimality["certified"]
    assert answer.extra["reductions"][-1] == FOLDED and "symmetry-folded" in answer.extra["reductions"]
    assert optimality["dual"] == "the S-folded model's, mirrored and averaged"
    assert optimality["upper_bound"] == pytest.approx(_unfolded_optimum(request), rel=1e-8, abs=1e-10)
    assert answer.matrix.shape == (21, 21)


def _raising(asked: list):
    def solve_proven(lp, method, fallback=True, methods=None):
        asked.append(methods)
        raise RuntimeError("not solved here")

    return solve_proven


@pytest.mark.parametrize("n, alpha, cold", [(40, 0.2, True), (40, 0.99, False)])
def test_the_folded_model_gets_the_cold_simplex_only_where_a_template_applies(n, alpha, cold):
    """Where a guide template applies (alpha far from 1) the cold simplex on the folded model
    follows the guided methods; near alpha = 1 only the guided methods run there.  No answer:
    a failed attempt, the solver's reason kept."""
    settings = GUIDED_SMALL.with_values(template_min_n=16)
    asked = []
    context = overriding(make_context(settings), solve_proven=_raising(asked))
    attempt = STRATEGY.attempt(DesignRequest.of(n, alpha, ("F",), "L1"), context)
    assert attempt.outcome == "failed" and attempt.answer is None
    assert attempt.info == {"certified": False, "reason": "not solved here"}
    assert asked == [("guided", lp_solve.CLARABEL_GUIDED) + (("simplex",) if cold else ())]


def test_a_folded_answer_not_proven_without_s_is_not_returned():
    """The folded model's 'answer' replaced by that of another objective (L2's optimum, not L1's):
    the check on the LP without S refuses it; the attempt keeps both certificates."""
    request = DesignRequest.of(20, 0.62, ("F",), "L1")
    other = lp_solve.reduced_lp(DesignRequest.of(20, 0.62, ("F", "S"), "L2").problem)

    def wrong_objective(lp, method, fallback=True, methods=None):
        assert lp.A.shape == other.A.shape
        return lp_solve.solve_proven(other, "simplex", settings=DEFAULT_SETTINGS)

    context = overriding(make_context(GUIDED_SMALL), solve_proven=wrong_objective)
    attempt = STRATEGY.attempt(request, context)
    assert attempt.outcome == "unproven" and attempt.answer is None
    assert attempt.info["certified"] is False and attempt.info["folded_optimality"]["certified"] is True
