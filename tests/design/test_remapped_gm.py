"""GM followed by its best remap solves the BasicDP design LP for every prior and objective
(Ghosh-Roughgarden-Sundararajan), and its explicit dual proves it on the full model."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from countdp.design.constraints import property_rows
from countdp.design.designer import design_lp, design_named
from countdp.design.optimality import check_optimality, design_lp_model
from countdp.design.remapped_gm import remap_certificate, remap_dual, remapped_geometric
from countdp.design.request import DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategies.closed_form import REMAPPED_GM, closed_form
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.certify import certify, is_alpha_dp
from countdp.values.objectives import loss_matrix, objective_value
from tests.helpers.design import reduced_design

OBJECTIVES = ("L1", "L2", "L0d:1", "L0d:2")


def _prior(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(n + 1, 0.5))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("alpha", [0.5, 0.62, 0.91])
def test_value_is_the_plain_lp_optimum(objective, alpha):
    """Against the plain cvxpy formulation (another solver, no closed form), uniform prior."""
    n = 12
    ref = design_lp(n, alpha, (), objective, backend="cvxpy")
    value = objective_value(remapped_geometric(n, alpha, objective), objective)
    assert value == pytest.approx(ref.objective_value, abs=1e-7)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("objective", ["L0", "L1", "L2", "L0d:1"])
def test_value_is_the_lp_optimum_under_a_skewed_prior(seed, objective):
    n, alpha = 9 + seed, 0.7
    w = _prior(n, seed)
    ref = design_lp(n, alpha, (), objective, weights=w, backend="cvxpy")
    value = objective_value(remapped_geometric(n, alpha, objective, w), objective, w)
    assert value == pytest.approx(ref.objective_value, abs=1e-7)


@pytest.mark.parametrize("objective", ["L1", "L2", "L0d:1"])
def test_best_remap_against_every_remap(objective):
    """Brute force: no deterministic remap of GM's outputs does better (n = 4: 5^5 remaps)."""
    n, alpha = 4, 0.6
    G, w = geometric(n, alpha), np.full(n + 1, 1 / (n + 1))
    C = loss_matrix(n, objective)
    best = min(float(w @ (C[np.array(r)] * G).sum(axis=0)) for r in itertools.product(range(n + 1), repeat=n + 1))
    assert objective_value(remapped_geometric(n, alpha, objective), objective) == pytest.approx(best, abs=1e-12)


def test_remap_is_a_post_processing_of_gm():
    n, alpha = 30, 0.8
    P = remapped_geometric(n, alpha, "L2")
    G = geometric(n, alpha)
    assert np.allclose(P.sum(axis=0), 1) and is_alpha_dp(certify(P, alpha)[0], alpha)
    # every row is a sum of whole GM rows: P = R G for a 0/1 matrix R with one 1 per column
    R = np.linalg.solve(G.T, P.T).T
    assert np.allclose(R, np.round(R), atol=1e-8) and np.allclose(np.round(R).sum(axis=0), 1)


@pytest.mark.parametrize("objective", OBJECTIVES + ("L0",))
@pytest.mark.parametrize("alpha", [0.5, 0.62, 0.91, 0.99])
@pytest.mark.parametrize("n", [1, 2, 41, 200])
def test_explicit_dual_closes_the_gap(n, alpha, objective):
    P = remapped_geometric(n, alpha, objective)
    optimality = remap_certificate(n, alpha, objective, None, P)
    assert optimality["certified"], optimality
    assert optimality["primal_objective"] == pytest.approx(objective_value(certify(P, alpha)[0], objective), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_explicit_dual_under_skewed_priors(seed):
    rng = np.random.default_rng(seed)
    n, alpha = int(rng.integers(2, 80)), float(rng.uniform(0.3, 0.98))
    w = _prior(n, seed)
    for objective in ("L0", "L1", "L2", "L0d:3"):
        assert remap_certificate(n, alpha, objective, w, remapped_geometric(n, alpha, objective, w))["certified"]


def test_perturbed_dual_is_rejected():
    n, alpha, objective = 40, 0.8, "L1"
    lp = design_lp_model(n, alpha, (), objective)
    P = certify(remapped_geometric(n, alpha, objective), alpha)[0].ravel()
    u, v = remap_dual(n, alpha, objective, None, lp)
    assert check_optimality(lp, P, u, v)["certified"]
    v_up = v.copy()
    v_up[n // 2] += 1e-6  # a higher dual objective, paid for by negative reduced costs
    assert not check_optimality(lp, P, u, v_up)["certified"]
    used = int(np.argmax(P.reshape(n + 1, n + 1)[:, n // 2]))  # a row the mechanism outputs
    row = np.arange(used * n, (used + 1) * n)  # its forward DP rows
    u_down = u.copy()
    u_down[row[np.argmax(u[row])]] *= 0.5  # the zero reduced costs on that row no longer balance
    assert not check_optimality(lp, P, u_down, v)["certified"]
    # a suboptimal primal is not proven optimal by the right dual
    worse = certify(geometric(n, alpha), alpha)[0].ravel()
    assert not check_optimality(lp, worse, u, v)["certified"]


def test_design_named_uses_it_at_large_n():
    design = design_named("LP", 256, 0.62, objective="L2")
    assert design.method == REMAPPED_GM and design.status == "optimal"
    assert design.extra["optimality"]["checked"] and design.extra["optimality"]["certified"]
    assert design.certificate.certified


def test_open_gap_falls_back_to_the_lp(monkeypatch):
    """A dual that does not close: the LP is solved, and the artifact says why."""
    import countdp.design.remapped_gm as remapped

    real = remapped.remap_dual

    def weak(*args, **kwargs):
        u, v = real(*args, **kwargs)
        return u, v - 1e-3
    monkeypatch.setattr(remapped, "remap_dual", weak)
    small = reduced_design(20, 0.7, (), "L1")
    assert small.method != REMAPPED_GM and small.status == "optimal"
    assert small.extra["closed_form_check"]["closed_form"] == REMAPPED_GM
    assert not small.extra["closed_form_check"]["certified"]
    large = reduced_design(SolverSettings().proof.check_closed_form_max_n + 1, 0.7, (), "L1")
    assert large.method == REMAPPED_GM
    assert large.extra["optimality"]["checked"] is False
    assert not large.extra["optimality"]["dual_check"]["certified"]


@pytest.mark.parametrize("objective", ["L0d:1", "L1", "L2"])
def test_used_with_the_properties_it_satisfies(objective):
    """With the uniform prior GM remapped is mirror symmetric, so it is an optimum of the LP with
    S too: proven on that LP (the check tests S's rows as well), at the optimum of that LP solved."""
    n, alpha = 40, 0.62
    design = reduced_design(n, alpha, ("S",), objective)
    assert design.method == REMAPPED_GM and design.extra["optimality"]["certified"]
    solved = reduced_design(n, alpha, ("S",), objective, use_closed_forms=False)
    assert solved.method != REMAPPED_GM and solved.status == "optimal"
    assert design.solver_objective == pytest.approx(solved.solver_objective, rel=1e-9)
    asymmetric = remapped_geometric(n, alpha, objective, _prior(n, 1))
    assert property_rows("S", n).violation(asymmetric.ravel()) > 1e-6
    assert not remap_certificate(n, alpha, objective, None, asymmetric, ("S",))["certified"]


def test_not_used_with_properties_it_breaks_or_minimax():
    assert closed_form(DesignRequest.of(20, 0.7, ("WH",), "L1", None, "sum"), SolverSettings()) is None
    assert closed_form(DesignRequest.of(20, 0.7, ("S", "RH"), "L2", None, "sum"), SolverSettings()) is None
    assert closed_form(DesignRequest.of(20, 0.7, (), "L1", None, "max"), SolverSettings()) is None
    # Theorem 3 keeps GM itself
    assert closed_form(DesignRequest.of(20, 0.7, (), "L0", None, "sum"), SolverSettings())[0] == "GM"
    w = _prior(20, 0)
    assert closed_form(DesignRequest.of(20, 0.7, (), "L0", w, "sum"), SolverSettings())[0] == REMAPPED_GM
