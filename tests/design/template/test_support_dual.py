"""The support dual of L0d, L1 and L2 (countdp.design.template.support_dual) against linear algebra,
the general design LP and perturbed duals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.optimality import check_optimality
from countdp.design.planner import make_context
from countdp.design.request import DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.template.proof import prove_width
from countdp.design.template.support_dual import solve_support
from countdp.privacy.certify import certify
from tests.helpers.design import overriding

W = 16
WM = ("RM", "CM", "WH", "S")
CH_RM = ("CH", "RM")


def general_optimum(n, alpha, props, objective):
    """The general LP's optimum (reduced model, the method ``auto`` would choose), proven."""
    context = make_context(DEFAULT_SETTINGS)
    lp = context.solves.reduced_lp(DesignRequest.of(n, alpha, props, objective).problem)
    _, _, _, optimality = context.solves.solve_proven(lp, context.solves.choose_method(lp))
    assert optimality["certified"]
    return optimality["primal_objective"]


def _system(k, extra, seed=3):
    rng = np.random.default_rng(seed)
    M = sp.csr_matrix(rng.standard_normal((k, k + extra)) + 4 * np.eye(k, k + extra))
    return M, rng.standard_normal(k), rng.standard_normal(k)


def test_solve_support_solves_both_systems_of_a_square_support():
    M, c, x_true = _system(30, 0)
    y, x = solve_support(M, c, M.T @ x_true, settings=DEFAULT_SETTINGS)
    dense = M.toarray()
    assert np.allclose(y, np.linalg.solve(dense, c), atol=1e-12)
    assert np.allclose(x, x_true, atol=1e-12)


def test_solve_support_pins_a_few_surplus_rows_and_rejects_too_many_or_a_singular_system():
    M, c, x_true = _system(30, 2)
    y, x = solve_support(M, c, M.T @ x_true, settings=DEFAULT_SETTINGS)  # M^T has full column rank: x is unique
    assert np.allclose(M @ y, c, atol=1e-12) and np.allclose(x, x_true, atol=1e-10)
    with pytest.raises(ValueError, match=r"support has \+2 rows"):
        solve_support(M, c, M.T @ x_true, settings=SolverSettings.of(max_pinned=1))
    with pytest.raises(ValueError, match=r"support has -1 rows"):
        solve_support(M[:, :29].T.tocsr()[:, :28], c[:29], np.zeros(28), settings=DEFAULT_SETTINGS)
    singular = M[:, :30].tolil()
    singular[:, 4] = 0.0
    with pytest.raises(ValueError, match="singular"):
        solve_support(singular.tocsr(), c, np.ones(30), settings=DEFAULT_SETTINGS)


@pytest.mark.parametrize(("props", "objective"), [(WM, "L0d:1"), (CH_RM, "L1"), (WM, "L2")])
def test_support_dual_agrees_with_general_lp(props, objective):
    """L0d, L1, L2 at alpha = 0.62 (where the template's support is the full model's)."""
    n, alpha = 64, 0.62
    problem = DesignRequest.of(n, alpha, props, objective).problem
    result = prove_width(problem, W, context=make_context(DEFAULT_SETTINGS))
    assert result["certified"], result
    assert abs(result["primal_objective"] - general_optimum(n, alpha, props, objective)) <= 1e-8


@pytest.mark.parametrize("alpha", [0.5, 0.91])
def test_support_dual_does_not_close_where_the_template_dual_is_degenerate(alpha):
    """At alpha 0.5 and 0.91 the template's dual does not give the full model's support (too few,
    resp. too many rows): no certificate, so the caller solves the general LP."""
    result = prove_width(DesignRequest.of(64, alpha, WM, "L1").problem, W, context=make_context(DEFAULT_SETTINGS))
    assert not result["certified"]
    assert result.get("reason") or result["gap"] > 1e-9


def test_support_dual_is_a_sub_solve_of_the_context_checked_independently_and_a_perturbed_one_fails():
    """The support is read off the general LP's dual at the template's size (n0 = 52, without S),
    solved by the context's shared ``solve_proven`` (Clarabel: guided is replaced by it).  The
    expanded vertex and dual pass the independent weak-duality check on the full model; with the
    DP multipliers 0.1% off they do not."""
    n, alpha = 64, 0.62
    context = make_context(DEFAULT_SETTINGS)
    seen = []

    def recorded(lp, method, *args, **kwargs):
        seen.append((lp.problem.n, lp.problem.properties, method))
        return context.solves.solve_proven(lp, method, *args, **kwargs)

    problem = DesignRequest.of(n, alpha, WM, "L1").problem
    result = prove_width(problem, W, context=overriding(context, solve_proven=recorded))
    assert result["certified"] and seen == [(3 * W + 4, ("RM", "CM", "WH"), "clarabel")]
    full = problem.lp()
    P, u, v = certify(result["matrix"], alpha)[0], result["u"], result["v"]
    assert check_optimality(full, P.ravel(), u, v)["certified"]
    far = u.copy()
    far[: n * (n + 1)] *= 1.001  # DP multipliers off: reduced costs negative, the bound drops
    assert not check_optimality(full, P.ravel(), far, v)["certified"]
