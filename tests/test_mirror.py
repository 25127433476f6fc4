"""Solving with S folded in and proving without it (countdp.design.mirror, Theorem 1)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design import fast, mirror
from countdp.design.constraints import property_rows
from countdp.design.designer import design_lp, design_named
from countdp.design.fast import build_reduced_lp, fast_design, solve_proven
from countdp.design.mirror import mirror_rows, mirror_symmetric, prove_unfolded
from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality, lower_column_multipliers
from countdp.design.polish import full_dual
from countdp.privacy.exact import exact_dp_check


@pytest.mark.parametrize("props", [(), ("F",), ("CH", "RM"), ("RH", "RM", "CH", "CM", "F", "WH")])
def test_mirror_rows_pair_every_row_with_its_mirror_image(props):
    """Checked densely: row ``s[r]`` times ``sign[r]`` is row ``r`` with its columns reversed."""
    problem = DesignProblem(5, 0.62, props, "L1")
    lp = problem.lp()
    for A, b, eq in ((lp.A_ub, lp.b_ub, False), (lp.A_eq, lp.b_eq, True)):
        found = mirror_rows(A, b, problem.size, eq)
        if found is None:  # F's rows P[i, i] = P[0, 0] are not closed under the mirror, only their span
            assert eq and "F" in props
            continue
        s, sign = found
        dense = A.toarray()
        assert sorted(s) == list(range(A.shape[0]))
        assert np.array_equal(dense[:, ::-1], sign[:, None] * dense[s])
        assert np.array_equal(b, sign * b[s])
        assert eq or np.all(sign == 1)


def test_rows_not_closed_under_the_mirror_are_refused():
    problem = DesignProblem(4, 0.62, ("WH",), "L1")
    lp = problem.lp()
    lopsided = lp.A_ub[:-1]  # drop one DP row: its mirror image has no partner
    assert mirror_rows(lopsided, lp.b_ub[:-1], problem.size, False) is None


@pytest.mark.parametrize("props, objective, alpha", [(("F",), "L1", 0.62), (("CH", "RM"), "L2", 0.5),
                                                     (("WH",), "L0d:1", 0.91)])
def test_folded_dual_proves_the_lp_without_s(props, objective, alpha):
    """The S-folded model's dual, unfolded, certifies its answer for the LP without S, whose value
    the plain cvxpy model gives independently; the raw dual (S multipliers dropped, no
    averaging) does not."""
    n = 9
    folded = build_reduced_lp(n, alpha, (*props, "S"), objective, None, "sum")
    P, _, run, _ = solve_proven(folded, "simplex")
    plain = DesignProblem(n, alpha, props, objective)
    proof = prove_unfolded(folded, run, P, plain)
    assert proof["certified"]
    reference = design_lp(n, alpha, props, objective, backend="cvxpy")
    assert proof["primal_objective"] == pytest.approx(reference.solver_objective, abs=1e-8)
    u, v = full_dual(folded, run.row_dual, run.col_dual)
    keep = np.ones(v.size, bool)
    keep[folded.problem.blocks["S"][1]] = False
    full = plain.lp()
    raw = check_optimality(full, plain.point(P), u, lower_column_multipliers(full, u, v[keep]))
    assert not raw["certified"] and raw["gap"] > 0.1  # measured 1.5 to 27: the averaging is what proves


def test_fast_design_folds_a_symmetric_lp_and_says_so():
    found = fast_design(64, 0.62, ("F",), "L1")
    assert found.status == "optimal" and found.extra["optimality"]["certified"]
    assert "S folded without S requested (Theorem 1)" in found.extra["reductions"]
    reference = design_lp(64, 0.62, ("F",), "L1", backend="cvxpy")
    assert found.solver_objective == pytest.approx(reference.solver_objective, rel=1e-8)


def test_l0_too_near_one_for_a_template_is_folded_and_agrees_with_the_lp_without_s():
    """L0 where alpha is too near 1 for the large-n template (n = 160, alpha = 0.99, LP with CH):
    Clarabel's point of the S-folded model, proven without S; the LP without S solved unfolded
    has the same optimum (Theorem 1).  Where a template fits (alpha = 0.5), L0 is not folded."""
    found = fast_design(160, 0.99, ("CH",), "L0")
    assert found.status == "optimal" and found.extra["optimality"]["certified"]
    assert "S folded without S requested (Theorem 1)" in found.extra["reductions"]
    plain = fast_design(160, 0.99, ("CH",), "L0", fold_symmetry=False)
    assert not any("folded" in r for r in plain.extra["reductions"])
    assert found.solver_objective == pytest.approx(plain.solver_objective, rel=1e-9)
    assert mirror.folded_design(160, 0.5, ("CH",), DesignProblem(160, 0.5, ("CH",), "L0").objective, None,
                                "sum", True, 0.0) == (None, None)


def test_skewed_weights_are_not_folded():
    weights = np.linspace(1, 2, 65)
    weights /= weights.sum()
    assert not mirror_symmetric(DesignProblem(64, 0.62, ("F",), "L1", weights))
    assert mirror_symmetric(DesignProblem(64, 0.62, ("F",), "L1"))
    found = fast_design(64, 0.62, ("F",), "L1", weights=weights)
    assert not any("folded" in r for r in found.extra["reductions"])


def _fail_the_folded_guided_methods(monkeypatch):
    """Make the guided methods fail on an S-folded model (as Clarabel's 'AlmostSolved' did at
    n = 256, alpha = 0.99), leaving every other solve alone."""
    real = fast.solve_proven

    def solve_proven(lp, method, fallback=True, methods=None):
        if lp.folded and methods is not None and "guided" in methods:
            raise RuntimeError("guided: made to fail")
        return real(lp, method, fallback, methods)

    monkeypatch.setattr(fast, "solve_proven", solve_proven)


def test_an_lp_with_s_is_answered_by_the_lp_without_s_symmetrized(monkeypatch):
    """LP with RM and S, L1, n = 64: when the folded model's guided methods fail, the LP without
    S is solved, its answer averaged with its mirror image: symmetric, proven on the LP with S,
    exactly alpha-DP, at the optimum the folded model reaches on its own (Theorem 1)."""
    n, alpha, props = 64, 0.9, ("RM", "S")
    direct = fast.fast_design(n, alpha, props, "L1")
    assert mirror.SYMMETRIZED not in direct.extra["reductions"]
    _fail_the_folded_guided_methods(monkeypatch)
    found = fast.fast_design(n, alpha, props, "L1")
    assert found.status == "optimal" and mirror.SYMMETRIZED in found.extra["reductions"]
    assert "S's rows given 0" in found.extra["optimality"]["dual"]
    assert found.extra["optimality"]["upper_bound"] == pytest.approx(direct.solver_objective, rel=1e-9)
    design = design_named("LP", n, alpha, objective="L1", properties=props)
    assert mirror.SYMMETRIZED in design.extra["reductions"]
    assert property_rows("S", n).violation(design.matrix.ravel()) <= 1e-12
    assert exact_dp_check(design.released.weights, design.alpha_exact, design.released.K).holds


def test_when_the_symmetrized_lp_is_not_proven_the_cold_methods_answer(monkeypatch):
    """The same case with the LP without S unproven too: the folded model's cold simplex answers,
    and the artifact says why the symmetrized answer was not used."""
    n, alpha, props = 64, 0.9, ("RM", "S")
    _fail_the_folded_guided_methods(monkeypatch)
    monkeypatch.setattr(mirror, "symmetrized_design", lambda *a: (None, {"certified": False, "reason": "made to"}))
    found = fast.fast_design(n, alpha, props, "L1")
    assert found.status == "optimal" and found.method == "simplex"
    assert found.extra["symmetrized"]["reason"] == "made to"
    assert any("made to fail" in a for a in found.extra["optimality"]["attempts"])


@pytest.mark.parametrize("alpha,cold", [(0.62, True), (0.99, False)])
def test_the_folded_model_gets_the_cold_simplex_only_where_a_template_applies(monkeypatch, alpha, cold):
    """Where a template applies (alpha far from 1) the cold simplex on the folded model follows the
    guided methods; near alpha = 1 only the guided methods run there (the model without S next)."""
    from countdp.design import seed

    n, props = 160, ("F",)
    assert seed.applies(DesignProblem(n, alpha, props, "L1")) is cold
    asked = []

    def solve_proven(lp, method, fallback=True, methods=None):
        asked.append(methods)
        raise RuntimeError("not solved here")

    monkeypatch.setattr(fast, "solve_proven", solve_proven)
    found, why = mirror.folded_design(n, alpha, props, "L1", None, "sum", True, 0.0)
    assert found is None and why["reason"] == "not solved here"
    assert asked == [("guided", fast.CLARABEL_GUIDED) + (("simplex",) if cold else ())]
