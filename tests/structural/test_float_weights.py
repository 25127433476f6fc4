"""Float blocks of a structural form's weights (``float_weights``) against its exact integer columns.

Independent fact: :meth:`~countdp.structural.form.StructuralMechanism.column`, the exact integer
weights the sampler draws (built column by column by each structure's own rule, Python integers
for a form over ``2^124``), divided by ``2**K`` in exact rationals.  Every float entry must be
within :data:`countdp.consumers.weight_blocks.ENTRY_ULPS` units in the last place of that, for
every form the release serves as structure, and any block (rows or columns, scattered) must be the
same entries.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.consumers.weight_blocks import ENTRY_ULPS
from countdp.design.forms import template_form
from countdp.mechanisms.closed_forms import geometric
from countdp.structural.catalogue import closed_structural_form
from countdp.structural.corners_build import corner_mechanism

HALF = Fraction(1, 2)


def _exact(form) -> np.ndarray:
    """``W / 2**K`` as Fractions, from the integer columns."""
    N = form.n + 1
    W = np.stack([np.asarray(form.column(j), dtype=object) for j in range(N)], axis=1)
    D = form.denominator
    return np.array([Fraction(int(w), D) for w in W.ravel()], dtype=object).reshape(N, N)


def _within(form) -> float:
    """The largest error of the float block over the whole matrix, in units of ``2^-53`` relative."""
    i = np.arange(form.n + 1)
    F = form.float_weights(i[:, None], i[None, :])
    E = _exact(form)
    worst = 0.0
    for f, e in zip(F.ravel().tolist(), E.ravel().tolist(), strict=True):
        if e == 0:
            assert f == 0.0
            continue
        worst = max(worst, float(abs(Fraction(f) - e) / e) * 2.0**53)
    return worst


def _wm_corners(W: int = 12, alpha: Fraction = Fraction(9, 10)):
    square = geometric(4 * W + 200, float(alpha))[:W + 1, :W + 1]
    return corner_mechanism("WM", square, 4 * (W + 1), alpha, 62, smallest=4 * (W + 1))


@pytest.mark.parametrize("mechanism", ["GM", "EM", "UM"])
@pytest.mark.parametrize("n, K, alpha", [(5, 62, HALF), (6, 124, HALF), (40, 124, HALF), (33, 124, Fraction(9, 10)),
                                         (40, 62, Fraction(9, 10))])
def test_closed_forms(mechanism, n, K, alpha):
    assert _within(closed_structural_form(mechanism, n, alpha, K)) <= ENTRY_ULPS


def test_template_spread_and_square_corners():
    spread = template_form(400, HALF, 62)
    corners = _wm_corners()
    for form in (spread.for_size(spread.sizes[0]), corners, corners.for_size(corners.sizes[1])):
        assert _within(form) <= ENTRY_ULPS


def test_any_block_is_the_same_entries():
    form = closed_structural_form("GM", 300, HALF, 124)
    rng = np.random.default_rng(7)
    rows, cols = rng.integers(0, 301, 17), rng.integers(0, 301, 23)
    full = form.float_weights(np.arange(301)[:, None], np.arange(301)[None, :])
    assert np.array_equal(form.float_weights(rows[:, None], cols[None, :]), full[np.ix_(rows, cols)])
    assert np.array_equal(form.float_weights(np.array([0, 300])[:, None], cols[None, :]), full[[0, 300]][:, cols])


def test_a_corrupted_table_is_seen():
    """The check above can fail: a GM whose tail table is altered after construction gives other floats."""
    form = closed_structural_form("GM", 40, HALF, 124)
    broken = closed_structural_form("GM", 40, HALF, 124)
    mass, tail, corner = broken.float_tables
    broken.__dict__["float_tables"] = (mass * (1 + 2.0**-40), tail, corner)
    i = np.arange(41)
    assert not np.array_equal(broken.float_weights(i[:, None], i[None, :]), form.float_weights(i[:, None], i[None, :]))
    assert _within(broken) > ENTRY_ULPS
