"""The exact sampler: its realized distribution is W / D, computed exactly, not estimated.

* With a small denominator (D = 2**12) every possible draw goes through the sampler's own
  mapping, and the outputs are counted: the counts must equal the weights exactly.
* At the production denominator (D = 2**62) the draws on both sides of every cumulative
  weight are mapped: ``c - 1`` to the output whose interval ends at ``c``, ``c`` to the next.
* A chi-square test at 10**6 seeded draws through the CLI.
* The regression: the old float inverse CDF (u = k / 2**53, output = min{i : u < cdf[i]})
  realizes a distribution that is not alpha-DP for GM at n = 60, alpha = 1/2; the new path is.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from countdp.cli import main
from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.certify import certify
from countdp.privacy.exact import exact_dp_check
from countdp.privacy.rounding import dp_weights
from countdp.privacy.sampling import SystemRandomSource, guide_table, outputs_for_draws, release, uniform_draws


def _cumulative(W: np.ndarray) -> np.ndarray:
    return np.cumsum(W.T, axis=1)


@pytest.mark.parametrize("name,n,alpha", [("GM", 4, Fraction(1, 2)), ("EM", 5, Fraction(2, 3)),
                                          ("GM", 9, Fraction(9, 10)), ("EM", 1, Fraction(1, 3))])
def test_every_draw_of_a_small_denominator_realizes_the_weights_exactly(name, n, alpha):
    K = 12
    P = certify({"GM": geometric, "EM": explicit_fair}[name](n, float(alpha)), float(alpha))[0]
    W, _ = dp_weights(P, alpha, K)
    assert exact_dp_check(W, alpha, K).holds
    cumulative = _cumulative(W)
    draws = np.arange(1 << K, dtype=np.int64)
    for j in range(n + 1):
        out = outputs_for_draws(cumulative, K, np.full(draws.size, j), draws)
        assert np.array_equal(np.bincount(out, minlength=n + 1), W[:, j])


def test_zero_weights_are_never_drawn():
    K = 4
    W = np.array([[0, 8, 16], [16, 8, 0], [0, 0, 0]], dtype=np.int64)
    draws = np.arange(16, dtype=np.int64)
    for j in range(3):
        out = outputs_for_draws(_cumulative(W), K, np.full(16, j), draws)
        assert np.array_equal(np.bincount(out, minlength=3), W[:, j])


@pytest.mark.parametrize("name,n,alpha", [("GM", 60, "1/2"), ("EM", 33, "10/11"), ("WM", 12, "2/3")])
def test_cdf_boundaries_at_the_production_denominator(name, n, alpha):
    released = design_named(name, n, alpha).released
    cumulative, K = released.cumulative, released.K
    assert released.weights.min() > 0
    rows, cols = np.nonzero(released.weights.T[:, :-1] >= 0)
    c = cumulative[rows, cols]  # the end of output cols' interval for input rows
    below = outputs_for_draws(cumulative, K, rows, c - 1)
    above = outputs_for_draws(cumulative, K, rows, c)
    assert np.array_equal(below, cols)  # every weight is positive, so c - 1 is inside interval cols
    assert np.array_equal(above, cols + 1)
    ends = np.zeros(n + 1, dtype=np.int64)
    assert np.array_equal(outputs_for_draws(cumulative, K, np.arange(n + 1), ends), np.zeros(n + 1))
    last = np.full(n + 1, (1 << K) - 1, dtype=np.int64)
    assert np.array_equal(outputs_for_draws(cumulative, K, np.arange(n + 1), last), np.full(n + 1, n))


def test_guide_table_never_starts_past_the_answer():
    """Each bucket's start is the answer for its first draw; a bucket marked whole has one answer."""
    released = design_named("GM", 20, "9/10").released
    table, shift = guide_table(released.cumulative, released.K)
    first = np.arange(table.shape[1], dtype=np.int64) << shift
    last = first + (1 << shift) - 1
    whole = table >= 0
    start = np.where(whole, table, ~table)
    assert 0.5 < whole.mean() < 1  # most buckets need no search
    for j in range(21):
        at_first = np.searchsorted(released.cumulative[j], first, side="right")
        at_last = np.searchsorted(released.cumulative[j], last, side="right")
        assert np.array_equal(start[j], at_first)
        assert np.array_equal(whole[j], at_first == at_last)


def test_cli_release_matches_the_weights_in_a_chi_square_test(tmp_path, capsys):
    path = tmp_path / "gm.json"
    assert main(["design", "GM", "--n", "60", "--alpha", "1/2", "--out", str(path)]) == 0
    j, draws = 30, 1_000_000
    assert main(["release", str(path), *[str(j)] * draws, "--seed", "2018"]) == 0
    out = np.array(capsys.readouterr().out.split(), dtype=np.int64)
    released = design_named("GM", 60, "1/2").released
    expected = np.array([Fraction(int(w), released.denominator) for w in released.weights[:, j]]) * draws
    keep = np.array([e >= 5 for e in expected])  # pool the far tails (expected < 5) into one cell
    observed = np.bincount(out, minlength=61)
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append([float(e) for e in expected[keep]], float(sum(expected[~keep])))
    assert chisquare(obs, exp).pvalue > 1e-4


def test_seeded_release_is_reproducible_and_the_os_source_is_not():
    mechanism = design_named("EM", 8, "0.9")
    counts = np.arange(9).repeat(100)
    a = release(mechanism, counts, np.random.default_rng(3))
    assert np.array_equal(a, release(mechanism, counts, np.random.default_rng(3)))
    b, c = release(mechanism, counts), release(mechanism, counts)
    assert b.shape == counts.shape and not np.array_equal(b, c)  # equal with probability < 1e-50
    assert release(mechanism, np.array([], dtype=np.int64)).size == 0
    assert release(mechanism, np.array([[0, 8], [4, 4]]), np.random.default_rng(0)).shape == (2, 2)


def test_os_source_draws_are_uniform_integers_in_range():
    source = SystemRandomSource()
    for K in (1, 12, 62):
        d = uniform_draws(source, 50_000, K)
        assert d.dtype == np.int64 and d.min() >= 0 and d.max() < (1 << K)
    top = uniform_draws(source, 200_000, 2)  # four values, 50,000 expected each
    assert chisquare(np.bincount(top, minlength=4)).pvalue > 1e-6


# ---------------------------------------------------------------- regression: the old float sampler
def _float_inverse_cdf_counts(P: np.ndarray) -> np.ndarray:
    """What ``rng.random()`` (k / 2**53) pushed through ``min{i : u < cdf[i]}`` realizes, exactly.

    For a float CDF value c, the draws with k / 2**53 < c number ceil(c * 2**53); the count
    of output i is the difference of consecutive ones (the last CDF value was forced to 1).
    """
    cdf = np.cumsum(P, axis=0)
    cdf[-1, :] = 1.0
    scale = 2**53
    ends = np.array([[math.ceil(Fraction(float(c)) * scale) for c in row] for row in cdf], dtype=np.int64)
    return np.diff(np.vstack([np.zeros((1, P.shape[1]), dtype=np.int64), ends]), axis=0)


def test_the_old_float_sampler_was_not_dp_and_the_release_path_is():
    alpha = Fraction(1, 2)
    design = design_named("GM", 60, alpha)
    realized = _float_inverse_cdf_counts(design.matrix)  # the certified float matrix, as sampled before
    old = exact_dp_check(realized, alpha, 53)
    assert not old.holds and old.broken > 100
    zero_next_to_positive = ((realized[:, 1:] == 0) & (realized[:, :-1] > 0)) | \
                            ((realized[:, :-1] == 0) & (realized[:, 1:] > 0))
    assert zero_next_to_positive.any()  # unbounded privacy loss
    assert exact_dp_check(design.released.weights, alpha, design.released.K).holds
