"""The exact sampler: its realized distribution is W / D, computed exactly, not estimated.

* With a small denominator (D = 2**12) every possible draw goes through the sampler's own
  mapping, and the outputs are counted: the counts must equal the weights exactly.
* At the production denominator (D = 2**62) the draws on both sides of every cumulative
  weight are mapped: ``c - 1`` to the output whose interval ends at ``c``, ``c`` to the next.
* A chi-square test at 10**6 seeded draws through the CLI.
* One count per call: the scalar path maps each draw as the definition does (smallest ``i``
  with ``u < cumulative[j, i]``, by brute force over Python-int cumulative weights), for the
  same seeded stream as the array path, and at every guide-table bucket edge; the memory it
  allocates per call does not depend on ``n`` (traced with :mod:`tracemalloc`).
* The regression: the old float inverse CDF (u = k / 2**53, output = min{i : u < cdf[i]})
  realizes a distribution that is not alpha-DP for GM at n = 60, alpha = 1/2; the new path is.
"""

from __future__ import annotations

import functools
import itertools
import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from countdp.cli import main
from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy import sampling
from countdp.privacy.certify import certify
from countdp.privacy.exact import exact_dp_check
from countdp.privacy.inverse_cdf import output_for_draw
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
    guide = guide_table(cumulative, K)
    for j in range(n + 1):
        out = outputs_for_draws(cumulative, K, np.full(draws.size, j), draws)
        assert np.array_equal(np.bincount(out, minlength=n + 1), W[:, j])
        one_by_one = [output_for_draw(cumulative, guide, j, int(u)) for u in draws]
        assert np.array_equal(np.bincount(one_by_one, minlength=n + 1), W[:, j])


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


def test_os_source_single_draws_are_uniform_and_read_the_bytes_as_the_array_path(monkeypatch):
    source = SystemRandomSource()
    top = [source.draw(2) for _ in range(100_000)]  # four values, 25,000 expected each
    assert min(top) >= 0 and max(top) < 4 and chisquare(np.bincount(top, minlength=4)).pvalue > 1e-6
    mechanism = design_named("GM", 30, "9/10")
    for k in range(40):  # the same 8 bytes give the same draw, and the same output, on both paths
        fixed = np.random.default_rng(k).bytes(8)
        monkeypatch.setattr(sampling.os, "urandom", lambda size, b=fixed: b * (size // 8))
        assert source.draw(62) == int(source.draws(1, 62)[0])
        j = k % 31
        assert int(release(mechanism, j)) == int(release(mechanism, np.array([j, j]))[0])


# ---------------------------------------------------------------- one count per call
@functools.cache
def _gm(n: int):
    return design_named("GM", n, "9/10").released


def _definition(W: np.ndarray, j: int, u: int) -> int:
    """The sampler's definition, by brute force: the smallest i with u < W[0, j] + ... + W[i, j] (Python ints)."""
    return next(i for i, c in enumerate(itertools.accumulate(int(w) for w in W[:, j])) if u < c)


@pytest.mark.parametrize("n", [1, 2, 7, 40, 257])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_count_per_call_is_bit_identical_to_the_definition(n, seed):
    """Scalar, one-element list and array calls consume the Generator's words in order, 62 bits each."""
    released = _gm(n)
    W, K = np.asarray(released.weights), released.K
    counts = [int(c) for c in np.random.default_rng(1000 + seed).integers(0, n + 1, 200)]
    words = np.random.default_rng(seed).bit_generator.random_raw(3 * len(counts))
    expected = [_definition(W, j, int(w) >> (64 - K)) for j, w in zip(counts * 3, words, strict=True)]
    rng = np.random.default_rng(seed)
    scalar = [release(released, c, rng) for c in counts]
    assert all(out.shape == () and out.dtype == np.int64 for out in scalar)
    one_list = [release(released, [c], rng) for c in counts[:100]] + [release(released, (c,), rng)
                                                                       for c in counts[100:]]
    assert all(out.shape == (1,) and out.dtype == np.int64 for out in one_list)
    array = release(released, np.array(counts), rng)
    assert [int(o) for o in scalar] + [int(o[0]) for o in one_list] + array.tolist() == expected
    assert release(released, np.array(counts), np.random.default_rng(seed)).tolist() == expected[:200]


@pytest.mark.parametrize("n", [1, 5, 40, 300])
def test_draws_at_every_bucket_edge_and_every_interval_end_follow_the_definition(n):
    """Both paths, at the first and last draw of every bucket and on both sides of every cumulative weight."""
    released = _gm(n)
    W, K, (table, shift) = np.asarray(released.weights), released.K, released.guide
    starts = np.where(table >= 0, table, ~table).astype(np.int64)
    several = (np.diff(starts, axis=1) >= 2) & (table[:, :-1] < 0)  # buckets holding two or more boundaries
    assert several.any() or n < 300  # at n = 300 the tails' tiny weights share buckets: bisections of several steps
    for j in range(n + 1):
        buckets = np.arange(table.shape[1], dtype=np.int64)
        ends = np.array(list(itertools.accumulate(int(w) for w in W[:, j]))[:-1], dtype=np.int64)
        draws = np.unique(np.concatenate([buckets << shift, ((buckets + 1) << shift) - 1, ends - 1, ends,
                                          [0, (1 << K) - 1]]))
        draws = draws[(draws >= 0) & (draws < 1 << K)]
        expected = np.searchsorted(ends, draws, side="right")  # outputs whose interval ends at or before u
        spot = np.random.default_rng(j).choice(draws.size, 20)
        assert [_definition(W, j, int(u)) for u in draws[spot]] == expected[spot].tolist()
        vector = outputs_for_draws(released.cumulative, K, np.full(draws.size, j), draws, released.guide)
        scalar = [output_for_draw(released.cumulative, released.guide, j, int(u)) for u in draws]
        assert np.array_equal(vector, expected) and scalar == expected.tolist()


def test_a_long_run_of_tiny_weights_in_one_bucket_is_searched_exactly():
    """Hand-made: 40 outputs of weight 0 or 1 share one bucket at D = 2**12; every draw enumerated."""
    K, N = 12, 64
    W = np.zeros((N, 2), dtype=np.int64)
    W[1:41:2, 0] = 1  # outputs 1, 3, ..., 39 weigh 1, the even ones 0
    W[41:, 0] = 2
    W[0, 0] = (1 << K) - W[1:, 0].sum()
    W[:, 1] = W[::-1, 0]
    cumulative = np.ascontiguousarray(np.cumsum(W, axis=0).T)
    guide = guide_table(cumulative, K)
    draws = np.arange(1 << K, dtype=np.int64)
    for j in range(2):
        scalar = [output_for_draw(cumulative, guide, j, int(u)) for u in draws]
        vector = outputs_for_draws(cumulative, K, np.full(draws.size, j), draws, guide)
        assert np.array_equal(np.bincount(scalar, minlength=N), W[:, j])
        assert np.array_equal(vector, scalar)


def _bytes_allocated_by(call) -> int:
    """Peak bytes traced by :mod:`tracemalloc` (Python objects and numpy buffers) during ``call()``."""
    call()  # the cached tables are built outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_memory_allocated_per_call_does_not_grow_with_n():
    """n = 10 against n = 1024 (whose cumulative table alone is 8.4 MB): the same bytes, within 512."""
    small, large = _gm(10), _gm(1024)
    calls = [lambda m: release(m, 7, np.random.default_rng(0)), lambda m: release(m, [7]),
             lambda m: release(m, np.array([3, 7, 9]), np.random.default_rng(1))]
    for call in calls:
        at_small = _bytes_allocated_by(lambda c=call: c(small))
        at_large = _bytes_allocated_by(lambda c=call: c(large))
        assert at_large <= at_small + 512 and at_large < 16_384
    copy = _bytes_allocated_by(lambda: large.cumulative.T.ravel())  # the probe sees a table copy
    assert copy >= large.cumulative.nbytes


def test_one_count_inputs_are_checked_as_arrays_are():
    released = _gm(10)
    assert release(released, np.int32(4), np.random.default_rng(0)).shape == ()
    assert release(released, np.array(4)).shape == () and release(released, np.array([[4]])).shape == (1, 1)
    for bad in (11, -1, [11], True, [True], np.array([True]), 3.0, [3.0], np.array([2.0])):
        with pytest.raises(ValueError, match="integers in 0..10"):
            release(released, bad)
    for rng in ("seed", 5):
        with pytest.raises(ValueError, match="rng must be"):
            release(released, 3, rng)
        with pytest.raises(ValueError, match="rng must be"):
            release(released, [3, 4], rng)


def test_the_cached_tables_are_c_contiguous_read_only_and_exact():
    released = _gm(40)
    W = np.asarray(released.weights)
    assert released.cumulative.flags.c_contiguous and not released.cumulative.flags.writeable
    assert np.array_equal(released.cumulative, np.cumsum(W, axis=0).T)
    assert (released.cumulative[:, -1] == released.denominator).all()
    table, shift = released.guide
    assert table.flags.c_contiguous and not table.flags.writeable and table.dtype == np.int32
    assert np.array_equal(table, guide_table(np.cumsum(W.T, axis=1), released.K)[0])  # any layout, same table


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
