"""One template width proven on the full model (countdp.design.template.proof): the certificate is
the independent weak-duality check, and it fails on broken inputs."""

from __future__ import annotations

import numpy as np

from countdp.design import polish
from countdp.design.optimality import check_optimality
from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.template.proof import certify_expansion, prove_width
from countdp.privacy.certify import certify, is_alpha_dp
from tests.helpers.design import general_optimum

WM = ("RM", "CM", "WH", "S")


def _proven_wm(n=64, alpha=0.91):
    problem = DesignRequest.of(n, alpha, WM).problem
    result = prove_width(problem, 16, context=make_context(DEFAULT_SETTINGS))
    assert result["certified"], result
    return problem, result


def test_certificate_is_checked_independently_and_rejects_a_perturbed_dual():
    problem, result = _proven_wm()
    n, alpha, full = problem.n, problem.alpha, problem.lp()
    assert "CH in place of CM" in result["dual"]  # WM has CM: the template's dual is CH's, spread
    assert abs(result["primal_objective"] - general_optimum(n, alpha, WM)) <= 1e-8
    P, u, v = certify(result["matrix"], alpha)[0], result["u"], result["v"]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    bumped = v.copy()
    bumped[: n + 1] += 1e-6  # column-sum multipliers too high: dual infeasible, bound drops
    assert not check_optimality(full, P.ravel(), u, bumped)["certified"]
    assert not check_optimality(full, P.ravel(), u * 0.999, v)["certified"]
    # the same through certify_expansion: the dual as found closes, halved it does not
    y = np.concatenate([u, v[: n + 1]])
    assert certify_expansion(problem, result["matrix"], y, problem.properties, {})["certified"]
    assert not certify_expansion(problem, result["matrix"], y / 2.0, problem.properties, {})["certified"]


def test_a_point_whose_um_repair_is_too_costly_is_proven_through_its_dp_closure(monkeypatch):
    """The expanded point gets a DP violation: ``P[40, 21]`` raised by 1e-9 breaks
    ``P[40, 20] >= alpha P[40, 21]``.  UM's repair of it costs a gap over the 1e-9 limit; the DP
    closure raises ``P[40, 20]`` instead and takes the mass off the diagonal, which costs far
    less.  Without the closure the design is not proven."""
    problem, result = _proven_wm()
    alpha, N = problem.alpha, problem.N
    raw = result["matrix"].copy()
    assert abs(raw[40, 20] - alpha * raw[40, 21]) <= 1e-15  # the DP row is tight: GM's decay
    raw[40, 21] += 1e-9
    y = np.concatenate([result["u"], result["v"][:N]])
    closed = certify_expansion(problem, raw, y, problem.properties, {})
    assert closed["certified"] and closed["dp_closure"] is True, closed
    released, repair = certify(closed["matrix"], alpha)
    assert repair.repair_lambda == 0 and is_alpha_dp(released, alpha)
    monkeypatch.setattr(polish, "dp_closure", lambda P, alpha: P)  # no closure: UM's repair only
    repaired = certify_expansion(problem, raw, y, problem.properties, {})
    assert not repaired["certified"] and repaired["gap"] > 1e-8 and repaired["repair_lambda"] > 0


def test_l0_template_is_solved_without_s_and_averaged_with_its_mirror_image():
    """S is free for L0 (Theorem 1): the template is solved without S and E z averaged with its
    mirror image, proven at the general LP's optimum, and centrosymmetric (exactly before the DP
    certificate's column normalisation, to rounding after it)."""
    n, alpha, props, W = 128, 0.93, ("CH", "S"), 20
    problem = DesignRequest.of(n, alpha, props).problem
    result = prove_width(problem, W, template_size=2 * (3 * W + 4), context=make_context(DEFAULT_SETTINGS))
    assert result["certified"], result
    P = result["matrix"]
    assert np.array_equal(P, P[::-1, ::-1])
    released = certify(P, alpha)[0]
    assert is_alpha_dp(released, alpha) and np.abs(released - released[::-1, ::-1]).max() <= 1e-15
    assert abs(result["primal_objective"] - general_optimum(n, alpha, props)) <= 1e-8


def test_a_template_narrower_than_the_corners_does_not_close():
    """At alpha = 0.93 the optimal corners (about log(1/4) / log(alpha) = 19 wide) do not fit in
    W = 16: the restricted LPs solve, but their bounds do not meet on the full model."""
    result = prove_width(DesignRequest.of(64, 0.93, WM).problem, 16, context=make_context(DEFAULT_SETTINGS))
    assert not result["certified"] and result["gap"] > 1e-9
