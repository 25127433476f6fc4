"""The exact inverse CDF of integer weights: draws in ``[0, 2**K)`` to outputs, through a guide table.

For integer weights with ``cumulative[j, i] = W[0, j] + ... + W[i, j]`` (one row per input, each
row non-decreasing and ending at ``D = 2**K``), a draw ``u`` maps to the smallest output ``i``
with ``u < cumulative[j, i]``.  Exactly ``W[i, j]`` of the ``D`` draws give ``i``.  Pure integer
arithmetic; no floating point.

Chen and Asau's guide table splits ``[0, D)`` into ``2**bits`` equal buckets per input and
stores, per bucket, where the search may start and whether the bucket lies inside one output's
interval (then the start *is* the answer).  A bucket holding interval boundaries is searched by
bisection between its own start and the next bucket's start, so no search takes more than
``log2(n + 1)`` steps, whatever the weights.

This module imports nothing from the rest of the package: :mod:`countdp.privacy.exact` (which
caches the table on an :class:`~countdp.privacy.exact.IntegerMechanism`) and
:mod:`countdp.privacy.sampling` (which draws and releases) both build on it.
"""

from __future__ import annotations

import numpy as np

GUIDE_EXTRA_BITS = 4
"""Buckets per input: about ``16 (n+1)``, so ~1/16 of the draws land in a bucket holding a boundary."""
GUIDE_MAX_ENTRIES = 1 << 22
"""Cap on the guide table's size (inputs x buckets), for large n."""


def guide_table(cumulative: np.ndarray, K: int) -> tuple[np.ndarray, int]:
    """Chen and Asau's guide table for integer CDFs: ``(guide, shift)``, ``guide`` C-contiguous int32.

    ``cumulative[j, i] = W[0, j] + ... + W[i, j]`` (one row per input).  A draw ``u`` falls in
    bucket ``b = u >> shift``.  ``start = guide[j, b]`` if ``>= 0``, else ``~guide[j, b]``, is
    the smallest output ``i`` with ``cumulative[j, i] > b << shift``: the search for ``u`` may
    start there and never passes its answer.  A non-negative entry means the whole bucket lies
    in that output's interval, so it *is* the answer; a negative one means the bucket holds an
    interval boundary and the search must go on (no further than the next bucket's start).
    """
    inputs, N = cumulative.shape
    bits = min(K, max(1, (N - 1).bit_length()) + GUIDE_EXTRA_BITS)
    while bits > 1 and inputs << bits > GUIDE_MAX_ENTRIES and (1 << (bits - 1)) >= N:
        bits -= 1
    shift, buckets = K - bits, 1 << bits
    # start[j, b] = #{i : cumulative[j, i] <= b << shift} = #{i : ceil(cumulative[j, i] / 2**shift) <= b}
    first_bucket = np.minimum((cumulative + ((1 << shift) - 1)) >> shift, buckets)
    cells = (np.arange(inputs, dtype=np.int64)[:, None] * (buckets + 1) + first_bucket).ravel()
    counts = np.bincount(cells, minlength=inputs * (buckets + 1)).reshape(inputs, buckets + 1)
    start = np.cumsum(counts[:, :buckets], axis=1, dtype=np.int32)
    bucket_end = (np.arange(1, buckets + 1, dtype=np.int64) << shift)[None, :]  # first draw past the bucket
    whole = np.take_along_axis(cumulative, np.minimum(start, N - 1), axis=1) >= bucket_end
    return np.ascontiguousarray(np.where(whole, start, ~start), dtype=np.int32), shift


def output_for_draw(cumulative: np.ndarray, guide: tuple[np.ndarray, int], column: int, draw: int) -> int:
    """The smallest output ``i`` with ``draw < cumulative[column, i]``, for one Python-int draw.

    The per-call path of a release: a handful of scalar reads, at most ``log2(n + 1)`` of them
    in a bucket holding boundaries; nothing is allocated that grows with ``n``.
    """
    table, shift = guide
    bucket = draw >> shift
    lo = table.item(column, bucket)
    if lo >= 0:
        return lo
    lo = ~lo
    if bucket == table.shape[1] - 1:
        hi = cumulative.shape[1] - 1
    else:
        hi = table.item(column, bucket + 1)
        hi = hi if hi >= 0 else ~hi
    while lo < hi:  # the answer lies in [lo, hi]: cumulative[column, hi] > draw
        mid = (lo + hi) >> 1
        if cumulative.item(column, mid) <= draw:
            lo = mid + 1
        else:
            hi = mid
    return lo


def outputs_for_draws(cumulative: np.ndarray, K: int, columns: np.ndarray, draws: np.ndarray,
                      guide: tuple[np.ndarray, int] | None = None) -> np.ndarray:
    """The sampler's mapping: for each (input, draw), the smallest output ``i`` with ``draw < cumulative[input, i]``.

    ``columns`` and ``draws`` are int64 arrays of one shape (draws in ``[0, 2**K)``); the result
    is int64.  ``cumulative`` is read by 2-D indexing, so an array of any memory layout is used
    in place, never copied; the guide table is C-contiguous (:func:`guide_table`).
    """
    table, shift = guide if guide is not None else guide_table(cumulative, K)
    buckets = draws >> shift
    found = table.reshape(-1)[columns * table.shape[1] + buckets]
    out = found.astype(np.int64)
    search = np.flatnonzero(found < 0)
    if search.size:
        out[search] = _search(cumulative, table, columns[search], buckets[search], draws[search], ~out[search])
    return out


def _search(cumulative: np.ndarray, table: np.ndarray, cols: np.ndarray, buckets: np.ndarray, draws: np.ndarray,
            lo: np.ndarray) -> np.ndarray:
    """The answers for draws in buckets holding a boundary, from their buckets' starts ``lo``.

    One step forward settles a bucket with a single boundary (most of them); the draws still
    open are bisected up to the next bucket's start, which bounds their answer.
    """
    stepped = np.flatnonzero(cumulative[cols, lo] <= draws)
    lo[stepped] += 1
    rest = stepped[cumulative[cols[stepped], lo[stepped]] <= draws[stepped]]
    if rest.size:
        last = table.shape[1] - 1
        following = table[cols[rest], np.minimum(buckets[rest] + 1, last)].astype(np.int64)
        hi = np.where(buckets[rest] == last, cumulative.shape[1] - 1,
                      np.where(following >= 0, following, ~following))
        narrowed = lo[rest] + 1
        bisect_rows(cumulative, cols[rest], draws[rest], narrowed, hi)
        lo[rest] = narrowed
    return lo


def bisect_rows(cumulative: np.ndarray, cols: np.ndarray, draws: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    """Narrow ``[lo, hi]`` (in place) to the smallest ``i`` in it with ``draws < cumulative[cols, i]``.

    Requires ``cumulative[cols, hi] > draws`` and ``cumulative[cols, lo - 1] <= draws``; at most
    ``log2(hi - lo) + 1`` passes, each over the draws still open.
    """
    active = np.flatnonzero(lo < hi)
    while active.size:
        a_lo, a_hi = lo[active], hi[active]
        mid = (a_lo + a_hi) >> 1
        right = cumulative[cols[active], mid] <= draws[active]
        lo[active] = np.where(right, mid + 1, a_lo)
        hi[active] = np.where(right, a_hi, mid)
        active = active[lo[active] < hi[active]]


__all__ = ["GUIDE_EXTRA_BITS", "GUIDE_MAX_ENTRIES", "bisect_rows", "guide_table", "output_for_draw",
           "outputs_for_draws"]
