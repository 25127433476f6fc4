"""The structural certificate: exact, on the tables the sampler reads, and able to fail.

Each corrupted mechanism below is built through the public constructors with one table entry,
the centre, or the floor (a column type's rate) changed; the certificate must refuse it, and
for small n the dense exact test on its whole matrix must refuse it too.  Conversely, on
random corruptions the certificate never accepts what the dense test refuses (it is sound).
"""

from fractions import Fraction

import numpy as np
import pytest

from countdp.privacy.exact import exact_dp_check
from countdp.structural.fair import StructuralEM, fair_form
from countdp.structural.geometric import StructuralGM, geometric_form
from countdp.structural.uniform import StructuralUM, uniform_form

A = Fraction(9, 10)
K = 62


def gm_with(tail=None, centre=None, reserve=None, n=30):
    good = geometric_form(n, A, K)
    tail = good.tail.copy() if tail is None else tail
    total = (1 << K) - 2 * int(tail[0]) - (good.reserve if reserve is None else reserve)
    return StructuralGM(n, A, K, good.reserve if reserve is None else reserve, tail,
                        total if centre is None else centre, good.sizes)


def refused_both_ways(form) -> str:
    check = form.certify()
    assert not check.holds
    if form.n <= 200 and form.reserve + form.structured_total == 1 << K:
        assert not exact_dp_check(form.dense_weights(), form.alpha, K).holds
    return check.reason


def test_the_honest_forms_hold():
    for form in (geometric_form(30, A, K), fair_form(30, A, K), uniform_form(30, A, K)):
        assert form.certify().holds


def test_a_doubled_tail_entry_is_refused():
    tail = geometric_form(30, A, K).tail.copy()
    tail[5] = tail[5] * 2 - tail[6]  # keeps the table non-increasing; breaks the ratio at entry 5
    assert "alpha-DP" in refused_both_ways(gm_with(tail=tail))


def test_a_tail_entry_raised_past_its_neighbour_is_refused():
    tail = geometric_form(30, A, K).tail.copy()
    tail[8] = tail[7] + 1
    assert "non-increasing" in refused_both_ways(gm_with(tail=tail))


def test_a_floor_without_room_for_the_rounding_is_refused():
    """The floor is the rate paid for rounding the chain: a reserve of one unit per entry is too little."""
    good = geometric_form(30, A, K)
    form = gm_with(reserve=31, centre=(1 << K) - 31 - 2 * int(good.tail[0]))
    assert "alpha-DP" in refused_both_ways(form)


def test_a_centre_that_breaks_the_column_total_is_refused():
    form = gm_with(centre=geometric_form(30, A, K).centre + 1)
    assert "sums to" in form.certify().reason


def test_an_em_power_table_corrupted_is_refused():
    good = fair_form(30, A, K)
    powers = good.powers.copy()
    powers[3] = powers[2]  # a flat step: alpha * (g + f) > g(4) + f at the next pair
    powers[4] = powers[4] // 2
    form = StructuralEM(30, A, K, (1 << K) - (int(powers[0]) + 2 * int(powers[1:].sum())), powers)
    assert "alpha-DP" in refused_both_ways(form)


def test_an_em_size_range_too_small_for_its_table_is_refused():
    """A range's table is shared only by sizes whose columns hold every power twice."""
    good = fair_form(10**5, A, K)
    lo, hi = good.sizes
    form = StructuralEM(lo, A, K, good.reserve, good.powers, (2, hi))
    assert "counted twice" in form.certify().reason


def test_a_um_that_does_not_total_2_to_the_k_is_refused():
    form = StructuralUM(10, A, K, (1 << K) - 1, (1, 100))
    assert "sums to" in form.certify().reason
    assert uniform_form(10, A, K).certify().holds


@pytest.mark.parametrize("seed", range(40))
def test_the_certificate_is_sound_on_random_corruptions(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    good = geometric_form(n, A, K)
    tail = good.tail.copy()
    k = int(rng.integers(0, min(tail.size, n)))
    tail[k] = max(1, int(tail[k] * rng.uniform(0.9, 1.1)))
    form = StructuralGM(n, A, K, good.reserve, tail, (1 << K) - good.reserve - 2 * int(tail[0]), good.sizes)
    if form.certify().holds:
        assert exact_dp_check(form.dense_weights(), A, K).holds
    else:
        assert form.certify().reason


def test_every_size_of_a_range_passes_the_dense_test():
    """The range certificate is checked with the range's smallest floor: every size in it is DP."""
    form = geometric_form(100, Fraction(1, 2), K)
    for n in range(form.sizes[0], form.sizes[1] + 1, 7):
        assert exact_dp_check(form.for_size(n).dense_weights(), Fraction(1, 2), K).holds
