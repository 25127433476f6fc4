"""Sampling releases from a mechanism's columns."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.mechanisms import explicit_fair, geometric
from countdp.sampling import release, secure_generator


@pytest.mark.parametrize("P", [geometric(6, 0.8), explicit_fair(5, 0.6)])
def test_frequencies_match_columns(P):
    rng = np.random.default_rng(7)
    N = P.shape[0]
    draws = 200_000
    for j in range(N):
        out = release(P, np.full(draws, j), rng)
        freq = np.bincount(out, minlength=N) / draws
        se = np.sqrt(P[:, j] * (1 - P[:, j]) / draws)
        assert np.all(np.abs(freq - P[:, j]) <= 5 * se + 1e-12)


def test_zero_probability_outputs_never_appear():
    P = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.5, 1.0]])
    out = release(P, np.array([0, 1, 2] * 10_000), np.random.default_rng(0))
    assert not np.any(out == 1)
    assert np.all(out[0::3] == 0) and np.all(out[2::3] == 2)


def test_seeded_release_is_reproducible_and_vectorised_over_mixed_inputs():
    P = geometric(4, 0.7)
    counts = np.array([0, 4, 2, 2, 1])
    a = release(P, counts, np.random.default_rng(3))
    b = release(P, counts, np.random.default_rng(3))
    assert np.array_equal(a, b) and a.shape == counts.shape and a.dtype == np.int64


def test_bad_counts():
    with pytest.raises(ValueError, match="true counts"):
        release(geometric(3, 0.5), np.array([4]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="true counts"):
        release(geometric(3, 0.5), np.array([0.5]), np.random.default_rng(0))


def test_secure_generator_differs_between_calls():
    g1, g2 = secure_generator(), secure_generator()
    assert isinstance(g1, np.random.Generator)
    assert not np.array_equal(g1.integers(0, 2**62, 4), g2.integers(0, 2**62, 4))
