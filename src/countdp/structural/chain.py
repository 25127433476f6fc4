"""Integer geometric sequences and the exact ratio test that structural certificates are built from.

A structural mechanism never stores its ``(n+1)^2`` weights.  Its weights are a short integer
table (one value per distance from the diagonal, or per exponent of alpha) plus a per-row floor,
and every DP inequality of the whole matrix is one of a few inequalities between neighbouring
table entries.  This module makes such tables and decides those inequalities exactly.

:func:`floor_chain` builds ``t[k+1] = floor(p t[k] / q)`` for ``alpha = p/q``: the largest
integers that never fall faster than alpha per step.  So ``alpha t[k] - t[k+1] < 1`` for every
``k``, and with a floor ``f >= 1 / (1 - alpha)`` added to every entry,
``alpha (t[k] + f) <= t[k+1] + f``: the rounding down is paid for by the floor, not by a float
tolerance.  The chain is a recurrence, one Python integer step per entry (exact for any ``p, q``,
including the 60-digit rationals of ``alpha_from_epsilon``); it stops at its first zero, after
about ``K ln 2 / ln(1/alpha)`` steps whatever ``n``.  Tables over ``2^62`` are int64; tables over
``2^124`` (:data:`countdp.structural.form.WIDE_K`) hold Python integers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from countdp.privacy.exact import scaled_products

MAX_CHAIN = 1 << 24
"""Longest table a structural mechanism may hold (128 MiB of int64): alpha closer to 1 is refused."""


def log_inverse(alpha: Fraction) -> float:
    """``ln(1/alpha)`` for ``0 < alpha < 1`` without rounding alpha to a float first: within ``2^-53`` of 1
    that is 1.0 (a log of 0, and an infinite length where it divides), below the floats it is 0.0."""
    p, q = Fraction(alpha).numerator, Fraction(alpha).denominator
    return math.log(q) - math.log(p) if 2 * p < q else math.log1p((q - p) / p)


def chain_length(start: int, alpha: Fraction) -> int:
    """An upper bound on the length of :func:`floor_chain` from ``start``: about ``log(start) / log(1/alpha)``."""
    return int(start.bit_length() * 0.6931471805599453 / log_inverse(alpha)) + 2 if start > 0 else 0


def floor_chain(start: int, alpha: Fraction, stop: int | None = None) -> np.ndarray:
    """``[t0, t1, ...]`` with ``t0 = start`` and ``t[k+1] = floor(p t[k] / q)``, up to its last positive entry.

    ``stop`` caps the number of entries (the entries past it are never read).  Raises
    ``ValueError`` (one line) when the chain would be longer than :data:`MAX_CHAIN`: alpha is
    then so close to 1 that the table would not fit a structural mechanism.
    """
    if not 0 <= start < 1 << 126:
        raise ValueError(f"a chain must start in [0, 2^126), got {start}")
    p, q = alpha.numerator, alpha.denominator
    limit = chain_length(start, alpha) if stop is None else min(stop, chain_length(start, alpha))
    if limit > MAX_CHAIN:
        shown = f"{float(alpha):.10g}" if float(alpha) < 1 else f"1 - {float(1 - alpha):.3g}"
        raise ValueError(f"alpha = {shown} is too close to 1 for a structural mechanism: its geometric "
                         f"table needs {limit:,} entries (at most {MAX_CHAIN:,})")
    out, value = [], start
    while value > 0 and len(out) < limit:
        out.append(value)
        value = value * p // q
    return np.array(out, dtype=np.int64 if start < 1 << 62 else object)


def integer_table(values) -> np.ndarray:
    """A read-only table of non-negative integers: int64, or Python integers (object) past ``2^62``."""
    table = np.asarray(values)
    if table.dtype != object:
        table = table.astype(np.int64)
    elif table.size and max(table.tolist()) < 1 << 62:
        table = table.astype(np.int64)
    table.setflags(write=False)
    return table


def ratio_holds(lower: np.ndarray, upper: np.ndarray, alpha: Fraction) -> np.ndarray:
    """Per entry, whether ``alpha * lower <= upper``, decided exactly (``p * lower <= q * upper``).

    ``lower`` and ``upper`` are arrays of one shape: int64 with entries in ``[0, 2^62]``, whose
    products are formed exactly by :func:`countdp.privacy.exact.scaled_products` (128-bit halves
    for ``p, q < 2^64``, Python integers beyond), or Python integers (object arrays, for weights
    over ``2^124``), compared as they are.
    """
    p, q = alpha.numerator, alpha.denominator
    if np.asarray(lower).dtype == object or np.asarray(upper).dtype == object:  # weights past 2^62
        return np.asarray(p * np.asarray(lower, dtype=object) <= q * np.asarray(upper, dtype=object), dtype=bool)
    lower, upper = np.asarray(lower, dtype=np.int64), np.asarray(upper, dtype=np.int64)
    stacked = np.stack([lower.ravel(), upper.ravel()])
    pW, qW = scaled_products(stacked, p, q)
    if isinstance(pW, tuple):
        (ph, pl), (qh, ql) = pW, qW
        ok = (ph[0] < qh[1]) | ((ph[0] == qh[1]) & (pl[0] <= ql[1]))
    else:
        ok = np.asarray(pW[0] <= qW[1], dtype=bool)
    return ok.reshape(lower.shape)


def neighbours_hold(values: np.ndarray, alpha: Fraction) -> np.ndarray:
    """For a sequence of weights, whether each neighbouring pair is within ratio alpha both ways."""
    values = np.asarray(values)
    values = values if values.dtype == object else values.astype(np.int64)
    left, right = values[:-1], values[1:]
    return ratio_holds(left, right, alpha) & ratio_holds(right, left, alpha)





def exact_sum(values: np.ndarray) -> int:
    """The exact sum of non-negative int64 entries (each below 2^63), or of Python integers, as a Python int."""
    values = np.asarray(values)
    if values.dtype == object:
        return int(values.sum()) if values.size else 0
    values = values.astype(np.int64)
    return (int((values >> 31).sum()) << 31) + int((values & (2**31 - 1)).sum())
def exact_sums(table: np.ndarray, axis: int) -> list[int]:
    """Exact sums along ``axis`` of a non-negative int64 table, as Python integers: each entry split
    into its high and low 31 bits, so no int64 sum wraps past 2^63 (a stored table is re-certified,
    and an altered one must not wrap around)."""
    high = (table >> 31).sum(axis=axis, dtype=np.int64)
    low = (table & (2**31 - 1)).sum(axis=axis, dtype=np.int64)
    return [(int(h) << 31) + int(lo) for h, lo in zip(high.ravel(), low.ravel(), strict=True)]


__all__ = ["MAX_CHAIN", "chain_length", "exact_sum", "exact_sums", "floor_chain", "integer_table", "log_inverse",
           "neighbours_hold", "ratio_holds"]
