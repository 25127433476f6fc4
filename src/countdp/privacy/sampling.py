"""Releasing noisy counts: an exact sampler over integer weights, and its sources of randomness.

For a mechanism with integer weights ``W`` (columns summing to ``D = 2**K``, rows outputs),
a release of true count ``j`` draws a uniform integer ``u`` in ``[0, D)`` and returns the
smallest output ``i`` with ``u < W[0, j] + ... + W[i, j]``.  Exactly ``W[i, j]`` of the ``D``
possible draws give ``i``, so the released distribution is ``W / D`` exactly: the object the
exact certificate (:mod:`countdp.privacy.exact`) is checked on.  No floating point is involved.

Randomness:

* ``rng=None`` (the default): :class:`SystemRandomSource`, bits from the operating system's
  cryptographically secure source (:func:`os.urandom`, as :mod:`secrets` uses).  Use it for
  every release of real data: nobody can regenerate the noise.
* ``rng=numpy.random.Generator``: a seeded, reproducible stream, for experiments, figures and
  audits only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from countdp.privacy.exact import IntegerMechanism


class SystemRandomSource:
    """Uniform integers from the OS's cryptographically secure source (``os.urandom``)."""

    def draws(self, size: int, K: int) -> np.ndarray:
        """``size`` independent uniform integers in ``[0, 2**K)`` (int64), K <= 62."""
        raw = np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return (raw >> np.uint64(64 - K)).astype(np.int64)

    def __repr__(self) -> str:
        return "SystemRandomSource(os.urandom)"


def uniform_draws(rng: object, size: int, K: int) -> np.ndarray:
    """``size`` uniform integers in ``[0, 2**K)`` from ``rng``: a numpy Generator or a :class:`SystemRandomSource`.

    A Generator's raw 64-bit words are shifted right by ``64 - K``: exactly uniform.
    """
    if isinstance(rng, np.random.Generator):
        return (rng.bit_generator.random_raw(size) >> np.uint64(64 - K)).astype(np.int64)
    if isinstance(rng, SystemRandomSource):
        return rng.draws(size, K)
    raise ValueError(f"rng must be None (OS secure source), a SystemRandomSource or a numpy Generator, "
                     f"got {type(rng).__name__}")


GUIDE_EXTRA_BITS = 4
"""Buckets per input: about ``16 (n+1)``, so ~1/16 of the draws land in a bucket holding a boundary."""
GUIDE_MAX_ENTRIES = 1 << 22
"""Cap on the guide table's size (inputs x buckets), for large n."""


def guide_table(cumulative: np.ndarray, K: int) -> tuple[np.ndarray, int]:
    """Chen and Asau's guide table for integer CDFs: ``(guide, shift)``.

    ``cumulative[j, i] = W[0, j] + ... + W[i, j]`` (one row per input).  A draw ``u`` falls in
    bucket ``b = u >> shift``.  ``start = guide[j, b]`` if ``>= 0``, else ``~guide[j, b]``, is
    the smallest output ``i`` with ``cumulative[j, i] > b << shift``: the search for ``u`` may
    start there and never passes its answer.  A non-negative entry means the whole bucket lies
    in that output's interval, so it *is* the answer; a negative one means the bucket holds an
    interval boundary and the search must go on.
    """
    inputs, N = cumulative.shape
    bits = min(K, max(1, (N - 1).bit_length()) + GUIDE_EXTRA_BITS)
    while bits > 1 and inputs << bits > GUIDE_MAX_ENTRIES and (1 << (bits - 1)) >= N:
        bits -= 1
    shift = K - bits
    # start[j, b] = #{i : cumulative[j, i] <= b << shift} = #{i : ceil(cumulative[j, i] / 2**shift) <= b}
    first_bucket = np.minimum((cumulative + ((1 << shift) - 1)) >> shift, 1 << bits)
    counts = np.zeros((inputs, (1 << bits) + 1), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(inputs), N), first_bucket.ravel()), 1)
    start = np.cumsum(counts, axis=1)[:, : 1 << bits]
    bucket_end = (np.arange(1, (1 << bits) + 1, dtype=np.int64) << shift)[None, :]  # first draw past the bucket
    whole = np.take_along_axis(cumulative, np.minimum(start, N - 1), axis=1) >= bucket_end
    return np.where(whole, start, ~start).astype(np.int32), shift


def outputs_for_draws(cumulative: np.ndarray, K: int, columns: np.ndarray, draws: np.ndarray,
                      guide: tuple[np.ndarray, int] | None = None) -> np.ndarray:
    """The sampler's mapping: for each (input, draw), the smallest output ``i`` with ``draw < cumulative[input, i]``.

    ``draws`` are integers in ``[0, 2**K)``; pure integer arithmetic, vectorised.
    """
    N = cumulative.shape[1]
    table, shift = guide if guide is not None else guide_table(cumulative, K)
    found = table.ravel()[columns * table.shape[1] + (draws >> shift)].astype(np.int64)
    search = np.flatnonzero(found < 0)
    out = found
    out[search] = ~found[search]
    flat = cumulative.ravel()
    start = columns[search] * N
    active = search[flat[start + out[search]] <= draws[search]]
    while active.size:  # the draws whose bucket holds an interval boundary, past the bucket's start
        out[active] += 1
        active = active[flat[columns[active] * N + out[active]] <= draws[active]]
    return out


def _released_form(mechanism: object) -> IntegerMechanism:
    released = getattr(mechanism, "released", mechanism)
    if not isinstance(released, IntegerMechanism):
        raise ValueError("release needs a certified mechanism (countdp.design_named(...), "
                         "countdp.mechanisms.artifact.load_design(...) "
                         f"or an IntegerMechanism), got {type(mechanism).__name__}")
    return released


def _checked_columns(counts: np.ndarray, N: int) -> np.ndarray:
    """``counts`` flattened to int64 inputs, or ``ValueError`` unless every one is an integer in 0..N-1."""
    if counts.size and (not np.issubdtype(counts.dtype, np.integer) or counts.min() < 0 or counts.max() >= N):
        raise ValueError(f"true counts must be integers in 0..{N - 1}")
    return counts.ravel().astype(np.int64)


def release(mechanism: object, true_counts: object, rng: object = None) -> np.ndarray:
    """Draw one noisy count per true count, exactly from the mechanism's integer weights.

    ``mechanism``: a :class:`~countdp.design.designer.Design` or an :class:`~countdp.privacy.exact.IntegerMechanism`
    (both carry weights that passed the exact alpha-DP test; a bare float matrix is refused).
    ``rng``: ``None`` for the OS's secure source (real data), or a seeded numpy ``Generator``
    (experiments).  ``out[k]`` has the distribution ``W[:, true_counts[k]] / D``.
    """
    return release_each(mechanism, [true_counts], [rng])[0]


def release_each(mechanism: object, true_counts: Sequence[object], rngs: Sequence[object]) -> list[np.ndarray]:
    """``[release(mechanism, c, rng) for c, rng in zip(true_counts, rngs)]``, with one search for all.

    Each array of counts takes its draws from its own ``rng`` (so every result is the very
    array :func:`release` returns for it); the draws are then mapped to outputs together.
    """
    if len(true_counts) != len(rngs):
        raise ValueError(f"release_each: {len(true_counts)} arrays of counts for {len(rngs)} random sources")
    released = _released_form(mechanism)
    if not len(true_counts):
        return []
    arrays = [np.asarray(c) for c in true_counts]
    columns = [_checked_columns(c, released.n + 1) for c in arrays]
    draws = [uniform_draws(SystemRandomSource() if rng is None else rng, c.size, released.K)
             for c, rng in zip(columns, rngs, strict=False)]
    out = outputs_for_draws(released.cumulative, released.K, np.concatenate(columns), np.concatenate(draws),
                            released.guide)
    ends = np.cumsum([c.size for c in columns])[:-1]
    return [part.reshape(c.shape) for part, c in zip(np.split(out, ends), arrays, strict=False)]


__all__ = ["SystemRandomSource", "guide_table", "outputs_for_draws", "release", "release_each", "uniform_draws"]
