"""The documented draw of a structural mechanism, recomputed from its tables alone.

``countdp.structural.form`` documents the sampler: a row's draw ``v`` (its word's top K bits)
falls in the floor when ``v < R`` (output ``i`` takes ``f + [i < r]`` of those draws, in order,
with ``f, r = divmod(R, n + 1)``), and otherwise in the first category whose cumulative mass,
``R + masses[0] + ... + masses[c]``, exceeds it.  GM's categories are ``Z = -L .. L`` (the
output ``clamp(j + Z, 0, n)``); EM's are exponent 0, then each exponent ``k`` twice: first row
``j - k``, second row ``j + k`` near the diagonal (``k <= m = min(j, n - j)``), and past ``m``
both on the far side at distances ``2k - m - 1`` and ``2k - m``.  This module re-derives each
row's output from that description and the mechanism's published tables, without calling the
sampler, so the release tests can compare the two.
"""

from __future__ import annotations

import numpy as np


def documented_outputs(form, sizes: np.ndarray, counts: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Each row's output for its group size, true count and 64-bit word."""
    sizes, counts = np.asarray(sizes, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    edges = [int(e) for e in np.cumsum(np.concatenate([[form.reserve], form.masses]).astype(object))]
    assert edges[-1] == 1 << form.K
    if form.K > 62:  # a draw over 2^124: the word gives its top 62 bits; a row needing the rest would fail here
        draws = (np.asarray(words, dtype=np.uint64) >> np.uint64(2)).astype(np.int64)
        high = np.array([e >> (form.K - 62) for e in edges], dtype=np.int64)
        category = np.searchsorted(high, draws, side="right")
        assert ((category > 0) & (high[np.maximum(category - 1, 0)] != draws)).all(), "a second word is needed"
    else:
        draws = (np.asarray(words, dtype=np.uint64) >> np.uint64(64 - form.K)).astype(np.int64)
        category = np.searchsorted(np.array(edges, dtype=np.int64), draws, side="right")
    out = np.empty(draws.shape, dtype=np.int64)
    for row, (n, j, v, c) in enumerate(zip(sizes.tolist(), counts.tolist(), draws.tolist(), category.tolist(),
                                           strict=True)):
        out[row] = _floor_output(form.reserve, n, v) if c == 0 else _category_output(form, n, j, c - 1)
    return out


def _floor_output(reserve: int, n: int, v: int) -> int:
    f, r = divmod(reserve, n + 1)
    return v // (f + 1) if v < r * (f + 1) else r + (v - r * (f + 1)) // f


def _category_output(form, n: int, j: int, c: int) -> int:
    if form.mechanism == "GM":
        return min(max(j + c - form.tail.size, 0), n)
    assert form.mechanism == "EM", form.mechanism
    k, second = (c + 1) // 2, c > 0 and c % 2 == 0
    m = min(j, n - j)
    if k <= m:
        return j + k if second else j - k
    d = 2 * k - m - 1 + int(second)
    return j + d if j <= n - j else j - d
