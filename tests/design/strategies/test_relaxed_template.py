"""The relaxed large-n template strategy (countdp.design.strategies.relaxed_template): when it
applies, that the planner picks it, that its answer is the general LP's optimum (solved
independently, without it), and that its certificate fails on a broken primal or dual."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.model import DesignProblem
from countdp.design.optimality import PRIMAL_TOL, check_optimality
from countdp.design.planner import make_context
from countdp.design.policy import relaxed_width
from countdp.design.polish import full_dual
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.relaxed_template import LABEL, STRATEGY
from countdp.design.template.proof import certify_expansion
from countdp.design.template.relaxed_proof import (
    breaks_relaxed_cm,
    chain_dual,
    prove_relaxed_width,
    relaxed_problem,
    restricted_point,
    sized,
    template_solution,
    template_support,
    template_vertex,
)
from countdp.design.template.restricted import template_maps
from countdp.design.template.square_chain import dp_rows
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.values.objectives import parse_objective
from tests.helpers.design import general_optimum, reduced_design

WM = ("RM", "CM", "WH", "S")


@pytest.mark.parametrize(("request_args", "options", "reason"), [
    ((256, 0.9, WM, "L1"), {}, None),
    ((256, 0.9, ("CH",), "L0d:1"), {}, None),
    ((192, 0.9, ("RH", "CH"), "L2"), {}, "below twice the template of width 48"),
    ((256, 0.9, WM, "L0"), {}, "objective L0 not in"),
    ((1024, 0.95, WM, "L1"), {}, None),
    ((1024, 0.97, WM, "L1"), {}, "(442 wide, alpha = 0.97) is wider than 240"),
    ((1024, 0.91, WM, "L2"), {}, None),
    ((1024, 0.93, WM, "L2"), {}, "(241 wide, alpha = 0.93) is wider than 180"),
    ((256, 0.9, WM, "L1"), {"method": "simplex"}, "method simplex"),
    ((256, 0.9, WM, "L1"), {"use_closed_forms": False}, "switched off"),
    ((256, 0.9, ("CM", "F"), "L1"), {}, "no F"),
    ((256, 0.9, WM, "L1", None, "max"), {}, "uniform-prior sum"),
])
def test_accepts_the_uniform_sums_with_cm_or_ch_whose_template_fits_twice(request_args, options, reason):
    got = STRATEGY.accepts(DesignRequest.of(*request_args, **options), DEFAULT_SETTINGS)
    assert (got is None) if reason is None else (reason in got)


def test_the_widest_template_is_a_setting():
    request = DesignRequest.of(256, 0.9, WM, "L1")  # W = 30: a template 94 wide
    assert STRATEGY.accepts(request, DEFAULT_SETTINGS) is None
    assert "wider than 90" in STRATEGY.accepts(request, SolverSettings.of(relaxed_max_template_n=(("L1", 90),)))


def test_the_relaxation_replaces_cm_by_ch_and_drops_s_and_wh():
    """Each CH row is a sum of CM rows, and dropping rows only relaxes: the relaxed LP's optimum is
    at most the target's, whatever the certificate later finds."""
    assert set(relaxed_problem(DesignProblem(20, 0.5, WM, "L1")).properties) == {"RM", "CH"}
    assert set(relaxed_problem(DesignProblem(20, 0.5, ("RH", "CH", "S"), "L2")).properties) == {"RH", "CH"}


def test_width_rule_covers_the_measured_corners():
    """The optimal corners measured on the general LP: L1 25 wide and L2 40 wide at alpha = 0.9, L0d:1
    14; the rule's widths are at least these."""
    for objective, corner in (("L1", 25), ("L2", 40), ("L0d:1", 14)):
        assert relaxed_width(0.9, parse_objective(objective), DEFAULT_SETTINGS) >= corner


@pytest.mark.parametrize(("props", "objective", "alpha"), [
    (WM, "L1", 0.8),
    (("CM",), "L2", 0.7),
    (("RH", "CH"), "L0d:1", 0.8),
    (("RH", "CM", "WH", "S"), "L0d:1", 0.9),  # the relaxation's point breaks CM: the point on the target's rows answers
])
def test_the_planner_picks_it_and_it_answers_the_general_optimum(props, objective, alpha):
    n = 160
    answer = reduced_design(n, alpha, props, objective)
    assert answer.method == LABEL and answer.status == "optimal"
    assert [a["strategy"] for a in answer.extra["attempted"] if a["outcome"] == "proven"] == [LABEL]
    optimality = answer.extra["optimality"]
    assert optimality["certified"] and is_alpha_dp(certify(answer.matrix, alpha)[0], alpha)
    expected = general_optimum(n, alpha, props, objective)  # the general path, without the template
    assert abs(optimality["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)


def test_a_point_that_breaks_cm_gives_way_to_the_template_point_on_the_target_rows():
    """RH+CM under L0,d at alpha = 0.9: the relaxation (CH) has the LP's optimal value but a larger
    optimal face, and its point breaks CM; the template's point on the target's rows (CM and WH kept,
    averaged with its mirror for S), proven by the same dual, answers instead (its CM rows are
    checked by the certificate on the full LP).  The template with CM kept is not solved: the
    relaxation's certificate closed.  The relaxation's restricted point breaks CM (read here
    column by column, apart from the rule's own rows), so the certificate that would fail on it is
    not run."""
    target = DesignProblem(160, 0.9, ("RH", "CM", "WH", "S"), "L0d:1")
    W = relaxed_width(0.9, target.objective, DEFAULT_SETTINGS)
    result = prove_relaxed_width(target, W, context=make_context(DEFAULT_SETTINGS))
    assert result["certified"] and "on the target's rows" in result["primal"]
    assert result["template_properties"] == "RH+CH" and "relaxed attempt" not in result["seconds"]
    assert set(result["seconds"]) == {"template dual", "full dual", "template primal", "point on the target's rows"}
    P = result["matrix"]
    below = np.tril(np.diff(P, axis=0))  # P[i+1, j] - P[i, j] for i >= j: each column falls below its diagonal
    assert below.max() <= result["primal_tolerance"]
    problem = relaxed_problem(target)
    maps = template_maps(160, 3 * W + 4, W, 0.9, problem.properties)
    skipped = restricted_point(target, W, problem, problem.lp(), maps, DEFAULT_SETTINGS).reshape(161, 161)
    assert cm_violation(skipped) > PRIMAL_TOL and breaks_relaxed_cm(target, problem, skipped)


def cm_violation(P: np.ndarray) -> float:
    """The largest amount by which a column of ``P`` rises away from its diagonal (CM's rows)."""
    step = np.diff(P, axis=0)  # step[i, j] = P[i + 1, j] - P[i, j]
    i, j = np.indices(step.shape)
    return float(max(step[i >= j].max(initial=0.0), (-step[i < j]).max(initial=0.0)))


def test_the_rule_that_sends_a_point_to_the_target_rows_reads_cm():
    """:func:`breaks_relaxed_cm` on hand-made matrices: a truncated geometric matrix holds CM; one
    entry below its diagonal raised above the entry above it breaks CM; a target without CM, or a
    relaxation that kept CM, never takes the rule."""
    target = DesignProblem(20, 0.8, ("RH", "CM", "WH", "S"), "L0d:1")
    relaxed, kept = relaxed_problem(target), sized(target, 20, ("RH", "CM"))
    gm = geometric(20, 0.8).T  # column j: input j's distribution over the outputs
    bumped = gm.copy()
    bumped[12, 5] = bumped[11, 5] + 1e-6
    assert cm_violation(gm) == 0.0 and cm_violation(bumped) > PRIMAL_TOL
    assert not breaks_relaxed_cm(target, relaxed, gm)
    assert breaks_relaxed_cm(target, relaxed, bumped)
    assert not breaks_relaxed_cm(target, kept, bumped)
    assert not breaks_relaxed_cm(sized(target, 20, ("RH", "CH")), relaxed, bumped)


def test_where_the_relaxation_is_strictly_better_the_template_keeps_cm():
    """RH+CM under L2 at alpha = 0.87: the LP with CH for CM has a strictly lower optimum (two
    general solves show it), so no dual of it proves the target.  The template is then solved with
    CM kept, and the certificate closes on the general LP's optimum; told never to keep CM, the
    path does not close."""
    n, alpha, props = 210, 0.87, ("RH", "CM", "WH", "S")
    target = DesignProblem(n, alpha, props, "L2")
    expected = general_optimum(n, alpha, props, "L2")
    relaxed = general_optimum(n, alpha, ("RH", "CH"), "L2")
    assert expected - relaxed > 1e-7 * expected
    result = prove_relaxed_width(target, relaxed_width(alpha, target.objective, DEFAULT_SETTINGS),
                                 context=make_context(DEFAULT_SETTINGS))
    assert result["certified"] and result["template_properties"] == "RH+CM"
    assert "relaxed attempt" in result["seconds"]  # the relaxation was tried first, and did not close
    assert abs(result["primal_objective"] - expected) <= 1e-8 * expected
    assert is_alpha_dp(certify(result["matrix"], alpha)[0], alpha)
    relaxing = make_context(SolverSettings.of(relaxation_gap_tol=np.inf))
    assert not prove_relaxed_width(target, result["width"], context=relaxing)["certified"]
    answer = reduced_design(n, alpha, props, "L2")
    assert answer.method == LABEL and answer.extra["optimality"]["certified"]


def test_a_copied_support_short_of_any_coupling_row_is_completed():
    """WM under L1 at alpha = 0.8, n = 160: the relaxed template's copied support closes as it is.  With
    any one of its coupling rows (RM, CH) taken out, the chain system is short: no vertex is singled
    out, and without the completion it stays so.  The completion restores a support from the rows
    tight at the template's vertex, and the certificate on the target's full LP closes on the dual
    and vertex it gives, for every row taken out.  For some rows the completion LP's basic solution
    spreads the residual over two new rows and leaves one of the support's own rows at zero; unless
    that row is dropped, the support has a coupling row too many and no dual follows."""
    target = DesignProblem(160, 0.8, WM, "L1")
    W = relaxed_width(0.8, target.objective, DEFAULT_SETTINGS)
    problem, N = relaxed_problem(target), target.N
    vertex = template_solution(problem, W, make_context(DEFAULT_SETTINGS))
    full = problem.lp()
    found = template_support(full, template_maps(target.n, 3 * W + 4, W, 0.8, problem.properties), problem, W,
                             vertex, DEFAULT_SETTINGS)

    def certified(support, settings=DEFAULT_SETTINGS) -> bool:
        y, x = chain_dual(full, support, found.used, settings, found.candidates)
        return x is not None and certify_expansion(target, x.reshape(N, N), y, problem.properties, {})["certified"]

    assert certified(found.support)
    coupling = found.support[~dp_rows(full.A_ub, N, 0.8)[found.support]]
    assert coupling.size >= 20
    short = found.support[found.support != coupling[0]]
    assert chain_dual(full, short, found.used, SolverSettings.of(completion_tol=np.inf), found.candidates)[1] is None
    assert [row for row in coupling if not certified(found.support[found.support != row])] == []


def test_the_certificate_fails_on_a_broken_primal_or_dual():
    """The certificate is the independent weak-duality check on the target's full LP (WM: CM, S and
    WH included) with the multipliers the path produced; it closes on the answer, not on a
    perturbed dual, a column with mass moved, or one copied from its neighbour (CM broken)."""
    alpha = 0.8
    target = DesignProblem(160, alpha, WM, "L1")
    W = relaxed_width(alpha, target.objective, DEFAULT_SETTINGS)
    result = prove_relaxed_width(target, W, context=make_context(DEFAULT_SETTINGS))
    assert result["certified"] and result["width"] == W
    full, u, v = target.lp(), result["u"], result["v"]
    P = certify(result["matrix"], alpha)[0]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    broken = u.copy()
    broken[np.flatnonzero(u > 0)[::7]] *= 1.001  # a perturbed dual: its reduced costs turn negative
    assert not check_optimality(full, P.ravel(), broken, v)["certified"]
    moved = P.copy()
    moved[80, 80], moved[0, 80] = moved[80, 80] - 1e-4, moved[0, 80] + 1e-4  # mass moved 80 steps away
    assert not check_optimality(full, moved.ravel(), u, v)["certified"]
    flat = P.copy()
    flat[:, 80] = flat[:, 79]  # the column of input 79 repeated: it peaks at row 79, not 80 (CM)
    assert not check_optimality(full, flat.ravel(), u, v)["certified"]


def test_a_width_that_does_not_close_is_widened_once():
    """L1 on WM at alpha = 0.91: the template at the rule's width (34) has a vertex whose support
    leaves a gap of about 5e-5 on the full LP at n = 300; the width 1.35 times wider (46) closes,
    and its answer is the general LP's optimum, solved without the template.  Without the widening
    the strategy fails, and says so."""
    n, alpha = 300, 0.91
    answer = reduced_design(n, alpha, WM, "L1")
    assert answer.method == LABEL and answer.extra["optimality"]["certified"]
    record = answer.extra["relaxed_template"]
    assert record["width"] == 46
    assert [(w["width"], w["outcome"]) for w in record["widths"]] == [(34, "failed"), (46, "proven")]
    assert "did not close" in record["widths"][0]["reason"]
    expected = general_optimum(n, alpha, WM, "L1")
    assert abs(answer.extra["optimality"]["primal_objective"] - expected) <= 1e-8 * max(1.0, expected)
    narrow = SolverSettings.of(relaxed_widening=1.0)
    attempt = STRATEGY.attempt(DesignRequest.of(n, alpha, WM, "L1", backend="highs"), make_context(narrow))
    assert attempt.outcome == "failed" and [w["width"] for w in attempt.info["widths"]] == [34]


def test_l0d_template_is_folded_and_its_mirror_averaged_dual_needs_no_s():
    """L0,1 on CH at alpha = 0.9: the template's LP is solved with S kept (folded, half the
    unknowns), and its dual, averaged with its mirror image, is a dual of the template's LP without
    S: the independent weak-duality check closes on it at the vertex's value.  The folded LP's dual
    as it comes (each orbit's multiplier on one of its two rows, S's multipliers dropped) does not."""
    target = DesignProblem(200, 0.9, ("CH",), "L0d:1")
    problem, W = relaxed_problem(target), relaxed_width(0.9, target.objective, DEFAULT_SETTINGS)
    vertex = template_solution(problem, W, make_context(DEFAULT_SETTINGS))
    small, N0 = sized(problem, 3 * W + 4).lp(), 3 * W + 5
    u, v = vertex.dual[: small.b_ub.size], vertex.dual[small.b_ub.size:]
    assert np.array_equal(vertex.point, vertex.point[::-1, ::-1])
    closed = check_optimality(small, vertex.point.ravel(), u, v)
    assert closed["certified"] and abs(closed["dual_objective"] - vertex.value) <= 1e-9
    folded = make_context(DEFAULT_SETTINGS).solves.reduced_lp(sized(problem, 3 * W + 4, problem.properties + ("S",)),
                                                              fold=True, drop_implied=True)
    run = template_vertex(folded, DEFAULT_SETTINGS)
    raw_u, raw_v = full_dual(folded, run.row_dual, run.col_dual)
    assert not check_optimality(small, vertex.point.ravel(), raw_u, raw_v[:N0])["certified"]


def test_an_interior_point_breaking_s_is_averaged_with_its_mirror():
    """L0,1 on CH+WH+S at alpha = 0.97, n = 320: the restricted primal's point of the relaxed LP (no S)
    is an interior point of a large optimal face, 2e-7 away from its mirror image; averaged with it,
    the point holds S and the certificate on the full LP (S and WH included) closes."""
    target = DesignProblem(320, 0.97, ("CH", "WH", "S"), "L0d:1")
    W = relaxed_width(0.97, target.objective, DEFAULT_SETTINGS)
    plain = DesignProblem(320, 0.97, ("CH",), "L0d:1")
    maps = template_maps(320, 3 * W + 4, W, 0.97, ("CH",))
    raw = restricted_point(plain, W, plain, plain.lp(), maps, DEFAULT_SETTINGS)
    result = prove_relaxed_width(target, W, context=make_context(DEFAULT_SETTINGS))
    assert np.abs(raw - raw[::-1]).max() > 100 * result["primal_tolerance"]  # S broken without the average
    assert result["certified"] and result["primal"] == "the restricted primal's point"
    assert np.array_equal(result["matrix"], result["matrix"][::-1, ::-1])
