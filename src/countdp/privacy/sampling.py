"""Releasing noisy counts: an exact sampler over integer weights, and its sources of randomness.

For a mechanism with integer weights ``W`` (columns summing to ``D = 2**K``, rows outputs),
a release of true count ``j`` draws a uniform integer ``u`` in ``[0, D)`` and returns the
smallest output ``i`` with ``u < W[0, j] + ... + W[i, j]``.  Exactly ``W[i, j]`` of the ``D``
possible draws give ``i``, so the released distribution is ``W / D`` exactly: the object the
exact certificate (:mod:`countdp.privacy.exact`) is checked on.  No floating point is involved.
The mapping from draws to outputs, through a guide table cached on the mechanism, is
:mod:`countdp.privacy.inverse_cdf`: arrays of counts go through it vectorised, and a single
count through its scalar form, whose cost per call does not depend on ``n`` (one release per
request at any group size).  Both give the same output for the same draw.

Randomness:

* ``rng=None`` (the default): :class:`SystemRandomSource`, bits from the operating system's
  cryptographically secure source (:func:`os.urandom`, as :mod:`secrets` uses).  Use it for
  every release of real data: nobody can regenerate the noise.
* ``rng=numpy.random.Generator``: a seeded, reproducible stream, for experiments, figures and
  audits only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import numpy as np

from countdp.privacy.inverse_cdf import guide_table, output_for_draw, outputs_for_draws
from countdp.values.mechanism import mechanism_of


class SystemRandomSource:
    """Uniform integers from the OS's cryptographically secure source (``os.urandom``)."""

    def words(self, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit words (uint64)."""
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)

    def draws(self, size: int, K: int) -> np.ndarray:
        """``size`` independent uniform integers in ``[0, 2**K)`` (int64), K <= 62: each word's top ``K`` bits."""
        return (self.words(size) >> np.uint64(64 - K)).view(np.int64)

    def draw(self, K: int) -> int:
        """One uniform integer in ``[0, 2**K)``: the 8 bytes read as :meth:`draws` reads each word."""
        return int.from_bytes(os.urandom(8), sys.byteorder) >> (64 - K)

    def __repr__(self) -> str:
        return "SystemRandomSource(os.urandom)"


_OS_SOURCE = SystemRandomSource()


def _bad_rng(rng: object) -> ValueError:
    return ValueError(f"rng must be None (OS secure source), a SystemRandomSource or a numpy Generator, "
                      f"got {type(rng).__name__}")


def uniform_words(rng: object, size: int) -> np.ndarray:
    """``size`` uniform 64-bit words (uint64) from ``rng``: ``None`` (the OS's secure source), a
    :class:`SystemRandomSource` or a numpy Generator (its raw 64-bit stream)."""
    if rng is None:
        return _OS_SOURCE.words(size)
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator.random_raw(size)
    if isinstance(rng, SystemRandomSource):
        return rng.words(size)
    raise _bad_rng(rng)


def uniform_draws(rng: object, size: int, K: int) -> np.ndarray:
    """``size`` uniform integers in ``[0, 2**K)`` from ``rng``: each word's top ``K`` bits, exactly uniform."""
    if rng is None:
        raise _bad_rng(rng)
    return (uniform_words(rng, size) >> np.uint64(64 - K)).view(np.int64)


def uniform_draw(rng: object, K: int) -> int:
    """One draw of :func:`uniform_draws` as a Python int (the same word of a Generator's stream)."""
    if rng is None:
        return _OS_SOURCE.draw(K)
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator.random_raw() >> (64 - K)
    if isinstance(rng, SystemRandomSource):
        return rng.draw(K)
    raise _bad_rng(rng)


def _out_of_range(N: int) -> ValueError:
    return ValueError(f"true counts must be integers in 0..{N - 1}")


def _checked_columns(counts: np.ndarray, N: int) -> np.ndarray:
    """``counts`` flattened to int64 inputs, or ``ValueError`` unless every one is an integer in 0..N-1."""
    if counts.size and (not np.issubdtype(counts.dtype, np.integer) or counts.min() < 0 or counts.max() >= N):
        raise _out_of_range(N)
    return counts.ravel().astype(np.int64)


def _is_integer(value: object) -> bool:
    """A Python or numpy integer, not a bool (an array of bools is refused as counts too)."""
    return type(value) is int or isinstance(value, np.integer)


def _single_count(true_counts: object) -> tuple[object, tuple[int, ...]] | None:
    """``(count, shape)`` when ``true_counts`` is one integer: a scalar, a 1-list or tuple, or a size-1 array."""
    if _is_integer(true_counts):
        return true_counts, ()
    kind = type(true_counts)
    if (kind is list or kind is tuple) and len(true_counts) == 1 and _is_integer(true_counts[0]):
        return true_counts[0], (1,)
    if kind is np.ndarray and true_counts.size == 1 and true_counts.dtype.kind in "iu":
        return true_counts.item(), true_counts.shape
    return None


def release(mechanism: object, true_counts: object, rng: object = None) -> np.ndarray:
    """Draw one noisy count per true count, exactly from the mechanism's integer weights.

    ``mechanism``: any representation of :class:`countdp.values.mechanism.Mechanism` (integer
    weights, a structural form, a level chain), or a :class:`~countdp.design.designer.Design`
    holding one: each certified in exact arithmetic; a bare float matrix is refused.
    ``rng``: ``None`` for the OS's secure source (real data), or a seeded numpy ``Generator``
    (experiments).  ``out[k]`` has the distribution ``column(true_counts[k]) / denominator``; an
    int64 array of ``true_counts``' shape (a level chain's levels first).  One count of a matrix
    takes a scalar path (one word, a few table reads) whose cost does not depend on ``n``; it
    gives what the array path gives for the same word.

        >>> gm = countdp.design_named("GM", 4, "1/2")
        >>> noisy = countdp.release(gm, [0, 4, 2], np.random.default_rng(7))  # seeded: experiments only
        >>> noisy.dtype, noisy.shape, bool(((0 <= noisy) & (noisy <= 4)).all())
        (dtype('int64'), (3,), True)
        >>> countdp.release(countdp.geometric(4, 0.5), [2])  # a float matrix carries no certified weights
        Traceback (most recent call last):
        ...
        ValueError: release needs a certified mechanism ...
    """
    released = mechanism_of(mechanism)
    single = _single_count(true_counts)
    if single is None or released.values_per_count != 1 or released.K > 62:
        return release_each(released, [true_counts], [rng])[0]
    count, shape = single
    if not 0 <= count <= released.n:
        raise _out_of_range(released.n + 1)
    # a form whose first word may not settle the draw (K beyond its first word's bits) takes the rest from rng
    output = released.sample(int(count), uniform_draw(rng, 64), second=lambda rows: uniform_words(rng, len(rows)))
    return np.array(output, dtype=np.int64).reshape(shape)


def release_each(mechanism: object, true_counts: Sequence[object], rngs: Sequence[object]) -> list[np.ndarray]:
    """``[release(mechanism, c, rng) for c, rng in zip(true_counts, rngs)]``, sampled together.

    Each array of counts takes its words from its own ``rng`` (so every result is the very
    array :func:`release` returns for it; a generator given for several arrays serves them one
    after the other, as successive calls of :func:`release` would): ``values_per_count`` words per count, level by level
    for a chain, then the second words a form over more than 62 bits asks for, in row order.
    The words are then mapped to outputs together, by the mechanism's own sampler.
    """
    if len(true_counts) != len(rngs):
        raise ValueError(f"release_each: {len(true_counts)} arrays of counts for {len(rngs)} random sources")
    released = mechanism_of(mechanism)
    if not len(true_counts):
        return []
    shared = [id(rng) for rng in rngs if rng is not None]
    if len(set(shared)) < len(shared):  # one generator for several arrays: each array's words, then its second
        return [release_each(released, [c], [rng])[0] for c, rng in zip(true_counts, rngs, strict=True)]
    arrays = [np.asarray(c) for c in true_counts]
    columns = [_checked_columns(c, released.n + 1) for c in arrays]
    per = released.values_per_count
    words = [uniform_words(rng, per * c.size).reshape(per, c.size) for c, rng in zip(columns, rngs, strict=True)]
    ends = np.cumsum([c.size for c in columns])

    def second(rows: np.ndarray) -> np.ndarray:  # each array's rng, for its own rows, in row order
        owner = np.searchsorted(ends, rows, side="right")
        return np.concatenate([uniform_words(rngs[k], int((owner == k).sum())) for k in range(len(rngs))])

    counts, draws = (columns[0], words[0]) if len(columns) == 1 else \
        (np.concatenate(columns), np.concatenate(words, axis=1))
    out = released.sample(counts, draws if per > 1 else draws.reshape(-1), second=second)
    parts = np.split(out, ends[:-1], axis=-1)
    return [part.reshape((per, *c.shape) if per > 1 else c.shape) for part, c in zip(parts, arrays, strict=True)]


__all__ = ["SystemRandomSource", "guide_table", "output_for_draw", "outputs_for_draws", "release", "release_each",
           "uniform_draw", "uniform_draws", "uniform_words"]
