"""The guided simplex: a vertex from the basis read off a guide point (a given guide, else
Clarabel's point), or Clarabel's point itself when the caller's proof accepts it, in the order
the settings say."""

from __future__ import annotations

from dataclasses import replace

import pytest

from countdp.design.designer import design_lp
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers import guided, interior
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.solved import INTERIOR_GUIDE, polish_run

NO_QUICK = SolverSettings.of(quick_vertex_work=(0, 0))


@pytest.mark.parametrize("props, objective, alpha", [(("RM", "CM", "WH", "S"), "L2", 0.91), (("F",), "L0d:1", 0.62)])
def test_guided_vertex_has_the_plain_cvxpy_optimum(props, objective, alpha):
    n = 24
    run = guided.run_guided(build_reduced_lp(n, alpha, props, objective), settings=DEFAULT_SETTINGS)
    assert run.guide == "clarabel" and run.basis is not None and run.status == "Optimal"
    reference = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert run.objective == pytest.approx(reference.solver_objective, rel=1e-7)


def test_a_rejected_interior_point_is_followed_by_the_simplex():
    """Below ``template_min_n``, ``accept`` sees Clarabel's point only after the quick simplex
    fails (no work for it here); rejected, the simplex goes on to a vertex (with a basis);
    accepted, the point is returned without one.  With work enough the quick simplex answers and
    the point is not offered; from ``template_min_n`` the point is offered first."""
    lp = build_reduced_lp(40, 0.99, ("F", "S"), "L0d:1")
    seen = []
    vertex = guided.run_guided(lp, template=False, accept=lambda p: seen.append(p) or False, settings=NO_QUICK)
    assert len(seen) == 1 and seen[0].basis is None and vertex.basis is not None and vertex.guide == "clarabel"
    point = guided.run_guided(lp, template=False, accept=lambda p: True, settings=NO_QUICK)
    assert point.basis is None and point.guide == INTERIOR_GUIDE
    assert point.objective == pytest.approx(vertex.objective, rel=1e-8)
    quick = guided.run_guided(lp, template=False, accept=lambda p: seen.append(p) or True,
                              settings=SolverSettings.of(quick_vertex_work=(1e12, 1e12)))
    assert quick.basis is not None and len(seen) == 1
    first = guided.run_guided(lp, template=False, accept=lambda p: seen.append(p) or True,
                              settings=SolverSettings.of(template_min_n=30))
    assert first.basis is None and len(seen) == 2


def test_an_inaccurate_point_rejected_from_min_n_ends_the_run(monkeypatch):
    """From ``template_min_n``, a rejected point that Clarabel left 'AlmostSolved' (forced) is not
    followed by a simplex from its basis: the run raises."""
    real = interior.run_clarabel
    monkeypatch.setattr(interior, "run_clarabel", lambda *a, **k: replace(real(*a, **k), status="AlmostSolved"))

    def no_simplex(*args, **kwargs):
        raise AssertionError("a simplex ran")

    monkeypatch.setattr(guided, "run_highs", no_simplex)
    lp = build_reduced_lp(40, 0.99, ("F", "S"), "L0d:1")
    with pytest.raises(RuntimeError, match="AlmostSolved"):
        guided.run_guided(lp, template=False, accept=lambda point: False, settings=SolverSettings.of(template_min_n=30))


def test_a_given_guide_seeds_the_simplex_and_its_failure_is_recorded():
    """A guide that returns the model's own optimal vertex with its basis statuses is the start of
    a simplex that needs no pivot; its point alone needs few.  A guide that fails leaves its reason
    in ``guide`` after Clarabel's; ``template=False`` does not call it."""
    lp = build_reduced_lp(30, 0.8, ("WH", "S"), "L1")
    optimum = polish_run(lp, run_highs(lp, "simplex", settings=DEFAULT_SETTINGS))
    basic, _, active, _ = optimum.basis
    run = guided.run_guided(lp, guide=lambda model: (optimum, basic, active, 7), settings=DEFAULT_SETTINGS)
    assert run.guide == "the design at n = 7" and run.pivots == 0
    assert run.objective == pytest.approx(optimum.objective, rel=1e-12)
    alone = guided.run_guided(lp, guide=lambda model: (optimum, None, None, 7), settings=DEFAULT_SETTINGS)
    assert alone.guide == "the design at n = 7, its point only"

    def broken(model):
        raise RuntimeError("boom")

    assert guided.run_guided(lp, guide=broken, settings=DEFAULT_SETTINGS).guide == "clarabel (boom)"
    assert guided.run_guided(lp, template=False, guide=broken, settings=DEFAULT_SETTINGS).guide == "clarabel"
