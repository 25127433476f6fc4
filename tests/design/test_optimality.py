"""Optimality certificates: the independent weak-duality check, polished vertices, fallbacks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.design.constraints import constraint_system
from countdp.design.designer import design_lp, design_named
from countdp.design.highs_model import DesignModel
from countdp.design.lp_solve import solve_proven
from countdp.design.optimality import check_optimality, design_lp_model
from countdp.design.polish import full_dual
from countdp.design.reduce import build_reduced_lp
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.privacy.exact import exact_dp_check
from countdp.services.artifact import design_to_dict
from countdp.values.catalogue import NAMED_DESIGNS
from countdp.values.objectives import objective_value
from tests.helpers.design import reduced_design

DEFAULT_ALPHAS = [0.3, 0.4, 0.5, 0.55, 0.6, 0.62, 2 / 3, 0.65, 0.67, 0.7, 0.75, 0.76, 0.8, 0.85, 0.9, 0.91,
                  10 / 11, 0.95, 0.99]
"""Every alpha of config/config.yaml's studies."""

FIG8 = [(), ("RH",), ("RM",), ("CH",), ("CM",), ("RH", "CH"), ("RH", "CM"), ("RM", "CH"), ("RM", "CM")]


def _proven(n, alpha, props, objective="L0", **kw):
    """The reduced LP, its proven answer and the full model's dual."""
    lp = build_reduced_lp(n, alpha, props, objective, **kw)
    P, _, run, opt = solve_proven(lp, "simplex", settings=DEFAULT_SETTINGS)
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return lp, P, u, v, opt


@pytest.mark.parametrize("alpha", DEFAULT_ALPHAS, ids=lambda a: f"{a:.4g}")
def test_fig8_sets_proven_and_match_plain_lp(alpha):
    """Every Figure 8 property set, every default alpha: proven to 1e-9, and the plain cvxpy LP
    (HiGHS at its default 1e-7 feasibility tolerance, so only that accurate) agrees."""
    n = 16
    for extra in FIG8:
        props = ("WH", "S", *extra)
        fast = design_lp(n, alpha, props, "L0", backend="highs")
        ref = design_lp(n, alpha, props, "L0", backend="cvxpy")
        opt = fast.extra["optimality"]
        assert fast.status == "optimal" and opt["certified"], (props, opt)
        assert fast.objective_value == pytest.approx(ref.solver_objective, abs=1e-7), props
        assert fast.certificate.repair_lambda <= 1e-12
        if "proof" in opt:  # closed form: GM's value
            assert fast.objective_value == pytest.approx(2 * alpha / (1 + alpha), abs=1e-14)
        else:
            assert opt["upper_bound"] - opt["lower_bound"] <= 1e-9
            assert abs(fast.objective_value - opt["primal_objective"]) <= 1e-12


@pytest.mark.parametrize("n", [24, 48])
@pytest.mark.parametrize("alpha", [0.5, 0.76, 10 / 11, 0.99])
def test_basic_dp_lp_bound_is_theorem_3(n, alpha):
    """BasicDP alone, L0, solved (no closed form): the proven interval contains 2a/(1+a) (Theorem 3)."""
    *_, opt = _proven(n, alpha, ())
    gm = 2 * alpha / (1 + alpha)
    assert opt["certified"]
    assert opt["lower_bound"] - 1e-12 <= gm <= opt["upper_bound"] + 1e-12
    assert opt["upper_bound"] - opt["lower_bound"] <= 1e-9


@pytest.mark.parametrize("n", [20, 31])
@pytest.mark.parametrize("alpha", [0.62, 0.91])
def test_fair_lp_bound_is_theorem_4(n, alpha):
    """Fairness, L0, solved: the proven interval contains EM's L0 (Theorem 4)."""
    *_, opt = _proven(n, alpha, ("F",))
    em = objective_value(explicit_fair(n, alpha), "L0")
    assert opt["certified"] and opt["lower_bound"] - 1e-12 <= em <= opt["upper_bound"] + 1e-12


def test_perturbed_dual_is_rejected():
    n, alpha, props = 20, 0.91, ("RM", "CM", "WH", "S")
    lp, P, u, v, opt = _proven(n, alpha, props)
    full = design_lp_model(n, alpha, props)
    x = P.ravel()
    assert check_optimality(full, x, u, v)["certified"]
    rng = np.random.default_rng(3)
    bad = [
        (u * (1 + 1e-4 * rng.standard_normal(u.size)), v),  # multipliers off by 1e-4 relative
        (u, v + 1e-6),  # every column-sum multiplier raised: the dual objective looks better
        (u, v * (1 + 1e-6)),
        (np.where(u > 0, 0.0, u), v),  # active multipliers dropped
    ]
    for bu, bv in bad:
        result = check_optimality(full, x, bu, bv)
        assert not result["certified"] and result["gap"] > 1e-9
    # a primal answer that breaks a DP row does not pass either
    broken = P.copy()
    broken[0, 1] = broken[0, 0] / alpha * (1 + 1e-6)
    assert not check_optimality(full, broken.ravel(), u, v)["certified"]


def test_float_bound_is_below_the_exact_bound():
    """The rounding-aware lower bound never exceeds the exact one (Fractions, a small LP)."""
    n, alpha, props = 4, 0.76, ("WH", "CM")
    lp, P, u, v, opt = _proven(n, alpha, props)
    full = design_lp_model(n, alpha, props)
    exact_u = [Fraction(max(a, 0.0)) for a in u]
    exact_v = [Fraction(a) for a in v]
    r = [Fraction(c) for c in full.c]
    for A, y in ((full.A_ub.tocoo(), exact_u), (full.A_eq.tocoo(), exact_v)):
        for row, col, a in zip(A.row, A.col, A.data, strict=True):
            r[col] -= Fraction(a) * y[row]
    exact = sum(Fraction(b) * y for b, y in zip(full.b_ub, exact_u, strict=True))
    exact += sum(Fraction(b) * y for b, y in zip(full.b_eq, exact_v, strict=True))
    exact += sum(min(Fraction(0), rk) * Fraction(h) for rk, h in zip(r, full.upper, strict=True))
    assert opt["certified"] and Fraction(opt["lower_bound"]) <= exact


def test_minimax_and_weights_are_proven():
    rng = np.random.default_rng(5)
    w = rng.dirichlet(np.ones(19))
    for kw in ({"aggregate": "max"}, {"weights": w}):
        for props in [("WH", "S"), ("RM", "CM", "WH")]:
            fast = reduced_design(18, 0.8, props, "L1", use_closed_forms=False, **kw)
            assert fast.status == "optimal" and fast.extra["optimality"]["certified"], (kw, props)


def test_almost_solved_falls_back_and_says_so():
    """Clarabel stops at 'AlmostSolved' on the LP here (L1, alpha = 0.62, n >= 41; the designer
    answers this one by a closed form, so the LP is asked for, and ``auto`` would guide simplex
    by Clarabel's scaled point instead): the next method is proven."""
    found = reduced_design(41, 0.62, (), "L1", use_closed_forms=False, method="clarabel")
    opt = found.extra["optimality"]
    assert found.status == "optimal" and opt["certified"]
    assert opt["method"] != "clarabel" and any(a.startswith("clarabel") for a in opt["attempts"])
    design = design_named("LP", 41, 0.62, objective="L1")
    assert design.objective_value == pytest.approx(opt["primal_objective"], abs=1e-9)
    assert design_to_dict(design)["extra"]["optimality"]["certified"]
    assert design.certificate.repair_lambda <= 1e-12


def test_unproven_answer_is_not_called_optimal(monkeypatch):
    """When no method's certificate closes, the design is returned as 'not proven optimal'."""
    import countdp.design.optimality as optimality

    monkeypatch.setattr(optimality.check_optimality, "__defaults__", (-1.0, optimality.PRIMAL_TOL))  # no gap passes
    design = design_named("WM", 20, 0.91)
    opt = design.extra["optimality"]
    assert design.status == "not proven optimal" and not opt["certified"]
    # simplex, then ipm (each re-solved with tightened rows if its vertex needed a DP repair)
    methods = [a.split(":")[0] for a in opt["attempts"] if "tightened" not in a]
    assert methods == ["simplex", "ipm"] and design.certificate.certified


SWEEP_CASES = [("WM", ()), ("WH", ()), ("LP", ()), ("LP", ("F",)), ("LP", ("CH", "RM"))]


@pytest.mark.parametrize("mech, props", SWEEP_CASES)
@pytest.mark.parametrize("objective", ["L0", "L0d:1", "L1", "L2"])
def test_objective_sweep_never_fails(mech, props, objective):
    """The sweep that used to fail 64 times in 239, quick part: n = 41 at every alpha of the
    sweep (n = 64, 128 run in benchmarks/bench_objectives.py).  Every design is proven optimal,
    its float matrix is alpha-DP, and its release weights pass the exact test again here."""
    for alpha in (0.5, 0.62, 0.91, 0.99):
        design = design_named(mech, 41, alpha, objective=objective, properties=props)
        opt = design.extra["optimality"]
        assert design.status == "optimal" and opt["certified"], (alpha, design.extra)
        assert opt["gap"] <= 1e-9 * max(1.0, abs(opt["upper_bound"]))
        assert design.certificate.repair_lambda <= 1e-7 and is_alpha_dp(design.matrix, alpha)
        released = design.released
        assert exact_dp_check(released.weights, design.alpha_exact, released.K).holds
        system = constraint_system(41, alpha, design.properties_requested)
        assert system.violation(design.matrix.ravel()) <= 1e-9


def test_tightened_resolve_proves_what_the_tolerance_left_unproven():
    """L2, WH, n = 64, alpha = 0.62, HiGHS simplex from a slack basis: its vertex breaks a DP row
    by ~1e-13, whose UM repair costs 1.5e-9 of the objective (more than the gap allows);
    re-solved from its basis with tightened rows it is proven, and its value agrees with the
    unreduced model solved by HiGHS directly (at HiGHS's default tolerance 1e-7 that answer
    breaks rows by ~2e-8, which the L2 duals turn into ~3e-6 of the objective: hence the looser
    comparison)."""
    found = reduced_design(64, 0.62, NAMED_DESIGNS["WH"], "L2", method="simplex")
    opt = found.extra["optimality"]
    assert found.status == "optimal" and opt["certified"] and opt.get("tightened")
    assert any("certificate did not close" in a for a in opt["attempts"])
    assert certify(found.matrix, 0.62)[1].repair_lambda <= 1e-12
    model = DesignModel(64, 0.62, NAMED_DESIGNS["WH"], "L2")
    _, value = model.minimise(model.cost("sum"))
    assert found.solver_objective == pytest.approx(value, rel=1e-5)


def test_polished_vertex_needs_no_repair():
    """WM n = 32, alpha = 10/11 needed lambda = 1.6e-5 before polishing; now none to speak of."""
    fast = reduced_design(32, 10 / 11, ("RM", "CM", "WH", "S"), method="simplex")
    _, cert = certify(fast.matrix, 10 / 11)
    assert fast.extra["optimality"]["polished"] and cert.repair_lambda <= 1e-12


@pytest.mark.parametrize("aggregate", ["sum", "max"])
@pytest.mark.parametrize("props", [(), ("WH", "S"), ("RM", "CM", "WH", "S"), ("F",)],
                         ids=lambda p: "+".join(p) or "none")
def test_plain_cvxpy_designs_are_proven(props, aggregate):
    """Small designs go through cvxpy; their matrices are proven with the solver's own duals (the
    weighted sum), or a dual of the reduced model (minimax, whose extra variable is not mapped).
    The proven interval holds the optimum found by the other route, the reduced model's."""
    for n, alpha, objective in [(4, 0.62, "L1"), (7, 0.91, "L0"), (12, 0.5, "L2")]:
        design = design_lp(n, alpha, props, objective, aggregate=aggregate, backend="cvxpy")
        opt = design.extra["optimality"]
        assert opt["certified"] and opt["gap"] <= 1e-9 * max(1.0, abs(opt["upper_bound"])), opt
        assert design.status == "optimal"
        assert opt["dual_from"].startswith("cvxpy" if aggregate == "sum" else "reduced model")
        other = reduced_design(n, alpha, props, objective, aggregate=aggregate, method="simplex",
                               use_closed_forms=False)
        assert opt["lower_bound"] - 1e-9 <= other.solver_objective <= opt["upper_bound"] + 1e-9


def test_solver_duals_mapped_wrongly_prove_nothing():
    """The solver's duals prove the cvxpy answer only as mapped: with the equalities' multipliers
    given cvxpy's own sign, or the ``x >= 0`` rows' multipliers left in, the check fails."""
    import cvxpy as cp

    from countdp.design.model import DesignProblem
    from countdp.design.strategies.dense_cvxpy import solver_dual_certificate

    model = DesignProblem(9, 0.62, ("RM", "CM"), "L1")
    system, N = model.system(), model.N
    x = cp.Variable(N * N)
    constraints = [system.A_ub @ x >= system.b_ub, system.A_eq @ x == system.b_eq]
    cp.Problem(cp.Minimize(model.weighted_cost @ x), constraints).solve(solver=cp.HIGHS)
    P = certify(x.value.reshape(N, N), 0.62)[0]
    assert solver_dual_certificate(model, constraints, P, "HIGHS", settings=DEFAULT_SETTINGS)["certified"]

    class Given:  # a constraint whose dual_value is given
        def __init__(self, value):
            self.dual_value = value

    ub, eq = constraints[0].dual_value, constraints[1].dual_value
    assert not solver_dual_certificate(model, [Given(ub), Given(-eq)], P, "HIGHS",
                                       settings=DEFAULT_SETTINGS)["certified"]
    shifted = np.concatenate([ub[N * N:], ub[: N * N]])  # the bound rows' multipliers misplaced
    assert not solver_dual_certificate(model, [Given(shifted), Given(eq)], P, "HIGHS",
                                       settings=DEFAULT_SETTINGS)["certified"]


def test_closed_form_shortcut_is_checked_too(monkeypatch):
    """The GM shortcut (Theorem 3) is checked by the explicit dual of GM remapped (the identity
    remap for L0) at every n, its lower bound Theorem 3's value; where that dual does not close,
    by an LP dual up to ``CHECK_CLOSED_FORM_MAX_N``."""
    import countdp.design.remapped_gm as remapped

    for n in (20, SolverSettings().proof.check_closed_form_max_n + 72):
        fast = reduced_design(n, 0.76, ("WH", "S"), "L0")
        opt = fast.extra["optimality"]
        assert fast.method == "GM" and opt["proof"] == "Theorem 3; explicit dual" and opt["certified"]
        assert opt["checked"] and abs(opt["lower_bound"] - 2 * 0.76 / 1.76) <= 1e-12
    real = remapped.remap_dual
    monkeypatch.setattr(remapped, "remap_dual", lambda *a, **k: (lambda u, v: (u, v - 1e-3))(*real(*a, **k)))
    fast = reduced_design(20, 0.76, ("WH", "S"), "L0")
    opt = fast.extra["optimality"]
    assert fast.method == "GM" and opt["proof"] == "Theorem 3" and opt["certified"] and opt["checked"]
    assert opt["dual_from"].startswith("reduced model") and opt["lower_bound"] <= 2 * 0.76 / 1.76 + 1e-12


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_dp_closure_keeps_a_dp_matrix_to_rounding(alpha):
    """GM meets every DP row with equality outward from the diagonal and its columns sum to 1:
    the closure moves it by rounding only."""
    from countdp.design.polish import dp_closure
    from countdp.mechanisms.closed_forms import geometric

    P = geometric(40, alpha)
    closed = dp_closure(P, alpha)
    np.testing.assert_allclose(closed, P, rtol=0, atol=1e-14)
    np.testing.assert_allclose(closed.sum(axis=0), 1.0, rtol=0, atol=1e-14)


def test_dp_closure_repairs_a_broken_tail_without_um():
    """A tail entry of GM lowered by ~1e-13 breaks a DP row; UM's repair needs lambda ~ 1e-13 N /
    (1 - alpha), the closure raises that entry back to alpha times its neighbour and takes the
    mass off the diagonal, so the float DP test passes with no mixture at all."""
    from countdp.design.polish import dp_closure
    from countdp.mechanisms.closed_forms import geometric

    alpha, n = 0.5, 60
    P = geometric(n, alpha)
    P[50, 10] *= 0.5  # alpha^40 ~ 1e-12, halved: the DP row P[50, 10] >= alpha P[50, 11] broken by ~1e-13
    assert not is_alpha_dp(P, alpha)
    _, mixed = certify(P, alpha)
    closed = dp_closure(P, alpha)
    assert closed[50, 10] == alpha * closed[50, 11]
    repaired, certificate = certify(closed, alpha)
    assert certificate.repair_lambda <= 1e-15 < mixed.repair_lambda
    assert is_alpha_dp(repaired, alpha)
    assert P[10, 10] - closed[10, 10] == pytest.approx(P[50, 10], rel=1e-3)  # the raise, off the diagonal


def test_dp_closure_proves_a_vertex_whose_um_repair_costs_too_much():
    """LP with F, L2, n = 256, alpha = 0.5: the exact vertex breaks a DP row by rounding (~1e-15), and UM's
    repair costs 5e-9 of the objective (UM's L2 loss is ~n^2/6), more than the certificate allows;
    the closure's does not, and the released weights are exactly alpha-DP."""
    design = design_named("LP", 256, 0.5, objective="L2", properties=("F",))
    optimality = design.extra["optimality"]
    assert design.status == "optimal" and optimality["certified"] and optimality["dp_closure"]
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds


@pytest.mark.parametrize("mechanism, n, alpha, objective", [("WM", 20, 0.8, "L1"), ("LP", 30, 0.7, "L0"),
                                                            ("WH", 64, 0.62, "L2"), ("LP", 12, 0.9, "L0d:1")])
def test_every_certificate_key_is_a_declared_field(mechanism, n, alpha, objective):
    """The engine's certificates hold only the fields :class:`OptimalityProof` declares (and
    nested certificates of the checks that did not close, under their own names)."""
    from countdp.design.optimality import OptimalityProof

    declared = set(OptimalityProof.__annotations__) | {"lp_check", "dual_check", "closed_form"}
    design = design_named(mechanism, n, alpha, objective=objective, backend="highs")
    assert set(design.extra["optimality"]) <= declared


def test_a_missing_dual_is_a_reason_not_a_certificate():
    from countdp.design.optimality import not_proven

    assert not_proven("no duals to map") == {"certified": False, "reason": "no duals to map"}
