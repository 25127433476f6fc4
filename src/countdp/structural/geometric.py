"""GM without its matrix: clamped two-sided integer noise, sampled and certified from one tail table.

GM releases ``clamp(j + Z, 0, n)`` with ``Z`` two-sided geometric (Theorem 3: the L0 optimum at
every n).  Its integer form over ``D = 2**K`` is built from the *tail table*
``T(k) = #{draws with Z >= k} = #{draws with Z <= -k}`` for ``k >= 1``:

* ``T(1) = ceil(alpha D' / (1 + alpha))`` with ``D' = D - R`` and ``T(k+1) = floor(alpha T(k))``
  (:func:`countdp.structural.chain.floor_chain`), until it reaches 0 after about
  ``K ln 2 / ln(1/alpha)`` entries, whatever ``n``;
* ``Z = 0`` takes the rest, ``g0 = D' - 2 T(1)``; ``Z = +-k`` takes ``g(k) = T(k) - T(k+1)``;
* every column adds the floor ``f = R // (n+1)`` (:mod:`countdp.structural.form`).  The reserve
  ``R`` is the power of two just above ``2 (n+1) f0`` with ``f0 = ceil(1 / (1 - alpha)) + 2``, so
  one table serves every size whose ``(n+1) f0`` has the same bit length (a factor of two in n),
  each with ``f >= 2 f0``.

So column ``j`` holds ``g(|i - j|) + f`` in the interior rows, ``T(j) + f`` in row 0 (``Z <= -j``;
``g0 + T(1) + f`` when ``j = 0``) and ``T(n - j) + f`` in row n.  It is ``(1 - lam) GM + lam UM``
with ``lam = R / D < 4 (n+1) f0 / D``, up to one unit per entry.

**The certificate.**  In an interior row, neighbouring inputs differ by one in ``|i - j|``; in row
0 (and, mirrored, row n) they are neighbours in the corner sequence ``c(0) = g0 + T(1)``,
``c(j) = T(j)``.  So all ``2 n (n+1)`` DP inequalities are among the pairs
``(g(k) + f, g(k+1) + f)`` and ``(c(k) + f, c(k+1) + f)`` for ``k`` up to the table's end (past it
both sequences are the constant ``f``).  :meth:`StructuralGM.structure_checks` tests exactly those
pairs, on the table the sampler reads, plus ``T`` positive and non-increasing; the base class
checks that every column sums to ``D`` (the noise's masses telescope to ``g0 + 2 T(1)``, and
clamping moves mass between outputs without changing the column's total).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import numpy as np

from countdp.structural.chain import floor_chain, integer_table, neighbours_hold
from countdp.structural.form import COARSE_BITS, StructuralMechanism

ARGUMENT = ("interior rows: neighbouring inputs are neighbours in the mass sequence g(|i-j|) + f; rows 0 and n: "
            "neighbours in the corner sequence T(j) + f; past the table both are the constant f")


class StructuralGM(StructuralMechanism):
    """GM over ``2**K`` from its tail table ``tail[k-1] = T(k)`` and centre mass ``g0`` (module docstring)."""

    mechanism = "GM"
    argument = ARGUMENT

    def __init__(self, n: int, alpha: Fraction, K: int, reserve: int, tail: np.ndarray, centre: int,
                 sizes: tuple[int, int] | None = None, coarse_bits: int = COARSE_BITS) -> None:
        self.tail = integer_table(tail)
        self.centre = int(centre)
        super().__init__(n, alpha, K, reserve, sizes, coarse_bits)

    @property
    def first(self) -> int:
        """``T(1)``: the draws with ``Z >= 1`` (and, as many, with ``Z <= -1``)."""
        return int(self.tail[0]) if self.tail.size else 0

    def tail_at(self, k: np.ndarray) -> np.ndarray:
        """``T(k)`` for ``k >= 1`` (0 past the table), in the table's dtype."""
        k = np.asarray(k, dtype=np.int64)
        if not self.tail.size:
            return np.zeros(k.shape, dtype=self.tail.dtype)
        values = self.tail[np.clip(k - 1, 0, self.tail.size - 1)]
        return np.where(k <= self.tail.size, values, np.zeros((), dtype=self.tail.dtype))

    def mass(self, d: np.ndarray) -> np.ndarray:
        """``g(|d|)``: the draws giving ``Z = d``."""
        d = np.abs(np.asarray(d, dtype=np.int64))
        return np.where(d == 0, self.centre, self.tail_at(np.maximum(d, 1)) - self.tail_at(d + 1))

    def structured_column(self, j: int) -> np.ndarray:
        n = self.n
        s = self.mass(np.arange(n + 1) - j)
        s = s.astype(object) if self.wide else s
        s[0] = self.centre + self.first if j == 0 else int(self.tail_at(np.array([j]))[0])
        s[n] = self.centre + self.first if j == n else int(self.tail_at(np.array([n - j]))[0])
        return s

    def dense_weights(self) -> np.ndarray:
        """The whole matrix at once, from the distance grid ``|i - j|`` and the two corner rows."""
        n = self.n
        i = np.arange(n + 1)
        W = self.mass(i[:, None] - i[None, :])
        W[0, :] = self.tail_at(np.maximum(i, 1))
        W[n, :] = self.tail_at(np.maximum(n - i, 1))
        W[0, 0] += self.centre
        W[n, n] += self.centre
        return W + self.row_floor()[:, None]

    @cached_property
    def float_tables(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(g(0..L), 0)``, ``(T(1..L), 0)`` and the corner weight ``g0 + T(1)``, each over ``2**K`` in
        floats: the exact integer (a difference of tail entries for ``g``) rounded once."""
        tail = [int(t) for t in self.tail] + [0]
        mass = [self.centre] + [tail[k - 1] - tail[k] for k in range(1, len(tail))] + [0]
        D = float(self.denominator)
        return (np.array([float(g) for g in mass]) / D, np.array([float(t) for t in tail]) / D,
                float(self.centre + self.first) / D)

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The structured part at ``(i, j)`` over ``2**K`` (floats): ``g(|i - j|)``; rows 0 and n the corner
        sequence."""
        mass, tail, corner = self.float_tables
        out = mass.take(np.abs(i - j), mode="clip")  # past the table: its last entry, 0
        for row, distance in ((0, j), (self.n, self.n - np.asarray(j))):
            at = np.broadcast_to(i == row, out.shape)
            if at.any():
                d = np.broadcast_to(distance, out.shape)[at]
                out[at] = np.where(d == 0, corner, tail.take(d - 1, mode="clip"))
        return out

    def category_masses(self) -> np.ndarray:
        """The draws of ``Z = -L, ..., 0, ..., L`` (``L`` the table's length)."""
        g = self.mass(np.arange(1, self.tail.size + 1))
        return np.concatenate([g[::-1], [self.centre], g])

    def category_outputs(self, columns: np.ndarray, category: np.ndarray, n: np.ndarray) -> np.ndarray:
        return np.clip(columns + category - self.tail.size, 0, n)

    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        T, f = self.tail, self.min_floor
        after = np.append(T[1:], 0)
        corner = np.concatenate([[self.centre + self.first], T, [0]]) + f
        masses = np.concatenate([[self.centre], T - after, [0]]) + f
        return [("the tail table is positive and non-increasing", np.append(T > 0, T[1:] <= T[:-1])),
                ("the centre mass is non-negative", np.array([self.centre >= 0])),
                ("a weight exceeds 2^K", np.array([int(corner.max(initial=0)) + 1 <= self.denominator])),
                ("alpha-DP between neighbouring corner entries (rows 0 and n)", neighbours_hold(corner, self.alpha)),
                ("alpha-DP between neighbouring interior entries", neighbours_hold(masses, self.alpha))]

    def parameters(self) -> dict:
        return {"centre": self.centre, "tail_entries": int(self.tail.size)}

    def tables(self) -> list[np.ndarray]:
        return [self.tail]


def size_class(n: int, alpha: Fraction) -> tuple[int, tuple[int, int]]:
    """The reserve for groups of size ``n`` and the range of sizes that share it (module docstring)."""
    p, q = alpha.numerator, alpha.denominator
    f0 = -(-q // (q - p)) + 2
    bits = ((n + 1) * f0).bit_length()
    lo, hi = -(-(1 << (bits - 1)) // f0) - 1, ((1 << bits) - 1) // f0 - 1
    return 1 << (bits + 1), (max(lo, 1), hi)


def geometric_form(n: int, alpha: Fraction, K: int, coarse_bits: int = COARSE_BITS) -> StructuralGM:
    """GM for groups of size ``n`` (and its whole size class) over ``2**K``, certified.

    Raises ``ValueError`` if ``n`` is too large for ``K``.  The reserve doubles until the
    certificate holds (the chain's rounding needs a floor of ``1 / (1 - alpha)``; the centre's,
    a few units more; the first reserve gives at least twice that).
    """
    reserve, sizes = size_class(n, alpha)
    p, q = alpha.numerator, alpha.denominator
    for _ in range(8):
        spare = (1 << K) - reserve
        if spare <= 2 * reserve:
            raise ValueError(f"GM for groups of {n:,} at alpha = {float(alpha):.6g} does not fit integer weights "
                             f"over 2^{K}: lower n or alpha")
        first = -(-(p * spare) // (p + q))
        mechanism = StructuralGM(n, alpha, K, reserve, floor_chain(first, alpha), spare - 2 * first, sizes,
                                 coarse_bits)
        if mechanism.certify().holds:
            return mechanism
        reserve *= 2
    raise ValueError(f"GM for n = {n} at alpha = {alpha} found no certified integer form")


__all__ = ["StructuralGM", "geometric_form", "size_class"]
