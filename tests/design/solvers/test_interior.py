"""Clarabel's points on the scaled model: each next formulation only while the last ended
'AlmostSolved', each point proven on the full LP; the implied bounds dropped only near alpha = 1."""

from __future__ import annotations

from dataclasses import replace

import pytest

from countdp.design import lp_solve
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers import interior
from countdp.design.solvers.solved import INTERIOR_GUIDE
from countdp.privacy.certify import certify


def _proven(lp, run, alpha):
    return lp_solve.prove(lp, run, certify(lp_solve.vertex_matrix(lp, run), alpha)[0],
                          settings=DEFAULT_SETTINGS)["certified"]


def test_interior_points_next_formulation_only_after_almost_solved(monkeypatch):
    """'AlmostSolved' is forced on every point here: F substituted out first, then the same
    refined, then F's rows kept; the other way round, F's rows kept, then substituted out; without
    F, the point and then the same refined, unless the first stalled with a primal residual above
    ``refine_max_residual`` (forced too); a point 'Solved' ends the list.  Each point is proven."""
    calls, status, residual = [], {"as": "AlmostSolved"}, {"as": None}
    real = interior.run_clarabel

    def forced(lp, cost_scale=1.0, tol=None, refine=False, **options):
        calls.append((lp.A.shape[0], refine))
        point = replace(real(lp, cost_scale, tol, refine, **options), status=status["as"])
        return point if residual["as"] is None else replace(point, primal_residual=residual["as"])

    monkeypatch.setattr(interior, "run_clarabel", forced)
    n, alpha = 12, 0.62
    lp = build_reduced_lp(n, alpha, ("RH", "F"), "L0d:1")
    rows, sub = lp.A.shape[0], lp.A.shape[0] - n
    for first, expected in ((True, [(sub, False), (sub, True), (rows, False)]),
                            (False, [(rows, False), (sub, False)])):
        calls.clear()
        points = list(interior.interior_points(lp, " (note)", substituted_first=first, settings=DEFAULT_SETTINGS))
        assert calls == expected and all(p.guide == INTERIOR_GUIDE + " (note)" for p in points)
        assert all(_proven(lp, run, alpha) for run in points)
    no_f = build_reduced_lp(n, alpha, ("RH",), "L0d:1")
    settings = SolverSettings.of(refine_max_residual=1e-11)
    calls.clear()
    points = list(interior.interior_points(no_f, substituted_first=True, settings=settings))
    assert calls == [(no_f.A.shape[0], False), (no_f.A.shape[0], True)]
    assert points[0].primal_residual <= settings.solver.refine_max_residual
    residual["as"] = 10 * settings.solver.refine_max_residual
    calls.clear()
    list(interior.interior_points(no_f, substituted_first=True, settings=settings))
    assert calls == [(no_f.A.shape[0], False)]
    residual["as"], status["as"] = None, "Solved"
    calls.clear()
    list(interior.interior_points(lp, substituted_first=True, settings=DEFAULT_SETTINGS))
    assert calls == [(sub, False)]


def test_implied_bounds_dropped_only_where_alpha_is_too_near_one_for_a_template():
    """From ``template_min_n`` with no template width (alpha near 1) the point is the answer, so
    Clarabel may drop the implied bounds; below it, or far from 1, not."""
    lp = build_reduced_lp(24, 0.99, ("RM",), "L2")
    assert not interior.drops_implied_bounds(lp, settings=DEFAULT_SETTINGS)  # below the default template_min_n
    assert interior.drops_implied_bounds(lp, SolverSettings.of(template_min_n=20))
    far = build_reduced_lp(24, 0.5, ("RM",), "L2")  # W = 7: a template of 25 fits in 1.1 n, not in 0.7 n
    assert interior.drops_implied_bounds(far, SolverSettings.of(template_min_n=20))
    assert not interior.drops_implied_bounds(far, SolverSettings.of(template_min_n=20, guide_max_template_fraction=1.1))
    assert not interior.drops_implied_bounds(replace(lp, problem=None), SolverSettings.of(template_min_n=20))


def test_interior_point_is_the_plain_optimum():
    """Clarabel's first point of LP with CH and RM, L1, has the cold simplex's optimal value."""
    lp = build_reduced_lp(20, 0.8, ("CH", "RM"), "L1")
    point = interior.interior_point(lp, settings=DEFAULT_SETTINGS)
    _, _, run, optimality = lp_solve.solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    assert optimality["certified"] and point.objective == pytest.approx(run.objective, rel=1e-8)
