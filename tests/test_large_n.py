"""The large-n template path (countdp.design.large_n) against independent facts."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import fast as fd
from countdp.design import large_n, polish
from countdp.design.designer import design_named
from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality
from countdp.privacy.certify import certify, is_alpha_dp

WH_SETS = [(), ("RH",), ("RM",), ("CH",), ("CM",), ("RH", "CH"), ("RH", "CM"), ("RM", "CH"), ("RM", "CM")]
WM = ("RM", "CM", "WH", "S")


def _general(n, alpha, props):
    return fd.fast_design(n, alpha, props, use_closed_forms=False).extra["optimality"]["primal_objective"]


@pytest.mark.parametrize("alpha", [0.62, 2 / 3, 0.76, 0.91, 10 / 11])
def test_wm_agrees_with_general_lp(alpha):
    n = 64
    P, info = large_n.large_n_design(n, alpha, WM)
    assert P is not None, info
    assert info["optimality"]["certified"]
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, WM)) <= 1e-8


@pytest.mark.parametrize("extra", WH_SETS)
def test_figure8_sets_agree_with_general_lp(extra):
    n, alpha = 64, 0.91
    props = ("WH", *extra)
    if not ({"CM", "CH"} & set(props)):  # GM (closed form, Theorem 3) handles these; no hook
        assert not large_n.applies(n, props, "L0", None, "sum")
        assert fd.closed_form(n, alpha, props, "L0", None, "sum") is not None
        return
    P, info = large_n.large_n_design(n, alpha, props)
    assert P is not None, info  # every Figure 8 set with CM or CH closes at alpha = 0.91 (measured)
    assert info["optimality"]["certified"]
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, props)) <= 1e-8


@pytest.mark.parametrize("props", [("CH", "RM"), ("CM",), ("CM", "S"), ("RH", "CH")])
def test_sets_without_wh_agree_with_general_lp(props):
    """No WH: the restricted LP has no one-entry rows (this once crashed the path)."""
    n, alpha = 64, 0.62
    P, info = large_n.large_n_design(n, alpha, props)
    assert P is not None, info
    assert info["optimality"]["certified"]
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, props)) <= 1e-8


def test_wm_n192_agrees_with_general_lp():
    n, alpha = 192, 0.91  # template solved at 104 < n, expanded (n = 256: benchmarks/bench_large_n.py)
    P, info = large_n.large_n_design(n, alpha, WM)
    assert P is not None
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, WM)) <= 1e-8


def test_certificate_is_checked_independently_and_rejects_a_perturbed_dual():
    n, alpha, W = 64, 0.91, 16
    problem = DesignProblem(n, alpha, WM)
    full = problem.lp()
    result = large_n._attempt(problem, W, 60.0)
    P, u, v = certify(result["matrix"], alpha)[0], result["u"], result["v"]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    bumped = v.copy()
    bumped[: n + 1] += 1e-6  # column-sum multipliers too high: dual infeasible, bound drops
    assert not check_optimality(full, P.ravel(), u, bumped)["certified"]
    scaled = u * 0.999
    assert not check_optimality(full, P.ravel(), scaled, v)["certified"]


def test_falls_back_when_alpha_is_too_close_to_one():
    n, alpha = large_n.MIN_N, 0.99  # corners wider than every template width that fits in n
    P, info = large_n.large_n_design(n, alpha, WM)
    assert P is None and info["used"] is False and info["reason"]
    result = fd.fast_design(n, alpha, WM)
    assert result.extra["large_n"]["used"] is False
    assert result.status == "optimal" and result.extra["optimality"]["certified"]


def test_n_below_template_falls_back():
    P, info = large_n.large_n_design(40, 0.91, WM)
    assert P is None and "below" in info["reason"]


def test_design_named_uses_it_and_is_exactly_dp():
    d = design_named("WM", 160, 0.91)
    assert d.extra["large_n"]["used"] is True
    assert d.status == "optimal" and d.extra["optimality"]["certified"]
    assert is_alpha_dp(d.matrix, 0.91)
    assert d.released is not None  # integer weights, certified in exact arithmetic by round_to_release
    assert abs(d.objective_value - d.extra["optimality"]["primal_objective"]) <= 1e-9


OBJECTIVES = ["L0d:1", "L1", "L2"]
CH_RM = ("CH", "RM")


def _general_objective(n, alpha, props, objective):
    result = fd.fast_design(n, alpha, props, objective=objective, use_closed_forms=False)
    return result.extra["optimality"]["primal_objective"]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(("n", "props"), [(64, WM), (64, CH_RM), (128, WM)])  # (CH, RM) at 128: slow general LP
def test_support_dual_agrees_with_general_lp(n, props, objective):
    """L0d, L1, L2: the support dual closes at alpha = 0.62 (not at 0.5 or 0.91: below)."""
    alpha = 0.62
    P, info = large_n.large_n_design(n, alpha, props, objective=objective)
    assert P is not None, info
    assert info["optimality"]["certified"]
    assert abs(info["optimality"]["primal_objective"] - _general_objective(n, alpha, props, objective)) <= 1e-8


@pytest.mark.parametrize("alpha", [0.5, 0.91])
def test_support_dual_falls_back_where_the_template_dual_is_degenerate(alpha):
    """At alpha 0.5 and 0.91 the template's dual does not give the full model's support (too few,
    resp. too many rows): no certificate, so the caller solves the general LP.  By default 0.91 is
    not even tried (alpha^16 = 0.22 > SUPPORT_CORNER_DECAY)."""
    P, info = large_n.large_n_design(64, alpha, WM, objective="L1", widths=large_n.SUPPORT_WIDTHS)
    assert P is None and info["used"] is False and info["tried"] and info["reason"]
    P, info = large_n.large_n_design(64, alpha, WM, objective="L1")
    assert P is None and bool(info["tried"]) is (alpha < 0.8)


def test_support_dual_is_checked_independently_and_rejects_a_perturbed_dual():
    n, alpha, W = 64, 0.62, 16
    problem = DesignProblem(n, alpha, WM, "L1")
    full = problem.lp()
    result = large_n._attempt(problem, W, 60.0)
    P, u, v = certify(result["matrix"], alpha)[0], result["u"], result["v"]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    far = u.copy()
    far[: n * (n + 1)] *= 1.001  # DP multipliers off: reduced costs negative, the bound drops
    assert not check_optimality(full, P.ravel(), far, v)["certified"]


def test_fast_design_uses_the_support_dual_and_falls_back_with_a_reason(monkeypatch):
    monkeypatch.setattr(large_n, "MIN_N", 104)  # the W = 16 template (n = 52) fits twice
    d = fd.fast_design(104, 0.62, CH_RM, objective="L1")
    assert d.extra["large_n"]["used"] is True and d.status == "optimal"
    d = fd.fast_design(104, 0.91, CH_RM, objective="L0d:1")
    assert d.extra["large_n"]["used"] is False and d.extra["large_n"]["reason"]
    assert d.status == "optimal" and d.extra["optimality"]["certified"]


def test_no_template_is_solved_at_full_size():
    """At n = 256 a W = 64 template (196 wide, solved at n) would cost as much as the general LP:
    when W = 16 and 32 do not close (alpha = 0.97), the path gives up instead of trying it."""
    P, info = large_n.large_n_design(256, 0.97, WM, widths=(16, 32, 64))
    assert P is None and [t["width"] for t in info["tried"]] == [16, 32]
    # the fast designer's call: W = 48 (alpha^48 <= 1/4) is 148 wide, it does not fit twice in 256
    P, info = large_n.large_n_design(256, 0.97, WM, at_full_size=False)
    assert P is None and not info["tried"] and "below twice the template of width 48" in info["reason"]
    assert info["seconds"] < 1


def test_widths_narrower_than_the_corners_are_not_tried(monkeypatch):
    """At alpha = 0.95 the optimal corners are wider than 16 (alpha^16 = 0.44): that width does not
    close, so by default the path starts at the narrowest multiple of 4 with alpha^W <= 1/4
    (W = 28), which closes at the general LP's optimum."""
    P, info = large_n.large_n_design(200, 0.95, WM, widths=(16,))
    assert P is None and info["tried"][0]["certified"] is False
    P, info = large_n.large_n_design(200, 0.95, WM)
    assert P is not None and [t["width"] for t in info["tried"]] == [28], info
    assert 0.95 ** 28 <= 0.25 < 0.95 ** 24
    assert abs(info["optimality"]["primal_objective"] - _general(200, 0.95, WM)) <= 1e-8
    widths = []
    monkeypatch.setattr(large_n, "_attempt", lambda *a, **k: widths.append(a[1]) or {"certified": False})
    P, info = large_n.large_n_design(400, 0.95, WM)  # the wider template fits twice: it is tried next
    assert P is None and widths == [28, 44]
    P, info = large_n.large_n_design(large_n.MIN_N, 0.99, WM)  # W = 140: the template is 424 wide
    assert P is None and widths == [28, 44] and "below the template of width 140" in info["reason"]
    assert info["seconds"] < 1


def test_the_restricted_duals_simplex_is_limited_by_work_then_clarabel_answers(monkeypatch):
    """With no simplex work allowed, HiGHS stops at its iteration limit and Clarabel solves the
    restricted dual instead; the design is still proven, at the general LP's optimum."""
    n, alpha = 64, 0.91
    calls = []
    real = large_n._solve_ipm
    monkeypatch.setattr(large_n, "_solve_ipm", lambda *a: calls.append(1) or real(*a))
    P, info = large_n.large_n_design(n, alpha, WM)
    assert P is not None and len(calls) == 1  # the restricted primal; the dual's simplex ended in its work
    monkeypatch.setattr(large_n, "DUAL_SIMPLEX_WORK", 1.0)
    P, info = large_n.large_n_design(n, alpha, WM)
    assert P is not None and len(calls) == 3, info  # and now the restricted dual too
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, WM)) <= 1e-8


@pytest.mark.parametrize("props", [("RH", "CM"), WM])
def test_cm_sets_are_proven_by_the_templates_dual_with_ch_in_place_of_cm(props):
    """With CM the restricted dual is that of the LP with CH (cheaper, and 'Solved' where CM's
    ended 'AlmostSolved'); its CH multipliers spread over the CM rows prove the LP with CM, at the
    general LP's optimum.  W = 32 (the corners are wider than 16 at this alpha), whose restricted
    dual goes to Clarabel."""
    n, alpha = 128, 0.95
    P, info = large_n.large_n_design(n, alpha, props, widths=(32,))
    assert P is not None, info
    assert info["width"] == 32 and info["optimality"]["certified"]
    assert "CH in place of CM" in info["optimality"]["dual"]
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, props)) <= 1e-8
    assert is_alpha_dp(certify(P, alpha)[0], alpha)


def test_l0_template_is_solved_without_s_and_averaged_with_its_mirror_image():
    """S is free for L0 (Theorem 1).  The feature map is not mirror symmetric, so S's rows in the
    template tied unrelated entries: LP with CH and S at n = 256, alpha = 0.93 did not close
    (gap 4.6e-9) and went to the general LP.  Solved without S, E z averaged with its mirror
    image, it is proven at the general LP's optimum, and centrosymmetric (exactly before the DP
    certificate's column normalisation, to rounding after it)."""
    n, alpha, props = 256, 0.93, ("CH", "S")
    P, info = large_n.large_n_design(n, alpha, props)
    assert P is not None, info
    assert np.array_equal(P, P[::-1, ::-1])
    released = certify(P, alpha)[0]
    assert is_alpha_dp(released, alpha) and np.abs(released - released[::-1, ::-1]).max() <= 1e-15
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, props)) <= 1e-8


def test_a_wide_templates_dual_falls_back_from_clarabels_point_to_the_simplex_vertex(monkeypatch):
    """On a wide template (W = 32) Clarabel's point of the restricted dual comes first; when it
    does not close the certificate (here: halved, so the bound is half the optimum), HiGHS's
    vertex is tried next and proves the design."""
    n, alpha, props = 128, 0.95, ("CM",)
    real, calls = large_n._solve_ipm, []

    def halved_dual(A, cost, col_lo, col_hi, lo, hi):
        x = real(A, cost, col_lo, col_hi, lo, hi)
        is_dual = bool(np.isneginf(col_lo).any())  # the column-sum multipliers are free
        calls.append("dual" if is_dual else "primal")
        return x / 2.0 if is_dual and x is not None else x

    monkeypatch.setattr(large_n, "_solve_ipm", halved_dual)
    P, info = large_n.large_n_design(n, alpha, props, widths=(32,))
    assert calls == ["primal", "dual"]
    assert P is not None and info["optimality"]["certified"], info
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, props)) <= 1e-8


def test_a_point_whose_um_repair_is_too_costly_is_proven_through_its_dp_closure(monkeypatch):
    """The expanded point gets a DP violation: ``P[40, 21]`` raised by 1e-9 breaks
    ``P[40, 20] >= alpha P[40, 21]``.  UM's repair of it (``lambda ~ 6e-7``) costs a gap of about
    1.7e-8, over the 1e-9 limit; the DP closure raises ``P[40, 20]`` instead and takes the mass off
    the diagonal, which costs ~1e-11.  Without the closure the design is not proven."""
    n, alpha = 64, 0.91
    real = large_n._checked

    def violated(problem, raw, *args):
        raw = raw.copy()
        assert abs(raw[40, 20] - alpha * raw[40, 21]) <= 1e-15  # the DP row is tight: GM's decay
        raw[40, 21] += 1e-9
        return real(problem, raw, *args)

    monkeypatch.setattr(large_n, "_checked", violated)
    P, info = large_n.large_n_design(n, alpha, WM, widths=(16,))
    assert P is not None and info["optimality"]["dp_closure"] is True, info
    released, repair = certify(P, alpha)
    assert repair.repair_lambda == 0 and is_alpha_dp(released, alpha)
    assert abs(info["optimality"]["primal_objective"] - _general(n, alpha, WM)) <= 1e-8
    monkeypatch.setattr(polish, "dp_closure", lambda P, alpha: P)  # no closure: UM's repair only
    P, info = large_n.large_n_design(n, alpha, WM, widths=(16,))
    assert P is None and info["tried"][0]["gap"] > 1e-8, info
