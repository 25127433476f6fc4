"""One mechanism, two representations, one distribution.

For GM, EM and UM, three constructions of the integer weights must agree exactly, for every n
they cover up to 2048:

* the matrix form that a mechanism file samples (``design_named(...).released.weights``, built
  at once from the distance or exponent grid);
* the structural form's weights generated column by column (:meth:`column`);
* what the structural *sampler* gives each output: for every column, the masses of the categories
  it sends to each output (:meth:`category_outputs`) plus the floor, added up in int64.

The last is the sampler's own map from categories to outputs, so equal weights mean equal
distributions; the draw-to-category step is the shared exact inverse CDF, enumerated over every
draw at small K in ``test_sampler.py``.
"""

from fractions import Fraction

import numpy as np
import pytest

from countdp.design.designer import design_named
from countdp.design.forms import structural_form

ALL_SMALL = list(range(1, 65))
SPREAD = [65, 100, 127, 128, 129, 255, 256, 300, 511, 512, 513, 1000, 1023, 1024, 1025]
LARGEST = [2047, 2048]


def sampler_weights(form, j: int) -> np.ndarray:
    """Column ``j`` as the sampler draws it: the floor, plus each category's mass at the output it maps to."""
    out = np.full(form.n + 1, form.floor, dtype=np.int64)
    out[:form.extra_rows] += 1
    categories = np.flatnonzero(form.masses)  # an empty category is never drawn by the inverse CDF
    targets = form.category_outputs(np.full(categories.size, j), categories, np.int64(form.n))
    np.add.at(out, targets, form.masses[categories])
    return out


def assert_one_distribution(mechanism: str, n: int, alpha: Fraction) -> None:
    matrix = design_named(mechanism, n, alpha).released.weights
    form = structural_form(mechanism, n, alpha)
    for j in range(n + 1):
        column = form.column(j)
        assert np.array_equal(column, matrix[:, j]), f"{mechanism} n={n} column {j}: column form != matrix"
        assert np.array_equal(sampler_weights(form, j), column), f"{mechanism} n={n} column {j}: sampler != column"


@pytest.mark.parametrize("mechanism", ["GM", "EM", "UM"])
@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(9, 10), Fraction(99, 100)])
def test_every_small_n(mechanism, alpha):
    for n in ALL_SMALL:
        assert_one_distribution(mechanism, n, alpha)


@pytest.mark.parametrize("mechanism", ["GM", "EM", "UM"])
@pytest.mark.parametrize("n", SPREAD)
def test_spread_of_n(mechanism, n):
    assert_one_distribution(mechanism, n, Fraction(9, 10))


@pytest.mark.parametrize("mechanism", ["GM", "EM"])
@pytest.mark.parametrize("n", LARGEST)
def test_largest_matrices(mechanism, n):
    assert_one_distribution(mechanism, n, Fraction(99, 100))


def test_an_alpha_with_a_long_fraction():
    """An alpha of 27 digits: the chain and the checks use Python integers past 2^64."""
    alpha = Fraction(9 * 10**25 + 1, 10**26)
    assert alpha.denominator > 2**64
    for mechanism in ("GM", "EM"):
        assert_one_distribution(mechanism, 40, alpha)


def test_a_different_matrix_is_seen():
    """The comparison is not vacuous: a matrix of another alpha differs from the structure."""
    matrix = design_named("GM", 20, Fraction(9, 10)).released.weights
    form = structural_form("GM", 20, Fraction(8, 10))
    assert not all(np.array_equal(form.column(j), matrix[:, j]) for j in range(21))


@pytest.mark.parametrize("alpha", [Fraction(1, 2), Fraction(9, 10), Fraction(99, 100)])
def test_the_weights_are_the_closed_form_mixed_with_a_tiny_uniform(alpha):
    """Theorem 3's GM and equation 16's EM (independent float formulas), to within the reserve's
    share (at most 1e-9 of each column) plus float rounding, for every n up to 64 and a spread."""
    from countdp.mechanisms.closed_forms import explicit_fair, geometric

    for mechanism, closed in (("GM", geometric), ("EM", explicit_fair)):
        for n in [*ALL_SMALL, 300, 1000]:
            form = structural_form(mechanism, n, alpha)
            W = form.dense_weights() / 2.0**62
            assert form.uniform_share <= 1e-9, (mechanism, n)
            assert np.max(np.abs(W - closed(n, float(alpha)))) <= form.uniform_share + 1e-14, (mechanism, n)


WM_SIZES = [(Fraction(1, 2), n) for n in (319, 320, 511, 512, 513, 1000)] + [(Fraction(3, 4), n) for n in (493, 2048)]


@pytest.mark.parametrize("alpha, n", WM_SIZES)
def test_wm_from_its_canonical_size(alpha, n):
    """WM under L0 from its canonical size (319 at 1/2, 493 at 3/4) to the matrix path's largest: the
    matrix form a mechanism file samples is the spread's weights, column by column, and the design
    says how it was made and that it is proven optimal at ``n`` (the sampler's runs of draws are
    checked against the same columns in ``test_spread.py``)."""
    design = design_named("WM", n, alpha)
    form = structural_form("WM", n, alpha)
    assert design.method == "template spread" and design.extra["optimality"]["certified"]
    for j in range(n + 1):
        assert np.array_equal(form.column(j), design.released.weights[:, j]), f"WM n={n} column {j}"


def test_wm_below_its_canonical_size_is_the_lp():
    """Below the canonical size there is one representation, the LP's matrix, and no structure."""
    assert design_named("WM", 318, Fraction(1, 2)).method != "template spread"
    with pytest.raises(ValueError, match="at least 319"):
        structural_form("WM", 318, Fraction(1, 2))


def test_a_stand_in_wide_table_gives_its_matrix_under_the_table_s_own_name():
    """WH beyond 2048 is drawn from GM's wide table (a stand-in); its matrix form is GM's weights over
    2^62 at that size, built under the table's name (WH has no structural form of its own)."""
    from countdp.privacy.exact import RELEASE_K
    from countdp.structural.catalogue import GroupMechanism

    n, alpha = 2049, Fraction(9, 10)
    wide = structural_form("GM", n, alpha)
    assert wide.wide
    matrix = GroupMechanism("WH", n, "L0", wide).as_matrix()
    narrow = structural_form("GM", n, alpha, RELEASE_K).for_size(n)
    assert matrix.mechanism == "WH" and matrix.representation == "matrix"
    assert np.array_equal(matrix.released.weights, narrow.dense_weights())
