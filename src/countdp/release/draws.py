"""The noise of a table release: one uniform 64-bit word per row and count column, mapped exactly.

Where the words come from:

* the OS's cryptographically secure source (``os.urandom``), for every release of real data;
* a seed, for experiments only: noisy column ``k`` (in output order; one per count column, or
  one per level of a multi-level column) draws from its own PCG64 stream,
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
from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws

EXPERIMENT_ONLY = "experiment only, not a privacy release"


class Randomness:
    """The source of a release's random words: ``seed=None`` for the OS's secure source."""

    def __init__(self, seed: int | None, columns: int) -> None:
        """``columns``: the number of independent streams (noisy columns) the release draws."""
        self.seed = seed
        self.generators = None
        if seed is not None:
            streams = np.random.SeedSequence(seed).spawn(columns)
            self.generators = [np.random.Generator(np.random.PCG64(s)) for s in streams]

    @property
    def secure(self) -> bool:
        return self.seed is None

    def words(self, column: int, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit words for stream (noisy column) ``column``."""
        if self.generators is None:
            return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return self.generators[column].bit_generator.random_raw(size)

    def generator(self, column: int) -> np.random.Generator | None:
        """Stream ``column``'s seeded generator, or ``None`` for the OS's secure source (for samplers that
        draw their own bits, such as the conditioned release)."""
        return None if self.generators is None else self.generators[column]

    def describe(self) -> dict:
        """How the noise was made, for the sidecar."""
        if self.secure:
            return {"source": "os.urandom", "privacy_release": True,
                    "note": "the operating system's cryptographically secure source; nobody can regenerate the noise"}
        return {"source": "seeded", "seed": self.seed, "privacy_release": False, "note": EXPERIMENT_ONLY,
                "generator": "numpy PCG64; noisy column k draws from SeedSequence(seed).spawn(columns)[k], "
                             "one 64-bit word per row in row order"}


COMBINED_TABLE_BYTES = 1 << 26
"""Largest padded table that one count column's mechanisms are merged into (many small sizes)."""


class ColumnSampler:
    """One count column's mechanisms, one per group size, drawing each row's noisy count.

    Many small mechanisms (the usual table: sizes in the tens) are merged into one table of
    cumulative weights, padded on the right with ``D`` (no draw reaches past a row's last real
    entry, which is ``D``), so a batch takes one vectorised search whatever its number of sizes.
    Otherwise rows are grouped by size with one stable sort.  Both give exactly
    ``outputs_for_draws`` of each row's own mechanism.
    """

    def __init__(self, mechanisms: list[IntegerMechanism]) -> None:
        self.mechanisms = mechanisms
        widths = np.array([m.n + 1 for m in mechanisms], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
        self.merged = None
        if len(mechanisms) > 1 and len({m.K for m in mechanisms}) == 1 and \
                int(widths.sum()) * int(widths.max()) * 8 <= COMBINED_TABLE_BYTES:
            K = mechanisms[0].K
            table = np.full((int(widths.sum()), int(widths.max())), 1 << K, dtype=np.int64)
            for mechanism, offset in zip(mechanisms, self.offsets.tolist(), strict=True):
                table[offset:offset + mechanism.n + 1, :mechanism.n + 1] = mechanism.cumulative
            self.merged = (table, K, guide_table(table, K))

    def sample(self, counts: np.ndarray, size_index: np.ndarray | None, words: np.ndarray) -> np.ndarray:
        """Each row's noisy count: ``counts[r]`` released by its size's mechanism with word ``words[r]``.

        ``size_index=None`` means the first mechanism for every row.
        """
        if size_index is None:
            return _sampled(self.mechanisms[0], counts, words)
        if self.merged is not None:
            table, K, guide = self.merged
            draws = (words >> np.uint64(64 - K)).astype(np.int64)
            return outputs_for_draws(table, K, self.offsets[size_index] + counts, draws, guide)
        out = np.empty(counts.shape, dtype=np.int64)
        keys = size_index.astype(np.uint16) if len(self.mechanisms) <= 1 << 16 else size_index
        order = np.argsort(keys, kind="stable")  # a radix sort for 16-bit keys
        bounds = np.concatenate([[0], np.cumsum(np.bincount(size_index, minlength=len(self.mechanisms)))])
        for k in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[k]:bounds[k + 1]]
            out[rows] = _sampled(self.mechanisms[k], counts[rows], words[rows])
        return out


def _sampled(released: IntegerMechanism, counts: np.ndarray, words: np.ndarray) -> np.ndarray:
    draws = (words >> np.uint64(64 - released.K)).astype(np.int64)
    return outputs_for_draws(released.cumulative, released.K, counts, draws, released.guide)


__all__ = ["COMBINED_TABLE_BYTES", "EXPERIMENT_ONLY", "ColumnSampler", "Randomness"]
