"""The CM relaxation strategy (countdp.design.strategies.cm_relaxation): the point of the LP with
CH in place of CM (or a point on its optimal face), proven on the LP with CM."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from countdp.design import lp_solve
from countdp.design.constraints import property_rows
from countdp.design.planner import make_context
from countdp.design.reductions.fold_symmetry import FoldS
from countdp.design.reductions.relax_cm import FACE, RELAXATION, RelaxCM
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.cm_relaxation import STRATEGY, CMRelaxation
from tests.helpers.design import overriding

SMALL = SolverSettings.of(template_min_n=10, ipm_min_nnz=0)
"""Small models treated as large ones: no template fits them, and they are solved ``guided``."""


def _optimum_with_cm(request: DesignRequest) -> float:
    """The optimum of the LP with CM, by simplex on its own model (no relaxation)."""
    optimality = lp_solve.solve_proven(lp_solve.reduced_lp(request.problem), "simplex", settings=DEFAULT_SETTINGS)[3]
    assert optimality["certified"]
    return optimality["upper_bound"]


def test_accepts_where_clarabels_point_would_answer_and_says_why_not_otherwise():
    near = SolverSettings.of(template_min_n=16)
    assert STRATEGY.accepts(DesignRequest.of(12, 0.8, ("CM",), "L1"), SMALL) is None
    assert "CM" in STRATEGY.accepts(DesignRequest.of(12, 0.8, ("CH",), "L1"), SMALL)
    assert "n from 160" in STRATEGY.accepts(DesignRequest.of(12, 0.8, ("CM",), "L1"), DEFAULT_SETTINGS)
    assert "L0" in STRATEGY.accepts(DesignRequest.of(40, 0.2, ("CM",), "L0"), near)  # a template fits
    assert STRATEGY.accepts(DesignRequest.of(12, 0.99, ("CM",), "L0"), SMALL) is None
    assert "template" in STRATEGY.accepts(DesignRequest.of(40, 0.2, ("CM",), "L1"), near)
    assert STRATEGY.accepts(DesignRequest.of(40, 0.2, ("CM", "F"), "L0d:1"), near) is None  # before the template
    asked = DesignRequest.of(12, 0.8, ("CM",), "L1", method="clarabel")
    assert "method" in STRATEGY.accepts(asked, SMALL)
    assert STRATEGY.attempt(asked, make_context(SMALL)).outcome == "skipped"


def test_a_relaxation_solved_by_simplex_is_skipped():
    request = DesignRequest.of(12, 0.8, ("CM",), "L1")
    attempt = STRATEGY.attempt(request, make_context(SolverSettings.of(template_min_n=10)))
    assert attempt.outcome == "skipped" and "guided" in attempt.reason


@pytest.mark.parametrize("props, objective, alpha, face", [
    (("RM", "CM", "WH"), "L1", 0.8, False),
    (("CM",), "L0", 0.99, None),  # L0 too near 1 for a template: Clarabel's point (or its face's)
    (("RH", "CM"), "L0d:1", 0.91, True),  # the relaxation's centre breaks CM: a point on its face
    (("RH", "CM", "S"), "L0d:1", 0.91, None),
])
def test_the_relaxed_answer_holds_cm_and_is_proven_at_the_lp_with_cm_optimum(props, objective, alpha, face):
    request = DesignRequest.of(12, alpha, props, objective)
    attempt = STRATEGY.attempt(request, make_context(SMALL))
    assert attempt.outcome == "proven", attempt
    answer = attempt.answer
    optimality = answer.extra["optimality"]
    assert answer.status == "optimal" and optimality["certified"] and "spread" in optimality["dual"]
    reductions = answer.extra["reductions"]
    assert RELAXATION in reductions and (face is None or (FACE in reductions) is face)
    assert property_rows("CM", 12).violation(answer.matrix.ravel()) <= 1e-9
    assert optimality["upper_bound"] == pytest.approx(_optimum_with_cm(request), rel=1e-8, abs=1e-10)


def test_no_point_of_the_relaxation_is_a_failed_attempt():
    def no_point(lp, prover=None, what=""):
        yield None, {"certified": False, "reason": f"{what}made to fail"}

    context = overriding(make_context(SMALL), proven_points=no_point)
    attempt = STRATEGY.attempt(DesignRequest.of(12, 0.8, ("CM",), "L1"), context)
    assert attempt.outcome == "failed" and attempt.answer is None
    assert attempt.info == {"certified": False, "reason": "relaxation: made to fail"}


def test_when_no_face_is_proven_the_attempt_is_unproven_and_says_why():
    """The case whose centre breaks CM, with every face's point made to fail: not proven, the
    face's reason recorded."""
    failing = {"certified": False, "reason": "face: made to fail"}
    context = overriding(make_context(SMALL), proven_point=lambda lp, prover=None, what="": (None, dict(failing)))
    attempt = STRATEGY.attempt(DesignRequest.of(12, 0.91, ("RH", "CM"), "L0d:1"), context)
    assert attempt.outcome == "unproven" and attempt.answer is None
    assert attempt.info["certified"] is False and attempt.info["face"] == failing


def test_the_face_of_a_wrong_dual_proves_nothing():
    """With the relaxation's duals zeroed, the 'face' is the whole LP with CM: its centre is
    feasible but not optimal, and the check says so."""
    request = DesignRequest.of(12, 0.91, ("RH", "CM"), "L0d:1")
    context = make_context(SMALL)
    target = request.problem
    relaxed, _ = RelaxCM().apply(target)
    lp = lp_solve.reduced_lp(FoldS().apply(relaxed)[0])
    run, _ = next(lp_solve.proven_points(lp, settings=SMALL))
    zeroed = replace(run, row_dual=np.zeros_like(run.row_dual), col_dual=np.zeros_like(run.col_dual))
    why, found = CMRelaxation.on_face(request, context, target, relaxed, lp, zeroed, True)
    assert found is None and why["certified"] is False and why["gap"] > 1e-6
    face, found = CMRelaxation.on_face(request, context, target, relaxed, lp, run, True)
    assert found is not None and found[1]["certified"] and not face.cost.any()


def test_when_the_first_points_face_is_not_proven_the_next_point_is_tried():
    """Two points offered (the same one twice), the first one's face made to fail: the second
    point's face is solved and proven; the record says the face moved the point."""
    real = make_context(SMALL)
    offered, faces = [], []

    def twice(lp, prover=None, what=""):
        first = next(real.solves.proven_points(lp, prover=prover, what=what))
        for _ in range(2):
            offered.append(first)
            yield first[0], dict(first[1])

    def first_face_fails(lp, prover=None, what=""):
        faces.append(what)
        if len(faces) == 1:
            return None, {"certified": False, "reason": "made to fail"}
        return real.solves.proven_point(lp, prover=prover, what=what)

    context = overriding(real, proven_points=twice, proven_point=first_face_fails)
    attempt = STRATEGY.attempt(DesignRequest.of(12, 0.91, ("RH", "CM"), "L0d:1"), context)
    assert len(offered) == 2 and faces == ["face: ", "face: "]
    assert attempt.outcome == "proven" and attempt.answer.extra["reductions"][-2:] == [RELAXATION, FACE]
