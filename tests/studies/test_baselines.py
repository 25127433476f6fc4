"""Baselines (exponential, conditioned geometric, randomized response) against independent facts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.privacy.certify import is_alpha_dp
from countdp.studies.baselines import (
    BASELINES,
    achieved_alpha,
    baseline_matrix,
    calibrate_conditioned,
    calibrated_conditioned_geometric,
    calibrated_exponential,
    certified_baseline,
    conditioned_geometric,
    exponential_mechanism,
    randomized_response,
    rr_keep_probability,
)
from countdp.values.objectives import objective_value

ALPHAS = [0.3, 0.62, 0.76, 0.91]
NS = [1, 2, 5, 8]


def largest_dp_alpha(P: np.ndarray, iters: int = 60) -> float:
    """Brute force: bisection on the exact test ``is_alpha_dp`` (columns renormalised)."""
    lo, hi = 1e-9, 1 - 1e-12
    if is_alpha_dp(P, hi):
        return hi
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if is_alpha_dp(P, mid) else (lo, mid)
    return lo


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_achieved_alpha_on_known_mechanisms(alpha):
    assert achieved_alpha(geometric(6, alpha)) == pytest.approx(alpha, rel=1e-12)  # GM's ratios are tight
    assert achieved_alpha(uniform(6)) == 1.0
    assert achieved_alpha(np.eye(3)) == 0.0  # a zero next to a positive entry: no privacy
    P = explicit_fair(5, alpha)
    assert achieved_alpha(P) == pytest.approx(largest_dp_alpha(P), abs=1e-9)


def test_exponential_matches_definition():
    n, alpha = 5, 0.7
    eps = -math.log(alpha)
    P = np.array([[math.exp(-eps * abs(i - j) / 2) for j in range(n + 1)] for i in range(n + 1)])
    P /= P.sum(axis=0)
    np.testing.assert_allclose(exponential_mechanism(n, alpha), P, rtol=1e-13)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", NS)
def test_exponential_is_dp_with_room(n, alpha):
    P = exponential_mechanism(n, alpha)
    real = achieved_alpha(P)
    assert is_alpha_dp(P, alpha)
    assert alpha < real <= math.sqrt(alpha) + 1e-15
    assert real == pytest.approx(largest_dp_alpha(P), abs=1e-9)


def test_exponential_interior_ratio_is_sqrt_alpha():
    alpha, n = 0.62, 60
    P = exponential_mechanism(n, alpha)
    i = np.arange(n + 1)
    Z = (math.sqrt(alpha) ** np.abs(i[:, None] - i[None, :])).sum(axis=0)
    # unnormalised weights: exactly sqrt(alpha) per step; normalised: times the normaliser ratio
    for j in (10, 30, 45):
        assert P[0, j + 1] / P[0, j] * Z[j + 1] / Z[j] == pytest.approx(math.sqrt(alpha), rel=1e-12)
        assert P[n, j] / P[n, j + 1] * Z[j] / Z[j + 1] == pytest.approx(math.sqrt(alpha), rel=1e-12)
    # far from the edges the normalisers agree, so the ratio itself is sqrt(alpha)
    assert P[0, 31] / P[0, 30] == pytest.approx(math.sqrt(alpha), rel=1e-4)  # up to b^30 edge effects
    assert P[1, 1] / P[1, 2] != pytest.approx(1 / math.sqrt(alpha), rel=1e-3)  # near the edge it is not


def test_exponential_n1_achieves_sqrt_alpha():
    # two outputs: P = [[1, s], [s, 1]] / (1 + s), ratio s = sqrt(alpha) exactly
    assert achieved_alpha(exponential_mechanism(1, 0.49)) == pytest.approx(0.7, rel=1e-13)


def test_large_n_limit_of_achieved_alpha():
    # derived by hand: with b the per-step weight, the edge ratio tends to b / (1 + b - b^2)
    for b in (0.5, 0.8):
        assert achieved_alpha(conditioned_geometric(200, b)) == pytest.approx(b / (1 + b - b * b), rel=1e-9)


def test_exponential_is_conditioned_geometric_at_sqrt_alpha():
    np.testing.assert_allclose(exponential_mechanism(7, 0.64), conditioned_geometric(7, 0.8), rtol=1e-13)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", [2, 5, 8])
def test_naive_conditioning_breaks_dp_at_the_edges(n, alpha):
    P = conditioned_geometric(n, alpha)
    assert achieved_alpha(P) < alpha
    assert not is_alpha_dp(P, alpha)
    k = np.arange(n + 1)
    Z0, Z1 = (alpha**k).sum(), (alpha ** np.abs(k - 1)).sum()  # normalisers of columns 0 and 1
    assert P[0, 0] / P[0, 1] == pytest.approx(Z1 / (alpha * Z0), rel=1e-12)
    assert P[0, 0] / P[0, 1] > 1 / alpha


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", NS)
def test_calibration_reaches_alpha_exactly(n, alpha):
    b = calibrate_conditioned(n, alpha)
    P = calibrated_conditioned_geometric(n, alpha)
    assert achieved_alpha(P) >= alpha
    assert achieved_alpha(P) == pytest.approx(alpha, abs=1e-12)
    if n > 1:
        assert achieved_alpha(conditioned_geometric(n, b - 1e-9)) < alpha  # b is the smallest such base
        assert b > alpha
    assert is_alpha_dp(P, alpha)


def _exponential_by_bisection(n: int, alpha: float) -> np.ndarray:
    """The exponential mechanism (quality -|i - j|, base b = e^(-eps')) whose worst ratio of adjacent
    columns is alpha, found by bisection on b with plain Python loops (no library code)."""
    def matrix(b: float) -> list[list[float]]:
        cols = [[b ** abs(i - j) for i in range(n + 1)] for j in range(n + 1)]
        return [[cols[j][i] / sum(cols[j]) for j in range(n + 1)] for i in range(n + 1)]

    def worst_ratio(P: list[list[float]]) -> float:
        return min(min(row[j] / row[j + 1], row[j + 1] / row[j]) for row in P for j in range(n))

    lo, hi = alpha, 1.0  # at b = alpha conditioning breaks DP (worst ratio < alpha); b -> 1 is uniform
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst_ratio(matrix(mid)) < alpha else (lo, mid)
    return np.array(matrix(hi))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", NS)
def test_calibrated_exponential_matches_a_brute_force_calibration(n, alpha):
    P = calibrated_exponential(n, alpha)
    np.testing.assert_allclose(P, _exponential_by_bisection(n, alpha), rtol=0, atol=1e-9)
    assert np.allclose(P.sum(axis=0), 1) and is_alpha_dp(P, alpha)


def test_calibrated_base_is_monotone_in_alpha():
    bases = [calibrate_conditioned(6, a) for a in (0.3, 0.5, 0.7, 0.9)]
    assert bases == sorted(bases)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("n", NS)
def test_rr_keep_probability_is_the_largest_dp_one(n, alpha):
    p = rr_keep_probability(n, alpha)
    assert p == pytest.approx((1 - alpha) / (1 + alpha * n), rel=1e-15)
    lo, hi = 0.0, 1.0  # brute force: bisection on the exact DP test
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if is_alpha_dp(randomized_response(n, alpha, mid), alpha) else (lo, mid)
    assert lo == pytest.approx(p, abs=1e-12)
    P, cert = certified_baseline("RR", n, alpha)
    assert cert.certified and cert.repair_lambda < 1e-12
    np.testing.assert_allclose(np.diag(P), 1 / (1 + alpha * n), rtol=1e-12)
    L0 = objective_value(P, "L0")
    assert L0 == pytest.approx(alpha * (n + 1) / (1 + alpha * n), rel=1e-12)
    # RR is fair, so it cannot beat EM (Theorem 4), which cannot beat GM (Theorem 3)
    assert L0 >= objective_value(explicit_fair(n, alpha), "L0") - 1e-12 >= 2 * alpha / (1 + alpha) - 2e-12


@pytest.mark.parametrize("name", BASELINES)
def test_every_baseline_certifies(name):
    P, cert = certified_baseline(name, 6, 0.76)
    assert cert.certified and is_alpha_dp(P, 0.76)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    if name == "CGM-naive":
        assert cert.repair_lambda > 0.01  # a real repair, not an ulp
    else:
        assert cert.repair_lambda < 1e-12


def test_bad_inputs():
    with pytest.raises(ValueError):
        baseline_matrix("nope", 3, 0.5)
    with pytest.raises(ValueError):
        conditioned_geometric(3, 1.0)
    with pytest.raises(ValueError):
        randomized_response(3, 0.5, p=1.5)
    with pytest.raises(ValueError):
        exponential_mechanism(0, 0.5)
