"""Every input's expected loss of a spread structure, without its matrix, against its full integer matrix.

Independent fact: the spread's weights taken column by column (``StructuralSpread.column``, each
input's canonical column at its shift plus its floor), stacked into the full ``(n+1) x (n+1)``
integer matrix and summed entry by entry with the loss (``[|i - j| > d]`` or ``(i - j)**2``), in
Python integers; the float losses are those exact fractions rounded once.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.design.forms import template_form
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_errors import LOSS_KINDS, spread_errors, spread_loss_numerators, spread_losses

K = 62
D = 1 << K


def _small_spread(seed: int) -> StructuralSpread:
    """A canonical matrix of size 7 (c = 3) whose column 4 is column 3 moved down a row, each column
    totalling 2^62 with its reserve; different reserves per column give each its own floor split."""
    rng = np.random.default_rng(seed)
    m, c = 7, 3
    S = rng.integers(0, 1 << 58, size=(m + 1, m + 1), dtype=np.int64)
    S[m, c] = 0
    S[0, c + 1], S[1:, c + 1] = 0, S[:-1, c]
    reserve = 1000 * 41 + 17
    delta = np.array([D - reserve - int(S[:, k].astype(object).sum()) for k in range(m + 1)], dtype=np.int64)
    return StructuralSpread("WM", m, Fraction(1, 2), K, reserve, S, delta, 1, (m, 40))


def _dense_numerators(form: StructuralSpread, kind: str, d: int) -> list[int]:
    """Each input's loss numerator from the full integer matrix built column by column, entry by entry."""
    n = form.n
    W = np.stack([form.column(j) for j in range(n + 1)], axis=1).astype(object)
    i = np.arange(n + 1)
    diff = np.abs(i[:, None] - i[None, :])
    if kind == "L2":
        return [int(x) for x in (diff.astype(object) ** 2 * W).sum(axis=0)]
    band = diff <= (0 if kind == "L0" else d)
    return [form.denominator - int(x) for x in (band * W).sum(axis=0)]


CASES = [("L0", 0), ("L0d", 1), ("L0d", 3), ("L0d", 100), ("L2", 0)]


@pytest.mark.parametrize("n", [7, 8, 9, 20, 40])
@pytest.mark.parametrize("seed", [1, 2])
def test_small_spread_numerators_are_the_full_matrix_sums(seed, n):
    form = _small_spread(seed).for_size(n)
    for kind, d in CASES:
        numerators = spread_loss_numerators(form, kind, d)
        assert numerators.tolist() == _dense_numerators(form, kind, d), (kind, d)
        floats = spread_losses(form, kind, d)
        assert floats.dtype == float
        assert floats.tolist() == [float(Fraction(int(v), D)) for v in numerators]  # rounded once


def test_a_band_past_every_row_loses_nothing():
    """With every column totalling 2^K, a band that covers all rows leaves no loss at all."""
    form = _small_spread(3).for_size(25)
    assert (spread_loss_numerators(form, "L0d", 26) == 0).all()


@pytest.fixture(scope="module")
def wm():
    """WM at alpha = 1/2: canonical size 319, sizes 319..510 (a second or two to design and prove)."""
    return template_form(400, Fraction(1, 2), K)


def test_wm_spread_losses_are_the_full_matrix_sums_and_average_to_its_errors(wm):
    for n in (wm.sizes[0], 400):
        form = wm.for_size(n)
        errors = spread_errors(form)
        for kind, d in CASES:
            numerators = spread_loss_numerators(form, kind, d)
            assert numerators.tolist() == _dense_numerators(form, kind, d), (n, kind, d)
        uniform = {"L0": errors.l0_uniform, "L2": errors.mse_uniform}
        for kind, exact in uniform.items():
            assert Fraction(int(spread_loss_numerators(form, kind).sum()), (n + 1) * D) == exact, (n, kind)


def test_unknown_losses_are_refused():
    form = _small_spread(1)
    assert LOSS_KINDS == ("L0", "L0d", "L2")
    with pytest.raises(ValueError, match="loss kind"):
        spread_losses(form, "L1")
    with pytest.raises(ValueError, match="d must be >= 0"):
        spread_losses(form, "L0d", -1)
