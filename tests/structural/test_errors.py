"""Expected errors of a structural mechanism, checked against the dense exact computation and closed forms.

The dense reference is :func:`countdp.privacy.expected_error.release_errors` on the
:class:`~countdp.privacy.exact.IntegerMechanism` of the form's dense weights (the matrix that a
mechanism file samples, checked by the exact DP test on construction).  The matrix-free path is
forced on small n with ``dense_max_n=0`` and must agree *exactly* (every value is a Fraction),
including sizes past the end of the tables, odd and even n, and sizes of a shared size range.
At n = 10**6 GM's errors are compared with the two-sided geometric's closed forms.

Wide forms (``K = 124``: weights are Python integers past ``2**63``, which ``release_errors`` does
not take) are compared with a brute force over their dense weights: every input's three
numerators summed in Python integers, one entry at a time, and the averages and maxima taken
with Fractions.  The brute force is itself checked against ``release_errors`` on ``K = 62`` forms.
"""

import time
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

from countdp.design.forms import structural_form
from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.expected_error import ReleaseErrors, release_errors
from countdp.structural.errors import structural_errors
from countdp.structural.form import StructuralMechanism

ALPHAS = [Fraction(1, 2), Fraction(9, 10), Fraction(99, 100)]
MECHANISMS = ["GM", "EM", "UM"]


def dense_reference(form):
    return release_errors(IntegerMechanism(form.alpha, form.K, form.dense_weights()))


def own_weights(form):
    """The form's weights as nested lists of Python ints: its dense matrix or, where that construction adds
    the floor in int64 and overflows (a floor past 2**63 over 2**124: EM's own table, UM), its columns."""
    try:
        return form.dense_weights().tolist()
    except OverflowError:
        return np.stack([form.column(j) for j in range(form.n + 1)], axis=1).tolist()


def brute_force(form):
    """Every field of ReleaseErrors from the form's weights, input by input, in Python integers and Fractions."""
    n, D = form.n, form.denominator
    W = own_weights(form)
    numerators = []
    for j in range(n + 1):
        column = [int(W[i][j]) for i in range(n + 1)]
        assert sum(column) == D
        near = sum(column[i] for i in (j - 1, j, j + 1) if 0 <= i <= n)
        numerators.append((D - column[j], D - near, sum((i - j) ** 2 * w for i, w in enumerate(column))))
    fields = []
    for values in zip(*numerators, strict=True):
        worst = max(values)
        fields += [Fraction(sum(values), (n + 1) * D), Fraction(worst, D), values.index(worst)]
    return ReleaseErrors(n, *fields)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_dense_path_is_release_errors(mechanism):
    for n in (1, 2, 17, 64, 255):
        form = structural_form(mechanism, n, Fraction(9, 10))
        assert structural_errors(form, n) == dense_reference(form), f"{mechanism} n={n}"


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_the_structure_path_is_exact_at_small_n(mechanism, alpha):
    for n in range(1, 61):
        form = structural_form(mechanism, n, alpha)
        assert structural_errors(form, n, dense_max_n=0) == dense_reference(form), f"{mechanism} n={n}"


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("alpha, sizes", [(Fraction(1, 2), (150, 151)), (Fraction(9, 10), (900, 901))])
def test_the_structure_path_is_exact_past_the_tables(mechanism, alpha, sizes):
    """Sizes longer than GM's tail table and EM's power table: interior columns see the whole table."""
    for n in sizes:
        form = structural_form(mechanism, n, alpha)
        if mechanism == "GM":
            assert form.tail.size < n // 2
        if mechanism == "EM":
            assert form.powers.size - 1 < n // 2
        assert structural_errors(form, n, dense_max_n=0) == dense_reference(form), f"{mechanism} n={n}"


@pytest.mark.parametrize("mechanism", ["GM", "EM"])
def test_every_size_of_a_shared_range(mechanism):
    """One table, several sizes: the floor's split and EM's last exponent change with n."""
    form = structural_form(mechanism, 300, Fraction(1, 2))
    lo, hi = form.sizes
    assert lo < hi  # a shared table, not a single size
    for n in sorted({lo, lo + 1, (lo + hi) // 2, (lo + hi) // 2 + 1, hi - 1, hi}):
        sized = form.for_size(n)
        assert structural_errors(form, n, dense_max_n=0) == dense_reference(sized), f"{mechanism} n={n}"


def test_sizes_outside_the_range_and_unknown_structures_are_refused():
    form = structural_form("GM", 300, Fraction(1, 2))
    with pytest.raises(ValueError, match="serves group sizes"):
        structural_errors(form, form.sizes[1] + 1)

    class Foreign(StructuralMechanism):
        mechanism = "XM"

        def category_masses(self):
            return np.zeros(0, dtype=np.int64)

    with pytest.raises(TypeError, match="no structural error rule"):
        structural_errors(Foreign(10, Fraction(1, 2), 62, 1 << 62), dense_max_n=0)


@pytest.mark.parametrize("n", [10**6, 10**12, (1 << 62) - 1])
def test_gm_at_a_million_and_far_beyond_matches_the_geometric_closed_forms(n):
    """Two-sided geometric noise, clamped: Pr[Z = 0] = (1-a)/(1+a), Pr[Z >= k] = a^k/(1+a).

    Interior inputs have L0 = 2a/(1+a) and L0,1 = 2a^2/(1+a); the clamped inputs lose one side:
    inputs 0 and n have L0 = a/(1+a), inputs 0, 1, n-1, n have L0,1 = a^2/(1+a).  E[Z^2] = 2a/(1-a)^2,
    and the floor mixes in UM (share lam = R/D), whose uniform-prior MSE is ((n+1)^2 - 1)/6.  The
    floor's ``r`` extra units go to rows ``0..r-1``, so the worst inputs are the first interior ones
    whose diagonal (L0), or whose three near rows (L0,1), are past them.
    """
    a = Fraction(9, 10)
    form = structural_form("GM", n, a)
    got = structural_errors(form)
    x, lam = float(a), form.reserve / form.denominator
    assert abs(float(got.l0_uniform) - 2 * x / (1 + x)) < 1e-5
    assert abs(float(got.l0_uniform) - 2 * x * n / ((1 + x) * (n + 1))) < 1e-9
    assert abs(float(got.l0_worst) - 2 * x / (1 + x)) < 1e-9
    assert abs(float(got.l01_uniform) - 2 * x * x * (n - 1) / ((1 + x) * (n + 1))) < 1e-9
    assert abs(float(got.l01_worst) - 2 * x * x / (1 + x)) < 1e-9
    expected_mse = (1 - lam) * 2 * x / (1 - x) ** 2 + lam * ((n + 1) ** 2 - 1) / 6
    assert abs(float(got.mse_uniform) / expected_mse - 1) < 1e-4
    # rows i < r carry one more unit: the smallest worst input is the first interior one past them
    r = form.extra_rows
    assert got.l0_worst_input == max(1, r) and got.l01_worst_input == max(2, r + 1)


@pytest.mark.parametrize("mechanism", ["GM", "EM", "UM"])
@pytest.mark.parametrize("n", [10**6, 10**9, (1 << 62) - 1])
def test_any_size_takes_under_a_second_and_a_few_megabytes(mechanism, n):
    """Nothing of size n is built (numpy's allocations are traced): a group of 2^62 costs what one of
    a million does, and the values are sane (the worst input is no better than the average)."""
    form = structural_form(mechanism, n, Fraction(9, 10))
    assert form.wide or mechanism == "UM"  # weights past 2**63: the path that must not form a Python integer per input
    tracemalloc.start()
    start = time.perf_counter()
    got = structural_errors(form)
    seconds, (_, peak) = time.perf_counter() - start, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 1.0 and peak < 8 * 2**20
    assert got.n == n and 0 < got.l0_uniform <= got.l0_worst < 1 and got.mse_worst >= got.mse_uniform


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_brute_force_is_release_errors(mechanism):
    """The wide forms' reference agrees with the project's dense reference wherever both apply."""
    for n in (1, 2, 5, 16, 33):
        form = structural_form(mechanism, n, Fraction(9, 10))
        assert brute_force(form) == dense_reference(form), f"{mechanism} n={n}"


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_wide_forms_are_exact_on_both_paths(mechanism, alpha):
    """K = 124: the structure path (forced) and the dense path (the default at small n) equal the brute force."""
    for n in range(1, 41):
        form = structural_form(mechanism, n, alpha, 124)
        assert form.wide and form.denominator == 1 << 124
        expected = brute_force(form)
        assert structural_errors(form, dense_max_n=0) == expected, f"{mechanism} n={n} structure"
        assert structural_errors(form) == expected, f"{mechanism} n={n} dense"


@pytest.mark.parametrize("mechanism", ["GM", "EM"])
def test_wide_sizes_of_a_shared_range_past_the_tables(mechanism):
    """K = 124, one table for several sizes, each longer than twice the table: interior inputs see all of it."""
    form = structural_form(mechanism, 300, Fraction(1, 2), 124)
    lo, hi = form.sizes
    assert form.wide and lo < hi
    table = form.tail.size if mechanism == "GM" else form.powers.size - 1
    assert table < lo // 2
    for n in sorted({lo, lo + 1, (lo + hi) // 2, (lo + hi) // 2 + 1, hi}):
        sized = form.for_size(n)
        expected = brute_force(sized)
        assert structural_errors(form, n, dense_max_n=0) == expected, f"{mechanism} n={n} structure"
        assert structural_errors(form, n, dense_max_n=n) == expected, f"{mechanism} n={n} dense"


@pytest.mark.parametrize("mechanism", ["GM", "EM"])
def test_wide_sizes_of_a_small_range(mechanism):
    """K = 124 at small n: every size that the form's table serves, through ``for_size``."""
    form = structural_form(mechanism, 20, Fraction(9, 10), 124)
    lo, hi = form.sizes
    for n in range(lo, hi + 1):
        assert structural_errors(form, n, dense_max_n=0) == brute_force(form.for_size(n)), f"{mechanism} n={n}"
