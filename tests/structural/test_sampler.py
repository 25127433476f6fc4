"""The structural sampler draws exactly the column weights: every draw enumerated at small K.

With ``K = 12..18`` there are only thousands of draws per column, so the histogram of the
sampler's outputs over *all* of them is the distribution it samples, compared with the weights
generated column by column.  Sizes across a whole size range are drawn from one table.
"""

from fractions import Fraction

import numpy as np
import pytest

from countdp.privacy.exact import exact_dp_check
from countdp.structural.fair import fair_form
from countdp.structural.geometric import geometric_form
from countdp.structural.uniform import uniform_form

FORMS = [geometric_form, fair_form, uniform_form]
CASES = [(1, Fraction(1, 2), 12), (4, Fraction(1, 2), 12), (7, Fraction(2, 3), 14), (6, Fraction(1, 3), 12),
         (9, Fraction(3, 4), 16), (40, Fraction(1, 2), 18)]


def histogram(form, j: int, n: int, K: int) -> np.ndarray:
    draws = np.arange(1 << K)
    out = form.outputs(np.full(draws.size, j), draws, np.full(draws.size, n))
    return np.bincount(out, minlength=n + 1)


@pytest.mark.parametrize("form_of", FORMS)
@pytest.mark.parametrize(("n", "alpha", "K"), CASES)
def test_every_draw_of_every_column(form_of, n, alpha, K):
    form = form_of(n, alpha, K)
    assert form.certify().holds
    W = form.dense_weights()
    assert np.array_equal(W, np.stack([form.column(j) for j in range(n + 1)], axis=1))
    assert exact_dp_check(W, alpha, K).holds
    for j in range(n + 1):
        assert np.array_equal(histogram(form, j, n, K), form.column(j))


@pytest.mark.parametrize("form_of", [geometric_form, fair_form])
def test_every_size_of_a_range_from_one_table(form_of):
    form = form_of(40, Fraction(1, 2), 18)
    lo, hi = form.sizes
    assert hi > lo or form_of is fair_form
    for n in range(lo, min(hi, lo + 8) + 1):
        sized = form.for_size(n)
        assert exact_dp_check(sized.dense_weights(), Fraction(1, 2), 18).holds
        for j in (0, n // 3, n):
            assert np.array_equal(histogram(form, j, n, 18), sized.column(j))


@pytest.mark.parametrize("form_of", FORMS[:2])
@pytest.mark.parametrize(("n", "alpha"), [(3, Fraction(1, 2)), (9, Fraction(2, 3)), (24, Fraction(1, 2))])
def test_two_word_draws_enumerated(form_of, n, alpha):
    """K = 20 split as a 10-bit first word and a 10-bit second: every (w1, w2) pair enumerated.

    The second word is given as an array, so the rows that need it (a category boundary or the
    floor inside w1's cell) read it; the histogram of all 2^20 draws is the column's weights."""
    K, coarse = 20, 10
    form = form_of(n, alpha, K, coarse_bits=coarse)
    assert form.wide and form.certify().holds
    w1, w2 = np.divmod(np.arange(1 << K), 1 << (K - coarse))
    for j in range(n + 1):
        out = form.outputs(np.full(w1.size, j), w1, fine=w2)
        assert np.array_equal(np.bincount(out, minlength=n + 1), form.column(j).astype(np.int64)), j


def test_a_wide_draw_without_its_second_word_is_refused():
    form = geometric_form(5, Fraction(1, 2), 20, coarse_bits=10)
    with pytest.raises(ValueError, match="second word"):
        form.outputs(np.zeros(1 << 10, dtype=np.int64), np.arange(1 << 10))


def test_sizes_outside_the_range_are_refused():
    form = geometric_form(40, Fraction(1, 2), 18)
    with pytest.raises(ValueError, match="serves group sizes"):
        form.outputs(np.array([0]), np.array([0]), np.array([form.sizes[1] + 1]))
    with pytest.raises(ValueError, match="serves group sizes"):
        form.for_size(form.sizes[0] - 1)


def test_seeded_words_give_the_same_release():
    form = geometric_form(10**6, Fraction(9, 10), 62)
    words = np.random.default_rng(7).integers(0, 2**63, 1000, dtype=np.uint64)
    counts = np.arange(1000) * 997
    assert np.array_equal(form.sample(counts, words), form.sample(counts, words))


def test_large_n_frequencies_match_the_exact_weights():
    """At n = 10^6, 10^6 OS-source draws in one interior column: each output's count is within five
    standard deviations of D-exact expectation (a fixed check; it fails on a shifted sampler)."""
    import os

    form = fair_form(10**6, Fraction(1, 2), 62)
    j, N = 500_000, 10**6
    words = np.frombuffer(os.urandom(8 * N), dtype=np.uint64)
    out = form.sample(np.full(N, j), words)
    for i in (j - 2, j - 1, j, j + 1, j + 2, j + 3):
        p = form.column(j)[i] / form.denominator
        assert abs((out == i).sum() - N * p) <= 5 * np.sqrt(N * p * (1 - p)) + 1
    shifted = out + 1
    p = form.column(j)[j] / form.denominator
    assert abs((shifted == j).sum() - N * p) > 5 * np.sqrt(N * p * (1 - p))
