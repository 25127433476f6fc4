"""Fixed-point bounds of the tilted leaves ``W[y, x] theta**y`` of the conditioned release, in exact integers.

``theta = num / 2**shift`` (a dyadic float); its powers are bounded below and above by mantissas of
``bits + 16`` bits rounded down and up (:func:`tilt_powers`, Python integers, once per precision).
A leaf's weight ``W[y, x]`` (at most 62 bits) times a power's mantissa is exact, then shifted to a scale
common to the leaf, chosen so that its largest upper bound has ``bits`` bits: rounded down for the lower
bound, up for the upper.  Every leaf column of a partition is done at once as numpy limbs
(:mod:`countdp.invariants.limbs`), so the work is fixed by the number of columns and their lengths,
whatever the weights.
"""

from __future__ import annotations

import numpy as np

from countdp.invariants.limbs import carried, from_int, from_words, limb_bits, limbs_for, products, to_int
from countdp.invariants.packed import WORD, Bounds, Packed, words_for

CHUNK = 1 << 18
"""Leaf weights handled per numpy pass (memory)."""


def tilt_powers(theta: tuple[int, int], degree: int, bits: int) -> tuple[list, list]:
    """Lower and upper bounds of ``theta**y`` for ``y = 0..degree``, ``theta = num / 2**shift``: pairs
    ``(m, e)`` meaning ``m 2**e``, each product rounded down (up) to ``bits + 16`` bits."""
    num, shift = theta
    lo, hi, precision = [(1, 0)], [(1, 0)], bits + 16
    for _ in range(degree):
        (ml, el), (mh, eh) = lo[-1], hi[-1]
        ml, mh = ml * num, mh * num
        dl, dh = max(0, ml.bit_length() - precision), max(0, mh.bit_length() - precision)
        lo.append((ml >> dl, el + dl - shift))
        hi.append((-(-mh >> dh), eh + dh - shift))
    return lo, hi


def bit_lengths(rows: np.ndarray, width: int) -> np.ndarray:
    """The bit length of each row's number (carried limbs; 0 for zero): a limb is below ``2**53``, so its
    float's exponent is its bit length exactly."""
    lengths = np.frexp(rows.astype(np.float64))[1] + width * np.arange(rows.shape[1])
    return np.where(rows > 0, lengths, 0).max(axis=1)


def shifted_limbs(rows: np.ndarray, shift: np.ndarray, count: int, width: int) -> np.ndarray:
    """``floor(v 2**shift)`` of each row (``shift`` per row, of either sign), in ``count`` carried limbs."""
    padded = np.pad(rows, ((0, 0), (2, 1)))  # (zero limbs: indices -2, -1 and len)
    out = np.empty((rows.shape[0], count), dtype=np.int64)
    for k in range(count):
        source = width * k - shift  # the bit of v that lands on limb k's lowest bit
        q, r = np.clip(source // width, -2, rows.shape[1]), source % width
        low = np.take_along_axis(padded, (q + 2)[:, None], axis=1)[:, 0]
        high = np.take_along_axis(padded, np.minimum(q + 3, rows.shape[1] + 2)[:, None], axis=1)[:, 0]
        out[:, k] = (low >> r) | ((high << (width - r)) & ((1 << width) - 1))
    return out


def lost(rows: np.ndarray, shift: np.ndarray, width: int) -> np.ndarray:
    """Whether ``v 2**shift`` drops a nonzero bit of ``v`` (the rounding of :func:`shifted_limbs` was inexact)."""
    below = np.maximum(-shift, 0)  # the bits dropped
    q, r = below // width, below % width
    whole = ((rows != 0) & (np.arange(rows.shape[1]) < q[:, None])).any(axis=1)
    part = np.take_along_axis(np.pad(rows, ((0, 0), (0, 1))), np.minimum(q, rows.shape[1])[:, None], axis=1)[:, 0]
    return whole | ((part & ((1 << r) - 1)) != 0)


def to_words(rows: np.ndarray, width: int, count: int) -> np.ndarray:
    """Carried limbs of ``width`` bits as ``count`` 64-bit words each (the numbers must fit)."""
    out = np.zeros((rows.shape[0], count), dtype="<u8")
    for k in range(rows.shape[1]):
        j, at = divmod(width * k, WORD)
        value = rows[:, k].astype(np.uint64)
        if j < count:
            out[:, j] |= value << np.uint64(at)
        if at + width > WORD and j + 1 < count:
            out[:, j + 1] |= value >> np.uint64(WORD - at)
    return out


def largest_rows(rows: np.ndarray) -> np.ndarray:
    """Each leaf's largest number (``rows``: leaves x weights x carried limbs), as limbs."""
    chosen, out = np.ones(rows.shape[:2], dtype=bool), np.zeros((rows.shape[0], rows.shape[2]), dtype=np.int64)
    for k in range(rows.shape[2] - 1, -1, -1):
        column = np.where(chosen, rows[:, :, k], -1)
        out[:, k] = column.max(axis=1)
        chosen &= column == out[:, k:k + 1]
    return out


def leaf_bounds(columns: list[np.ndarray], powers: tuple[list, list], bits: int) -> list[Bounds]:
    """:class:`Bounds` of every tilted leaf ``W[y] theta**y`` (``columns``: int64 weights, at most 62 bits;
    ``powers`` from :func:`tilt_powers`), scaled so that each leaf's largest upper bound has ``bits`` bits;
    each window is its whole column."""
    span = max(len(c) for c in columns)
    out = []
    for at in range(0, len(columns), max(1, CHUNK // span)):
        chunk = columns[at:at + max(1, CHUNK // span)]
        weights = np.zeros((len(chunk), span), dtype=np.int64)
        for t, column in enumerate(chunk):
            weights[t, :len(column)] = column
        out += _chunk_bounds(weights, [len(c) for c in chunk], powers, bits)
    return out


def _chunk_bounds(weights: np.ndarray, lengths: list[int], powers: tuple[list, list], bits: int) -> list[Bounds]:
    """:func:`leaf_bounds` of one chunk of leaves (``weights``: leaves x span, zero past a column's end)."""
    leaves, span = weights.shape
    width, m = limb_bits(max(64, bits + 17))
    factor = from_words(weights.reshape(-1, 1).view("<u8"), m, width)
    result, rows = 2 * m, limbs_for(bits + 1, width)
    bounds = []
    for mantissas in powers:
        table = np.array([from_int(v, m, width) for v, _ in mantissas[:span]])
        exponents = np.tile(np.array([e for _, e in mantissas[:span]], dtype=np.int64), leaves)
        bounds.append((products(factor, np.tile(table, (leaves, 1)), result, width), exponents))
    (low, low_e), (high, high_e) = bounds
    top = np.where(weights.reshape(-1) > 0, bit_lengths(high, width) + high_e, np.iinfo(np.int64).min)
    scale = np.repeat(bits - top.reshape(leaves, span).max(axis=1), span)
    lower = shifted_limbs(low, low_e + scale, rows, width)
    upper = shifted_limbs(high, high_e + scale, rows, width)
    upper[:, 0] += lost(high, high_e + scale, width)
    upper = carried(upper, width)
    radius = largest_rows(carried(upper - lower, width).reshape(leaves, span, rows))
    mass = lower.reshape(leaves, span, rows).sum(axis=1)
    words = to_words(lower, width, words_for(bits)).reshape(leaves, span, -1)
    return [Bounds(Packed(words[t, :n]), 0, n, to_int(radius[t], width), to_int(mass[t], width))
            for t, n in enumerate(lengths)]


__all__ = ["CHUNK", "bit_lengths", "largest_rows", "leaf_bounds", "lost", "shifted_limbs", "tilt_powers", "to_words"]
