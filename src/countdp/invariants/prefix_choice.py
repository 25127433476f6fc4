"""Exact choices among big integer weights, decided on 62-bit words with an exact tie-break.

To choose outcome ``i`` with probability ``W[i] / T`` (integers of any size, cumulative
``C[j] = W[0] + ... + W[j-1]``, ``T = C[m]``) take a uniform integer ``z`` in ``[0, T)`` and
return the number of ``j`` in ``1..m-1`` with ``C[j] <= z``: exactly ``W[i]`` values of ``z``
give ``i``.  Here ``z = floor((u T + w) / 2**62)`` with ``u`` uniform in ``[0, 2**62)`` and ``w``
uniform in ``[0, T)``; ``u T + w`` is uniform in ``[0, 2**62 T)`` and each ``z`` has exactly
``2**62`` preimages, so ``z`` is uniform.  With the *prefix thresholds*
``L[j] = floor(C[j] 2**62 / T)`` (one int64 each):

* ``L[j] < u`` implies ``C[j] 2**62 < (L[j] + 1) T <= u T <= u T + w``, so ``C[j] <= z``;
* ``L[j] > u`` implies ``C[j] 2**62 >= (u + 1) T > u T + w``, so ``C[j] > z``;

so unless ``u`` equals some ``L[j]`` (probability at most ``m / 2**62``) the answer is
``#{j : L[j] < u}`` whatever ``w`` is, and ``w`` is never drawn.  On a tie, ``w`` is drawn
and ``z`` compared with the exact ``C`` (:func:`resolve_tie`).  No floating point is involved;
the thresholds are exact floors (:func:`prefix_thresholds`).

When the weights are products of a few big integers (and ``T`` is known), the floors need not
touch the big integers at all: each factor is *bracketed* by its top bits,
``f in [m, m + 1) 2**e`` (:func:`bracket`, :func:`reciprocal_bracket`), so the product lies in
a short interval of small integers, and the floor is read off whenever that interval does not
straddle an integer (:func:`bracketed_floors`).  A straddling entry is reported, and the caller
computes it from the exact integers; both routes give the same exact floor.

Randomness follows :mod:`countdp.privacy.sampling`: ``rng=None`` is the operating system's
secure source, a numpy ``Generator`` a seeded stream for experiments.
"""

from __future__ import annotations

import secrets
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from countdp.privacy.sampling import SystemRandomSource, uniform_draws

PREFIX_BITS = 62
"""Width of the uniform words the decisions are taken on (``u`` in ``[0, 2**62)``)."""

PAD = 1 << PREFIX_BITS
"""Threshold padding: larger than every word, so it never counts and never ties."""

_GUARD = 2 * PREFIX_BITS + 2
"""Bits kept of ``C[j]`` and ``T`` when bracketing ``floor(C[j] 2**62 / T)`` before dividing exactly."""


def prefix_words(rng: object, size: int) -> np.ndarray:
    """``size`` uniform integers in ``[0, 2**62)`` (int64) from ``rng`` (``None``: the OS's secure source)."""
    return uniform_draws(SystemRandomSource() if rng is None else rng, size, PREFIX_BITS)


def uniform_below(rng: object, bound: int) -> int:
    """One uniform integer in ``[0, bound)`` for a Python int ``bound >= 1`` of any size.

    The OS source uses :func:`secrets.randbelow`; a numpy ``Generator`` gives rejection sampling
    on its raw 64-bit words (``bound.bit_length()`` bits at a time, accepted below ``bound``).
    """
    if bound < 1:
        raise ValueError(f"bound must be >= 1, got {bound}")
    if rng is None or isinstance(rng, SystemRandomSource):
        return secrets.randbelow(bound)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be None (OS secure source), a SystemRandomSource or a numpy Generator, "
                         f"got {type(rng).__name__}")
    bits = bound.bit_length()
    words = -(-bits // 64)
    while True:
        raw = rng.bit_generator.random_raw(words)
        value = int.from_bytes(np.asarray(raw, dtype="<u8").tobytes(), "little") >> (64 * words - bits)
        if value < bound:
            return value


def prefix_thresholds(cumulative: Sequence[int], total: int) -> list[int]:
    """``floor(c * 2**62 / total)`` for each ``c`` in ``cumulative`` (each ``0 <= c < total``), exactly.

    Each floor is first bracketed from the top :data:`_GUARD` bits of ``c`` and ``total``
    (``c`` and ``total`` lie in ``[c' 2**s, (c'+1) 2**s)`` and ``[t' 2**s, (t'+1) 2**s)``, so
    the quotient lies between ``c' / (t'+1)`` and ``(c'+1) / t'``); when the two floors differ
    the full-size division decides.  Both routes give the exact floor.
    """
    shift = max(0, total.bit_length() - _GUARD)
    if shift == 0:
        return [(c << PREFIX_BITS) // total for c in cumulative]
    top = total >> shift
    out = []
    for c in cumulative:
        head = c >> shift
        low = (head << PREFIX_BITS) // (top + 1)
        out.append(low if low == ((head + 1) << PREFIX_BITS) // top else (c << PREFIX_BITS) // total)
    return out


def bracket(value: int, bits: int) -> tuple[int, int]:
    """``(m, e)`` with ``value`` in ``[m, m + 1) 2**e`` and ``2**(bits-1) <= m < 2**bits``, for an int ``value >= 1``.

    ``m`` is ``value``'s top ``bits`` bits (exact, shifted left, when ``value`` is shorter).
    """
    e = value.bit_length() - bits
    return (value >> e, e) if e >= 0 else (value << -e, e)


def reciprocal_bracket(value: int, bits: int) -> tuple[int, int]:
    """``(m, e)`` with ``1 / value`` in ``[m, m + 1) 2**e`` and ``2**(bits-1) <= m <= 2**bits``, for ``value >= 1``.

    ``m = floor(2**h / value)`` with ``h = value.bit_length() + bits - 1`` and ``e = -h``: first
    bracketed from the top ``2 bits + 2`` bits ``t`` of ``value`` (``value`` in ``[t, t + 1) 2**s``,
    so ``m`` lies between ``floor(2**(h-s) / (t+1))`` and ``floor(2**(h-s) / t)``); the full-size
    division decides only when those differ.
    """
    h = value.bit_length() + bits - 1
    shift = value.bit_length() - 2 * bits - 2
    if shift > 0:
        top = value >> shift
        low = (1 << (h - shift)) // (top + 1)
        if low == (1 << (h - shift)) // top:
            return low, -h
    return (1 << h) // value, -h


def bracketed_floors(factors: Sequence[tuple[np.ndarray, np.ndarray]],
                     complement: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``floor(2**62 V)`` (or ``floor(2**62 (1 - V))`` if ``complement``) per entry, where decidable.

    ``V`` is the product of the factors ``f = (m, e)``, each an entrywise bracket
    ``f in [m, m + 1) 2**e`` (``m``: positive Python ints in an object array, ``e``: int64); so
    ``2**62 V in [lo, hi) 2**-k`` with ``lo = prod m``, ``hi = prod (m + 1)``,
    ``k = -(62 + sum e)``.  Then ``floor(2**62 V)`` lies between ``lo >> k`` and
    ``(hi - 1) >> k``, and ``ceil(2**62 V)`` (for the complement ``2**62 - ceil``) between
    ``((lo - 1) >> k) + 1`` and ``((hi - 1) >> k) + 1``: where the two ends agree the answer is
    exact.  Returns ``(values int64, decided bool)``; undecided entries hold 0.  Needs
    ``k >= 0`` (each product has at least 62 bits more than ``2**62 V``), else ``ValueError``.
    The integers here are a few hundred bits, whatever the size of the values bracketed.
    """
    lo = hi = np.ones(len(factors[0][0]), dtype=object)
    exponent = np.zeros(len(factors[0][1]), dtype=np.int64)
    for mantissa, power in factors:
        lo, hi, exponent = lo * mantissa, hi * (mantissa + 1), exponent + power
    shift = -(PREFIX_BITS + exponent)
    if (shift < 0).any():
        raise ValueError("the brackets are too short to decide a 62-bit floor")
    high = (hi - 1) >> shift
    low = (lo - 1) >> shift if complement else lo >> shift
    decided = (low == high).astype(bool)
    kept = np.where(decided, low, 0).astype(np.int64)
    return np.where(decided, (PAD - 1) - kept if complement else kept, 0), decided


def choose(thresholds: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised choices: ``(#{j : thresholds[k, j] < words[k]}, tie)`` per row ``k``.

    ``thresholds``: int64 rows, each non-decreasing and ending in at least one :data:`PAD`;
    ``tie[k]`` is True when ``words[k]`` equals a threshold of its row, where the count is
    not yet the answer and :func:`resolve_tie` must decide.
    """
    count = (thresholds < words[:, None]).sum(axis=1)
    first_not_below = np.take_along_axis(thresholds, count[:, None], axis=1)[:, 0]
    return count, first_not_below == words


def choose_one(thresholds: np.ndarray, word: int) -> tuple[int, bool]:
    """:func:`choose` for one word and one threshold row (a binary search): ``(count, tie)``."""
    count = int(thresholds.searchsorted(word, side="left"))
    return count, int(thresholds[count]) == word


def resolve_tie(word: int, cumulative: Sequence[int], total: int, rng: object) -> int:
    """The exact choice for a word that tied a threshold: draw ``w < total`` and count ``C[j] <= z``.

    ``cumulative``: ``C[1], ..., C[m-1]`` (the same values the thresholds were made from).
    """
    z = (int(word) * total + uniform_below(rng, total)) >> PREFIX_BITS
    return bisect_right(list(cumulative), z)
