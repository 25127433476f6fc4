"""The exact pieces of the conditioned sampler, each against an independent fact.

Independent facts used: Python's integers and :class:`~fractions.Fraction` (products, sums, shifts,
``theta**y`` written out), ``numpy.convolve`` on object arrays (polynomial products), and the
tilted product written out in Fractions (the coefficients a window must hold).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from countdp.invariants.group_total import GroupTotalSampler, GroupTotalSettings, split_sums
from countdp.invariants.leaves import leaf_bounds, tilt_powers
from countdp.invariants.limbs import carried, from_int, from_words, limb_bits, products, to_int
from countdp.invariants.packed import Bounds, Packed, bounds_product, largest, pack, shifted, top_bits, words_for
from countdp.invariants.windows import window_lengths
from tests.helpers.invariant_checks import mechanism


def random_ints(rng, count: int, bits: int) -> list[int]:
    return [int.from_bytes(rng.bytes(bits // 8 + 1), "little") % (1 << bits) for _ in range(count)]


def test_word_shifts_maxima_and_bit_lengths_are_those_of_the_integers():
    rng = np.random.default_rng(0)
    for _ in range(200):
        width = int(rng.integers(1, 4))
        values = random_ints(rng, int(rng.integers(1, 20)), int(rng.integers(1, 64 * width)))
        words = pack(values, width).words
        drop = int(rng.integers(0, 64 * width + 70))
        assert Packed(shifted(words, drop, width)).values().tolist() == [v >> drop for v in values]
        mask = rng.random(len(values)) < 0.5
        assert largest(words, mask) == max([v for v, m in zip(values, mask, strict=True) if m], default=0)
        assert top_bits(words) == max(values).bit_length()


def test_limb_products_and_running_sums_are_exact():
    rng = np.random.default_rng(1)
    for bits in (5, 81, 200, 330):
        width, m = limb_bits(bits)
        a, b = random_ints(rng, 50, bits), random_ints(rng, 50, bits)
        la, lb = (np.array([from_int(v, m, width) for v in side]) for side in (a, b))
        assert [to_int(row, width) for row in from_words(pack(a, words_for(bits)).words, m, width)] == a
        extra = from_int(1 << (bits - 1), m, width)  # (factors with limbs up to 2**(width+1), as split_sums has)
        product = products(la + extra, lb, 2 * m + 1, width)
        expected = [(x + (1 << (bits - 1))) * y for x, y in zip(a, b, strict=True)]
        assert [to_int(row, width) for row in product] == expected
        assert (carried(product, width)[:, :-1] < 1 << width).all()
        sums = np.cumsum(product, axis=0)  # (the running sums of the splits: carried rows, summed limb by limb)
        assert [to_int(row, width) for row in sums] == list(itertools.accumulate(expected))


@pytest.mark.parametrize("bits", [4, 10, 80, 319])
def test_leaf_bounds_enclose_the_tilted_weights(bits):
    """``low_y <= W[y] theta**y 2**s <= low_y + radius`` for one scale ``s``, the largest upper bound has
    ``bits`` bits, ``mass = sum low``, with ``theta**y`` as a Fraction."""
    rng = np.random.default_rng(bits)
    for trial in range(40):
        theta = 2.0 ** rng.uniform(-4, 4) if trial % 4 else 1.0
        num, den = theta.as_integer_ratio()
        columns = [rng.integers(0, 2**62, int(rng.integers(1, 30)), dtype=np.int64) for _ in range(3)]
        columns[0][0] = 0 if len(columns[0]) > 1 else 7  # (a zero weight)
        powers = tilt_powers((num, den.bit_length() - 1), 30, bits)
        for column, found in zip(columns, leaf_bounds(columns, powers, bits), strict=True):
            exact = [int(w) * Fraction(num, den) ** y for y, w in enumerate(column.tolist())]
            low = found.low.values().tolist()
            scales = [s for s in range(-400, 400)
                      if all(v <= e * Fraction(2) ** s <= v + found.radius for v, e in zip(low, exact, strict=True))]
            assert scales and max(low) < 1 << bits <= 2 * max(low) + 2 * found.radius
            assert found.mass == sum(low) and found.count == len(column) and found.radius <= 3


def exact_bounds(values: list[Fraction], scale: Fraction, radius: int, bits: int) -> Bounds:
    """Bounds of ``values * scale`` by flooring (no window; below ``2**bits``), for products to start from."""
    low = [math.floor(v * scale) for v in values]
    return Bounds(pack(low, words_for(bits)), 0, len(low), radius, sum(low))


def test_bounds_products_enclose_the_exact_product_even_when_the_window_leaves_out_mass():
    rng = np.random.default_rng(3)
    for _ in range(60):
        f, g = ([Fraction(int(v), 7) for v in rng.integers(1, 10**6, int(rng.integers(2, 25)))] for _ in range(2))
        bits, length = int(rng.integers(21, 90)), int(rng.integers(1, len(f) + len(g)))
        left, right = exact_bounds(f, Fraction(8), 1, bits), exact_bounds(g, Fraction(5), 1, bits)
        found = bounds_product(left, right, bits, length)
        product = np.convolve(np.array(f, dtype=object), np.array(g, dtype=object)).tolist()
        low = [0] * found.count
        low[found.start:found.start + found.low.count] = found.low.values().tolist()
        scale = next(Fraction(40, 2**d) for d in range(200)
                     if all(v <= c * Fraction(40, 2**d) <= v + found.radius for v, c in zip(low, product, strict=True)))
        assert scale and found.low.count == length and found.mass >= sum(low) and max(low) < 1 << bits


def test_split_sums_enclose_the_running_sums_of_the_weights():
    """The lower and upper running sums of :func:`split_sums` enclose those of ``f_L[a] f_R[t - a]`` written
    out from Bounds' definition (windows included), with the two outer entries holding what is outside."""
    rng = np.random.default_rng(4)
    for _ in range(40):
        lows = [[int(v) for v in rng.integers(0, 2**20, int(rng.integers(2, 12)))] for _ in range(2)]
        starts, counts = [int(rng.integers(0, 4)) for _ in range(2)], [len(v) + int(rng.integers(0, 8)) for v in lows]
        left, right = (Bounds(pack(v, 1), s, max(c, s + len(v)), int(rng.integers(0, 5)), sum(v))
                       for v, s, c in zip(lows, starts, counts, strict=True))
        target = int(rng.integers(0, left.count + right.count - 1))
        truth = [[], []]  # every weight's lower and upper bound, by degree of left
        for a in range(left.count):
            lo_l = dict(enumerate(lows[0], left.start)).get(a, 0)
            b = target - a
            lo_r = dict(enumerate(lows[1], right.start)).get(b, 0)
            inside_r = 0 <= b < right.count
            truth[0].append(lo_l * lo_r)
            truth[1].append((lo_l + left.radius) * (lo_r + right.radius) * inside_r)
        low, high, offset = split_sums(left, right, target, 20)
        n = left.low.count + 2
        assert len(low) == len(high) == n + 1
        window = range(left.start, left.start + left.low.count)
        assert [low[i] - (i + 1) * offset for i in range(n + 1)] == list(itertools.accumulate(
            [0, 0, *(truth[0][a] for a in window), 0]))
        outside = sum(h for a, h in enumerate(truth[1]) if a not in window)
        upper = [high[i] - (i + 1) * offset for i in range(n + 1)]
        assert [upper[i + 1] - upper[i] for i in range(1, n - 1)] == [truth[1][a] for a in window]
        assert upper[1] >= outside and upper[-1] - upper[-2] >= outside


@pytest.mark.parametrize("family, alpha, kind", [("GM", "1/2", "clustered"), ("EM", "9/10", "random"),
                                                 ("GM", "9/10", "random"), ("EM", "2/3", "clustered")])
def test_windows_hold_every_coefficient_the_precision_keeps_whatever_the_counts(family, alpha, kind):
    """Every coefficient of a node's tilted product within ``2**-bits`` of its largest lies in a window of
    the length :func:`window_lengths` gives: the product written out in Fractions, with the sampler's own
    ``theta``, for counts that flatten the tilted laws (a few groups full, the rest empty: ``theta`` near
    alpha makes a full group's law nearly uniform) and random ones; the windows do crop (the check can
    fail)."""
    rng, sizes = np.random.default_rng(7), np.array([3, 4, 5, 4] * 8)
    mechanisms = [mechanism(family, int(n), alpha) for n in sizes]
    counts = (np.where(np.arange(len(sizes)) < 2, sizes, 0) if kind == "clustered"
              else np.array([int(rng.integers(0, n + 1)) for n in sizes]))
    sampler = GroupTotalSampler(mechanisms, counts)
    theta = Fraction(sampler._theta[0], 2 ** sampler._theta[1])
    cropped = 0
    for bits in (4, 12):
        product = [Fraction(1)]
        for stop in range(1, len(sizes) + 1):
            weights = mechanisms[stop - 1].column(int(counts[stop - 1])).tolist()
            column = np.array([int(v) * theta**y for y, v in enumerate(weights)], dtype=object)
            product = np.convolve(np.array(product, dtype=object), column).tolist()
            kept = [k for k, c in enumerate(product) if c * 2**bits >= max(product)]
            length = int(window_lengths(sizes, np.array([[0, stop]]), bits, 1.0)[0])
            assert length >= kept[-1] - kept[0] + 1
            cropped += length < len(product)
    assert cropped


@pytest.mark.parametrize("slack", [0.3, 1.0])
def test_cropped_windows_still_draw_what_the_exact_method_draws(slack):
    """Narrow windows (slack 0.3: most of each node's mass left out) only cost refinements: for the same
    bits, the lazy draw is the exact one; and the windows do crop (the check can fail)."""
    rng = np.random.default_rng(6)
    mechanisms = [mechanism("GM", 6, "1/2"), mechanism("EM", 5, "2/3")] * 12
    counts = np.array([int(rng.integers(0, m.n + 1)) for m in mechanisms])
    exact = GroupTotalSampler(mechanisms, counts, GroupTotalSettings(method="exact"))
    lazy = GroupTotalSampler(mechanisms, counts, GroupTotalSettings(digits=(3, 24), window_slack=slack))
    keep = lazy.settings.precision(3)
    cropped = [(stop - start) for (start, stop), length in lazy._lengths[keep].items()
               if length < int(lazy.sizes[start:stop].sum()) + 1]
    assert cropped if slack < 1 else True
    for seed in range(10):
        assert np.array_equal(exact.draw(np.random.default_rng(seed)), lazy.draw(np.random.default_rng(seed)))


def test_a_window_that_drops_mass_without_folding_it_is_caught(monkeypatch):
    """The enclosure check above fails when what a window leaves out is not added to the radius."""
    monkeypatch.setattr("countdp.invariants.packed.largest", lambda words, mask: 0)
    with pytest.raises(StopIteration):
        test_bounds_products_enclose_the_exact_product_even_when_the_window_leaves_out_mass()
