"""The template guide: the optimal vertex at a smaller n, spread out, seeds the simplex at n."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design import backends, fast, seed
from countdp.design.designer import design_lp
from countdp.design.reduce import build_reduced_lp
from countdp.mechanisms.closed_forms import geometric


@pytest.mark.parametrize("n", [160, 256, 512, 1024])
@pytest.mark.parametrize("alpha", [0.5, 0.62, 0.8, 0.91, 0.95, 0.99])
def test_template_width_covers_the_decay(n, alpha):
    """Where a width is given, alpha^W is at most DECAY, W is at least a fifth of n and the
    template is at most 0.7 n; where none is, the smallest such template would be larger."""
    W = seed.template_width(n, alpha)
    smallest = max(math.ceil(math.log(seed.DECAY) / math.log(alpha)), math.ceil(seed.MIN_WIDTH_FRACTION * n))
    if W is None:
        assert 3 * smallest + 4 > seed.MAX_TEMPLATE_FRACTION * n
    else:
        assert alpha ** W <= seed.DECAY and W >= seed.MIN_WIDTH_FRACTION * n
        assert 3 * W + 4 <= seed.MAX_TEMPLATE_FRACTION * n


def test_no_template_below_min_n_or_near_one():
    assert seed.template_width(seed.MIN_N - 1, 0.5) is None
    assert seed.template_width(256, 0.99) is None  # 0.99^W <= 0.01 needs W >= 459
    assert seed.template_width(256, 0.5) == 52


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_spread_of_gm_is_gm(alpha):
    """GM is translation invariant inside and decays by alpha per step: spreading GM at n0 gives
    GM at n exactly (to rounding), corner rows included."""
    W, n = 12, 97
    n0 = 3 * W + 4
    props = ("WH", "S")
    small = build_reduced_lp(n0, alpha, props, "L1")
    lp = build_reduced_lp(n, alpha, props, "L1")
    first = sp.csc_matrix(small.expand)
    y0 = geometric(n0, alpha).ravel()[first.indices[first.indptr[:-1]]]
    run0 = backends.Solved(y0, np.zeros(small.A.shape[0]), small.cost.copy(), "GM", 0.0, 0.0)
    guide, basic, active = seed.spread(lp, small, run0, W)
    N = n + 1
    assert basic is None and active is None  # no basis given, none copied
    spread_gm = (lp.expand @ guide.y)[: N * N].reshape(N, N)
    np.testing.assert_allclose(spread_gm, geometric(n, alpha), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("props", [("RM", "CM", "WH", "S"), ("F", "S"), ("CH", "RM")])
def test_reduced_rows_send_each_origin_to_its_row(props):
    """Every reduced row comes from its origin row of the full model; the hash matching must send
    that origin back to it, and every matched full row must have the same image."""
    lp = build_reduced_lp(30, 0.7, props, "L1")
    rows = seed._reduced_rows(lp)
    assert np.array_equal(rows[lp.row_origin], np.arange(lp.A.shape[0]))
    full = lp.problem.lp()
    images = sp.csr_matrix(sp.vstack([full.A_ub, full.A_eq]) @ lp.expand).toarray()
    matched = np.flatnonzero(rows >= 0)
    np.testing.assert_allclose(images[matched], lp.A.toarray()[rows[matched]], rtol=0, atol=1e-15)


def test_a_square_prior_is_taken_as_it_is():
    """Given the statuses of an optimal basis, the guess is that basis: no flips."""
    lp = build_reduced_lp(30, 0.8, ("WH", "S"), "L1")
    run = backends.run_highs(lp, "simplex", None)
    col, row = backends.scales(lp)
    scaled = backends.scaled_model(lp, col, row)
    basic, _, active, _ = run.basis
    guess = backends.guess_basis(scaled, replace(run, y=run.y / col, row_dual=run.row_dual / row,
                                                 col_dual=run.col_dual * col), (basic, active))
    import highspy

    S = highspy.HighsBasisStatus
    assert np.array_equal(np.array([s == S.kBasic for s in guess.col_status]), basic)
    assert np.array_equal(np.array([s != S.kBasic for s in guess.row_status]), active)


@pytest.mark.parametrize("props, objective, alpha", [(("RM", "CM", "WH", "S"), "L1", 0.5),
                                                     (("WH", "S"), "L2", 0.62), (("F", "S"), "L1", 0.5)])
def test_template_guided_design_is_the_plain_optimum(monkeypatch, props, objective, alpha):
    """With the threshold lowered to n = 80, the design at n = 52 guides the simplex; the answer is
    proven and its value is the plain cvxpy model's."""
    monkeypatch.setattr(seed, "MIN_N", 60)
    n = 80
    assert seed.template_width(n, alpha) == 16
    result = fast.fast_design(n, alpha, props, objective)
    assert result.extra["optimality"]["certified"]
    assert result.extra["optimality"]["guide"] == "the design at n = 52"
    assert result.method == "simplex guided by the design at n = 52"
    ref = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert result.solver_objective == pytest.approx(ref.solver_objective, rel=1e-7)


def test_l0d_with_f_offers_clarabels_point_before_a_template(monkeypatch):
    """L0,d (d >= 1) with F, from the threshold: Clarabel's point, F substituted out, is offered to
    the proof before any template is built, and proven it is the answer, with the plain cvxpy
    model's value.  L1 with F, or L0,1 without F, builds the template first."""
    monkeypatch.setattr(seed, "MIN_N", 60)
    built, real = [], seed.template_guide

    def recorded(lp):
        built.append(lp.n)
        return real(lp)

    monkeypatch.setattr(seed, "template_guide", recorded)
    n, alpha, props = 80, 0.5, ("F", "S")
    result = fast.fast_design(n, alpha, props, "L0d:1")
    assert result.extra["optimality"]["certified"] and built == []
    assert result.extra["optimality"]["guide"] == backends.INTERIOR_GUIDE
    ref = design_lp(n, alpha, props, "L0d:1", backend="cvxpy")
    assert result.solver_objective == pytest.approx(ref.solver_objective, rel=1e-7)
    for other in ((props, "L1"), (("WH", "S"), "L0d:1")):
        problem = build_reduced_lp(n, alpha, *other).problem
        assert seed.applies(problem) and not seed.point_before_template(problem)


def test_unproven_template_answer_is_retried_with_clarabel(monkeypatch):
    """A template-guided vertex whose certificate does not close (here: its duals spoiled) is
    followed by the Clarabel-guided run, not by a cold simplex; a Clarabel-guided one is not
    repeated."""
    calls = []
    real = backends.run_guided

    def spoiled(lp, iterations=backends.GUIDED_SIMPLEX_ITERATIONS, template=True, accept=None):
        calls.append(template)
        run = real(lp, iterations, template=False)  # a vertex: its interior point is not offered
        if template:  # an exact vertex with spoiled duals
            run = backends.polish_run(lp, run)
            run.guide, run.basis, run.row_dual = "the design at n = 10", None, run.row_dual * 0.5
        return run

    monkeypatch.setattr(fast, "run_guided", spoiled)
    monkeypatch.setattr(fast, "TIGHT_ROW_SCALES", ())  # no re-solve from the spoiled run's basis
    lp = build_reduced_lp(40, 0.8, ("WH", "S"), "L1")
    _, used, run, optimality = fast.solve_proven(lp, "guided")
    assert calls == [True, False] and used == fast.CLARABEL_GUIDED and optimality["certified"]
    assert optimality["attempts"][0].startswith("guided: certificate did not close")
    assert run.guide == "clarabel"

    def clarabel_guided(lp, template=True, accept=None):
        calls.append(template)
        return real(lp, template=False)

    calls.clear()
    monkeypatch.setattr(fast, "run_guided", clarabel_guided)
    _, used, _, optimality = fast.solve_proven(lp, "guided")
    assert calls == [True] and used == "guided" and optimality["certified"]


def test_an_l2_templates_guide_point_is_loose_enough_to_seed_a_near_basis(monkeypatch):
    """LP with RH and CM, L2, n = 256, alpha = 0.91: the template at n0 = 160 is solved from the
    basis read off Clarabel's point at :data:`seed.TEMPLATE_CLARABEL_TOL`, in a few hundred dual
    simplex pivots (measured 326; at the 1e-14 a point proven as it is needs, 4,975) and to the
    optimum; an L0,d template keeps the proof's tolerance."""
    runs, real = [], backends.run_guided

    def recorded(lp, *args, **kwargs):
        runs.append((kwargs.get("tol"), real(lp, *args, **kwargs)))
        return runs[-1][1]

    monkeypatch.setattr(backends, "run_guided", recorded)
    lp = build_reduced_lp(256, 0.91, ("RH", "CM", "S"), "L2")
    guide, basic, active, n0 = seed.template_guide(lp)
    (tol, run0), = runs
    assert n0 == 160 and tol == seed.TEMPLATE_CLARABEL_TOL > backends.GUIDE_CLARABEL_TOL  # looser
    assert run0.status == "Optimal" and 0 < run0.pivots < 1500
    assert basic is not None and active is not None  # a vertex: its basis statuses are spread too
    assert seed.template_clarabel_tol(build_reduced_lp(20, 0.91, ("WH", "S"), "L0d:1").problem) == \
        backends.GUIDE_CLARABEL_TOL
