"""The consumer's two LPs against independent facts: brute-force enumeration, a cvxpy (Clarabel)
formulation written out here, the identity mechanism; and every certificate shown failing on a
broken input."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from countdp.consumers.certificates import (
    dp_closure,
    exact_private_certificate,
    exact_remap_certificate,
    private_certificate,
    remap_certificate,
)
from countdp.consumers.losses import loss_matrix
from countdp.consumers.remap import (
    CertificateError,
    RemapSettings,
    optimal_private_mechanism,
    optimal_release_remap,
    optimal_remap,
)
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.certify import is_alpha_dp
from countdp.privacy.rounding import round_to_release


def _cvxpy_remap_value(M, L, S):
    import cvxpy as cp  # heavy: only these tests need it

    N = M.shape[0]
    R = cp.Variable((N, N), nonneg=True)
    X = R @ M
    worst = cp.max(cp.hstack([L[i, :] @ X[:, i] for i in S]))
    problem = cp.Problem(cp.Minimize(worst), [cp.sum(R, axis=0) == 1])
    problem.solve(solver="CLARABEL")
    return problem.value


def _cvxpy_private_value(n, alpha, L, S):
    import cvxpy as cp  # heavy: only these tests need it

    x = cp.Variable((n + 1, n + 1), nonneg=True)
    constraints = [cp.sum(x, axis=0) == 1, alpha * x[:, 1:] <= x[:, :-1], alpha * x[:, :-1] <= x[:, 1:]]
    problem = cp.Problem(cp.Minimize(cp.max(cp.hstack([L[i, :] @ x[:, i] for i in S]))), constraints)
    problem.solve(solver="CLARABEL")
    return problem.value


def test_identity_mechanism_l1_full_side_remaps_to_identity_at_zero_loss():
    for n in (1, 3, 6):
        remap = optimal_remap(np.eye(n + 1), loss_matrix("L1", n))
        assert remap.worst_loss == pytest.approx(0.0, abs=1e-12)
        assert np.allclose(remap.remap, np.eye(n + 1), atol=1e-9)
        assert remap.attained.tolist() == list(range(n + 1))


@pytest.mark.parametrize("n", [1, 2])
def test_single_input_side_info_matches_the_best_deterministic_remap(n):
    """With one possible input the objective is linear in R, so a deterministic remap is optimal."""
    rng = np.random.default_rng(n)
    N = n + 1
    maps = np.array(list(product(range(N), repeat=N)))  # [m, r]: the answer to release r
    for _ in range(20):
        M = [geometric(n, 0.4), explicit_fair(n, 0.7), np.eye(N)][int(rng.integers(3))]
        L = rng.random((N, N)) * 3
        i = int(rng.integers(N))
        brute = min(sum(L[i, m[r]] * M[r, i] for r in range(N)) for m in maps)
        assert optimal_remap(M, L, [i]).worst_loss == pytest.approx(brute, abs=1e-9)


def test_remap_and_own_mechanism_values_agree_with_cvxpy():
    rng = np.random.default_rng(7)
    for _ in range(6):
        n = int(rng.integers(2, 5))
        alpha = float(rng.choice([0.3, 0.5, 0.8]))
        L = rng.random((n + 1, n + 1))
        S = np.flatnonzero(rng.random(n + 1) < 0.7)
        S = S if S.size else np.array([0])
        M = explicit_fair(n, alpha)
        assert optimal_remap(M, L, S).worst_loss == pytest.approx(_cvxpy_remap_value(M, L, S), abs=1e-6)
        assert optimal_private_mechanism(n, alpha, L, S).value == pytest.approx(
            _cvxpy_private_value(n, alpha, L, S), abs=1e-6)


def test_the_answers_are_what_they_claim():
    n, alpha = 5, 0.6
    L, S = loss_matrix("L2", n), np.array([1, 2, 4])
    M = explicit_fair(n, alpha)
    remap = optimal_remap(M, L, S)
    R = remap.remap
    assert np.all(R >= 0) and np.allclose(R.sum(axis=0), 1.0, atol=1e-15)
    direct = [sum(L[i, a] * R[a, r] * M[r, i] for a in range(n + 1) for r in range(n + 1)) for i in range(n + 1)]
    assert np.allclose(remap.per_input, direct, atol=1e-12)
    assert remap.worst_loss == pytest.approx(max(direct[i] for i in S), abs=1e-12)
    assert set(remap.attained) <= set(S.tolist())
    own = optimal_private_mechanism(n, alpha, L, S)
    assert is_alpha_dp(own.matrix, alpha)
    assert own.value <= remap.worst_loss + 1e-9  # EM + remap is alpha-DP, so it cannot beat the optimum
    assert abs(own.prior.sum() - 1.0) < 1e-6 and not own.prior[np.setdiff1d(np.arange(n + 1), S)].any()


def test_remap_certificate_fails_on_a_suboptimal_remap_and_on_a_bad_prior():
    n = 4
    M, L = geometric(n, 0.5), loss_matrix("L1", n)
    S = np.arange(n + 1)
    good = optimal_remap(M, L)
    assert remap_certificate(M, L, S, good.remap, good.prior, 1e-9)[0].holds
    identity = remap_certificate(M, L, S, np.eye(n + 1), good.prior, 1e-9)[0]
    assert not identity.holds and identity.gap > 1e-3  # GM read at face value is not optimal for L1
    point_mass = np.eye(n + 1)[2]
    assert not remap_certificate(M, L, S, good.remap, point_mass, 1e-9)[0].holds


def test_private_certificate_fails_on_a_suboptimal_mechanism():
    n, alpha = 4, 0.5
    L = loss_matrix("L1", n)
    S = np.arange(n + 1)
    own = optimal_private_mechanism(n, alpha, L)
    assert private_certificate(alpha, L, S, own.matrix, own.prior, own.up, own.down, 1e-9)[0].holds
    certificate = private_certificate(alpha, L, S, np.full((n + 1, n + 1), 1 / (n + 1)), own.prior, own.up,
                                      own.down, 1e-9)[0]
    assert not certificate.holds
    wrong_duals = private_certificate(alpha, L, S, own.matrix, own.prior, 0 * own.up, 0 * own.down, 1e-9)[0]
    assert not wrong_duals.holds


def test_exact_private_certificate_holds_on_the_optimum_and_fails_off_it():
    n, alpha = 2, Fraction(1, 2)
    L, S = loss_matrix("L1", n), np.arange(n + 1)
    own = optimal_private_mechanism(n, alpha, L)
    exact = exact_private_certificate(alpha, L, S, own.matrix, own.prior, own.up, own.down, 1e-12, 1000)[0]
    assert exact.exact and exact.holds and exact.primal == exact.dual
    not_dp = own.matrix.copy()
    not_dp[:, 0] = [1.0, 0.0, 0.0]  # input 0 always answers 0, input 1 does not: breaks 1/2-DP
    assert not exact_private_certificate(alpha, L, S, not_dp, own.prior, own.up, own.down, 1e-12, 1000)[0].holds
    mixed = 0.5 * own.matrix + 0.5 / 3  # half uniform: still 1/2-DP, but worse
    certificate = exact_private_certificate(alpha, L, S, mixed, own.prior, own.up, own.down, 1e-12, 1000)[0]
    assert not certificate.holds and certificate.gap > 0


def test_an_uncertifiable_answer_raises():
    with pytest.raises(CertificateError):
        optimal_remap(geometric(3, 0.5), loss_matrix("L1", 3), settings=RemapSettings(tol=-1.0))
    with pytest.raises(CertificateError):
        optimal_private_mechanism(3, 0.5, loss_matrix("L1", 3), settings=RemapSettings(tol=-1.0))


def test_exact_remap_certificate_on_release_weights_and_its_failure():
    n, alpha = 5, Fraction(1, 2)
    released = round_to_release(geometric(n, float(alpha)), alpha)
    L = loss_matrix("L0d:1", n)
    remap = optimal_release_remap(released, L, [1, 2, 3])
    assert remap.certificate.exact and remap.certificate.holds
    assert isinstance(remap.certificate.primal, Fraction)
    assert remap.worst_loss == pytest.approx(optimal_remap(released.matrix, L, [1, 2, 3]).worst_loss, abs=1e-12)
    broken = remap.remap.copy()
    broken[:, 2] = np.eye(n + 1)[0]  # answer 0 whenever 2 is released
    certificate, _, rational = exact_remap_certificate(released.weights, released.denominator, L, remap.side,
                                                       broken, remap.prior, 1e-9)
    assert not certificate.holds
    assert all(sum(rational[:, r]) == 1 for r in range(n + 1))


def test_dp_closure_removes_a_tiny_violation_without_mixing():
    alpha = 0.1
    X = np.array([[0.9, 0.5, 0.05], [0.1, 0.5 - 7e-10, 0.95 - 7e-11], [0.0, 7e-10, 7e-11]])
    assert np.allclose(X.sum(axis=0), 1.0, atol=1e-15)
    assert not is_alpha_dp(X, alpha)  # X[2, 0] = 0 beside 7e-10: alpha X[2, 1] = 7e-11 > 0
    closed = dp_closure(X, alpha)
    assert is_alpha_dp(closed, alpha)
    assert np.max(np.abs(closed - X)) < 1e-9


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="loss"):
        optimal_remap(geometric(3, 0.5), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="0..3"):
        optimal_remap(geometric(3, 0.5), loss_matrix("L1", 3), [4])
    with pytest.raises(ValueError, match="too large"):
        optimal_remap(geometric(9, 0.5), loss_matrix("L1", 9), settings=RemapSettings(max_n=8))
    with pytest.raises(ValueError, match="alpha"):
        optimal_private_mechanism(3, 1.5, loss_matrix("L1", 3))
