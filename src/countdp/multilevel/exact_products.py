"""Exact products of non-negative integer matrices, by multi-modular arithmetic on float64 BLAS.

The marginal of level ``k`` of a chain is ``T_{k-1} ... T_0 W``, with int64 factors below
``2**62``: its entries have up to ``62 (k+1)`` bits, and the plain Python-int product costs
``O(n^3)`` big-integer operations (seconds at n = 200, minutes at n = 500).  Instead:

1. choose primes ``p < 2**20`` whose product exceeds every entry (:func:`column_sum_bounds`
   bounds them through column sums, so even corrupted weights are reconstructed correctly);
2. per prime, reduce each factor mod ``p`` and multiply in float64: every product of residues is
   below ``2**40`` and every dot product of ``N < 2**13`` of them below ``2**53``, so BLAS
   (any summation order, with or without fused multiply-add) computes the integer exactly;
   reduce mod ``p`` again (``np.mod`` on an integer-valued double is exact);
3. recover the integers by the Chinese remainder theorem: Garner's mixed-radix digits in int64
   (every intermediate below ``2**40``), three digits at a time packed into an int64 limb below
   ``2**60``, then Horner's rule over the limbs in Python integers.

The tests compare the result with Python-int matrix products.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

PRIME_LIMIT = 1 << 20
"""Moduli are primes below this, so a product of two residues is below 2**40."""
MAX_DIMENSION = 1 << 13
"""Largest matrix dimension for which ``N (p - 1)**2 < 2**53`` (float64 dot products stay exact)."""


def _is_prime(m: int) -> bool:
    if m < 2 or m % 2 == 0:
        return m == 2
    f = 3
    while f * f <= m:
        if m % f == 0:
            return False
        f += 2
    return True


@cache
def modular_primes(count: int) -> tuple[int, ...]:
    """The ``count`` largest primes below ``2**20``, in decreasing order."""
    out, m = [], PRIME_LIMIT - 1
    while len(out) < count:
        if _is_prime(m):
            out.append(m)
        m -= 1
    return tuple(out)


def primes_for(bound: int) -> tuple[int, ...]:
    """The fewest of :func:`modular_primes` whose product exceeds ``bound`` (so ``[0, bound]`` is recovered)."""
    count = bound.bit_length() // 19 + 1  # every prime used exceeds 2**19.99
    while _product(modular_primes(count)) <= bound:
        count += 1
    return modular_primes(count)


def _product(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def column_sum_bounds(first: np.ndarray, factors: Sequence[np.ndarray]) -> list[int]:
    """Upper bounds on every entry of ``first``, ``F_0 first``, ``F_1 F_0 first``, ... (Python ints).

    An entry of ``F A`` is at most ``max_j F[i, j]`` times a column sum of ``A``, and column sums
    of ``F A`` are at most (largest column sum of ``F``) times (largest column sum of ``A``).
    """
    def largest_column_sum(M: np.ndarray) -> int:
        return max(int(s) for s in M.astype(object).sum(axis=0))

    total = largest_column_sum(first)
    bounds = [total]
    for F in factors:
        bounds.append(int(F.max()) * total)
        total *= largest_column_sum(F)
    return bounds


def _residues(M: np.ndarray, primes: np.ndarray) -> np.ndarray:
    """``M mod p`` for every prime, as float64 of shape ``(len(primes), N, N)``."""
    return np.mod(M[None, :, :], primes[:, None, None]).astype(np.float64)


def _garner(residues: np.ndarray, primes: Sequence[int]) -> np.ndarray:
    """The integers in ``[0, prod(primes))`` with the given residues, as an object ndarray."""
    digits: list[np.ndarray] = []
    for t, p in enumerate(primes):
        acc = np.zeros(residues.shape[1:], dtype=np.int64)
        for s in range(t - 1, -1, -1):  # the value of the digits found so far, mod p
            acc = (acc * primes[s] + digits[s]) % p
        inverse = pow(_product(primes[:t]) % p, -1, p)
        digits.append(((residues[t] - acc) % p) * inverse % p)
    limbs, radices = [], []
    for start in range(0, len(primes), 3):  # pack up to three digits (each < 2**20) into one int64
        group = range(start, min(start + 3, len(primes)))
        limb = np.zeros(residues.shape[1:], dtype=np.int64)
        for s in reversed(group):
            limb = limb * primes[s] + digits[s]
        limbs.append(limb)
        radices.append(_product([primes[s] for s in group]))
    value = limbs[-1].astype(object)
    for limb, radix in zip(reversed(limbs[:-1]), reversed(radices[:-1]), strict=True):
        value = value * radix + limb.astype(object)
    return value


def chain_products(first: np.ndarray, factors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``[first, F_0 first, F_1 F_0 first, ...]`` exactly, as object ndarrays of Python ints.

    ``first`` and every factor are non-negative int64 square matrices of one size ``N < 2**13``.
    """
    mats = [np.asarray(first)] + [np.asarray(F) for F in factors]
    N = mats[0].shape[0]
    if N >= MAX_DIMENSION:
        raise ValueError(f"exact products support matrices below {MAX_DIMENSION} rows, got {N}")
    for M in mats:
        if M.dtype != np.int64 or M.shape != (N, N) or (M.size and M.min() < 0):
            raise ValueError(f"exact products need non-negative int64 matrices of shape {(N, N)}")
    bounds = column_sum_bounds(mats[0], mats[1:])
    all_primes = primes_for(max(bounds))
    moduli = np.array(all_primes, dtype=np.int64)
    fmod = moduli.astype(np.float64)[:, None, None]
    current = _residues(mats[0], moduli)
    out = [mats[0].astype(object)]
    for F, bound in zip(mats[1:], bounds[1:], strict=True):
        current = np.mod(np.matmul(_residues(F, moduli), current), fmod)
        used = primes_for(bound)
        out.append(_garner(current[: len(used)].astype(np.int64), used))
    return out


__all__ = ["MAX_DIMENSION", "PRIME_LIMIT", "chain_products", "column_sum_bounds", "modular_primes", "primes_for"]
