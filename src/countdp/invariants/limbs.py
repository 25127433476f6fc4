"""Exact arithmetic on vectors of big non-negative integers held as ``b``-bit limbs in int64 arrays.

A split of the conditioned release (:mod:`countdp.invariants.group_total`) needs, for every degree
of a node's window, the product of two fixed-point bounds, and the running sums of those products;
then a bisection reads a few of the sums.  Held as ``(rows, m)`` int64 arrays of ``b``-bit limbs
(least significant first), the products and sums are numpy operations on arrays whose shape is fixed
by public sizes.  :func:`limb_bits` picks ``b`` so that nothing overflows: factors whose limbs are
below ``2**(b+1)`` (a carried number plus another) have limb products below ``2**(2b+2)``, and ``m``
of them sum below ``2**63``; after carrying (limbs back below ``2**b``), a running sum of ``n`` rows
stays below ``2**63`` for ``n < 2**(62-b)``.  Only the sums a bisection reads become Python integers.
"""

from __future__ import annotations

import operator

import numpy as np


def limb_bits(bits: int) -> tuple[int, int]:
    """The widest limb ``b <= 30`` (and the count ``m`` of them for a ``bits``-bit factor) such that a row of
    limb products of two factors with limbs below ``2**(b+1)`` sums below ``2**63``: ``m 2**(2b+2) < 2**63``."""
    width = next(b for b in range(30, 0, -1) if -(-bits // b) << (2 * b + 2) < 1 << 63)
    return width, -(-bits // width)


def limbs_for(bits: int, width: int) -> int:
    """Limbs of ``width`` bits that hold a ``bits``-bit number (at least one)."""
    return max(1, -(-bits // width))


def from_words(words: np.ndarray, count: int, width: int) -> np.ndarray:
    """Rows of 64-bit words (least significant first) as ``count`` limbs of ``width`` bits (the rows must fit)."""
    padded = np.zeros((words.shape[0], max(words.shape[1], width * count // 64 + 1) + 1), dtype="<u8")
    padded[:, :words.shape[1]] = words
    out, mask = np.empty((words.shape[0], count), dtype=np.int64), np.uint64((1 << width) - 1)
    for k in range(count):
        q, r = divmod(width * k, 64)
        value = (padded[:, q] >> np.uint64(r)) | ((padded[:, q + 1] << np.uint64(63 - r)) << np.uint64(1))
        out[:, k] = (value & mask).astype(np.int64)
    return out


def from_int(value: int, count: int, width: int) -> np.ndarray:
    """A Python integer (``0 <= value < 2**(width count)``) as ``count`` limbs of ``width`` bits."""
    return np.array([(value >> (width * k)) & ((1 << width) - 1) for k in range(count)], dtype=np.int64)


def to_int(row: np.ndarray, width: int) -> int:
    """The number a row of ``width``-bit limbs (carried or not) stands for."""
    return sum(map(operator.lshift, row.tolist(), range(0, width * row.shape[0], width)))


def carried(rows: np.ndarray, width: int) -> np.ndarray:
    """The same numbers with every limb but the last below ``2**width`` (the last takes the carry)."""
    out, mask = rows.copy(), (1 << width) - 1
    for k in range(out.shape[1] - 1):
        out[:, k + 1] += out[:, k] >> width
        out[:, k] &= mask
    return out


def products(a: np.ndarray, b: np.ndarray, count: int, width: int) -> np.ndarray:
    """Row-by-row products of ``a`` and ``b`` (limbs below ``2**(width+1)``, :func:`limb_bits`), carried, in
    ``count`` limbs (which must hold them)."""
    out = np.zeros((a.shape[0], count), dtype=np.int64)
    for i in range(a.shape[1]):
        out[:, i:i + b.shape[1]] += a[:, i:i + 1] * b
    return carried(out, width)


__all__ = ["carried", "from_int", "from_words", "limb_bits", "limbs_for", "products", "to_int"]
