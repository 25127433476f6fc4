"""Building a template design's canonical integer matrix (:mod:`countdp.structural.spread`).

The source is the design engine's proven large-n design at the canonical size ``m`` (the
template spread, before the uniform mix that certifies a matrix: far from the diagonal its
entries vanish, so its middle columns are one column moved down).  Its integer form:

1. ``S = floor(P (D - R))``, and column ``c + 1`` set to column ``c`` moved down one row (the float
   spread agrees to about ``1e-22``; the integer form must agree exactly);
2. a *closure* raises each entry to ``ceil(alpha x) - 1`` of its row neighbours ``x`` until none
   is lower: the float design is alpha-DP only to the solver's accuracy (about ``10^5`` units of
   ``2^-62`` at alpha = 9/10), and this leaves every ratio within one unit (``sigma = 1``).  Raises
   fade by ``alpha`` a column, so they never reach the middle when ``c`` is wide enough;
3. each column's reserve ``R + delta[k]`` takes what the column leaves of ``D``;
4. the size range is a factor of two in ``n + 1``; ``R`` doubles until the floors cover sigma and
   their neighbours' (the certificate's condition 2) at its largest size.

The floor costs a uniform mixed in with weight about ``R / D ~ 4 (n + 1) / ((1 - alpha) 2^62)``:
nothing for L0, and like GM's at 2^62 for the MSE of groups of millions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.structural.chain import log_inverse
from countdp.structural.spread import StructuralSpread, worst_floor_term

MAX_DENOMINATOR = 3_000_000_000
"""Largest denominator of alpha for the closure's int64 arithmetic (``(x mod q) p < 2^63``)."""


@dataclass(frozen=True)
class SpreadSettings:
    """The tuning of a spread's construction (passed in; the defaults are the library's)."""

    closure_margin: int = 64
    """Columns beyond the tails kept for the closure's raises to fade before the middle: they fade by
    alpha a column, and the certificate checks that the middle is untouched."""
    max_sweeps: int = 4000
    """Closure sweeps before giving up (each raise fades by alpha a sweep; thousands means a broken source)."""
    first_reserve_bits: int = 22
    """The first reserve tried is ``2**first_reserve_bits``; the floors' condition then sets it."""
    attempts: int = 6
    """Reserves tried (each at least twice the last) before the construction gives up."""


DEFAULT_SPREAD_SETTINGS = SpreadSettings()


def canonical_size(width: int, alpha: Fraction, K: int, settings: SpreadSettings = DEFAULT_SPREAD_SETTINGS) -> int:
    """``m = 2c + 1`` with ``c`` past the corners (``2 width``), the longest tail (``K ln 2 / ln(1/alpha)``
    columns until an entry is below one unit) and the closure's margin."""
    tail = int(np.ceil(K * np.log(2) / log_inverse(alpha)))
    return 2 * (2 * width + tail + settings.closure_margin) + 1


def size_range(n: int, m: int) -> tuple[int, int]:
    """The sizes one table serves with ``n``: a factor of two in ``n + 1``, from the canonical size ``m`` on."""
    bits = (n + 1).bit_length()
    return max(m, (1 << (bits - 1)) - 1), (1 << bits) - 2


def ceil_alpha_minus_one(x: np.ndarray, p: int, q: int) -> np.ndarray:
    """``ceil(p x / q) - 1`` exactly for int64 ``x`` in ``[0, 2^62]`` (``q`` below :data:`MAX_DENOMINATOR`)."""
    whole, part = np.divmod(x, q)
    return whole * p + -(-(part * p) // q) - 1


def close(S: np.ndarray, alpha: Fraction, max_sweeps: int = DEFAULT_SPREAD_SETTINGS.max_sweeps
          ) -> tuple[np.ndarray, int]:
    """Raise entries until ``S[i, k] >= ceil(alpha S[i, k +- 1]) - 1`` everywhere; ``(S, sweeps)``."""
    p, q = alpha.numerator, alpha.denominator
    S = S.copy()
    for sweep in range(max_sweeps):
        left = np.maximum(S[:, :-1], ceil_alpha_minus_one(S[:, 1:], p, q))
        right = np.maximum(S[:, 1:], ceil_alpha_minus_one(S[:, :-1], p, q))
        raised = S.copy()
        raised[:, :-1] = left
        raised[:, 1:] = np.maximum(raised[:, 1:], right)
        if np.array_equal(raised, S):
            return S, sweep
        S = raised
    raise ValueError(f"the closure did not settle in {max_sweeps} sweeps")


def integer_canonical(P: np.ndarray, alpha: Fraction, K: int, reserve: int,
                      settings: SpreadSettings = DEFAULT_SPREAD_SETTINGS) -> tuple[np.ndarray, np.ndarray, int]:
    """``(S, delta, R)``: steps 1 to 3 of the module docstring for the float design ``P`` (size ``m``)."""
    if alpha.denominator > MAX_DENOMINATOR:
        raise ValueError(f"alpha = {alpha}: its denominator is too large for a template design's structure")
    m = P.shape[0] - 1
    c = (m - 1) // 2
    D = 1 << K
    S = np.floor(np.asarray(P, dtype=float) * float(D - reserve)).astype(np.int64)
    S[0, c + 1], S[1:, c + 1] = 0, S[:-1, c]
    S, _ = close(S, alpha, settings.max_sweeps)
    totals = S.sum(axis=0, dtype=np.int64)  # each below 2^62 here: S is P's floor scaled under 2^62
    top = int(totals.max())
    return S, top - totals, D - top


def spread_mechanism(mechanism: str, P: np.ndarray, n: int, alpha: Fraction, K: int, source: dict | None = None,
                     settings: SpreadSettings = DEFAULT_SPREAD_SETTINGS) -> StructuralSpread:
    """The certified spread of the canonical float design ``P`` for groups of size ``n`` (and its size range).

    Raises ``ValueError`` if ``n`` is below the canonical size or beyond what ``K`` can hold, or if
    no reserve makes the certificate hold.
    """
    m = P.shape[0] - 1
    if n < m:
        raise ValueError(f"{mechanism}'s structure serves groups of at least {m}, not {n}")
    sizes = size_range(n, m)
    a = Fraction(alpha)
    reserve = 1 << settings.first_reserve_bits
    for _ in range(settings.attempts):
        if 4 * reserve >= 1 << K:
            break
        S, delta, R = integer_canonical(P, a, K, reserve, settings)
        form = StructuralSpread(mechanism, n, a, K, R, S, delta, 1, sizes, source)
        if form.certify().holds:
            return form
        reserve = max(2 * reserve, 2 * floors_needed(delta, a, sizes[1] + 1, 1))
    raise ValueError(f"{mechanism} for groups of {n:,} at alpha = {float(a):.6g}: no integer form over 2^{K} "
                     "was certified")


def floors_needed(delta: np.ndarray, alpha: Fraction, N: int, sigma: int) -> int:
    """The smallest reserve meeting the certificate's floor condition for these ``delta`` at size ``N - 1``."""
    need = (worst_floor_term(delta, alpha) + (1 + sigma + alpha) * N - 1) / (1 - alpha)
    return int(-(-need.numerator // need.denominator))


__all__ = ["DEFAULT_SPREAD_SETTINGS", "MAX_DENOMINATOR", "SpreadSettings", "canonical_size", "close", "floors_needed",
           "integer_canonical", "size_range", "spread_mechanism"]
