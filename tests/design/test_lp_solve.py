"""The shared sub-solves: every method gives the plain optimum, proven; the fallbacks run in the
order promised; a matrix from elsewhere is proven, or not, by weak duality."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from countdp.design import lp_solve
from countdp.design.designer import design_lp, design_named
from countdp.design.model import DesignProblem
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.solved import INTERIOR_GUIDE, polish_run
from countdp.mechanisms.closed_forms import geometric, uniform
from countdp.privacy.certify import is_alpha_dp
from countdp.values.objectives import objective_value

WM = ("RM", "CM", "WH", "S")


@pytest.mark.parametrize("method, label", [("simplex", ("HIGHS", "simplex")), ("ipm", ("HIGHS", "ipm+crossover")),
                                           ("clarabel", ("CLARABEL", "ipm")),
                                           ("guided", ("HIGHS", "simplex guided by clarabel"))])
def test_every_method_gives_the_plain_optimum_proven(method, label):
    n, alpha = 20, 0.91
    reference = design_named("WM", n, alpha, backend="cvxpy")
    lp = build_reduced_lp(n, alpha, WM, "L0")
    P, used, run, optimality = lp_solve.solve_proven(lp, method, fallback=False, settings=DEFAULT_SETTINGS)
    assert used == method and optimality["certified"] and optimality["method"] == method
    assert run.objective == pytest.approx(reference.solver_objective, abs=1e-7)
    assert lp_solve.solver_label(used, run) == label and is_alpha_dp(P, alpha)
    answer = lp_solve.proven_result(lp, run, used, 0.5, optimality, ["a reduction"])
    assert (answer.solver, answer.method, answer.status) == (*label, "optimal")
    assert answer.extra["reductions"] == [*lp.reductions, "a reduction"] and answer.extra["rows"] == lp.A.shape[0]
    np.testing.assert_array_equal(answer.matrix, lp_solve.vertex_matrix(lp, run))


def test_unproven_template_answer_is_retried_with_clarabel(monkeypatch):
    """A template-guided vertex whose certificate does not close (its duals spoiled here) is
    followed by the Clarabel-guided run, not by a cold simplex; a Clarabel-guided one is not repeated."""
    calls = []

    def spoiled(lp, template=True, accept=None, **options):
        calls.append(template)
        run = run_guided(lp, template=False, settings=DEFAULT_SETTINGS)  # a vertex: its interior point is not offered
        if template:  # an exact vertex with spoiled duals
            run = polish_run(lp, run)
            run.guide, run.basis, run.row_dual = "the design at n = 10", None, run.row_dual * 0.5
        return run

    monkeypatch.setattr(lp_solve, "run_guided", spoiled)
    no_tightening = SolverSettings.of(tight_row_scales=())
    lp = build_reduced_lp(40, 0.8, ("WH", "S"), "L1")
    _, used, run, optimality = lp_solve.solve_proven(lp, "guided", settings=no_tightening)
    assert calls == [True, False] and used == lp_solve.CLARABEL_GUIDED and optimality["certified"]
    assert optimality["attempts"][0].startswith("guided: certificate did not close")
    assert run.guide == "clarabel"

    def clarabel_guided(lp, template=True, accept=None, **options):
        calls.append(template)
        return run_guided(lp, template=False, settings=DEFAULT_SETTINGS)

    calls.clear()
    monkeypatch.setattr(lp_solve, "run_guided", clarabel_guided)
    _, used, _, optimality = lp_solve.solve_proven(lp, "guided", settings=no_tightening)
    assert calls == [True] and used == "guided" and optimality["certified"]


def test_interior_point_is_proven_when_the_simplex_does_not_end():
    """With no work for the quick simplex, Clarabel's point itself is proven (DP closure where
    certify's UM repair costs too much): the cold simplex's value, a closed certificate, DP."""
    n, alpha = 48, 0.99
    lp = build_reduced_lp(n, alpha, ("F",), "L0d:1")
    P, used, run, optimality = lp_solve.solve_proven(lp, "guided", settings=SolverSettings.of(quick_vertex_work=(0, 0)))
    assert optimality["certified"] and optimality["guide"].startswith(INTERIOR_GUIDE) and run.basis is None
    assert lp_solve.solver_label(used, run) == ("CLARABEL", "ipm") and is_alpha_dp(P, alpha)
    cold = lp_solve.solve_proven(build_reduced_lp(n, alpha, ("F",), "L0d:1"), "simplex", settings=DEFAULT_SETTINGS)
    assert objective_value(P, "L0d:1") == pytest.approx(cold[2].objective, rel=1e-7)


def test_prove_matrix_proves_the_optimum_found_elsewhere_and_not_a_worse_one():
    """WH with S, L0, n = 12, alpha = 0.62: GM is optimal (Theorem 3) and is proven with the reduced
    model's dual; GM mixed with 1e-6 of UM costs 1e-6 times their difference, and is not."""
    n, alpha = 12, 0.62
    problem = DesignProblem(n, alpha, ("WH", "S"), "L0")
    optimality = lp_solve.prove_matrix(problem, geometric(n, alpha), settings=DEFAULT_SETTINGS)
    assert optimality["certified"] and optimality["dual_from"] == "reduced model, simplex"
    assert optimality["lower_bound"] <= 2 * alpha / (1 + alpha) + 1e-12
    mixed = (1 - 1e-6) * geometric(n, alpha) + 1e-6 * uniform(n)
    assert not lp_solve.prove_matrix(problem, mixed, fallback=False, settings=DEFAULT_SETTINGS)["certified"]


def test_failures_are_reported_not_hidden():
    """An infeasible model: ``solve_proven`` raises with every attempt, the proven points say why
    (prefixed), and ``prove_matrix`` of a problem whose model fails says it found no dual."""
    lp = build_reduced_lp(10, 0.7, ("WH",), "L1")
    broken = replace(lp, col_upper=np.full(lp.A.shape[1], 1e-3))
    with pytest.raises(RuntimeError, match="simplex: HiGHS simplex returned 'Infeasible'; ipm: "):
        lp_solve.solve_proven(broken, "simplex", settings=DEFAULT_SETTINGS)
    run, why = lp_solve.proven_point(broken, what="relaxed: ", settings=DEFAULT_SETTINGS)
    assert run is None and not why["certified"] and why["reason"].startswith("relaxed: Clarabel returned")
    assert lp_solve.gap({"certified": False}) == float("inf")
    assert lp_solve.gap({"gap": 3.0, "upper_bound": -30.0}) == 0.1
    assert lp_solve.gap({"gap": 3e-10, "upper_bound": 0.5}) == 3e-10


def test_proven_points_each_with_its_certificate():
    """LP with F, L1: Clarabel's first point (F substituted out) is proven, with the plain optimum."""
    n, alpha = 16, 0.62
    lp = build_reduced_lp(n, alpha, ("F",), "L1")
    run, optimality = lp_solve.proven_point(lp, settings=DEFAULT_SETTINGS)
    assert optimality["certified"] and run.guide == INTERIOR_GUIDE and optimality["method"] == "guided"
    reference = design_lp(n, alpha, ("F",), "L1", backend="cvxpy")
    assert optimality["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-7)
    refused = list(lp_solve.proven_points(lp, prover=lambda _lp, _run, P: {"certified": False, "gap": None},
                                          settings=DEFAULT_SETTINGS))
    assert refused and not any(found[1]["certified"] for found in refused)
