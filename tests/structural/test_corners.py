"""The square-corner form: its weights, its certificate (and its refusals) and its exact sampler.

Independent facts used here:

* GM's own top-left square, extended by the corner rule (row tails, column tails, GM between), is
  GM: its rows and columns fall by alpha away from the diagonal and its first row holds the
  clamped mass ``alpha^j / (1 + alpha)``.  So the form built from GM's square must be GM's closed
  form, up to the integer rounding and the floor;
* the dense exact DP test of :class:`countdp.privacy.exact.IntegerMechanism` on the form's weights,
  which knows nothing of the structure;
* the sampler is checked against the column weights segment by segment, in the order its
  docstring gives (floor, strip, tails or band above, band below, mirrored strip).
"""

from fractions import Fraction

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.exact import IntegerMechanism
from countdp.structural.corners import StructuralCorners
from countdp.structural.corners_build import SIGMA, corner_mechanism
from countdp.structural.template import stored_spread

D = 1 << 62


def gm_corner(alpha: Fraction, W: int, n: int, smallest: int | None = None) -> StructuralCorners:
    square = geometric(4 * (W + 1), float(alpha))[:W + 1, :W + 1]
    return corner_mechanism("WM", square, n, alpha, 62, smallest or 4 * (W + 1))


def rebuilt(form: StructuralCorners, **tables) -> StructuralCorners:
    """The same form with some of its tables replaced (a corrupted copy)."""
    arrays = {**form.table_arrays(), **tables}
    return StructuralCorners(form.mechanism, form.n, form.alpha, form.K, arrays["strip"], arrays["lower"],
                             arrays["band"], form.sigma, form.sizes, form.source)


@pytest.mark.parametrize("alpha,W", [(Fraction(1, 2), 6), (Fraction(9, 10), 12), (Fraction(24, 25), 40)])
def test_gm_square_extends_to_gm(alpha, W):
    form = gm_corner(alpha, W, 4 * (W + 1))
    assert form.certify().holds
    for n in (4 * (W + 1), 4 * (W + 1) + 1, form.sizes[1]):
        sized = form.for_size(n)
        weights = sized.dense_weights()
        assert (weights.sum(axis=0) == D).all()
        assert np.abs(weights / float(D) - geometric(n, float(alpha))).max() < 1e-12 + sized.uniform_share


@pytest.mark.parametrize("alpha,W", [(Fraction(1, 2), 6), (Fraction(9, 10), 12)])
def test_dense_exact_test_agrees(alpha, W):
    form = gm_corner(alpha, W, 200)
    for n in (form.sizes[0], (form.sizes[0] + form.sizes[1]) // 2, form.sizes[1]):
        sized = form.for_size(n)
        assert IntegerMechanism(alpha, 62, sized.dense_weights()).certificate.holds
        for j in (0, n // 3, n):
            assert np.array_equal(sized.column(j), sized.dense_weights()[:, j])


def corruptions(form: StructuralCorners) -> dict[str, dict]:
    """One table entry moved per case, always down (so every column still fits in ``2^62`` and its floor
    takes the rest): each breaks a DP inequality by far more than sigma."""
    W, a = form.W, form.alpha
    strip, lower, band = (t.copy() for t in (form.strip, form.lower, form.band))
    square = strip.copy()
    square[W // 2, W // 2] = square[W // 2, W // 2] // 2  # a template entry
    tail = strip.copy()
    tail[1, W + 3] = tail[1, W + 3] // 2  # a row tail's rate
    column = lower.copy()
    column[2, W // 2] = column[2, W // 2] // 2  # a column tail
    rate = band.copy()
    rate[3:] = (rate[3:] * float(a) ** 2).astype(np.int64)  # the band's rate from the fourth entry on
    unended = band.copy()
    unended[-1] = 1 << 40  # the band does not end in zero
    return {"square entry": {"strip": square}, "row tail": {"strip": tail}, "column tail": {"lower": column},
            "band rate": {"band": rate}, "band end": {"band": unended}}


@pytest.mark.parametrize("case", ["square entry", "row tail", "column tail", "band rate", "band end"])
def test_certificate_refuses_a_corrupted_table(case):
    form = gm_corner(Fraction(9, 10), 12, 60)
    broken = rebuilt(form, **corruptions(form)[case])
    check = broken.certify()
    assert not check.holds
    assert ("end in zeros" if case == "band end" else "alpha-DP within sigma") in check.reason
    if case != "band end":  # the dense exact test, which knows nothing of the structure, refuses it too
        weights = broken.dense_weights()
        assert (weights.sum(axis=0) == D).all()
        with pytest.raises(ValueError, match="DP inequalities fail"):
            IntegerMechanism(form.alpha, 62, weights)


def test_certificate_refuses_floors_too_small_for_the_sizes():
    form = gm_corner(Fraction(9, 10), 12, 60)
    wide = StructuralCorners(form.mechanism, form.n, form.alpha, form.K, form.strip, form.lower, form.band, SIGMA,
                             (form.sizes[0], 1 << 40))
    check = wide.certify()
    assert not check.holds and "floor" in check.reason


def test_certificate_refuses_sizes_without_a_middle():
    form = gm_corner(Fraction(9, 10), 12, 60)
    small = StructuralCorners(form.mechanism, 30, form.alpha, form.K, form.strip, form.lower, form.band, SIGMA,
                              (30, form.sizes[1]))
    check = small.certify()
    assert not check.holds and "a middle between twice both corners" in check.reason


def test_certificate_refuses_columns_whose_sums_would_wrap_int64():
    """Every strip row a chain from 2^62 (ratio 1/10 holds between neighbours): each column sums to
    more than 2^62, which int64 sums would hide; the exact sums refuse it, as the dense test does."""
    alpha, W = Fraction(1, 10), 3
    row = [1 << 62]
    while row[-1] > 0:
        row.append(row[-1] // 10)
    strip = np.array([row] * (W + 1), dtype=np.int64)
    L = strip.shape[1] - (W + 1)
    form = StructuralCorners("WM", 30, alpha, 62, strip, np.zeros((L, W + 1), dtype=np.int64),
                             np.zeros(L + 1, dtype=np.int64), SIGMA, (30, 100))
    check = form.certify()
    assert not check.holds and "at most 2^62" in check.reason


def test_certificate_refuses_an_entry_past_2_62():
    form = gm_corner(Fraction(9, 10), 12, 60)
    strip = form.strip.copy()
    strip[0, 0] = (1 << 62) - 1  # within 2^62, but not with sigma on top
    check = rebuilt(form, strip=strip).certify()
    assert not check.holds and "entries in 0..2^62 - sigma" in check.reason


def segments(form: StructuralCorners, j: int) -> list[tuple[int, int]]:
    """(output, weight) in the sampler's documented order for input ``j``: the floor's rows, then the
    structured part of the column (mirrored for ``2 j > n``)."""
    n, W = form.n, form.W
    f, r = divmod(D - int(form.structured_column(j).sum()), n + 1)
    floor = [(i, f + (i < r)) for i in range(n + 1)]
    flip = 2 * j > n
    jj = n - j if flip else j
    mirrored = form.structured_column(j)[::-1] if flip else form.structured_column(j)
    order = list(range(W + 1))
    if jj <= W:
        order += list(range(W + 1, n - W))
    else:
        order += list(range(jj - 1, W, -1)) + list(range(jj, n - W))
    order += list(range(n, n - W - 1, -1))
    structured = [((n - i) if flip else i, int(mirrored[i])) for i in order]
    return floor + structured


@pytest.mark.parametrize("n", [52, 60, 101, 160])
def test_sampler_draws_each_output_for_exactly_its_weight(n):
    form = gm_corner(Fraction(9, 10), 12, n, smallest=52)
    for j in sorted({0, 1, 11, 12, 13, 14, n // 2, n // 2 + 1, n - 13, n - 12, n - 1, n}):
        column = form.column(j)
        parts = segments(form, j)
        assert sum(w for _, w in parts) == D
        assert np.array_equal(np.bincount([o for o, _ in parts], weights=[float(w) for _, w in parts],
                                          minlength=n + 1).astype(object) > 0, column > 0)
        starts = np.cumsum([0] + [w for _, w in parts])[:-1]
        live = [(o, s, w) for (o, w), s in zip(parts, starts, strict=True) if w > 0]
        draws = np.array([d for _, s, w in live for d in (s, s + w - 1)], dtype=np.int64)
        expected = np.array([o for o, _, _ in live for _ in (0, 1)], dtype=np.int64)
        assert np.array_equal(form.outputs(np.full(draws.size, j), draws), expected), f"n={n} column {j}"
        totals = np.zeros(n + 1, dtype=object)
        for o, _, w in live:
            totals[o] += w
        assert np.array_equal(totals.astype(np.int64), column)


def test_stored_tables_give_the_same_form():
    form = gm_corner(Fraction(9, 10), 12, 300)
    record = form.describe()
    again = stored_spread(record, form.table_arrays())
    assert again.describe() == record and again.certify().holds
    assert np.array_equal(again.for_size(300).column(150), form.for_size(300).column(150))


def test_large_sizes_hold_their_columns():
    form = gm_corner(Fraction(99, 100), 142, 10**7, smallest=2049)
    assert form.certify().holds and form.nbytes < 100e6
    n = form.n
    g = (1 - 0.99) / (1 + 0.99)
    for j in (0, 142, 143, n // 2, n):
        column = form.column(j)
        assert column.sum() == D
    assert abs(form.column(n // 2)[n // 2] / D - g) < 1e-6
    rng = np.random.default_rng(7)
    columns = rng.integers(0, n + 1, 200_000)
    out = form.outputs(columns, rng.integers(0, D, columns.size, dtype=np.int64))
    assert abs(np.mean(out == columns) - g) < 5 * np.sqrt(g / columns.size)
