"""Building a square-corner design's integer tables (:mod:`countdp.structural.corners`) from its float square.

The source is the top-left ``(W + 1)^2`` square of a proven square-corner design (its rows'
and columns' tails are alpha-geometric and its middle GM, so the square is all it holds).  Over
the budget ``B = D - R0``:

1. ``Q = floor(Q_float B)``, then closed (:func:`countdp.structural.spread_build.close`): the float
   square is alpha-DP only to the solver's accuracy, and after the closure each pair of
   neighbours in a row is within one unit;
2. every tail is its start times ``alpha^k``, rounded down through one table of fixed-point powers
   ``A_k`` (``A_0 = 2^128``, ``A_(k+1) = floor(A_k p / q)``, so ``A_k`` is within ``1 / (1 - alpha)`` of
   ``2^128 alpha^k``): ``t_k = floor(x A_k / 2^128)`` is ``floor(x alpha^k)`` or one less, for
   any alpha below ``1 - 2^-32``.  Row tails start at ``Q[i, W]``, column tails at ``Q[W, k]``, the
   band at ``G = min(floor(B (1 - alpha) / (1 + alpha)), Q[W, W])`` (GM's centre; in the optimum
   the square's last diagonal entry is GM's).  Two tails whose starts are within ratio alpha and
   one unit then stay within ratio alpha and three units at every step, which is the
   certificate's ``sigma``;
3. the reserve ``R0`` grows until the floors' condition holds at the range's largest size.

Nothing here is trusted: the result is certified by :meth:`StructuralCorners.certify`, and a
construction that does not pass it is refused.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.structural.chain import MAX_CHAIN, chain_length
from countdp.structural.corners import StructuralCorners
from countdp.structural.spread_build import (
    DEFAULT_SPREAD_SETTINGS,
    MAX_DENOMINATOR,
    SpreadSettings,
    close,
    size_range,
)

FIXED_BITS = 128
"""Bits of the fixed-point powers of alpha."""
SIGMA = 3
"""The certificate's allowance in units (module docstring, step 2)."""


def alpha_powers(alpha: Fraction, count: int) -> list[int]:
    """``A_0 .. A_(count - 1)``: ``A_0 = 2^128``, ``A_(k+1) = floor(A_k p / q)`` (Python integers, exact)."""
    p, q = alpha.numerator, alpha.denominator
    out, value = [], 1 << FIXED_BITS
    for _ in range(count):
        out.append(value)
        value = value * p // q
    return out


def geometric_tails(starts: np.ndarray, powers: list[int]) -> np.ndarray:
    """``floor(x A_k / 2^128)`` for every start ``x`` (rows) and power (columns), int64."""
    x = np.asarray(starts, dtype=np.int64).astype(object)
    return ((x[:, None] * np.array(powers, dtype=object)[None, :]) >> FIXED_BITS).astype(np.int64)


def integer_tables(square: np.ndarray, alpha: Fraction, budget: int,
                   settings: SpreadSettings = DEFAULT_SPREAD_SETTINGS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(strip, lower, band)`` of the float ``square`` over ``budget`` (module docstring, steps 1 and 2)."""
    if alpha.denominator > MAX_DENOMINATOR:
        raise ValueError(f"alpha = {alpha}: its denominator is too large for a template design's structure")
    W = square.shape[0] - 1
    Q = np.floor(np.asarray(square, dtype=float) * float(budget)).astype(np.int64)
    Q, _ = close(Q, alpha, settings.max_sweeps)
    p, q = alpha.numerator, alpha.denominator
    G = min(budget * (q - p) // (q + p), int(Q[W, W]))
    starts = np.concatenate([Q[:, W], Q[W, :], [G]])
    count = chain_length(int(starts.max()), alpha) + 2
    if count > MAX_CHAIN:
        raise ValueError(f"alpha = {float(alpha):.10g} is too close to 1 for a square-corner structure: its tails need "
                         f"{count:,} entries (at most {MAX_CHAIN:,})")
    tails = geometric_tails(starts, alpha_powers(alpha, count))
    zero = np.flatnonzero(~tails.any(axis=0))
    L = int(zero[0]) if zero.size else count
    if L == count:
        raise ValueError(f"alpha = {float(alpha):.10g}: a tail did not reach zero in {count:,} steps")
    rows, columns, band = tails[:W + 1], tails[W + 1:2 * W + 2], tails[-1]
    strip = np.concatenate([Q, rows[:, 1:L + 1]], axis=1)
    return strip, np.ascontiguousarray(columns[:, 1:L + 1].T), band[:L + 1].copy()


def corner_mechanism(mechanism: str, square: np.ndarray, n: int, alpha: Fraction, K: int, smallest: int,
                     source: dict | None = None,
                     settings: SpreadSettings = DEFAULT_SPREAD_SETTINGS) -> StructuralCorners:
    """The certified square-corner form of ``square`` for groups of size ``n`` (and its size range, from
    ``smallest`` on).  Raises ``ValueError`` (one line) for ``n`` below ``smallest``, or when no reserve
    makes the certificate hold."""
    if K > 62:
        raise ValueError(f"{mechanism}'s square-corner structure is over 2^62 at most (int64 tables), not 2^{K}")
    if n < smallest:
        raise ValueError(f"{mechanism}'s square-corner structure serves groups of at least {smallest}, not {n}")
    a = Fraction(alpha)
    sizes = size_range(n, smallest)
    D = 1 << K
    reserve, check = 1 << settings.first_reserve_bits, None
    for _ in range(settings.attempts):
        if 4 * reserve >= D:
            break
        strip, lower, band = integer_tables(square, a, D - reserve, settings)
        form = StructuralCorners(mechanism, n, a, K, strip, lower, band, SIGMA, sizes, source)
        check = form.certify()
        if check.holds:
            return form
        need, over = form.floor_need(), max(0, form.bounds[1] - (D - reserve))
        reserve = max(2 * reserve, 2 * (int(-(-need.numerator // need.denominator)) + over))
    reason = check.reason if check is not None else "the reserve outgrew 2^K"
    raise ValueError(f"{mechanism} for groups of {n:,} at alpha = {float(a):.6g}: no square-corner form over "
                     f"2^{K} was certified ({reason})")


__all__ = ["FIXED_BITS", "SIGMA", "alpha_powers", "corner_mechanism", "geometric_tails", "integer_tables"]
