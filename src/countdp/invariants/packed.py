"""Polynomials with non-negative integer coefficients, packed in 64-bit words, and their exact products.

The conditioned release (:mod:`countdp.invariants.group_total`) multiplies the groups' generating
polynomials, exactly or as certified fixed-point bounds.  A coefficient is held as ``width`` 64-bit
words, least significant first (a ``(count, width)`` array of ``uint64``), so that packing, shifting
and comparing are numpy operations on arrays whose shape is fixed by public sizes.  A product is one
multiplication of two big integers (Kronecker substitution: the polynomial evaluated at ``2**(8 s)``
with slots of ``s`` bytes that hold every coefficient of the product), done by GMP (:mod:`gmpy2`):
near-linear in the operands' length, exact.

:class:`Bounds` hold a polynomial to ``bits`` significant bits: every coefficient lies in
``[low_k, low_k + radius]`` times a scale common to the node (it cancels in a split), ``low_k`` is
zero outside a *window* of ``len(low)`` degrees from ``start``, and ``mass >= sum_k low_k``.  The
window's length is fixed in advance from public quantities (:mod:`countdp.invariants.windows`); where
it is placed, and anything it leaves out (folded into the radius), depends on the data, never the
number of operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gmpy2
import numpy as np

WORD = 64
_ONE = np.uint64(1)


def words_for(bits: int) -> int:
    """64-bit words that hold a ``bits``-bit number (at least one)."""
    return max(1, -(-bits // WORD))


@dataclass(frozen=True)
class Packed:
    """A polynomial's coefficients by degree: ``words[k]`` holds coefficient ``k``, least significant word first."""

    words: np.ndarray

    @property
    def count(self) -> int:
        return self.words.shape[0]

    @property
    def width(self) -> int:
        return self.words.shape[1]

    def values(self) -> np.ndarray:
        """The coefficients as Python integers (an object array)."""
        out = np.zeros(self.count, dtype=object)
        for k in range(self.width):
            out = out + (self.words[:, k].astype(object) << (WORD * k))
        return out


def pack(coefficients: Sequence[int], width: int) -> Packed:
    """Non-negative integer coefficients (by degree) in ``width`` words each."""
    data = b"".join(int(c).to_bytes(8 * width, "little") for c in coefficients)
    return Packed(np.frombuffer(data, dtype="<u8").reshape(len(coefficients), width))


def as_integer(a: Packed, size: int) -> gmpy2.mpz:
    """``a`` evaluated at ``2**(8 size)`` (slots of ``size`` bytes, which hold every coefficient), plus a
    sentinel ``2**(8 size count)`` above it, so that the number has the same length whatever the
    coefficients."""
    buffer = np.zeros(a.count * size + 1, dtype=np.uint8)
    take = min(size, 8 * a.width)
    buffer[:-1].reshape(a.count, size)[:, :take] = a.words.view(np.uint8).reshape(a.count, 8 * a.width)[:, :take]
    buffer[-1] = 1
    return gmpy2.mpz.from_bytes(buffer.tobytes(), "little")


def multiply(a: Packed, b: Packed, bits: int) -> Packed:
    """The product polynomial, exactly, in ``words_for(bits)`` words per coefficient; ``bits`` must hold every
    coefficient of the product (and of the factors).

    The factors are packed in slots of ``ceil(bits / 8)`` bytes behind their sentinels
    (:func:`as_integer`), ``A + 2**La`` and ``B + 2**Lb``, whose cross terms are subtracted:
    ``AB = (A+a)(B+b) - (A+a)b - (B+b)a + ab``.
    """
    size, count = -(-bits // 8), a.count + b.count - 1
    la, lb = 8 * size * a.count, 8 * size * b.count
    A, B = as_integer(a, size), as_integer(b, size)
    product = A * B - (A << lb) - (B << la) + (gmpy2.mpz(1) << (la + lb))
    data = np.frombuffer(product.to_bytes(size * count, "little"), dtype=np.uint8).reshape(count, size)
    out = np.zeros((count, 8 * words_for(bits)), dtype=np.uint8)
    out[:, :size] = data
    return Packed(out.view("<u8"))


def top_bits(words: np.ndarray) -> int:
    """The bit length of the largest row's number (0 if all are zero): its top nonzero word column, then that
    column's largest word (no float)."""
    columns = np.flatnonzero(words.any(axis=0))
    top = int(columns[-1]) if columns.size else 0
    return int(words[:, top].max(initial=np.uint64(0))).bit_length() + WORD * top * bool(columns.size)


def shifted(words: np.ndarray, drop: int, width: int) -> np.ndarray:
    """``floor(c / 2**drop)`` of every row, in ``width`` words (which must hold it)."""
    q, r = divmod(drop, WORD)
    padded = np.zeros((words.shape[0], max(words.shape[1], q + width + 1)), dtype="<u8")
    padded[:, :words.shape[1]] = words
    low, high = padded[:, q:q + width], padded[:, q + 1:q + width + 1]
    return (low >> np.uint64(r)) | ((high << np.uint64(WORD - 1 - r)) << _ONE)  # (two shifts: r = 0 gives 0)


def largest(words: np.ndarray, mask: np.ndarray) -> int:
    """The largest of the rows selected by ``mask`` (0 if none), word by word from the top."""
    rows, out = mask.copy(), 0
    for k in range(words.shape[1] - 1, -1, -1):
        column = np.where(rows, words[:, k], np.uint64(0))
        top = column.max(initial=np.uint64(0))
        rows &= column == top
        out = (out << WORD) | int(top)
    return out


def magnitudes(words: np.ndarray) -> np.ndarray:
    """About the bit length of each row's number (0 for zero), non-decreasing in the number: a float's
    exponent per word (only to place a window; never a probability)."""
    exponents = np.frexp(words.astype(np.float64))[1]
    return (np.where(exponents > 0, exponents + WORD * np.arange(words.shape[1]), 0)).max(axis=1)


def placement(sizes: np.ndarray, length: int) -> int:
    """The start of a window of ``length`` rows whose largest excluded row (by ``sizes``, non-decreasing in the
    rows' numbers) is smallest."""
    starts = np.arange(sizes.size - length + 1)
    before = np.concatenate([[-1], np.maximum.accumulate(sizes)])  # before[s]: largest of rows < s
    after = np.concatenate([np.maximum.accumulate(sizes[::-1])[::-1], [-1]])  # after[s]: largest of rows >= s
    return int(np.argmin(np.maximum(before[starts], after[starts + length])))


@dataclass(frozen=True)
class Bounds:
    """Fixed-point bounds of a polynomial of ``count`` coefficients: coefficient ``k`` lies in ``[low_k,
    low_k + radius]`` (times a scale common to the node), ``low_k`` being ``low``'s row ``k - start`` inside
    the window and 0 outside it; ``mass >= sum_k low_k``."""

    low: Packed
    start: int
    count: int
    radius: int
    mass: int


def bounds_product(left: Bounds, right: Bounds, bits: int, length: int) -> Bounds:
    """Bounds of a product from bounds of its factors, in a window of at most ``length`` degrees.

    The product of the lower bounds is exact; the true product exceeds it by at most ``r_R sum(low_L)
    + r_L sum(low_R) + r_L r_R min(count_L, count_R)`` in any coefficient (outside a factor's window its
    coefficients lie in ``[0, r]``).  Every coefficient then drops the same number ``d`` of low bits
    (floor) so that the largest keeps ``bits`` bits, the radius becomes ``ceil(radius / 2**d) + 1``, and
    the rows outside the window (placed where what it leaves out is smallest) add their largest to it.
    """
    product = multiply(left.low, right.low, 2 * bits + min(left.low.count, right.low.count).bit_length())
    radius = (right.radius * left.mass + left.radius * right.mass
              + left.radius * right.radius * min(left.count, right.count))
    drop = max(0, top_bits(product.words) - bits)
    kept = shifted(product.words, drop, words_for(bits))
    radius = -(-radius >> drop) + (drop > 0)
    if length < product.count:  # (public: the window leaves some degrees out)
        start = placement(magnitudes(kept), length)
        outside = np.ones(product.count, dtype=bool)
        outside[start:start + length] = False
        radius += largest(kept, outside)
    else:
        start, length = 0, product.count
    return Bounds(Packed(kept[start:start + length]), left.start + right.start + start,
                  left.count + right.count - 1, radius, (left.mass * right.mass) >> drop)


__all__ = ["WORD", "Bounds", "Packed", "as_integer", "bounds_product", "largest", "magnitudes", "multiply", "pack",
           "placement", "shifted", "top_bits", "words_for"]
