"""Every input's expected loss, and the release errors, of a square-corner structure without its matrix.

The forms are built with no LP solve: GM's own float square (the top-left ``(W + 1)^2`` of its closed
form), whose corner extension is GM itself.  Independent facts:

* the form's full integer matrix, built column by column (``StructuralCorners.column``) and summed
  entry by entry with the loss (``[|i - j| > d]`` or ``(i - j)**2``) in Python integers; the float
  losses are those exact fractions rounded once;
* :func:`countdp.privacy.expected_error.release_errors` on the dense
  :class:`~countdp.privacy.exact.IntegerMechanism` (which re-runs the exact DP test);
* GM's closed form: the weights are GM's to float accuracy, and at large ``n`` the L0 error of every
  middle input is ``1 - (1 - alpha) / (1 + alpha)`` (GM's centre) plus the floor's tiny share.

The sizes cover the smallest of the range, sizes whose two corners' tails still overlap
(``n < 2W + L + width``), and sizes with a middle of inputs whose floor's extra rows end inside it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.evaluate.structural import column_losses
from countdp.mechanisms.closed_forms import geometric
from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.expected_error import release_errors
from countdp.structural.corner_errors import corner_errors, corner_loss_numerators, corner_losses
from countdp.structural.corners_build import corner_mechanism
from countdp.structural.errors import structural_errors

K = 62
D = 1 << K
CASES = [("L0", 0), ("L0d", 1), ("L0d", 3), ("L0d", 9), ("L0d", 1000), ("L2", 0)]


def gm_corners(n: int, alpha: Fraction, W: int):
    """The certified square-corner form of GM's own square (no LP), for groups of ``n``."""
    square = geometric(4 * W + 200, alpha)[:W + 1, :W + 1]
    return corner_mechanism("WM", square, n, alpha, K, smallest=4 * (W + 1))


def dense_numerators(form, kind: str, d: int) -> list[int]:
    """Each input's loss numerator from the full integer matrix, entry by entry, in Python integers."""
    n = form.n
    W = form.dense_weights().astype(object)
    assert all(int(x) == D for x in W.sum(axis=0))
    i = np.arange(n + 1)
    diff = np.abs(i[:, None] - i[None, :])
    if kind == "L2":
        return [int(x) for x in (diff.astype(object) ** 2 * W).sum(axis=0)]
    band = diff <= (0 if kind == "L0" else d)
    return [D - int(x) for x in (band * W).sum(axis=0)]


def middle_floor_rows(form) -> int:
    """``r`` of the middle input ``n // 2``: its floor's extra rows, from its own column's weights."""
    n = form.n
    return (D - int(form.structured_column(n // 2).astype(object).sum())) % (n + 1)


def assert_matches_dense(form) -> None:
    for kind, d in CASES:
        numerators = corner_loss_numerators(form, kind, d)
        expected = dense_numerators(form, kind, d)
        assert numerators.dtype == object
        assert numerators.tolist() == expected, (form.n, kind, d)
        floats = corner_losses(form, kind, d)
        assert floats.dtype == float
        assert floats.tolist() == [float(Fraction(v, D)) for v in expected], (form.n, kind, d)  # rounded once
    reference = release_errors(IntegerMechanism(form.alpha, form.K, form.dense_weights()))
    assert corner_errors(form) == reference, form.n
    assert structural_errors(form, dense_max_n=0) == reference, form.n  # the dispatch beyond the dense size


@pytest.mark.parametrize("W", [5, 7])
def test_half_numerators_and_errors_are_the_dense_sums(W):
    """alpha = 1/2: L = 61 and width = W + 62, so corners overlap up to n = 2W + L + width - 1."""
    alpha = Fraction(1, 2)
    form = gm_corners(4 * (W + 1), alpha, W)
    overlap = 2 * W + form.L + form.width
    sizes = [4 * (W + 1), 4 * (W + 1) + 1, 72, overlap - 1, overlap, 2 * form.width, 144, 158, 201]
    inside = 0
    for n in sizes:
        form = gm_corners(n, alpha, W)
        assert_matches_dense(form)
        inside += form.width < middle_floor_rows(form) < n - form.width
    assert inside >= 2  # the middle's runs split where its floor's extra rows end (144 and 158)


@pytest.mark.parametrize("W", [8, 12])
def test_nine_tenths_numerators_and_errors_are_the_dense_sums(W):
    """alpha = 9/10: L is about 400, so the corners overlap until n is about 800."""
    alpha = Fraction(9, 10)
    smallest = gm_corners(4 * (W + 1), alpha, W)
    assert_matches_dense(smallest)
    sizes = [2 * W + smallest.L + smallest.width - 5, 2 * smallest.width + 3]
    for n in sizes:
        assert_matches_dense(gm_corners(n, alpha, W))


def test_the_weights_are_gm():
    """GM's square extended by the corner rule is GM: the integer weights are its closed form to float accuracy."""
    for alpha, W, n in [(Fraction(1, 2), 5, 150), (Fraction(9, 10), 8, 500)]:
        form = gm_corners(n, alpha, W)
        assert np.abs(form.dense_weights() / D - geometric(n, alpha)).max() < 1e-9


def test_column_losses_dispatch_to_the_corner_rule():
    form = gm_corners(160, Fraction(1, 2), 5)
    assert column_losses(form, "L0").tolist() == corner_losses(form, "L0").tolist()
    assert column_losses(form, "L0d:3").tolist() == corner_losses(form, "L0d", 3).tolist()
    assert column_losses(form, "RMSE").tolist() == corner_losses(form, "L2").tolist()


def test_a_band_past_every_row_loses_nothing():
    """Every column totals 2^K, so a band covering all rows keeps it all."""
    form = gm_corners(150, Fraction(1, 2), 5)
    assert (corner_loss_numerators(form, "L0d", 151) == 0).all()
    assert (corner_loss_numerators(form, "L0d", 150) == 0).all()


def test_large_n_is_gm_with_a_floor():
    """n = 10^6 at alpha = 1/2: the whole-vector losses and the run-by-run errors agree exactly, and L0 is
    GM's centre's ``1 - (1 - alpha) / (1 + alpha)`` up to the corners and the floor."""
    alpha = Fraction(1, 2)
    form = gm_corners(10 ** 6, alpha, 5)
    N = form.n + 1
    errors = structural_errors(form)
    l0 = corner_loss_numerators(form, "L0")
    l2 = corner_loss_numerators(form, "L2")
    assert errors.l0_uniform == Fraction(int(l0.sum()), N * D)
    assert errors.mse_uniform == Fraction(int(l2.sum()), N * D)
    assert errors.l0_worst == Fraction(int(l0.max()), D) and errors.l0_worst_input == int(np.argmax(l0))
    assert errors.mse_worst == Fraction(int(l2.max()), D) and errors.mse_worst_input == int(np.argmax(l2))
    losses = corner_losses(form, "L0")
    assert np.isfinite(losses).all() and np.isfinite(corner_losses(form, "L2")).all()
    centre = 1 - (1 - alpha) / (1 + alpha)
    assert abs(float(errors.l0_uniform) - float(centre)) < 1e-5
    assert abs(losses[N // 2] - float(centre)) < 1e-9
    gm_variance = 2 * alpha / (1 - alpha) ** 2  # the two-sided geometric's, which the floor only adds to
    assert float(gm_variance) < float(errors.mse_uniform) < float(gm_variance) + 1


def test_unknown_losses_are_refused():
    form = gm_corners(24, Fraction(1, 2), 5)
    with pytest.raises(ValueError, match="loss kind"):
        corner_losses(form, "L1")
    with pytest.raises(ValueError, match="d must be >= 0"):
        corner_loss_numerators(form, "L0d", -1)
