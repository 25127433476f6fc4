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
A large group's structural mechanism is over ``2^124``: the word gives the draw's top 62 bits,
and the rare row whose category those bits do not settle takes a second word
(:meth:`Randomness.second_words`).
A size held as structure draws the same way from its table (:mod:`countdp.structural.form`).
"""

from __future__ import annotations

import os

import numpy as np

from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws

EXPERIMENT_ONLY = "experiment only, not a privacy release"
MATRIX = "matrix"
"""The protocol's name of integer weights held as a matrix: the representation whose sampler is the inverse
CDF of each column in output order, so that many of them merge into one table and one search."""


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

    def second_words(self, column: int, rows: np.ndarray) -> np.ndarray:
        """A second uniform 64-bit word for each of ``rows`` (their 0-based row numbers) of stream ``column``.

        A draw over ``2^124`` (a large group's structural mechanism) needs one for about
        ``10^-15`` of its rows.  Seeded, row ``r``'s word is the first output of Philox keyed by
        ``SeedSequence(seed).spawn(2 * columns)[columns + column]`` at counter ``r``: the same
        whatever the batches.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if self.generators is None:
            return np.frombuffer(os.urandom(8 * rows.size), dtype=np.uint64)
        key = np.random.SeedSequence(self.seed).spawn(2 * len(self.generators))[len(self.generators) + column]
        words = [np.random.Philox(key=key.generate_state(2, np.uint64), counter=[r, 0, 0, 0]).random_raw()
                 for r in rows.tolist()]
        return np.array(words, dtype=np.uint64)

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
                             "one 64-bit word per row in row order",
                "second_words": "a draw over 2^124 that needs a second word takes, for row r (0-based), the "
                                "first output of numpy Philox keyed by SeedSequence(seed).spawn(2 columns)"
                                "[columns + k].generate_state(2, uint64) at counter (r, 0, 0, 0)"}


COMBINED_TABLE_BYTES = 1 << 26
"""Largest padded table that one count column's mechanisms are merged into (many small sizes)."""


class ColumnSampler:
    """One count column's mechanisms, one per group size, drawing each row's noisy count.

    Many small mechanisms (the usual table: sizes in the tens) are merged into one table of
    cumulative weights, padded on the right with ``D`` (no draw reaches past a row's last real
    entry, which is ``D``), so a batch takes one vectorised search whatever its number of sizes.
    Otherwise rows are grouped with one stable sort: by size for matrices, and by table for
    structural mechanisms (:mod:`countdp.structural`), whose one table serves a whole range of
    sizes, so a million distinct large sizes cost a handful of vectorised calls.  All give
    exactly the release of each row's own mechanism.
    """

    def __init__(self, mechanisms: list, sizes: np.ndarray | None = None) -> None:
        """``mechanisms[s]`` serves group size ``sizes[s]`` (default: each mechanism's own ``n``); a
        structural mechanism may serve many sizes of its range."""
        self.mechanisms = mechanisms
        self.sizes = np.array([m.n for m in mechanisms], dtype=np.int64) if sizes is None else \
            np.asarray(sizes, dtype=np.int64)
        keys = np.array([id(m) for m in mechanisms], dtype=np.int64)  # a mechanism serving many sizes: one group
        _, first, self.group = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first)  # groups numbered in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.group = rank[self.group.reshape(-1)]
        self.representative = [mechanisms[s] for s in first[order].tolist()]
        self.merged = None
        matrices = all(m.representation == MATRIX for m in mechanisms)
        widths = self.sizes + 1
        self.offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
        if matrices and len(mechanisms) > 1 and len({m.K for m in mechanisms}) == 1 and \
                int(widths.sum()) * int(widths.max()) * 8 <= COMBINED_TABLE_BYTES:
            K = mechanisms[0].K
            table = np.full((int(widths.sum()), int(widths.max())), 1 << K, dtype=np.int64)
            for mechanism, offset in zip(mechanisms, self.offsets.tolist(), strict=True):
                W = mechanism.column(np.arange(mechanism.n + 1))
                table[offset:offset + mechanism.n + 1, :mechanism.n + 1] = np.cumsum(W, axis=0).T
            self.merged = (table, K, guide_table(table, K))

    def sample(self, counts: np.ndarray, size_index: np.ndarray | None, words: np.ndarray,
               second=None) -> np.ndarray:
        """Each row's noisy count: ``counts[r]`` released by its size's mechanism with word ``words[r]``.

        ``size_index=None`` means the first mechanism for every row.  ``second(rows)``: a second
        word for each of the given rows (positions in this batch), for the draws over ``2^124``
        that need one.
        """
        if size_index is None:
            return _sampled(self.mechanisms[0], counts, words, self.sizes[0], second)
        if self.merged is not None:
            table, K, guide = self.merged
            draws = (words >> np.uint64(64 - K)).astype(np.int64)
            return outputs_for_draws(table, K, self.offsets[size_index] + counts, draws, guide)
        out = np.empty(counts.shape, dtype=np.int64)
        groups = self.group[size_index]
        keys = groups.astype(np.uint16) if len(self.representative) <= 1 << 16 else groups
        order = np.argsort(keys, kind="stable")  # a radix sort for 16-bit keys
        bounds = np.concatenate([[0], np.cumsum(np.bincount(groups, minlength=len(self.representative)))])
        for g in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[g]:bounds[g + 1]]
            out[rows] = _sampled(self.representative[g], counts[rows], words[rows], self.sizes[size_index[rows]],
                                 None if second is None else lambda picked, rows=rows: second(rows[picked]))
        return out


def _sampled(released, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None, second=None) -> np.ndarray:
    """The rows' release by one mechanism's own sampler (the protocol's ``sample``)."""
    return released.sample(counts, words, sizes, second)


__all__ = ["COMBINED_TABLE_BYTES", "EXPERIMENT_ONLY", "ColumnSampler", "Randomness"]
