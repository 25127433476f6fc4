"""The square corners with the chain dual (countdp.design.strategies.square_chain): when it applies,
that its answer is the general LP's optimum (solved independently, without it), that its
certificate fails on a broken dual or support, and that it proves L1 and L2 at n = 1024 where the
corners are wide.

At the sizes the suite can solve by the general path the corners are narrow, so those tests lower
the width it starts from (``square_chain_min_width``, a setting passed in)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.constraints import property_rows
from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality
from countdp.design.planner import REDUCED_MODEL_PLAN
from countdp.design.policy import relaxed_width, square_chain_widths
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.relaxed_template import LABEL as RELAXED
from countdp.design.strategies.square_chain import AFTER_TEMPLATE, LABEL, STRATEGY
from countdp.design.template.square_chain import dp_rows, prove_square_chain, relaxed_square_primal
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.values.objectives import parse_objective
from tests.helpers.design import general_optimum, reduced_design

WM = ("RM", "CM", "WH", "S")
NARROW = SolverSettings.of(square_chain_min_width=8)
"""Corners from 8 wide: the strategy at the sizes the general path solves in the suite."""
SMALL = SolverSettings.of(square_chain_min_width=8, template_min_n=20)
"""As :data:`NARROW`, and the large-n paths from n = 20: corners that fit only once in ``n``."""


@pytest.mark.parametrize(("request_args", "reason"), [
    ((1024, 0.95, WM, "L1"), None),
    ((1024, 0.91, WM, "L2"), None),
    ((1024, 0.95, ("CH", "WH", "S"), "L2"), None),
    ((1024, 0.9, WM, "L2"), None),  # 48 wide: RH+CM's relaxed template may not close there (CPU-dependent)
    ((1024, 0.88, WM, "L2"), "corners 37 wide, below 40"),
    ((1024, 0.97, WM, "L2"), None),  # the trimmed square: 9,832 unknowns where the full one has 59,050
    ((8192, 0.99, WM, "L2"), "above 25,000"),
    ((1024, 0.99, WM, "L1"), "corners of width 507 (63,517 unknowns"),  # they fit, with a middle of 9 columns
    ((1024, 0.99, WM, "L2"), "leaves no middle between both corners of width 965"),
    ((1024, 0.95, WM, "L0d:1"), "objective L0d not in"),
    ((1024, 0.95, WM, "L0"), "objective L0 not in"),
    ((1024, 0.95, ("CM", "F"), "L2"), "no F"),
    ((1024, 0.95, ("RH", "CM", "WH", "S"), "L1"), None),
])
def test_accepts_l1_and_l2_with_wide_corners_that_fit(request_args, reason):
    got = STRATEGY.accepts(DesignRequest.of(*request_args), DEFAULT_SETTINGS)
    assert (got is None) if reason is None else (reason in got), got


def test_it_comes_before_the_relaxed_template_with_rh_or_not():
    order = [s for s in REDUCED_MODEL_PLAN if s in (STRATEGY, AFTER_TEMPLATE) or s.name == RELAXED]
    assert [s.name for s in order] == [LABEL, RELAXED, AFTER_TEMPLATE.name] and order[0] is STRATEGY


@pytest.mark.parametrize(("alpha", "W", "narrow"), [(0.8, 18, True), (0.88, 37, True), (0.9, 48, False)])
def test_narrow_corners_come_after_the_relaxed_template(alpha, W, narrow):
    """Corners below the rule's least width (L2: ceil(2.1 ln(1 - alpha) / ln(alpha)) + 2 < 40) are tried once
    the relaxed template has not closed, wider ones before it, each with its widening, never both."""
    L2, widen = parse_objective("L2"), DEFAULT_SETTINGS.chains.relaxed_widening
    assert int(np.ceil(2.1 * np.log(1 - alpha) / np.log(alpha))) + 2 == W
    widths = (W, int(np.ceil(W * widen)))
    assert square_chain_widths(1024, alpha, L2, DEFAULT_SETTINGS)[0] == (() if narrow else widths)
    assert square_chain_widths(1024, alpha, L2, DEFAULT_SETTINGS, narrow=True)[0] == (widths if narrow else ())
    request = DesignRequest.of(1024, alpha, WM, "L2")
    assert (AFTER_TEMPLATE.accepts(request, DEFAULT_SETTINGS) is None) == narrow
    assert (STRATEGY.accepts(request, DEFAULT_SETTINGS) is None) == (not narrow)


def test_the_primal_is_certified_where_the_chains_vertex_is_another_one():
    """RH+CM+WH+S, L2, n = 1024, alpha = 0.88: the relaxed template's certificate does not close (gap 7.3e-7
    at widths 37 and 50), and at width 37 the square corners' primal is optimal, but the chain's vertex from
    its tight rows is another, 7.5e-7 worse.  The primal itself closes under the chain's dual."""
    problem = DesignProblem(1024, 0.88, ("RH", "CM", "WH", "S"), "L2")
    result = prove_square_chain(problem, 37, settings=DEFAULT_SETTINGS)
    assert result["certified"], result.get("gap")
    assert result["certified_point"] == "the primal (the chain's vertex did not close)"
    P, scale = result["matrix"], 1e-12
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-12) and P.min() >= 0
    assert (P[:, 1:] >= 0.88 * P[:, :-1] - scale).all() and (P[:, :-1] >= 0.88 * P[:, 1:] - scale).all()
    i, j = np.indices(P.shape)
    mean_l2 = ((i - j) ** 2 * P).sum() / P.shape[1]  # under a uniform prior
    assert abs(mean_l2 - result["upper_bound"]) <= 1e-9 * result["upper_bound"]


def test_the_width_rule():
    """``ceil(k ln(1 - alpha) / ln alpha) + 2``, k = 1.1 for L1 and 2.1 for L2, computed here in exact
    terms of the logarithms: L1 at 0.97: ceil(1.1 * 115.12) + 2 = 129; L2 at 0.95: ceil(2.1 * 58.40) + 2 = 125."""
    assert square_chain_widths(1024, 0.97, parse_objective("L1"), DEFAULT_SETTINGS)[0][0] == 129
    assert square_chain_widths(1024, 0.95, parse_objective("L2"), DEFAULT_SETTINGS)[0][0] == 125


def test_dp_rows_are_the_two_directions_of_every_adjacent_pair():
    """An LP with RM and CH at n = 6: 2 N (N - 1) DP rows (each output row's N - 1 adjacent pairs, both
    directions), none of RM's (coefficients 1 and -1) or CH's (two rows of one column)."""
    n, alpha = 6, 0.7
    full = DesignProblem(n, alpha, ("RM", "CH"), "L1").lp()
    mask = dp_rows(full.A_ub, n + 1, alpha)
    assert mask.sum() == 2 * (n + 1) * n
    A = full.A_ub.tocsr()
    for r in np.flatnonzero(mask):
        cols, vals = A.indices[A.indptr[r]: A.indptr[r + 1]], A.data[A.indptr[r]: A.indptr[r + 1]]
        assert len({c // (n + 1) for c in cols}) == 1 and abs(np.diff(np.sort(cols % (n + 1)))[0]) == 1
        assert sorted(np.round(vals, 12)) == [-alpha, 1.0]


@pytest.mark.parametrize(("props", "objective", "alpha"), [
    (WM, "L1", 0.8),
    (("CH", "WH", "S"), "L2", 0.75),
    (("CM",), "L1", 0.8),
])
def test_its_answer_is_the_general_optimum(props, objective, alpha):
    n = 160
    answer = reduced_design(n, alpha, props, objective, settings=NARROW)
    assert answer.method == LABEL and answer.status == "optimal", answer.extra["attempted"]
    optimality = answer.extra["optimality"]
    assert optimality["certified"] and is_alpha_dp(certify(answer.matrix, alpha)[0], alpha)
    expected = general_optimum(n, alpha, props, objective)  # the general path, without any template
    assert abs(optimality["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)


@pytest.mark.parametrize(("n", "props", "objective", "alpha"), [
    (24, WM, "L1", 0.8),  # W = 10: 2 W + 4 = n, a middle of three columns
    (40, WM, "L1", 0.8),  # below 4 (W + 1) = 44, which the corners needed before
    (50, ("CH", "WH", "S"), "L2", 0.75),  # W = 13
    (60, ("RH", "CM", "WH", "S"), "L2", 0.8),  # W = 18
])
def test_corners_that_fit_once_with_a_middle_are_proven(n, props, objective, alpha):
    """Both corners need only fit in ``n`` with a middle of three columns (``2 W + 4 <= n``), not twice:
    the answer is the general LP's optimum, solved without any template; one column less is refused."""
    widths, why = square_chain_widths(n, alpha, parse_objective(objective), SMALL)
    assert widths, why
    W = widths[0]
    assert 2 * W + 4 <= n < 4 * (W + 1)
    answer = reduced_design(n, alpha, props, objective, settings=SMALL)
    assert answer.method == LABEL and answer.status == "optimal", answer.extra["attempted"]
    optimality = answer.extra["optimality"]
    assert optimality["certified"] and is_alpha_dp(certify(answer.matrix, alpha)[0], alpha)
    expected = general_optimum(n, alpha, props, objective)
    assert abs(optimality["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)
    too_small = STRATEGY.accepts(DesignRequest.of(2 * W + 3, alpha, props, objective), SMALL)
    assert f"no middle between both corners of width {W}" in too_small


def test_the_certificate_fails_on_a_broken_dual_or_support():
    """The dual is checked on the target's full LP: a perturbed copy does not close; nor do corners too
    narrow for the optimum (W = 3: the square-corner primal is not optimal, and no dual proves it)."""
    alpha = 0.8
    target = DesignProblem(160, alpha, WM, "L1")
    W = relaxed_width(alpha, target.objective, DEFAULT_SETTINGS)
    result = prove_square_chain(target, W, settings=NARROW)
    assert result["certified"], result.get("reason")
    full, u, v = target.lp(), result["u"], result["v"]
    P = certify(result["matrix"], alpha)[0]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    broken = u.copy()
    broken[np.flatnonzero(u > 0)[::7]] *= 1.001
    assert not check_optimality(full, P.ravel(), broken, v)["certified"]
    narrow = prove_square_chain(target, 3, settings=NARROW)
    assert not narrow["certified"]
    assert narrow.get("reason") or narrow["gap"] > 1e3 * narrow["gap_tolerance_rel"] * narrow["upper_bound"]


def test_l2_near_ten_elevenths_at_n_1024_is_proven_by_the_square_corners():
    """WM, L2, alpha = 10/11, n = 1024: the relaxed template needs a 169-wide vertex (53 s); the square
    corners (55 wide, 3,137 unknowns) and the chain dual prove it, the DP certificate on the matrix."""
    alpha = 10 / 11
    answer = reduced_design(1024, alpha, WM, "L2")
    assert answer.method == LABEL and answer.extra["optimality"]["certified"]
    assert answer.extra["square_chain"]["width"] == 55  # ceil(2.1 ln(1/11) / ln(10/11)) + 2
    assert is_alpha_dp(certify(answer.matrix, alpha)[0], alpha)


def test_where_the_relaxed_corners_break_cm_they_are_solved_with_cm_kept():
    """RH+CM+WH+S, L1, alpha 0.95, n = 300 (W = 67): the relaxed LP's square corners (CM as CH) break CM
    near the corner, column 28, by more than 1e-7 of the largest entry, so no dual of the relaxation
    proves the target.  With the relaxation tried first (``cm_kept_with`` empty) the square corners are
    then solved with CM kept; by default (CM with RH) they are solved so at once.  Both are proven on
    the full LP at the same optimum, and the independent weak-duality check agrees (and refuses the
    dual perturbed)."""
    alpha, W = 0.95, 67
    target = DesignProblem(300, alpha, ("RH", "CM", "WH", "S"), "L1")
    trim = DEFAULT_SETTINGS.chains.square_chain_trim
    problem, _, x, _ = relaxed_square_primal(target, W, DEFAULT_SETTINGS, True, trim)  # the first primal tried
    assert "CM" not in problem.properties
    assert property_rows("CM", 300).violation(x) > 1e-7 * x.max()
    relaxed_first = prove_square_chain(target, W, settings=DEFAULT_SETTINGS.with_values(cm_kept_with=()))
    assert relaxed_first["certified"], relaxed_first.get("reason")
    assert relaxed_first["primal"] == "with CM kept (the relaxed primal broke CM)"
    result = prove_square_chain(target, W, settings=DEFAULT_SETTINGS)
    assert result["certified"] and result["primal"] == "with CM kept (CM with RH: the relaxation is skipped)"
    assert abs(result["primal_objective"] - relaxed_first["primal_objective"]) <= 1e-9 * result["upper_bound"]
    assert "trim" in result  # the trimmed square, with CM kept, is proven
    P = certify(result["matrix"], alpha)[0]
    full, u, v = target.lp(), result["u"], result["v"]
    assert property_rows("CM", 300).violation(P.ravel()) <= 1e-9
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    broken = u.copy()
    broken[np.flatnonzero(u > 0)[::7]] *= 1.001
    assert not check_optimality(full, P.ravel(), broken, v)["certified"]


def test_the_completion_adds_the_coupling_rows_the_chain_of_rh_and_cm_needs():
    """RH+CM+WH+S, L2, alpha 0.9, n = 160, corners 40 wide (CM kept): the DP rows tight at the primal
    leave the chain system short of coupling rows.  The completion LP (HiGHS's dual simplex, the exact
    vertex of its basis) adds some of the tight RH and CM rows, and the certificate closes on the full
    LP at the general path's optimum, solved without any template.  Without the completion
    (``completion_tol`` infinite) no vertex is singled out and nothing is proven.  This holds whichever
    degenerate vertex a CPU's simplex finds: the support is read off the primal's tight rows."""
    alpha, n, W = 0.9, 160, 40
    target = DesignProblem(n, alpha, ("RH", "CM", "WH", "S"), "L2")
    result = prove_square_chain(target, W, settings=DEFAULT_SETTINGS)
    assert result["certified"], result.get("reason")
    expected = general_optimum(n, alpha, target.properties, "L2")
    assert abs(result["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)
    assert is_alpha_dp(certify(result["matrix"], alpha)[0], alpha)
    short = prove_square_chain(target, W, settings=DEFAULT_SETTINGS.with_values(completion_tol=np.inf))
    assert not short["certified"] and short["gap"] > 1e3 * short["gap_tolerance_rel"] * short["upper_bound"]


def test_where_the_support_singles_out_no_vertex_the_primal_itself_is_certified():
    """Every property but F (RH, RM, CH, CM, WH, S), L2, alpha 0.8, n = 160, corners 18 wide: the completed
    support leaves more path conditions than unknowns, so it singles out no vertex.  The least-squares
    dual with the square-corner primal itself (a HiGHS vertex) closes on the full LP, at the general
    path's optimum, solved without any template.  With corners 10 wide that primal is not optimal, and
    the same route (its own point, the least-squares dual) leaves the gap open."""
    alpha, n, props = 0.8, 160, ("RH", "RM", "CH", "CM", "WH", "S")
    target = DesignProblem(n, alpha, props, "L2")
    result = prove_square_chain(target, 18, settings=DEFAULT_SETTINGS)
    assert result["certified"], result.get("reason")
    assert result["certified_point"] == "the primal (the support singles out no vertex)"
    expected = general_optimum(n, alpha, props, "L2")
    assert abs(result["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)
    assert is_alpha_dp(certify(result["matrix"], alpha)[0], alpha)
    narrow = prove_square_chain(target, 10, settings=DEFAULT_SETTINGS)
    assert not narrow["certified"] and narrow["certified_point"] == result["certified_point"]
    assert narrow["gap"] > 1e3 * narrow["gap_tolerance_rel"] * narrow["upper_bound"]


def test_each_primal_solver_is_proven_alone_and_names_itself():
    """HiGHS's vertex and Clarabel's point, each alone (``square_chain_primals``), prove the same
    optimum at n = 160 through the planner, and the answer names the solver that found its primal; an
    unknown name is refused before anything is solved."""
    alpha = 0.8
    found = {}
    for how, solver in [("vertex", "HIGHS"), ("clarabel", "CLARABEL")]:
        answer = reduced_design(160, alpha, WM, "L1", settings=NARROW.with_values(square_chain_primals=(how,)))
        assert answer.method == LABEL and answer.status == "optimal", answer.extra["attempted"]
        assert answer.solver == solver
        found[how] = answer.extra["optimality"]["primal_objective"]
    assert abs(found["vertex"] - found["clarabel"]) <= 1e-9 * max(1.0, found["vertex"])
    target = DesignProblem(160, alpha, WM, "L1")
    W = relaxed_width(alpha, target.objective, DEFAULT_SETTINGS)
    with pytest.raises(ValueError, match="unknown square-corner primal 'simplex'"):
        prove_square_chain(target, W, settings=NARROW.with_values(square_chain_primals=("simplex",)))
