"""The release conditioned on its total, against brute-force enumeration in Fractions.

Independent facts used: the conditional law ``prod_g W_g[y_g, x_g] / sum`` written out over every
output; the exact probability that the *sampling code* returns each output, found by running it on
every string of random bits up to a depth (a scripted bit source); the inverse CDF of a uniform real
written with Fractions; ``numpy.convolve`` for polynomial products; a chi-square test.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from countdp.invariants.group_total import (
    GroupTotalSampler,
    GroupTotalSettings,
    RandomBits,
    choose,
    draw_partitioned,
)
from countdp.invariants.packed import multiply, pack
from countdp.mechanisms.closed_forms import geometric
from tests.helpers.invariant_checks import mechanism

CASES = [  # (mechanisms as (family, n, alpha, K), true counts)
    ((("GM", 3, "1/2", 62), ("EM", 2, "2/3", 62)), (2, 1)),
    ((("GM", 3, "1/2", 62), ("EM", 2, "2/3", 60), ("GM", 4, "2/3", 62)), (1, 2, 0)),
    ((("EM", 4, "2/3", 62), ("EM", 4, "2/3", 62), ("GM", 1, "1/2", 62), ("EM", 3, "1/2", 60)), (4, 0, 1, 2)),
    ((("GM", 2, "2/3", 62),) * 4, (0, 0, 0, 1)),
]


def build(case):
    return [mechanism(*spec) for spec in case[0]], np.array(case[1])


def brute_force(mechanisms, counts) -> dict[tuple, Fraction]:
    """The conditional law over every output with the true total, from the weights alone."""
    total = int(sum(counts))
    weights = {}
    for y in itertools.product(*[range(m.n + 1) for m in mechanisms]):
        if sum(y) == total:
            weights[y] = math.prod(Fraction(int(m.weights[v, x]), 2**m.K)
                                   for m, v, x in zip(mechanisms, y, counts, strict=True))
    norm = sum(weights.values())
    return {y: w / norm for y, w in weights.items()}


class NeedBits(Exception):
    pass


class Scripted(RandomBits):
    """Bits read from a fixed script; asking past its end raises :class:`NeedBits`."""

    def __init__(self, script: list[tuple[int, int]]) -> None:
        super().__init__(None)
        self.script, self.read = script, 0

    def bits(self, count: int) -> int:
        if self.read == len(self.script):
            raise NeedBits(count)
        width, value = self.script[self.read]
        assert width == count
        self.read += 1
        return value


def path_masses(sampler: GroupTotalSampler, depth: int) -> tuple[dict, Fraction]:
    """The exact probability of each output over all bit strings up to ``depth`` bits, and the mass
    of the strings still undecided there (breadth of the search: every prefix the code asks for)."""
    masses, undecided, stack = {}, Fraction(0), [[]]
    while stack:
        script = stack.pop()
        try:
            y = tuple(sampler.draw(Scripted(script)).tolist())
            masses[y] = masses.get(y, 0) + Fraction(1, 2 ** sum(w for w, _ in script))
        except NeedBits as need:
            width = need.args[0]
            if sum(w for w, _ in script) + width > depth:
                undecided += Fraction(1, 2 ** sum(w for w, _ in script))
            else:
                stack += [script + [(width, v)] for v in range(2**width)]
    return masses, undecided


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", ["exact", "lazy"])
def test_probability_is_the_brute_force_conditional(case, method):
    mechanisms, counts = build(case)
    sampler = GroupTotalSampler(mechanisms, counts, GroupTotalSettings(method=method))
    law = brute_force(mechanisms, counts)
    assert all(sampler.probability(np.array(y)) == p for y, p in law.items())
    assert sampler.probability(np.array([m.n for m in mechanisms])) == (sum(counts) == sum(m.n for m in mechanisms))


@pytest.mark.parametrize("case", CASES[:3])
@pytest.mark.parametrize("config", [GroupTotalSettings(method="exact", draw_bits=2, extend_bits=1),
                                    GroupTotalSettings(digits=(1,), draw_bits=2, extend_bits=1),
                                    GroupTotalSettings(digits=(1, 2), draw_bits=2, extend_bits=1, tilt_steps=0)])
def test_the_sampling_code_realizes_the_conditional_exactly(case, config):
    """Run on every bit string: each output's mass converges to its probability from below, within
    the undecided mass (one digit of fixed point forces the refinements, so their code runs too)."""
    mechanisms, counts = build(case)
    masses, undecided = path_masses(GroupTotalSampler(mechanisms, counts, config), depth=14)
    law = brute_force(mechanisms, counts)
    assert set(masses) <= set(law)
    assert all(0 <= law[y] - masses.get(y, 0) <= undecided for y in law)
    assert undecided < Fraction(1, 10)


@pytest.mark.parametrize("digits", [(1,), (2,), (1, 3), (24, 96)])
def test_lazy_and_exact_give_the_same_output_for_the_same_bits(digits):
    rng = np.random.default_rng(5)
    for _ in range(15):
        G = int(rng.integers(2, 7))
        mechanisms = [mechanism(str(rng.choice(["GM", "EM"])), int(rng.integers(1, 7)), str(rng.choice(["1/2", "2/3"])))
                      for _ in range(G)]
        counts = np.array([int(rng.integers(0, m.n + 1)) for m in mechanisms])
        exact = GroupTotalSampler(mechanisms, counts, GroupTotalSettings(method="exact"))
        lazy = GroupTotalSampler(mechanisms, counts, GroupTotalSettings(digits=digits))
        for seed in range(5):
            assert np.array_equal(exact.draw(np.random.default_rng(seed)), lazy.draw(np.random.default_rng(seed)))


def test_draws_keep_the_total_and_the_ranges():
    rng = np.random.default_rng(0)
    for case in CASES:
        mechanisms, counts = build(case)
        sampler = GroupTotalSampler(mechanisms, counts)
        for _ in range(200):
            y = sampler.draw(rng)
            assert y.sum() == counts.sum() and (y >= 0).all() and (y <= sampler.sizes).all()
    assert GroupTotalSampler([mechanism("GM", 3, "1/2")], [2]).draw().tolist() == [2]  # one group: y = x


def test_seeded_chi_square():
    mechanisms, counts = build(CASES[1])
    sampler, rng, draws = GroupTotalSampler(mechanisms, counts), np.random.default_rng(11), 20_000
    law = brute_force(mechanisms, counts)
    seen = {}
    for _ in range(draws):
        y = tuple(sampler.draw(rng).tolist())
        seen[y] = seen.get(y, 0) + 1
    observed = np.array([seen.get(y, 0) for y in law])
    expected = np.array([float(p) * draws for p in law.values()])
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_many_groups_and_extreme_counts_draw_without_refinement():
    m = mechanism("EM", 10, "9/10")
    for counts in (np.zeros(300, int), np.full(300, 10), np.arange(300) % 11):
        y, report = GroupTotalSampler([m] * 300, counts).draw_with_report(np.random.default_rng(1))
        assert y.sum() == counts.sum()
        assert report.refinements == 0 and report.extensions == 0 and report.event_bound < 1e-12


def test_partitions_keep_their_own_totals_and_match_separate_samplers():
    mechanisms = [mechanism("GM", 3, "1/2"), mechanism("EM", 4, "2/3")] * 4
    counts, labels = np.array([0, 4, 3, 1, 2, 2, 3, 0]), np.array(["b", "a", "b", "a", "c", "c", "a", "b"])
    y = draw_partitioned(mechanisms, counts, labels, np.random.default_rng(3))
    source, expected = RandomBits(np.random.default_rng(3)), np.zeros(8, int)
    for label in ("a", "b", "c"):
        members = np.flatnonzero(labels == label)
        assert y[members].sum() == counts[members].sum()
        expected[members] = GroupTotalSampler([mechanisms[i] for i in members], counts[members]).draw(source)
    assert np.array_equal(y, expected)


@given(st.lists(st.integers(0, 40), min_size=1, max_size=8), st.integers(0, 2**16 - 1), st.integers(1, 16))
@settings(max_examples=200, deadline=None)
def test_choose_is_the_inverse_cdf_or_declines(weights, u, bits):
    """Exact weights: the index is the inverse CDF at every U in [u, u+1) / 2**bits, or None when
    the interval straddles a step; widened bounds may only decline, never disagree."""
    if not sum(weights):
        return
    u %= 2**bits
    cdf = list(itertools.accumulate(Fraction(w, sum(weights)) for w in weights))
    ends = [Fraction(u, 2**bits), Fraction(u + 1, 2**bits)]
    first = next(a for a, c in enumerate(cdf) if c > ends[0])
    last = next(a for a, c in enumerate(cdf) if c >= ends[1])
    a, bound = choose(weights, weights, u, bits)
    assert a == (first if first == last else None) and 0 <= bound <= 1
    widened, _ = choose([max(0, w - 1) for w in weights], [w + 1 for w in weights], u, bits)
    assert widened in (None, a)


def test_packed_products_are_exact_convolutions():
    rng = np.random.default_rng(2)
    for _ in range(20):
        u = [int(v) for v in rng.integers(0, 2**62, int(rng.integers(1, 30)), dtype=np.int64)]
        v = [int(w) for w in rng.integers(0, 2**62, int(rng.integers(1, 30)), dtype=np.int64)]
        product = multiply(pack(u, 1), pack(v, 2), 129)  # (62 + 62 bits, times at most 29 terms)
        assert product.values().tolist() == np.convolve(np.array(u, dtype=object), np.array(v, dtype=object)).tolist()


@pytest.mark.parametrize("call, message", [
    (lambda: GroupTotalSampler([], []), "at least one group"),
    (lambda: GroupTotalSampler([mechanism("GM", 3, "1/2")] * 2, [1]), "one integer per group"),
    (lambda: GroupTotalSampler([mechanism("GM", 3, "1/2")] * 2, [1, 4]), "outside 0..3"),
    (lambda: GroupTotalSampler([mechanism("GM", 3, "1/2")] * 2, [1, -1]), "outside 0..3"),
    (lambda: GroupTotalSampler([mechanism("GM", 3, "1/2")] * 2, [1.0, 2.0]), "one integer per group"),
    (lambda: GroupTotalSampler([geometric(3, 0.5)], [1]), "one certified mechanism per group"),
    (lambda: GroupTotalSampler([mechanism("GM", 3, "1/2")], [1]).draw(rng=7), "rng must be"),
    (lambda: GroupTotalSettings(method="mcmc"), "method"),
    (lambda: GroupTotalSettings(digits=()), "digits"),
    (lambda: draw_partitioned([mechanism("GM", 3, "1/2")] * 2, [1, 2], ["a"]), "one per group"),
])
def test_ill_formed_input_is_refused_in_one_line(call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)
