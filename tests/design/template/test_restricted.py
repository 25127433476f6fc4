"""The restricted LPs of a large-n template (countdp.design.template.restricted) against closed
forms, hand-solved LPs and the general design LP."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.optimality import design_lp_model
from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.template import restricted
from countdp.design.template.proof import prove_width
from countdp.design.template.restricted import (
    clarabel_point,
    copied_duals,
    dual_properties,
    simplex_vertex,
    solve_template,
    template_maps,
)
from countdp.mechanisms.closed_forms import geometric
from tests.helpers.design import general_optimum

W = 16
N0 = 3 * W + 4
WM = ("RM", "CM", "WH", "S")


def test_dual_properties_put_ch_in_place_of_cm():
    assert dual_properties(("RH", "CM", "S")) == ("RH", "CH", "S")
    assert dual_properties(("RM", "CH")) == ("RM", "CH")


@pytest.mark.parametrize("n", [N0, 64, 200])
def test_the_copy_map_reproduces_gm_from_gm_of_template_size(n):
    """GM (truncated geometric) is ``c_i alpha^|i-j|`` with ``c_i`` depending only on whether
    ``i`` is a boundary output: it lies in the restricted space, and E copies GM(n0) to GM(n)."""
    alpha = 0.8
    maps = template_maps(n, N0, W, alpha, ("CH", "RM"))
    i, j = np.indices((N0 + 1, N0 + 1))
    z = (geometric(N0, alpha) / alpha ** np.abs(i - j)).ravel()
    assert np.allclose(maps.E @ z, geometric(n, alpha).ravel(), rtol=0, atol=1e-15)
    assert np.array_equal(np.diff(maps.F.indptr), np.ones(maps.F.shape[0], int))  # one template row each
    assert maps.F.shape[1] == maps.r0 + N0 + 1


def test_plain_lp_solvers_agree_with_a_hand_solved_lp_and_reject_an_infeasible_one():
    """min x + y s.t. x + 2y >= 2, 3x + y >= 3, x, y >= 0: the vertex (4/5, 3/5), value 7/5, duals
    (2/5, 1/5) (solving the dual by hand).  With x + y <= 1 added it is infeasible."""
    A = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 1.0]]))
    lo, hi, zero, inf = np.array([2.0, 3.0]), np.full(2, np.inf), np.zeros(2), np.full(2, np.inf)
    x, dual = simplex_vertex(A, np.ones(2), zero, inf, lo, hi, 1e6, settings=DEFAULT_SETTINGS)
    assert np.allclose(x, [0.8, 0.6], atol=1e-12) and np.allclose(dual, [0.4, 0.2], atol=1e-12)
    assert np.allclose(clarabel_point(A, np.ones(2), zero, inf, lo, hi,
                                      settings=DEFAULT_SETTINGS), [0.8, 0.6], atol=1e-8)
    bad = sp.vstack([A, sp.csr_matrix(np.array([[1.0, 1.0]]))], format="csr")
    lo3, hi3 = np.array([2.0, 3.0, -np.inf]), np.array([np.inf, np.inf, 1.0])
    assert simplex_vertex(bad, np.ones(2), zero, inf, lo3, hi3, 1e6, settings=DEFAULT_SETTINGS) is None
    assert clarabel_point(bad, np.ones(2), zero, inf, lo3, hi3, settings=DEFAULT_SETTINGS) is None


def _template_dual_inputs(alpha=0.91, props=("RM", "CH")):
    m = 2 * N0
    return design_lp_model(m, alpha, props), template_maps(m, N0, W, alpha, props), m


def _zeros(y):
    return int(np.sum(y == 0.0))


def test_copied_duals_offer_the_vertex_then_the_point_and_the_point_first_on_wide_templates():
    """A simplex vertex is basic (most multipliers exactly 0), Clarabel's point is interior (few):
    on a narrow template the vertex comes first; above ``dual_simplex_rows`` the point."""
    small, maps, m = _template_dual_inputs()
    first, second = copied_duals(small, maps, m, W, settings=DEFAULT_SETTINGS)
    assert _zeros(first) > 2 * _zeros(second)
    first, second = copied_duals(small, maps, m, W, settings=SolverSettings.of(dual_simplex_rows=0))
    assert _zeros(second) > 2 * _zeros(first)


def test_the_restricted_duals_simplex_is_limited_by_work_then_clarabel_answers():
    """No simplex work allowed: HiGHS stops at its iteration limit and only Clarabel's point is
    offered; the design is still proven, at the general LP's optimum."""
    small, maps, m = _template_dual_inputs()
    tight = SolverSettings.of(dual_simplex_work=1.0)
    assert len(list(copied_duals(small, maps, m, W, settings=tight))) == 1
    n, alpha = 64, 0.91
    problem = DesignRequest.of(n, alpha, WM).problem
    result = prove_width(problem, W, context=make_context(tight))
    assert result["certified"], result
    assert abs(result["primal_objective"] - general_optimum(n, alpha, WM)) <= 1e-8


def test_restricted_primal_is_a_feasible_upper_bound_at_the_optimum():
    """A restriction of the primal: ``c^T E z`` is at least the LP optimum, and equal where the
    structure holds (WM, alpha = 0.91, n = 64)."""
    n, alpha = 64, 0.91
    problem = DesignRequest.of(n, alpha, WM).problem
    full = problem.lp()
    maps = template_maps(n, N0, W, alpha, dual_properties(WM))
    z, duals, info = solve_template(full, maps, n, alpha, WM, W, n, settings=DEFAULT_SETTINGS)
    assert info["primal_rows"] > 0 and duals is not None
    value = full.c @ (maps.E @ z)
    optimum = general_optimum(n, alpha, WM)
    assert value >= optimum - 1e-9 and abs(value - optimum) <= 1e-8
    _, duals, _ = solve_template(full, maps, n, alpha, WM, W, n, l0=False, settings=DEFAULT_SETTINGS)
    assert duals is None  # the other objectives take the support dual


def test_a_corrupted_dual_candidate_is_passed_over_for_the_next(monkeypatch):
    """Clarabel's point first (``dual_simplex_rows=0``), halved: its bound is half the optimum and
    the certificate does not close; HiGHS's vertex, offered next, proves the design."""
    n, alpha, props = 64, 0.91, ("CM",)
    calls = []

    def halved_dual(A, cost, col_lo, col_hi, lo, hi, *, settings):
        x = clarabel_point(A, cost, col_lo, col_hi, lo, hi, settings=settings)
        is_dual = bool(np.isneginf(col_lo).any())  # the column-sum multipliers are free
        calls.append("dual" if is_dual else "primal")
        return x / 2.0 if is_dual and x is not None else x

    monkeypatch.setattr(restricted, "clarabel_point", halved_dual)
    problem = DesignRequest.of(n, alpha, props).problem
    result = prove_width(problem, W, context=make_context(SolverSettings.of(dual_simplex_rows=0)))
    assert calls == ["primal", "dual"]
    assert result["certified"], result
    assert "CH in place of CM" in result["dual"]
    assert abs(result["primal_objective"] - general_optimum(n, alpha, props)) <= 1e-8
