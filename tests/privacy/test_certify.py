"""The DP certificate: exact float checks and the smallest repair by mixing with UM."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import geometric, uniform
from countdp.privacy.certify import certify, is_alpha_dp


def test_uniform_is_exactly_dp():
    assert is_alpha_dp(uniform(6), 0.999)


def test_breaking_one_inequality_is_detected_and_repaired_minimally():
    alpha, n = 0.8, 4
    P = uniform(n).copy()
    # Move mass inside column 2 so that P[0, 2] < alpha * P[0, 1]: the ratio 0.1/0.2 breaks 0.8.
    P[0, 2], P[1, 2] = 0.1, 0.3
    assert not is_alpha_dp(P, alpha)
    fixed, cert = certify(P, alpha)
    assert cert.certified and is_alpha_dp(fixed, alpha)
    assert cert.violation_before == pytest.approx(alpha * 0.2 - 0.1)
    assert cert.violation_after == 0.0
    # Exact-arithmetic lambda for the binding row: (1-lam)(0.1 - a*0.2) + lam(1-a)/5 = 0, and the
    # reverse inequality P[0,3] >= a P[0,2] is fine; P[0,2] vs P[0,1]... the worst constraint decides.
    r = 0.1 - alpha * 0.2
    lam_needed = -r / ((1 - alpha) / 5 - r)
    assert lam_needed <= cert.repair_lambda <= 2 * lam_needed + 1e-15
    # A smaller mixture than the exact bound is still not DP: the repair is (near) minimal.
    smaller = (1 - 0.99 * lam_needed) * P + 0.99 * lam_needed / 5
    assert not is_alpha_dp(smaller, alpha)


def test_negative_entries_are_repaired():
    P = uniform(3)
    P[0, :] = -1e-9  # a row of tiny negative entries, DP ratios among them still fine
    P[1, :] += 1e-9
    assert not is_alpha_dp(P, 0.5)
    fixed, cert = certify(P, 0.5)
    assert cert.certified and fixed.min() >= 0
    assert cert.violation_before == pytest.approx(1e-9)
    needed = 1e-9 / (0.25 + 1e-9)  # (1-lam)(-1e-9) + lam/4 >= 0
    assert needed * (1 - 1e-9) <= cert.repair_lambda <= 2 * needed


def test_column_sums_are_renormalised():
    P = geometric(5, 0.7) * 1.001
    fixed, cert = certify(P, 0.7)
    assert cert.column_sum_error_before == pytest.approx(0.001, rel=1e-6)
    assert np.all(np.abs(fixed.sum(axis=0) - 1) <= 1e-12)


def test_solver_style_noise_is_repaired_with_tiny_lambda():
    rng = np.random.default_rng(1)
    for n in (5, 20, 60):
        P = geometric(n, 0.9) + rng.normal(scale=1e-9, size=(n + 1, n + 1))
        fixed, cert = certify(P, 0.9)
        assert cert.certified and is_alpha_dp(fixed, 0.9)
        assert cert.repair_lambda < 1e-5
        assert np.max(np.abs(fixed - P)) <= cert.repair_lambda + 1e-8


def test_hopeless_matrix_becomes_uniform():
    P = np.eye(4)  # truthful: not DP for any alpha
    fixed, cert = certify(P, 0.5)
    assert cert.certified and is_alpha_dp(fixed, 0.5)
    assert 0 < cert.repair_lambda <= 1


@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.zeros((0, 0)), [[np.nan, 0.5], [0.5, 0.5]], [[1.0]]])
def test_malformed_matrices_raise(bad):
    with pytest.raises(ValueError, match="mechanism"):
        certify(bad, 0.5)
