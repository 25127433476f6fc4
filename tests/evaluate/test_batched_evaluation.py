"""The batched paths of the evaluations give exactly what the one-at-a-time definitions give.

* ``release_each``: each array of counts gets the outputs that its own draws map to, by the
  definition of the sampler (smallest output whose cumulative weight exceeds the draw),
  computed here by a plain search over Python integers.
* ``empirical_errors`` / ``expected_errors``: brute-force loops over releases and over the
  sum ``sum_j q_j sum_i loss(i, j) P[i, j]``; closed forms for UM and GM.
* ``binomial_distribution``: the values of ``scipy.stats.binom.pmf``, bit for bit, and the
  formula ``C(n, k) p^k (1-p)^(n-k)`` in exact rational arithmetic.
* the rounding's integer/fraction split of each column's target (``dp_weights``,
  ``largest_remainder_weights``): every weight within one unit of the exact rational target.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from countdp.design.designer import design_named
from countdp.evaluate.metrics import binomial_distribution, empirical_errors, expected_errors
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.privacy.rounding import dp_weights, largest_remainder_weights
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


def mixing_interval(P: np.ndarray, W: np.ndarray, K: int) -> tuple[Fraction, Fraction, bool]:
    """The open interval ``(lo, hi)`` of mixing weights ``lam`` for which every entry of ``W`` is within
    one unit of ``T(lam) = (1 - lam)(X + e_j/N) + lam D/N``, in exact rationals (Python ints and
    Fractions, entry by entry: exactness needs them), with ``X = floor(P D)`` and ``e_j = D - sum_i X[i, j]``
    as the module docstring of :mod:`countdp.privacy.rounding` defines them; the flag says whether the
    entries whose target does not depend on ``lam`` are within one unit too."""
    N, D = len(P), 1 << K
    X = [[math.floor(Fraction(float(p)) * D) for p in row] for row in P]
    shortfall = [D - sum(X[i][j] for i in range(N)) for j in range(N)]
    lo, hi, fixed_ok = Fraction(-1), Fraction(2), True
    for i in range(N):
        for j in range(N):
            y = X[i][j] + Fraction(shortfall[j], N)
            slope, w = Fraction(D, N) - y, int(W[i, j])  # T = y + lam * slope
            if slope == 0:
                fixed_ok &= abs(w - y) < 1
                continue
            a, b = sorted([(w - 1 - y) / slope, (w + 1 - y) / slope])
            lo, hi = max(lo, a), min(hi, b)
    return lo, hi, fixed_ok


def identity_needs(alpha: Fraction, N: int) -> Fraction:
    """Least ``lam`` making ``(1 - lam) I + lam U`` alpha-DP.

    ``alpha T_ii <= T_ij`` reads ``alpha (1 - lam + lam/N) <= lam/N``, i.e. ``lam >= alpha N / (alpha N + 1 - alpha)``.
    """
    return alpha * N / (alpha * N + 1 - alpha)


ROUNDING_CASES = {  # (P, alpha, the least mixing weight by an independent argument); lam from 0 to 1
    "GM, no mixing needed": (geometric(6, 0.5), "1/2", Fraction(0)),
    "GM, tiny mixing": (geometric(6, 0.3), "3/10", Fraction(0)),
    "EM, tiny mixing": (explicit_fair(6, 0.5), "1/2", Fraction(0)),
    "random columns": (np.random.default_rng(4).dirichlet(np.ones(7), size=7).T, "1/2", Fraction(0)),
    "identity": (np.eye(7), "1/2", identity_needs(Fraction(1, 2), 7)),
    "identity, alpha near 1": (np.eye(7), "9999999/10000000", identity_needs(Fraction(9999999, 10000000), 7)),
}


@pytest.mark.parametrize("case", ROUNDING_CASES)
def test_rounding_targets_the_exact_mixture(case):
    """Each released column is within one unit of (1 - lam)(X + e_j/N) + lam D/N, as rationals, for an
    exact mixing weight at or just above the reported one (``lam = a / 2**M`` with ``M >= 31``, so less
    than ``2**-31`` above it), across mixing weights from 0 to 1; the 62-bit entries exercise the
    31-bit split of ``lam * X``."""
    P, alpha, least = ROUNDING_CASES[case]
    K = 62
    W, lam = dp_weights(P, alpha, K)
    assert (W.sum(axis=0) == 1 << K).all()
    assert lam >= least
    lo, hi, fixed_ok = mixing_interval(P, W, K)
    assert fixed_ok and max(lo, Fraction(lam)) < min(hi, Fraction(lam) + Fraction(1, 1 << 31)), (lo, hi, lam)


def test_largest_remainder_rounding_is_within_one_unit_of_the_unmixed_target():
    """Without DP slack to buy, the plain rounding is the mixture at ``lam = 0``: every entry within one unit."""
    rng = np.random.default_rng(4)
    for K in (12, 40, 62):
        P = rng.dirichlet(np.ones(9), size=9).T
        W = largest_remainder_weights(P, K)
        assert (W.sum(axis=0) == 1 << K).all()
        lo, hi, fixed_ok = mixing_interval(P, W, K)
        assert fixed_ok and lo < 0 < hi, (K, lo, hi)
        broken = W.copy()
        broken[0, 0] += 2
        broken[1, 0] -= 2  # column sum kept; two entries now two units off their targets
        lo, hi, fixed_ok = mixing_interval(P, broken, K)
        assert not (fixed_ok and lo < 0 < hi)
