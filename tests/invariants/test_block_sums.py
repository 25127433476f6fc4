"""The exact conditional sampler against brute-force enumeration of a small table.

The table is 2 x 3 (row-vectorised: cells 0-2 "female", 3-5 "male"; column 0 "minor"), with
Gong and Meng's three invariants (total, female total, adult total).  Every table meeting them
is enumerated and weighted ``alpha^L1`` directly: that is the conditional law, independent of
the sampler's dynamic programme.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from countdp.invariants.block_sums import ConditionalTableSampler, SamplerSettings
from countdp.invariants.prefix_choice import (
    PREFIX_BITS,
    bracket,
    bracketed_floors,
    choose,
    prefix_thresholds,
    reciprocal_bracket,
    resolve_tie,
)
from countdp.invariants.spec import SubsetSum, block_system, subset_sums_from_matrix
from countdp.values.alpha import alpha_from_epsilon

X = np.array([1, 0, 2, 1, 2, 1])
LABELS = ["f-minor", "f-adult", "f-adult", "m-minor", "m-adult", "m-adult"]
INVARIANTS = (SubsetSum("total", (0, 1, 2, 3, 4, 5)), SubsetSum("female", (0, 1, 2)),
              SubsetSum("adult", (1, 2, 4, 5)))
ALPHAS = (alpha_from_epsilon(Fraction(1, 2)), Fraction(2, 3))


def enumerate_conditional(x: np.ndarray, alpha: Fraction) -> dict[tuple[int, ...], Fraction]:
    """Every non-negative table with the invariants of ``x``, and its exact conditional probability."""
    total, female, adult = int(x.sum()), int(x[:3].sum()), int(x[[1, 2, 4, 5]].sum())
    x = x.tolist()
    weights = {}
    for head in itertools.product(range(total + 1), repeat=len(x) - 1):
        y = (*head, total - sum(head))
        if y[-1] >= 0 and sum(y[:3]) == female and y[1] + y[2] + y[4] + y[5] == adult:
            weights[y] = alpha ** sum(abs(a - b) for a, b in zip(y, x, strict=True))
    z = sum(weights.values())
    return {y: w / z for y, w in weights.items()}


@pytest.fixture(scope="module", params=ALPHAS, ids=["alpha(eps=1/2)", "alpha=2/3"])
def case(request):
    alpha = request.param
    return ConditionalTableSampler(X, LABELS, INVARIANTS, alpha), enumerate_conditional(X, alpha)


def test_probabilities_equal_the_enumerated_conditional_exactly(case):
    sampler, exact = case
    for y, p in exact.items():
        assert sampler.probability(np.array(y)) == p
    assert sum(exact.values()) == 1
    assert sampler.normaliser == sum(sampler.alpha ** sum(abs(a - b) for a, b in zip(y, X.tolist(), strict=True))
                                     for y in exact)


def test_tables_outside_the_invariants_have_probability_zero(case):
    sampler, _ = case
    assert sampler.probability(np.array([2, 0, 2, 1, 2, 1])) == 0  # total broken
    assert sampler.probability(np.array([0, -1, 4, 2, 2, 0])) == 0  # negative cell, every sum kept
    assert sampler.probability(np.array([1, 0, 2, 2, 1, 1])) == 0  # adult total broken


def test_draws_follow_the_conditional_chi_square(case):
    sampler, exact = case
    draws = sampler.draw(np.random.default_rng(7), 20_000)
    assert sampler.system.satisfied(draws).all()
    tables = list(exact)
    index = {y: i for i, y in enumerate(tables)}
    counts = np.bincount([index[tuple(row)] for row in draws.tolist()], minlength=len(tables))
    expected = np.array([float(exact[y]) for y in tables]) * len(draws)
    big = expected >= 5
    observed, wanted = counts[big], expected[big]
    if (~big).any():
        observed, wanted = np.append(observed, counts[~big].sum()), np.append(wanted, expected[~big].sum())
    assert stats.chisquare(observed, wanted).pvalue > 1e-3


def _cdf_word(cdf: Fraction) -> tuple[int, Fraction]:
    """The prefix threshold ``floor(2**62 cdf)`` and the fraction of the tied cell above the true threshold."""
    scaled = cdf * (1 << PREFIX_BITS)
    return math.floor(scaled), scaled - math.floor(scaled)


def _block_sum_tie(sampler, exact, n: int):
    """Words whose column 0 ties the threshold between block-sum vectors ``j - 1`` and ``j``; ``(words, j, below)``."""
    law = {}
    for y, p in exact.items():
        key = tuple(int(sum(y[c] for c in block)) for block in sampler.system.blocks)
        law[key] = law.get(key, 0) + p
    order = [tuple(row) for row in sampler.system.feasible.tolist()]
    j = max(range(1, len(order)), key=lambda i: law[order[i - 1]])  # a threshold with mass on both sides
    word, below = _cdf_word(sum(law[v] for v in order[:j]))
    words = np.random.default_rng(3).integers(0, 1 << PREFIX_BITS, size=(n, sampler.decisions), dtype=np.int64)
    words[:, 0] = word
    return words, j, below


def _cell_tie(sampler, exact, n: int):
    """Words choosing the block sums with most female adults and tying cell 1's threshold between 0 and 1."""
    # blocks in order: (0,), (1, 2), (3,), (4, 5); column 0 picks the block sums, column 1 decides cell 1
    block_sums = sampler.system.feasible.tolist()
    target = max(block_sums, key=lambda s: s[1])
    given = {y: p for y, p in exact.items() if [y[0], y[1] + y[2], y[3], y[4] + y[5]] == target}
    word, below = _cdf_word(sum(p for y, p in given.items() if y[1] < 1) / sum(given.values()))
    order_cdf = [sum(float(p) for y, p in exact.items() if [y[0], y[1] + y[2], y[3], y[4] + y[5]] == list(v))
                 for v in block_sums]
    i = block_sums.index(target)
    middle = (sum(order_cdf[:i]) + order_cdf[i] / 2) * 2.0**PREFIX_BITS  # a word deep inside the target's interval
    words = np.random.default_rng(5).integers(0, 1 << PREFIX_BITS, size=(n, sampler.decisions), dtype=np.int64)
    words[:, 0], words[:, 1] = int(middle), word
    return words, target, below


def _chosen(sampler, tables) -> list[int]:
    order = [tuple(row) for row in sampler.system.feasible.tolist()]
    return [order.index(tuple(int(t[list(block)].sum()) for block in sampler.system.blocks)) for t in tables]


def test_a_word_tying_the_block_sum_threshold_is_settled_with_the_exact_probability(case):
    sampler, exact = case
    words, j, below = _block_sum_tie(sampler, exact, 4000)
    chosen = _chosen(sampler, sampler.tables_from_words(words, np.random.default_rng(4)))
    assert set(chosen) <= {j - 1, j}
    assert stats.binomtest(sum(c == j for c in chosen), len(chosen), float(1 - below)).pvalue > 1e-3
    words[:, 0] -= 1  # one below the tie: always the lower outcome, no tie-break needed
    assert set(_chosen(sampler, sampler.tables_from_words(words, None))) == {j - 1}


def test_a_word_tying_a_cell_threshold_is_settled_with_the_exact_probability(case):
    sampler, exact = case
    words, target, below = _cell_tie(sampler, exact, 4000)
    tables = sampler.tables_from_words(words, np.random.default_rng(6))
    assert (tables[:, [0, 3]] == [target[0], target[2]]).all() and (tables[:, 1] + tables[:, 2] == target[1]).all()
    assert set(tables[:, 1].tolist()) <= {0, 1}
    assert stats.binomtest(int((tables[:, 1] == 1).sum()), len(tables), float(1 - below)).pvalue > 1e-3


def test_one_by_one_and_vectorised_paths_give_the_same_tables_for_the_same_words(case):
    sampler, exact = case
    one_by_one = ConditionalTableSampler(X, LABELS, INVARIANTS, sampler.alpha, SamplerSettings(scalar_up_to=10**6))
    vectorised = ConditionalTableSampler(X, LABELS, INVARIANTS, sampler.alpha, SamplerSettings(scalar_up_to=0))
    plain = np.random.default_rng(8).integers(0, 1 << PREFIX_BITS, size=(300, sampler.decisions), dtype=np.int64)
    for words in (plain, _block_sum_tie(sampler, exact, 300)[0], _cell_tie(sampler, exact, 300)[0]):
        a = one_by_one.tables_from_words(words, np.random.default_rng(9))
        b = vectorised.tables_from_words(words, np.random.default_rng(9))
        assert (a == b).all()
    draws = one_by_one.draw(np.random.default_rng(10), 50)
    assert one_by_one.system.satisfied(draws).all()


def test_prefix_thresholds_are_exact_floors():
    rng = np.random.default_rng(1)
    for bits in (10, 200, 3000):
        total = int.from_bytes(rng.bytes(bits // 8 + 1), "little") | (1 << bits)
        cumulative = sorted(int.from_bytes(rng.bytes(bits // 8 + 1), "little") % total for _ in range(50))
        cumulative += [total - 1, 0, total // 3]
        expected = [math.floor(Fraction(c << PREFIX_BITS, total)) for c in cumulative]
        assert prefix_thresholds(cumulative, total) == expected


BLOCK_X = (3, 0, 5, 2)
"""One block of four cells under its total: rows up to 10, cells with and without a head (``y < x_k``)."""


def _enumerated_thresholds(x: tuple[int, ...], k: int, r: int, alpha: Fraction) -> list[int]:
    """``floor(2**62 Pr[y_k < j | y_k + ... + y_last = r])`` for ``j = 1..r``, by enumerating the later cells."""
    law = [Fraction(0)] * (r + 1)
    for rest in itertools.product(range(r + 1), repeat=len(x) - k - 1):
        y = r - sum(rest)
        if y >= 0:
            law[y] += alpha ** (abs(y - x[k]) + sum(abs(v - c) for v, c in zip(rest, x[k + 1:], strict=True)))
    total = sum(law)
    return [math.floor(sum(law[:j]) / total * (1 << PREFIX_BITS)) for j in range(1, r + 1)]


@pytest.mark.parametrize("alpha", ALPHAS, ids=["alpha(eps=1/2)", "alpha=2/3"])
def test_every_threshold_is_the_exact_floor_of_the_enumerated_conditional_on_both_routes(alpha):
    # 32 guard bits leave nearly every bracket undecided (the exact route); 96 decide nearly all (the bracket route)
    x = np.array(BLOCK_X)
    samplers = [ConditionalTableSampler(x, ["b"] * 4, (SubsetSum("total", (0, 1, 2, 3)),), alpha,
                                        SamplerSettings(guard_bits=bits)) for bits in (32, 96)]
    for k in range(3):
        for r in range(int(x.sum()) + 1):
            expected = _enumerated_thresholds(BLOCK_X, k, r, alpha)
            assert [s.thresholds(0, k, r).tolist() for s in samplers] == [expected, expected]
    words = np.random.default_rng(12).integers(0, 1 << PREFIX_BITS, size=(200, samplers[0].decisions))
    fresh = [ConditionalTableSampler(x, ["b"] * 4, (SubsetSum("total", (0, 1, 2, 3)),), alpha,
                                     SamplerSettings(guard_bits=bits)) for bits in (32, 96)]
    assert (fresh[0].tables_from_words(words) == fresh[1].tables_from_words(words)).all()


def _as_factor(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([m for m, _ in pairs], dtype=object), np.array([e for _, e in pairs], dtype=np.int64)


def test_brackets_hold_their_values_and_bracketed_floors_are_exact_or_undecided():
    rng = np.random.default_rng(2)
    for bits in (32, 96):
        for size in (5, 70, 3000):
            value = int.from_bytes(rng.bytes(size // 8 + 1), "little") | 1
            for (m, e), target in ((bracket(value, bits), Fraction(value)),
                                   (reciprocal_bracket(value, bits), Fraction(1, value))):
                assert m * Fraction(2) ** e <= target < (m + 1) * Fraction(2) ** e
                assert 1 << (bits - 1) <= m <= 1 << bits
    totals = [int.from_bytes(rng.bytes(400), "little") | (1 << 3200) for _ in range(40)]
    parts = [int.from_bytes(rng.bytes(400), "little") % t for t in totals]
    for bits, least_decided in ((32, 0), (96, 40)):
        factors = [_as_factor([bracket(c, bits) for c in parts]),
                   _as_factor([reciprocal_bracket(t, bits) for t in totals])]
        for complement in (False, True):
            values, decided = bracketed_floors(factors, complement)
            exact = [math.floor((1 - Fraction(c, t) if complement else Fraction(c, t)) * (1 << PREFIX_BITS))
                     for c, t in zip(parts, totals, strict=True)]
            assert values[decided].tolist() == np.array(exact)[decided].tolist()
            assert decided.sum() >= least_decided
    # exactly a half: the floor of 2**62 (1 - V) is 2**61, but a bracket of V = 1/2 also holds values above a
    # half, whose floors are 2**61 - 1: the interval straddles an integer and must be left undecided
    half = [_as_factor([bracket(1, 96)]), _as_factor([reciprocal_bracket(2, 96)])]
    assert bracketed_floors(half)[0].tolist() == [1 << 61] and bracketed_floors(half)[1].tolist() == [True]
    assert bracketed_floors(half, complement=True)[1].tolist() == [False]
    with pytest.raises(ValueError, match="too short"):
        bracketed_floors([(np.array([3], dtype=object), np.array([0]))])
    with pytest.raises(ValueError, match="guard_bits"):
        SamplerSettings(guard_bits=31)


def test_choose_and_resolve_tie_on_thirds():
    # weights (1, 2): C_1 = 1, T = 3; 2**62 = 3 L + 1, so the word L ties and is above the threshold 2/3 of the time
    (low,) = prefix_thresholds([1], 3)
    assert 3 * low + 1 == 1 << PREFIX_BITS
    table = np.array([[low, 1 << PREFIX_BITS]] * 3, dtype=np.int64)
    count, tie = choose(table, np.array([low - 1, low, low + 1], dtype=np.int64))
    assert count.tolist() == [0, 0, 1] and tie.tolist() == [False, True, False]
    rng = np.random.default_rng(0)
    outcomes = [resolve_tie(low, [1], 3, rng) for _ in range(3000)]
    assert set(outcomes) == {0, 1}
    assert stats.binomtest(sum(outcomes), 3000, 2 / 3).pvalue > 1e-3


def test_the_invariant_check_fails_on_broken_tables(case):
    sampler, _ = case
    good = X[None, :]
    assert sampler.system.satisfied(good).all()
    for broken in ([1, 0, 2, 1, 2, 2], [1, 0, 2, 2, 1, 1], [0, -1, 4, 2, 2, 0]):
        assert not sampler.system.satisfied(np.array([broken]))[0]


def test_os_source_draws_satisfy_the_invariants(case):
    sampler, _ = case
    assert sampler.system.satisfied(sampler.draw(None, 500)).all()


@pytest.mark.parametrize("labels, invariants, message", [
    (LABELS, (SubsetSum("cut", (0, 1, 3, 4, 5)),), "union of whole blocks"),
    (LABELS, (SubsetSum("female", (0, 1, 2)),), "unbounded"),
    (LABELS, (SubsetSum("total", tuple(range(6)), 3), SubsetSum("female", (0, 1, 2), 5)), "no solution"),
    (LABELS, (SubsetSum("total", tuple(range(6)), 3), SubsetSum("all", tuple(range(6)), 4)), "contradict"),
    (LABELS, (SubsetSum("total", tuple(range(6)), -1),), "non-negative integer"),
    (LABELS[:5], INVARIANTS, "block labels"),
    (LABELS, (), "at least one invariant"),
])
def test_unsupported_specifications_are_refused_with_one_line(labels, invariants, message):
    with pytest.raises(ValueError, match=message) as info:
        block_system(X, labels, invariants)
    assert "\n" not in str(info.value)


def test_weighted_sums_are_refused_with_one_line():
    with pytest.raises(ValueError, match="coefficients 0 or 1") as info:
        subset_sums_from_matrix(np.array([[1, 2, 1, 0, 0, 0]]))
    assert "\n" not in str(info.value)
    spec = subset_sums_from_matrix(np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]]), names=["total", "female"])
    assert [s.cells for s in spec] == [(0, 1, 2, 3, 4, 5), (0, 1, 2)]
