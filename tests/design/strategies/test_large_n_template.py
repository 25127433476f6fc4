"""The large-n template strategy (countdp.design.strategies.large_n_template): when it applies, what
it answers (proven on the full model, at the general LP's optimum) and how it gives up."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.designer import design_named
from countdp.design.planner import make_context
from countdp.design.policy import template_widths
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategies.large_n_template import STRATEGY, large_n_design
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.values.objectives import parse_objective
from tests.helpers.design import general_optimum

WM = ("RM", "CM", "WH", "S")
CH_RM = ("CH", "RM")


@pytest.mark.parametrize(("request_args", "options", "reason"), [
    ((160, 0.91, WM), {}, None),
    ((160, 0.91, CH_RM, "L1"), {}, None),
    ((160, 0.91, ("CM",), "L0d:1"), {}, None),
    ((160, 0.91, WM), {"method": "simplex"}, "method simplex"),
    ((160, 0.91, WM), {"use_closed_forms": False}, "switched off"),
    ((159, 0.91, WM), {}, "n below 160"),
    ((160, 0.91, ("CM", "F")), {}, "no F"),
    ((160, 0.91, ("RM", "WH")), {}, "needs CM or CH"),
    ((160, 0.91, WM, "L0", None, "max"), {}, "uniform-prior sum"),
    ((160, 0.91, WM, "L0", np.linspace(1, 2, 161) / np.linspace(1, 2, 161).sum()), {}, "uniform-prior sum"),
])
def test_accepts_exactly_the_uniform_sums_with_cm_or_ch_from_the_minimum_n(request_args, options, reason):
    got = STRATEGY.accepts(DesignRequest.of(*request_args, **options), DEFAULT_SETTINGS)
    assert (got is None) if reason is None else (reason in got)


def test_the_minimum_n_is_a_setting():
    request = DesignRequest.of(104, 0.62, CH_RM, "L1")
    assert STRATEGY.accepts(request, DEFAULT_SETTINGS) == "n below 160"
    assert STRATEGY.accepts(request, SolverSettings.of(template_min_n=104)) is None


def test_attempt_answers_wm_proven_at_the_general_lps_optimum_and_exactly_dp():
    n, alpha = 160, 0.91  # the template solved at 2 * 52 = 104 < n, expanded
    attempt = STRATEGY.attempt(DesignRequest.of(n, alpha, WM), make_context(DEFAULT_SETTINGS))
    assert attempt.outcome == "proven" and attempt.strategy == "large-n template"
    answer = attempt.answer
    assert (answer.solver, answer.method, answer.status) == ("CLARABEL", "large-n template", "optimal")
    assert answer.extra["reductions"] == ["large-n template"] and answer.extra["large_n"]["used"] is True
    optimality = answer.extra["optimality"]
    assert optimality["certified"] and answer.solver_objective == optimality["primal_objective"]
    assert is_alpha_dp(certify(answer.matrix, alpha)[0], alpha)
    assert abs(optimality["primal_objective"] - general_optimum(n, alpha, WM)) <= 1e-8


def test_attempt_fails_with_its_record_when_alpha_is_too_close_to_one():
    """At alpha = 0.99 the corners (W = 140, a template 424 wide) do not fit twice in n = 160: no
    template is solved, and the record says why (the planner keeps it in extra["large_n"])."""
    attempt = STRATEGY.attempt(DesignRequest.of(160, 0.99, WM), make_context(DEFAULT_SETTINGS))
    assert attempt.outcome == "failed" and attempt.answer is None
    assert attempt.info["used"] is False and attempt.info["tried"] == []
    assert attempt.reason == attempt.info["reason"] and "below twice the template of width 140" in attempt.reason


def test_the_support_dual_answers_l1_and_l0d_falls_back_with_a_reason():
    """From n = 104 (a setting) the W = 16 template (n = 52) fits twice: L1 at alpha = 0.62 is
    proven by the support dual; L0,1 at 0.91 is not tried (alpha^16 = 0.22 > 0.05)."""
    context = make_context(SolverSettings.of(template_min_n=104))
    attempt = STRATEGY.attempt(DesignRequest.of(104, 0.62, CH_RM, "L1"), context)
    assert attempt.outcome == "proven" and attempt.answer.extra["optimality"]["certified"]
    attempt = STRATEGY.attempt(DesignRequest.of(104, 0.91, CH_RM, "L0d:1"), context)
    assert attempt.outcome == "failed" and attempt.info["tried"] == []
    assert attempt.reason == "alpha^W > 0.05 for every width W in (16,): corners wider than every template"


def test_no_template_is_solved_at_full_size_and_no_wider_one_past_half_of_n():
    """A width whose template does not fit twice in n is tried only first and only at full size:
    here W = 16 and 20 are tried (they fit twice in 130), W = 40 (124 wide) is not."""
    context = make_context(DEFAULT_SETTINGS)
    P, info = large_n_design(DesignRequest.of(130, 0.97, WM), widths=(16, 20, 40), context=context)
    assert P is None and [t["width"] for t in info["tried"]] == [16, 20] and not any(t["certified"]
                                                                                      for t in info["tried"])
    assert info["reason"] == "no template width closed the certificate"
    # the strategy's call: W = 48 (alpha^48 <= 1/4) is 148 wide, it does not fit twice in 256
    assert template_widths(0.97, parse_objective("L0"), DEFAULT_SETTINGS)[0] == 48
    P, info = large_n_design(DesignRequest.of(256, 0.97, WM), at_full_size=False, context=context)
    assert P is None and not info["tried"] and "below twice the template of width 48" in info["reason"]
    P, info = large_n_design(DesignRequest.of(160, 0.99, WM), context=context)  # W = 140: 424 wide
    assert P is None and not info["tried"] and "below the template of width 140" in info["reason"]


def test_widths_narrower_than_the_corners_are_not_tried():
    """At alpha = 0.95 the optimal corners are wider than 16 (alpha^16 = 0.44): that width does not
    close, so by default the path starts at the narrowest multiple of 4 with alpha^W <= 1/4
    (W = 28), which closes."""
    assert 0.95 ** 28 <= 0.25 < 0.95 ** 24
    context = make_context(DEFAULT_SETTINGS)
    P, info = large_n_design(DesignRequest.of(200, 0.95, WM), widths=(16,), context=context)
    assert P is None and info["tried"][0]["certified"] is False
    P, info = large_n_design(DesignRequest.of(200, 0.95, WM), context=context)
    assert P is not None and [t["width"] for t in info["tried"]] == [28], info
    assert info["optimality"]["certified"] and is_alpha_dp(certify(P, 0.95)[0], 0.95)


def test_design_named_uses_it_and_is_exactly_dp():
    d = design_named("WM", 160, 0.91)
    assert d.extra["large_n"]["used"] is True
    assert d.status == "optimal" and d.extra["optimality"]["certified"]
    assert is_alpha_dp(d.matrix, 0.91)
    assert d.released is not None  # integer weights, certified in exact arithmetic by round_to_release
    assert abs(d.objective_value - d.extra["optimality"]["primal_objective"]) <= 1e-9
