"""The best design within the bound (countdp.design.strategies.square_bound): under a time limit, where
no fast path proves the request and the general path does not fit the memory bound, the relaxed
LP's square corners are the design.

Checked against independent facts: the design is exactly DP (its released integer weights) and
holds every property; its objective is at least the optimum (found by the unreduced HiGHS model,
no reduction, template or certificate) and within a small fraction of it, where the closed-form
fallback the engine gave before is UM; the gap it states is a true one (lower bound at most the
optimum).  At the suite's sizes the general path fits the default bound, so the tests lower the
bound to just below its estimate, and the large-n size from which the strategy applies."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.anytime import mixed_with_um
from countdp.design.constraints import property_rows
from countdp.design.designer import design_lp
from countdp.design.highs_model import DesignModel
from countdp.design.memory import MemoryBoundError, general_path_bytes
from countdp.design.model import DesignProblem
from countdp.design.optimality import PRIMAL_TOL
from countdp.design.planner import GENERAL_PATH, REDUCED_MODEL_PLAN
from countdp.design.policy import square_bound_width
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.square_bound import LABEL, STRATEGY
from countdp.design.template.square_chain import relaxed_square_primal, square_design
from countdp.design.watch import watching
from countdp.privacy.exact import exact_dp_check
from countdp.values.objectives import objective_value, parse_objective

WM = ("RM", "CM", "WH", "S")
N_SMALL = 80
BOUNDED = SolverSettings.of(template_min_n=60, memory_bound=general_path_bytes(N_SMALL) - 1,
                            square_chain_objectives=())
"""The general path just above the bound at n = 80, and the large-n strategies from n = 60, but not the
square corners' proof (at n = 80 its narrow corners, after the relaxed template, prove L1 and L2)."""


def optimum(n: int, alpha: float, props, objective: str) -> float:
    model = DesignModel(n, alpha, props, objective)
    return model.minimise(model.cost("sum", None))[1]


@pytest.mark.parametrize(("objective", "within", "rule"), [("L1", 1e-3, 27), ("L2", 1e-2, 48)])
def test_beyond_the_bound_the_square_corners_are_the_design_with_a_true_gap(objective, within, rule):
    n, alpha = N_SMALL, 0.9
    design = design_lp(n, "0.9", WM, objective, settings=BOUNDED, time_limit=600)
    assert design.status == "not proven optimal" and design.method == LABEL
    assert "memory bound" in design.extra["stopped"]["reason"]
    released = design.released
    assert exact_dp_check(released.weights, design.alpha_exact, released.K).holds
    x = design.matrix.ravel()
    for prop in WM:
        assert property_rows(prop, n).violation(x) <= 1e-9, prop
    best = optimum(n, alpha, WM, objective)
    proof = design.extra["optimality"]
    value = objective_value(design.matrix, objective)
    assert proof["upper_bound"] == pytest.approx(value, rel=1e-12)
    assert proof["lower_bound"] <= best + 1e-9 <= value + 2e-9
    assert value <= best * (1 + within)  # near the optimum ...
    um = objective_value(np.full((n + 1, n + 1), 1.0 / (n + 1)), objective)
    assert value < best + 0.05 * (um - best)  # ... where UM, the fallback that holds every row, is far off
    assert design.extra["square_bound"]["width"] == square_bound_width(n, alpha, parse_objective(objective),
                                                                       BOUNDED)[0] == min(rule, (n - 4) // 2)


def test_without_a_time_limit_an_unproven_design_is_not_returned():
    with pytest.raises(MemoryBoundError):
        design_lp(N_SMALL, "0.9", WM, "L2", settings=BOUNDED)


@pytest.mark.parametrize(("n", "settings", "limit", "reason"), [
    (N_SMALL, BOUNDED, 60.0, None),
    (N_SMALL, BOUNDED, None, "no time limit"),
    (N_SMALL, SolverSettings.of(template_min_n=60), 60.0, "fits the memory bound"),
    (40, BOUNDED, 60.0, "n below 60"),
])
def test_accepts_only_under_a_time_limit_beyond_the_bound(n, settings, limit, reason):
    request = DesignRequest.of(n, 0.9, WM, "L2")
    with watching(limit, DEFAULT_SETTINGS.solver.progress_seconds):
        got = STRATEGY.accepts(request, settings)
    assert (got is None) if reason is None else (reason in got), got


def test_it_comes_just_before_the_general_path():
    names = [s.name for s in REDUCED_MODEL_PLAN]
    assert names.index(LABEL) + 1 == names.index(GENERAL_PATH[0].name)


def test_the_width_is_the_widest_in_budget_and_no_wider_than_the_rule():
    """(W + 1)^2 + 1 <= 25,000 gives W = 157; n = 1024 allows 510 (2 W + 4 <= n); L2's rule at 0.97 asks 242 and L1's at
    0.9 asks ceil(1.1 * 21.85) + 2 = 27; L0d takes the relaxed template's ceil(1.5 / (1 - alpha)) + 2:
    52 at 0.97 (1.5 / 0.03 is 49.99... in floats), 152 at 0.99, 302 (so 157) at 0.995."""
    def width(alpha, objective, n=1024):
        return square_bound_width(n, alpha, parse_objective(objective), DEFAULT_SETTINGS)

    assert width(0.97, "L2") == (157, None)
    assert width(0.9, "L1") == (27, None)
    assert width(0.97, "L0d:1") == (52, None)
    assert width(0.99, "L0d:1") == (152, None)
    assert width(0.995, "L0d:1") == (157, None)
    assert width(0.99, "L1", n=200) == (98, None)  # (200 - 4) // 2: corners 99 wide, a middle of 3 columns
    assert width(0.99, "L1", n=7) == (1, None)
    assert width(0.9, "L1", n=5)[0] == 0 and "no room" in width(0.9, "L1", n=5)[1]


def test_rows_broken_by_rounding_alone_do_not_turn_a_design_into_um():
    """The optimum at n = 20 with mass moved between the two entries of a tight CM row: by 1e-15
    (rounding) the design is kept as it is; by 1e-6 it is UM (UM holds CM with equality, so no
    mixture mends it): the check can fail."""
    n, alpha = 20, 0.9
    problem = DesignProblem(n, alpha, WM, "L1")
    model = DesignModel(n, alpha, WM, "L1")
    x = np.asarray(model.minimise(model.cost("sum", None))[0][: problem.size], float)
    cm = property_rows("CM", n)
    tight = np.flatnonzero((np.abs(cm.values(x) - cm.rhs) <= 1e-13) & (cm.minus >= 0))
    a, b = cm.plus[tight[0]], cm.minus[tight[0]]  # x[a] >= x[b], two entries of one column, equal here
    lp = problem.lp()
    assert (lp.A_ub @ x - lp.b_ub).min() >= -PRIMAL_TOL / 1000  # the optimum itself breaks no row beyond rounding
    assert a % (n + 1) == b % (n + 1)
    for delta, kept in [(1e-15, True), (1e-6, False)]:
        moved = x.copy()
        moved[a] -= delta
        moved[b] += delta
        Q = moved.reshape(n + 1, n + 1)
        assert cm.violation(moved) > 0
        mixed = mixed_with_um(problem, Q)
        assert (mixed is Q) if kept else np.allclose(mixed, 1.0 / (n + 1)), delta
    assert 1e-15 < PRIMAL_TOL / 100 < 1e-6


def test_the_design_holds_cm_where_the_relaxed_corners_break_it():
    """RH+CM+WH+S, L1, alpha 0.95, n = 300, W = 67: the relaxed corners (CM as CH) break CM by more than
    1e-7 of their largest entry, which no UM mixture short of UM mends; the design offered is the
    square corners with CM kept, which hold CM."""
    target = DesignProblem(300, 0.95, ("RH", "CM", "WH", "S"), "L1")
    _, _, relaxed, _ = relaxed_square_primal(target, 67, DEFAULT_SETTINGS, vertex=True)
    assert property_rows("CM", 300).violation(relaxed) > 1e-7 * relaxed.max()
    problem, _, x, _ = square_design(target, 67, DEFAULT_SETTINGS)
    assert "CM" in problem.properties
    assert property_rows("CM", 300).violation(x) <= 1e-12
    assert not np.allclose(mixed_with_um(target, x.reshape(301, 301)), 1 / 301)


def test_the_fast_paths_share_the_limit_and_leave_the_rest_to_the_design_within_the_bound():
    """With ``fast_path_share`` near 0 every strategy before this one is stopped at once, and this one
    still answers within the rest of the limit; at share 1 they run as without it.  Where the general
    path fits the bound, no share is taken: the same request is proven."""
    names = [s.name for s in REDUCED_MODEL_PLAN]
    quick = design_lp(N_SMALL, "0.9", WM, "L2", settings=BOUNDED.with_values(fast_path_share=1e-9), time_limit=600)
    assert quick.method == LABEL and quick.status == "not proven optimal"
    stopped = [a for a in quick.extra["attempted"] if "share of the time limit" in a.get("reason", "")]
    assert stopped and all(names.index(a["strategy"]) < names.index(LABEL) for a in stopped)
    assert [a["strategy"] for a in stopped][0] == names[0]
    whole = design_lp(N_SMALL, "0.9", WM, "L2", settings=BOUNDED.with_values(fast_path_share=1.0), time_limit=600)
    assert not any("share" in a.get("reason", "") for a in whole.extra["attempted"])
    assert whole.objective_value == pytest.approx(quick.objective_value, rel=1e-12)
    fits = SolverSettings.of(template_min_n=60, fast_path_share=1e-9)
    assert design_lp(N_SMALL, "0.9", WM, "L2", settings=fits, time_limit=600).status == "optimal"
