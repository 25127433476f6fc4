"""The guarantee of the release conditioned on its total, against brute force written here.

Independent facts: the conditional laws and their worst ratio over invariant neighbours written out
with Fractions over every dataset, pair and output; the bound's formula evaluated without pruning;
the sampler's own exact probabilities; Gong and Meng's Theorem 2.1 (``R <= alpha**-4`` at ``k = 2``)
and their Section 5.1 (an invariant that pins the data leaves no neighbours to tell apart).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from countdp.invariants.group_total import GroupTotalSampler, GroupTotalSettings
from countdp.invariants.guarantee import (
    GuaranteeSettings,
    InvariantGuarantee,
    exact_law,
    exact_worst_ratio,
    proven_bound,
    target_alpha,
)
from countdp.mechanisms.closed_forms import geometric
from tests.helpers.invariant_checks import mechanism


def datasets(sizes, total):
    return [x for x in itertools.product(*[range(n + 1) for n in sizes]) if sum(x) == total]


def conditional(mechanisms, x, outputs):
    weights = [math.prod(Fraction(int(m.weights[v, c]), 2**m.K) for m, v, c in zip(mechanisms, y, x, strict=True))
               for y in outputs]
    return [w / sum(weights) for w in weights]


def brute_worst_ratio(mechanisms, total) -> Fraction:
    """max over x in X*, x' = x - e_a + e_b in X*, y of P*(y|x) / P*(y|x'), all in Fractions."""
    sizes = [m.n for m in mechanisms]
    points = datasets(sizes, total)
    laws = {x: conditional(mechanisms, x, points) for x in points}
    worst = Fraction(1)
    for x, other in itertools.permutations(points, 2):
        step = [b - a for a, b in zip(x, other, strict=True)]
        if sorted(step) == [-1] + [0] * (len(step) - 2) + [1]:
            worst = max([worst] + [p / q for p, q in zip(laws[x], laws[other], strict=True) if q])
    return worst


def unpruned_bound(mechanisms, total) -> Fraction:
    """The bound's formula over every ordered pair of groups and counts, in Fractions, no pruning."""
    sizes, N = [m.n for m in mechanisms], sum(m.n for m in mechanisms)
    W = [[[Fraction(int(v)) for v in row] for row in m.weights.T.tolist()] for m in mechanisms]  # W[g][x][y]
    best = Fraction(1)
    for a, b in itertools.permutations(range(len(mechanisms)), 2):
        other = N - sizes[a] - sizes[b]
        for xa, xb in itertools.product(range(1, sizes[a] + 1), range(sizes[b])):
            if total is not None and not total - other <= xa + xb <= total:
                continue
            rho_a = max(p / q for p, q in zip(W[a][xa], W[a][xa - 1], strict=True) if q)
            rho_b = max(p / q for p, q in zip(W[b][xb], W[b][xb + 1], strict=True) if q)
            law = np.convolve(np.array(W[a][xa], dtype=object), np.array(W[b][xb], dtype=object))
            moved = np.convolve(np.array(W[a][xa - 1], dtype=object), np.array(W[b][xb + 1], dtype=object))
            ts = range(len(law)) if total is None else range(max(0, total - other), min(len(law) - 1, total) + 1)
            best = max(best, rho_a * rho_b * max(moved[t] / law[t] for t in ts if law[t]))
    return best


SMALL = [  # (mechanism specs, total)
    ((("GM", 2, "1/2"), ("GM", 2, "1/2")), 1),
    ((("GM", 3, "1/2"), ("EM", 2, "2/3"), ("GM", 4, "2/3")), 3),
    ((("EM", 4, "2/3"), ("EM", 4, "2/3"), ("EM", 2, "2/3")), 5),
    ((("GM", 2, "2/3"),) * 4, 3),
    ((("GM", 3, "1/2", 60), ("EM", 3, "1/2"), ("EM", 1, "1/2"), ("GM", 2, "2/3")), 4),
]


def build(specs):
    return [mechanism(*spec) for spec in specs]


@pytest.mark.parametrize("specs, total", SMALL)
def test_exact_worst_ratio_is_the_brute_force_ratio(specs, total):
    mechanisms = build(specs)
    found = exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total)
    assert found.kind == "exact" and found.ratio == brute_worst_ratio(mechanisms, total)
    assert found.alpha == 1 / found.ratio and found.consistent_with_gong_meng()


@pytest.mark.parametrize("specs, total", SMALL)
def test_the_sampler_realizes_exactly_the_recorded_ratio(specs, total):
    """The guarantee never claims more privacy than the distribution sampled (its exact probabilities)."""
    mechanisms = build(specs)
    points = datasets([m.n for m in mechanisms], total)
    law = {x: [GroupTotalSampler(mechanisms, np.array(x), GroupTotalSettings(method="exact")).probability(np.array(y))
               for y in points] for x in points}
    realized = max([Fraction(1)] + [p / q for x in points for other in points if sum(abs(a - b) for a, b in zip(
        x, other, strict=True)) == 2 for p, q in zip(law[x], law[other], strict=True) if q])
    assert realized == exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total).ratio
    assert realized <= proven_bound(mechanisms, total).ratio


@pytest.mark.parametrize("specs, total", SMALL)
def test_the_bound_is_its_formula_and_holds(specs, total):
    mechanisms = build(specs)
    exact = exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total)
    given, anywhere = proven_bound(mechanisms, total), proven_bound(mechanisms)
    assert given.kind == "bound" and given.ratio == unpruned_bound(mechanisms, total)
    assert anywhere.ratio == unpruned_bound(mechanisms, None)
    assert exact.ratio <= given.ratio <= anywhere.ratio
    assert exact.normaliser_ratio <= given.normaliser_ratio and given.consistent_with_gong_meng()


def test_the_bound_holds_on_random_small_cases():
    rng = np.random.default_rng(7)
    for _ in range(12):
        G = int(rng.integers(2, 5))
        specs = [(str(rng.choice(["GM", "EM"])), int(rng.integers(1, 5)), str(rng.choice(["1/2", "2/3"])))
                 for _ in range(G)]
        mechanisms = build(specs)
        if math.prod(m.n + 1 for m in mechanisms) > 300:
            continue
        total = int(rng.integers(0, sum(m.n for m in mechanisms) + 1))
        exact = exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total)
        assert exact.ratio == brute_worst_ratio(mechanisms, total)
        assert exact.ratio <= proven_bound(mechanisms, total).ratio <= proven_bound(mechanisms).ratio


def test_a_total_that_pins_the_data_leaves_nothing_to_tell_apart():
    """Gong and Meng 5.1: with every count determined by the invariant, gamma = -1 (R = 1)."""
    mechanisms = build(SMALL[1][0])
    for total in (0, sum(m.n for m in mechanisms)):
        for found in (exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total), proven_bound(mechanisms, total)):
            assert found.ratio == 1 and found.gamma == -1
    assert proven_bound([mechanism("GM", 3, "1/2")]).ratio == 1  # one group: no neighbours


def test_theorem_2_1_holds_and_its_check_fails_on_a_forged_guarantee():
    mechanisms = [mechanism("GM", 4, "1/2")] * 3
    found = proven_bound(mechanisms)
    assert found.consistent_with_gong_meng() and -1 <= found.gamma <= 1
    assert found.ratio <= Fraction(1, 2) ** -4
    forged = InvariantGuarantee(Fraction(17), "bound", Fraction(1, 2), Fraction(4), {})
    assert not forged.consistent_with_gong_meng()  # 17 > alpha**-4 = 16
    split = InvariantGuarantee(Fraction(5), "exact", Fraction(1, 2), Fraction(1), {})
    assert not split.consistent_with_gong_meng()  # 5 > alpha**-2 * max Z(x')/Z(x) = 4


def test_target_alpha_meets_the_target_with_the_returned_mechanisms():
    sizes, target = [3, 5, 5, 2], Fraction(1, 2)
    choice = target_alpha(sizes, "EM", target, settings=GuaranteeSettings(bisection_steps=6))
    assert choice.guarantee.alpha >= target and target < choice.alpha < 1
    mechanisms = [choice.mechanisms[n] for n in sizes]
    assert all(m.alpha == choice.alpha for m in mechanisms)
    assert proven_bound(mechanisms).ratio == choice.guarantee.ratio
    assert choice.alpha**4 < target + Fraction(1, 2**60)  # within the bisection's interval, up to target**(1/4)


@pytest.mark.parametrize("call, message", [
    (lambda: exact_worst_ratio([mechanism("GM", 4, "1/2")] * 4, [4] * 4, 8, GuaranteeSettings(max_enumeration=100)),
     "too many"),
    (lambda: exact_worst_ratio([mechanism("GM", 4, "1/2")] * 2, [4, 3], 2), "do not match"),
    (lambda: exact_worst_ratio([mechanism("GM", 4, "1/2")] * 2, [4, 4], 9), "total must be"),
    (lambda: proven_bound([]), "at least one group"),
    (lambda: proven_bound([geometric(3, 0.5)]), "one certified mechanism per group"),
    (lambda: proven_bound([mechanism("GM", 3, "1/2")] * 2, settings=GuaranteeSettings(pruning_slack=1e-16)),
     "pruning_slack"),
    (lambda: target_alpha([3], "XM", "1/2"), "mechanism family"),
    (lambda: target_alpha([], "GM", "1/2"), "at least one group"),
])
def test_ill_formed_input_is_refused_in_one_line(call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


def test_cells_bounded_by_their_estimate_stay_above_the_formula_and_close_to_it():
    """With no exact evaluations, every candidate is bounded by estimate / (1 - error): still a proven
    bound (>= the exact formula), and within the float error of it."""
    mechanisms = build(SMALL[2][0])
    formula = unpruned_bound(mechanisms, None)
    rounded = proven_bound(mechanisms, settings=GuaranteeSettings(max_exact_cells=0))
    assert formula <= rounded.ratio <= formula * (1 + Fraction(1, 2**30))
    assert rounded.witness["cells_bounded_by_estimate"] > 0
    assert proven_bound(mechanisms).witness["cells_bounded_by_estimate"] == 0


def test_exact_law_is_the_convolution():
    rng = np.random.default_rng(4)
    for _ in range(20):
        u = [int(v) for v in rng.integers(0, 2**63 - 1, int(rng.integers(1, 60)), dtype=np.int64)]
        v = [int(w) for w in rng.integers(0, 2**63 - 1, int(rng.integers(1, 60)), dtype=np.int64)]
        assert exact_law(u, v) == np.convolve(np.array(u, dtype=object), np.array(v, dtype=object)).tolist()
