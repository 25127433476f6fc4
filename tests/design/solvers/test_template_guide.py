"""The template guide: the optimal vertex at a smaller n, spread out, seeds the simplex at n."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.designer import design_lp
from countdp.design.lp_solve import solve_proven
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.solved import Solved
from countdp.design.solvers.template_guide import reduced_rows, spread, template_guide, template_rows
from countdp.mechanisms.closed_forms import geometric

LOW = SolverSettings.of(template_min_n=60)
"""Templates from n = 60: at n = 80, alpha = 0.5 or 0.62, the corner width is 16 (n0 = 52)."""


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
    run0 = Solved(y0, np.zeros(small.A.shape[0]), small.cost.copy(), "GM", 0.0, 0.0)
    guide, basic, active = spread(lp, small, run0, W)
    N = n + 1
    assert basic is None and active is None  # no basis given, none copied
    np.testing.assert_allclose((lp.expand @ guide.y)[: N * N].reshape(N, N), geometric(n, alpha), rtol=1e-12,
                               atol=1e-300)


@pytest.mark.parametrize("props", [("RM", "CM", "WH", "S"), ("F", "S"), ("CH", "RM")])
def test_reduced_rows_send_each_origin_to_its_row(props):
    """Every reduced row comes from its origin row of the full model; the hash matching must send
    that origin back to it, and every matched full row must have the same image."""
    lp = build_reduced_lp(30, 0.7, props, "L1")
    rows = reduced_rows(lp)
    assert np.array_equal(rows[lp.row_origin], np.arange(lp.A.shape[0]))
    full = lp.problem.lp()
    images = sp.csr_matrix(sp.vstack([full.A_ub, full.A_eq]) @ lp.expand).toarray()
    matched = np.flatnonzero(rows >= 0)
    np.testing.assert_allclose(images[matched], lp.A.toarray()[rows[matched]], rtol=0, atol=1e-15)


def test_template_rows_copy_rows_of_the_same_kind():
    """A reduced row at n and the template row it copies have the same number of entries (a DP
    row two, a column sum N and N0), except the column sums, whose lengths are the sizes."""
    W, n = 12, 60
    lp, small = build_reduced_lp(n, 0.7, ("RM", "WH"), "L1"), build_reduced_lp(3 * W + 4, 0.7, ("RM", "WH"), "L1")
    rows0 = template_rows(lp, small, W)
    full0 = small.problem.lp()
    M0 = sp.vstack([full0.A_ub, full0.A_eq], format="csr")
    full = lp.problem.lp()
    M = sp.vstack([full.A_ub, full.A_eq], format="csr")
    sums = lp.row_origin >= full.b_ub.size
    assert np.all(rows0 >= 0)
    assert np.array_equal(np.diff(M.indptr)[lp.row_origin][~sums], np.diff(M0.indptr)[rows0][~sums])
    assert np.all(np.diff(M0.indptr)[rows0][sums] == 3 * W + 5)


def test_no_template_where_the_policy_says_none():
    """Below ``template_min_n``, or alpha too near 1 for a template of at most 0.7 n: no guide."""
    assert template_guide(build_reduced_lp(80, 0.5, ("WH", "S"), "L1"), settings=DEFAULT_SETTINGS) is None
    assert template_guide(build_reduced_lp(80, 0.99, ("WH", "S"), "L1"), settings=LOW) is None


@pytest.mark.parametrize("props, objective, alpha, plain", [(("RM", "CM", "WH", "S"), "L1", 0.5, False),
                                                            (("F", "S"), "L1", 0.5, True)])
def test_template_guided_design_is_the_optimum(props, objective, alpha, plain):
    """With templates from n = 60, the design at n = 52 guides the simplex at n = 80; the answer is
    proven and its value is the plain cvxpy model's (``plain``), or the cold simplex's."""
    n = 80
    lp = build_reduced_lp(n, alpha, props, objective)
    _, used, run, optimality = solve_proven(lp, "guided", settings=LOW)
    assert used == "guided" and optimality["certified"] and optimality["guide"] == "the design at n = 52"
    if plain:
        reference = design_lp(n, alpha, props, objective, backend="cvxpy").solver_objective
    else:
        reference = solve_proven(build_reduced_lp(n, alpha, props, objective), "simplex",
                                 settings=DEFAULT_SETTINGS)[2].objective
    assert run.objective == pytest.approx(reference, rel=1e-7)


def test_a_template_that_is_not_solved_says_so():
    """With no simplex work for the template's own solve, it is not solved: ``RuntimeError`` naming
    the template, which the guided run records after Clarabel's guide."""
    lp = build_reduced_lp(80, 0.5, ("WH", "S"), "L1")
    starved = SolverSettings.of(template_min_n=60, template_simplex_work=(0.0, 0.0))
    with pytest.raises(RuntimeError, match="the design at n = 52 was not solved"):
        template_guide(lp, settings=starved)
    run = run_guided(lp, guide=partial(template_guide, settings=starved), settings=starved)
    assert run.guide.startswith("clarabel (the design at n = 52 was not solved")
