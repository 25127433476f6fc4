"""EM without its matrix: one table of integer powers of alpha, arranged by the exponent rule of Figure 4.

EM (Theorem 4: the L0-optimal fair mechanism) has ``P[i, j] = y alpha^e(i, j)`` with ``d = |i - j|``,
``m = min(j, n - j)`` and ``e = d`` if ``d <= m``, else ``ceil((d + m) / 2)``
(:func:`countdp.mechanisms.closed_forms.explicit_fair_exponents`).  Two facts about ``e`` carry
everything here:

1. **every column holds the same exponents**: 0 once, each of ``1 .. floor(n/2)`` twice, and, for
   odd n, ``(n+1)/2`` once (near side: ``d = 1..m``; far side: ``d = 1..m``, then pairs
   ``d = 2k-m-1, 2k-m`` with exponent ``k``);
2. **neighbouring inputs change an exponent by at most one** in every row.

The integer form over ``D = 2**K`` puts ``g(e) + f + [i < r]`` at ``(i, j)``, where
``g(0) = c`` and ``g(k+1) = floor(alpha g(k))`` (:func:`countdp.structural.chain.floor_chain`) and
the floor takes what the table leaves of ``D`` (:mod:`countdp.structural.form`).  By fact 1
every column sums to the same total; by fact 2 every DP inequality is one between ``g(k) + f``
and ``g(k+1) + f``, which :meth:`StructuralEM.structure_checks` tests exactly on the table the
sampler reads.  The sampler draws an exponent from the column-independent table and then one
of its (one or two) rows in column ``j``: O(1) memory per draw.  Both facts are proved by
enumeration for every n up to 2048 in the tests.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import numpy as np

from countdp.mechanisms.closed_forms import explicit_fair_exponents
from countdp.structural.chain import exact_sum, floor_chain, integer_table, neighbours_hold
from countdp.structural.form import COARSE_BITS, StructuralMechanism
from countdp.structural.geometric import size_class

ARGUMENT = ("every column holds exponent 0 once and each of 1..floor(n/2) twice (and (n+1)/2 once for odd n); "
            "neighbouring inputs change a row's exponent by at most one, so every DP inequality is one between "
            "g(k) + f and g(k+1) + f; rows' extra units are row-constant")


def exponents(n: int, i: np.ndarray, j: int | np.ndarray) -> np.ndarray:
    """EM's exponent ``e(i, j)`` (module docstring), vectorised, as ``min(d, ceil((d + m) / 2))``: that is
    ``d`` when ``d <= m + 1`` and ``ceil((d + m) / 2)`` when ``d >= m + 1`` (they agree at ``d = m + 1``),
    with a shift for the halving (``d + m + 1 >= 0``), several times faster than a floor division and a
    select over a block of ``10^6`` entries."""
    d = np.abs(np.asarray(i) - j)
    m = np.minimum(j, n - np.asarray(j))
    return np.minimum(d, (d + m + 1) >> 1)


class StructuralEM(StructuralMechanism):
    """EM over ``2**K`` from its power table ``powers[k] = g(k)`` (module docstring)."""

    mechanism = "EM"
    argument = ARGUMENT

    def __init__(self, n: int, alpha: Fraction, K: int, reserve: int, powers: np.ndarray,
                 sizes: tuple[int, int] | None = None, coarse_bits: int = COARSE_BITS) -> None:
        self.powers = integer_table(powers)
        smallest = n if sizes is None else sizes[0]
        self.top = smallest // 2 + smallest % 2  # the largest exponent of the smallest size served
        super().__init__(n, alpha, K, reserve, sizes, coarse_bits)

    def power_at(self, k: np.ndarray) -> np.ndarray:
        """``g(k)`` (0 past the table)."""
        k = np.asarray(k, dtype=np.int64)
        if not self.powers.size:
            return np.zeros(k.shape, dtype=np.int64)
        return np.where(k < self.powers.size, self.powers[np.minimum(k, self.powers.size - 1)], 0)

    def structured_column(self, j: int) -> np.ndarray:
        return self.power_at(exponents(self.n, np.arange(self.n + 1), j))

    @cached_property
    def float_powers(self) -> np.ndarray:
        """``g(k) / 2**K`` in floats (each exact integer rounded once), then 0 for every exponent past the table."""
        return np.array([float(int(g)) for g in self.powers] + [0.0]) / float(self.denominator)

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The structured part at ``(i, j)`` over ``2**K`` (floats): ``g(e(i, j))``."""
        return self.float_powers.take(exponents(self.n, i, j), mode="clip")  # past the table: its last entry, 0

    def dense_weights(self) -> np.ndarray:
        """The whole matrix at once, from Figure 4's exponent grid (the closed form's own function)."""
        return self.power_at(explicit_fair_exponents(self.n)) + self.row_floor()[:, None]

    def category_masses(self) -> np.ndarray:
        """Exponent 0, then each exponent ``k >= 1`` twice (its first and its second row).

        An odd n's last exponent has one row, so its second category is empty; a table shorter
        than every size's last exponent (a size range) has no such entry.
        """
        g = self.powers[:self.top + 1]
        pairs = np.repeat(g[1:], 2)
        if self.sizes[0] % 2 and g.size == self.top + 1:
            pairs[-1] = 0
        return np.concatenate([g[:1], pairs])

    @cached_property
    def _category_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Per category, its exponent ``k`` and its near row's offset ``-k`` or ``+k`` (built once; the
        last entry stands for the floor's category -1, whose rows are replaced)."""
        cat = np.arange(self.masses.size + 1)
        k_of = (cat + 1) >> 1
        k_of[-1] = 0
        return k_of, k_of * (1 - 2 * (cat & 1))

    def category_outputs(self, columns: np.ndarray, category: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Category 0: the diagonal; ``2k - 1``: exponent ``k``'s first row; ``2k``: its second.

        Near the diagonal (``k <= m``) the rows are ``j - k`` and ``j + k``; past ``m`` both lie on
        the far side, at distances ``2k - m - 1`` and ``2k - m``.  Most draws are near, so the
        far rows are recomputed only where they occur.
        """
        k_of, offset_of = self._category_rows
        k = k_of[category]
        out = columns + offset_of[category]
        far = np.flatnonzero(k > np.minimum(columns, n - columns))
        if far.size:
            j, kf, c = columns[far], k[far], category[far]
            nf = n if np.ndim(n) == 0 else n[far]
            d = 2 * kf - np.minimum(j, nf - j) - 1 + ((c > 0) & (c % 2 == 0))
            out[far] = np.where(j <= nf - j, j + d, j - d)
        return out

    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        g, f = self.powers, self.min_floor
        ended = g.size <= self.top  # the table stopped at its first zero, before the last exponent
        sequence = (np.append(g, 0) if ended else g) + f
        shared = self.sizes[0] == self.sizes[1] or 2 * (g.size - 1) <= self.sizes[0]
        return [("the power table is positive and non-increasing", np.append(g > 0, g[1:] <= g[:-1])),
                ("a size range needs every power counted twice in each size's columns", np.array([shared])),
                ("a weight exceeds 2^K", np.array([int(g.max(initial=0)) + f + 1 <= self.denominator])),
                ("alpha-DP between neighbouring powers", neighbours_hold(sequence, self.alpha))]

    def parameters(self) -> dict:
        return {"power_entries": int(self.powers.size)}

    def tables(self) -> list[np.ndarray]:
        return [self.powers]


def _diagonal_estimate(n: int | None, alpha: Fraction) -> float:
    """EM's diagonal ``y`` in floats; ``n=None``: its limit for large n."""
    a = float(alpha)
    if n is None:
        return (1 - a) / (1 + a)
    h = n // 2
    if n % 2 == 0:
        return (1 - a) / (1 + a - 2 * a ** (h + 1))
    return (1 - a) / (1 + a - a ** (h + 1) - a ** (h + 2))


def _below(spare: int, n: int | None, alpha: Fraction, stop: int | None) -> np.ndarray:
    """The power table from a diagonal just below ``spare * y``, lowered until its columns fit in ``spare``."""
    if n is None:  # the large-n limit y = (1 - alpha) / (1 + alpha), exactly
        c = spare * (alpha.denominator - alpha.numerator) // (alpha.denominator + alpha.numerator)
    else:
        c = min(int(spare * _diagonal_estimate(n, alpha) * (1 - 2.0**-52)), spare)
    for _ in range(64):
        powers = floor_chain(c, alpha, stop=stop)
        total = _column_total(powers, n) if powers.size else 0
        if total <= spare:
            return powers
        c -= (total - spare) // 2 + 1
    raise ValueError(f"EM at alpha = {alpha} found no integer form")


def fair_form(n: int, alpha: Fraction, K: int, coarse_bits: int = COARSE_BITS) -> StructuralEM:
    """EM for groups of size ``n`` over ``2**K`` (with its size class when ``n`` is large), certified.

    Large n: the power table is GM's size class's (:func:`countdp.structural.geometric.size_class`),
    shared by every size of the class whose last exponent lies past the table's end.  Otherwise a
    table for ``n`` alone, reaching its last exponent.  The diagonal starts just below ``D' y``
    (``y`` EM's diagonal, in floats) and is lowered until the columns fit; the reserve takes the
    rest.  Raises ``ValueError`` if ``n`` is too large for ``K``.
    """
    reserve, sizes = size_class(n, alpha)
    D = 1 << K
    if D - reserve <= 2 * reserve:
        raise ValueError(f"EM for groups of {n:,} at alpha = {float(alpha):.6g} does not fit integer weights "
                         f"over 2^{K}: lower n or alpha")
    powers = _below(D - reserve, None, alpha, None)
    if 2 * (powers.size - 1) <= sizes[0]:
        mechanism = StructuralEM(n, alpha, K, D - _column_total(powers, None), powers, sizes, coarse_bits)
    else:
        top = n // 2 + n % 2
        powers = _below(D - reserve, n, alpha, top + 1)
        mechanism = StructuralEM(n, alpha, K, D - _column_total(powers, n), powers, None, coarse_bits)
    check = mechanism.certify()
    if not check.holds:
        raise ValueError(f"EM for n = {n} at alpha = {alpha}: {check.reason}")
    return mechanism


def _column_total(powers: np.ndarray, n: int | None) -> int:
    """A column's total of ``g(e)``: 0 once, every other exponent twice, an odd n's last exponent once."""
    total = int(powers[0]) + 2 * exact_sum(powers[1:])
    if n is not None and n % 2 and powers.size == n // 2 + 2:
        total -= int(powers[-1])
    return total


__all__ = ["StructuralEM", "exponents", "fair_form"]
