"""The batched paths of the evaluations give exactly what the one-at-a-time definitions give.

* ``release_each``: each array of counts gets the outputs that its own draws map to, by the
  definition of the sampler (smallest output whose cumulative weight exceeds the draw),
  computed here by a plain search over Python integers.
* ``empirical_errors`` / ``expected_errors``: brute-force loops over releases and over the
  sum ``sum_j q_j sum_i loss(i, j) P[i, j]``; closed forms for UM and GM.
* ``binomial_distribution``: the values of ``scipy.stats.binom.pmf``, bit for bit, and the
  formula ``C(n, k) p^k (1-p)^(n-k)`` in exact rational arithmetic.
* the rounding's integer/fraction split of each column's target: exact rationals.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from countdp.design.designer import design_named
from countdp.evaluate.metrics import binomial_distribution, empirical_errors, expected_errors
from countdp.mechanisms.closed_forms import geometric, uniform
from countdp.privacy.rounding import _dyadic, _round_mixture
from countdp.privacy.sampling import release, release_each


def _by_definition(W: np.ndarray, counts: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Output for each (count, draw): the smallest i with draw < W[0, j] + ... + W[i, j] (Python ints)."""
    out = []
    for j, u in zip(counts.tolist(), draws.tolist(), strict=False):
        total, i = 0, 0
        while True:
            total += int(W[i, j])
            if u < total:
                break
            i += 1
        out.append(i)
    return np.array(out)


def test_release_each_maps_every_arrays_own_draws_by_the_definition():
    mechanism = design_named("WM", 6, "10/11")
    W, K = mechanism.released.weights, mechanism.released.K
    rng = np.random.default_rng(5)
    counts = [rng.integers(0, 7, size=s) for s in (40, 0, 1, 257)] + [np.array([[0, 6], [3, 3]])]
    outs = release_each(mechanism, counts, [np.random.default_rng(100 + k) for k in range(len(counts))])
    for k, (c, out) in enumerate(zip(counts, outs, strict=False)):
        draws = np.random.default_rng(100 + k).bit_generator.random_raw(c.size) >> np.uint64(64 - K)
        assert out.shape == c.shape
        assert np.array_equal(out.ravel(), _by_definition(W, c.ravel(), draws.astype(np.int64)))
        assert np.array_equal(out, release(mechanism, c, np.random.default_rng(100 + k)))


def test_release_each_refuses_bad_input():
    mechanism = design_named("GM", 3, "1/2")
    with pytest.raises(ValueError, match="2 arrays of counts for 1 random sources"):
        release_each(mechanism, [np.zeros(2, int), np.zeros(2, int)], [None])
    with pytest.raises(ValueError, match=r"integers in 0\.\.3"):
        release_each(mechanism, [np.zeros(2, int), np.array([4])], [None, None])
    with pytest.raises(ValueError, match="certified mechanism"):
        release_each(geometric(3, 0.5), [np.zeros(2, int)], [None])
    assert release_each(mechanism, [], []) == []


@pytest.mark.parametrize("measure", ["L0", "L0d:1", "L1", "L2", "RMSE"])
def test_empirical_errors_match_a_loop_over_releases(measure):
    rng = np.random.default_rng(1)
    true = [rng.integers(0, 9, size=s) for s in (1, 7, 300)]
    released = [rng.integers(0, 9, size=t.size) for t in true]
    loss = {"L0": lambda d: d != 0, "L0d:1": lambda d: abs(d) > 1, "L1": abs, "L2": lambda d: d * d,
            "RMSE": lambda d: d * d}[measure]
    got = empirical_errors(true, released, measure)
    for value, t, r in zip(got, true, released, strict=False):
        total = Fraction(sum(int(loss(int(b) - int(a))) for a, b in zip(t, r, strict=False)), t.size)
        want = math.sqrt(total) if measure == "RMSE" else float(total)
        assert value == pytest.approx(want, rel=1e-15, abs=0)


def test_empirical_errors_refuse_mismatched_input():
    with pytest.raises(ValueError, match="2 arrays of true counts for 1"):
        empirical_errors([np.zeros(2, int)] * 2, [np.zeros(2, int)])
    with pytest.raises(ValueError, match="same shape"):
        empirical_errors([np.zeros(2, int)], [np.zeros(3, int)])
    with pytest.raises(ValueError, match="must be integers"):
        empirical_errors([np.zeros(2, int)], [np.array([0.5, 1.0])])


@pytest.mark.parametrize("measure", ["L0", "L0d:2", "L1", "RMSE"])
def test_expected_errors_match_the_double_sum(measure):
    n, a = 6, 0.8
    P = geometric(n, a)
    rng = np.random.default_rng(2)
    qs = [q / q.sum() for q in rng.random((4, n + 1))]
    loss = {"L0": lambda d: d != 0, "L0d:2": lambda d: abs(d) > 2, "L1": abs, "RMSE": lambda d: d * d}[measure]
    for value, q in zip(expected_errors(P, qs, measure), qs, strict=False):
        total = sum(q[j] * loss(i - j) * P[i, j] for i in range(n + 1) for j in range(n + 1))
        assert value == pytest.approx(math.sqrt(total) if measure == "RMSE" else total, rel=1e-12)
    # UM's L0 is n/(n+1) whatever the data
    assert np.allclose(expected_errors(uniform(n), qs, "L0"), n / (n + 1), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="input_distribution must sum to 1"):
        expected_errors(P, [qs[0], 2 * qs[1]], measure)


@pytest.mark.parametrize("n", [1, 4, 8, 12, 16, 40])
def test_binomial_distribution_is_scipys_pmf_bit_for_bit(n):
    for p in (0.0, 0.05, 0.1, 1 / 3, 0.5, 0.67, 0.95, 1.0):
        got = binomial_distribution(n, p)
        assert np.array_equal(got, binom.pmf(np.arange(n + 1), n, p)) and got.dtype == np.float64
        exact = [math.comb(n, k) * Fraction(p) ** k * (1 - Fraction(p)) ** (n - k) for k in range(n + 1)]
        assert np.allclose(got, [float(e) for e in exact], rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("lam", [0.0, 3e-13, 0.37, 1.0])
def test_rounding_targets_the_exact_mixture(lam):
    """Each released column is within one unit of (1 - lam)(X + e_j/N) + lam D/N, as rationals."""
    K, N = 62, 7
    rng = np.random.default_rng(4)
    D = 1 << K
    X = rng.integers(0, D // N, size=(N, N), dtype=np.int64)
    shortfall = D - X.sum(axis=0)
    a, M = _dyadic(lam) if lam > 0 else (0, 62)
    lam_exact = Fraction(a, 1 << M)
    W = _round_mixture(X, shortfall, lam, K)
    assert (W.sum(axis=0) == D).all()
    for i in range(N):
        for j in range(N):
            target = (1 - lam_exact) * (int(X[i, j]) + Fraction(int(shortfall[j]), N)) + lam_exact * D / N
            assert abs(int(W[i, j]) - target) < 1
