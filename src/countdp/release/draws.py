"""The noise of a table release: one uniform 64-bit word per row and count column, mapped exactly.

Where the words come from:

* the OS's cryptographically secure source (``os.urandom``), for every release of real data;
* a seed, for experiments only: count column ``k`` draws from its own PCG64 stream,
  ``SeedSequence(seed).spawn(columns)[k]``, one word per row in row order.  So a seeded release
  is the same whatever the batch size it was streamed in.

A row of group size ``n`` whose mechanism has weights over ``D = 2**K`` takes the top ``K`` bits
of its word as a uniform draw in ``[0, D)`` and releases the smallest output whose cumulative
weight exceeds it (:func:`countdp.privacy.sampling.outputs_for_draws`): exactly ``W[:, count] / D``.
"""

from __future__ import annotations

import os

import numpy as np

from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.sampling import outputs_for_draws

EXPERIMENT_ONLY = "experiment only, not a privacy release"


class Randomness:
    """The source of a release's random words: ``seed=None`` for the OS's secure source."""

    def __init__(self, seed: int | None, columns: int) -> None:
        self.seed = seed
        self.generators = None
        if seed is not None:
            streams = np.random.SeedSequence(seed).spawn(columns)
            self.generators = [np.random.Generator(np.random.PCG64(s)) for s in streams]

    @property
    def secure(self) -> bool:
        return self.seed is None

    def words(self, column: int, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit words for count column ``column``."""
        if self.generators is None:
            return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return self.generators[column].bit_generator.random_raw(size)

    def describe(self) -> dict:
        """How the noise was made, for the sidecar."""
        if self.secure:
            return {"source": "os.urandom", "privacy_release": True,
                    "note": "the operating system's cryptographically secure source; nobody can regenerate the noise"}
        return {"source": "seeded", "seed": self.seed, "privacy_release": False, "note": EXPERIMENT_ONLY,
                "generator": "numpy PCG64; count column k draws from SeedSequence(seed).spawn(columns)[k], "
                             "one 64-bit word per row in row order"}


def noisy_counts(counts: np.ndarray, size_index: np.ndarray | None, mechanisms: list[IntegerMechanism],
                 words: np.ndarray) -> np.ndarray:
    """Each row's noisy count: ``counts[r]`` released by ``mechanisms[size_index[r]]`` with word ``words[r]``.

    ``size_index=None`` means one mechanism for every row.  Rows are grouped by mechanism with
    one stable sort, so the cost does not grow with the number of distinct sizes.
    """
    if size_index is None:
        released = mechanisms[0]
        draws = (words >> np.uint64(64 - released.K)).astype(np.int64)
        return outputs_for_draws(released.cumulative, released.K, counts, draws, released.guide)
    out = np.empty(counts.shape, dtype=np.int64)
    keys = size_index.astype(np.uint16) if len(mechanisms) <= 1 << 16 else size_index
    order = np.argsort(keys, kind="stable")  # a radix sort for 16-bit keys
    bounds = np.concatenate([[0], np.cumsum(np.bincount(size_index, minlength=len(mechanisms)))])
    for k in np.flatnonzero(np.diff(bounds)):
        rows = order[bounds[k]:bounds[k + 1]]
        released = mechanisms[k]
        draws = (words[rows] >> np.uint64(64 - released.K)).astype(np.int64)
        out[rows] = outputs_for_draws(released.cumulative, released.K, counts[rows], draws, released.guide)
    return out


__all__ = ["EXPERIMENT_ONLY", "Randomness", "noisy_counts"]
