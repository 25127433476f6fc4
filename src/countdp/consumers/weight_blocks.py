"""Blocks of a released mechanism's weights ``W / 2**K`` in floats, rows or columns, without its matrix.

A consumer's remap at large ``n`` reads the mechanism both ways: a release's row (its likelihood of
every input, for the Bayes response to a prior) and an input's column (its distribution over
releases, for its expected loss).  :class:`WeightBlocks` gives any block of either, from the
integer weights of a matrix file (:class:`countdp.privacy.exact.IntegerMechanism`) or from a
structural form's rule (:meth:`countdp.structural.form.StructuralMechanism.float_weights`), so
nothing of size ``(n+1)^2`` is held: a pass over the mechanism goes block by block of at most
``block_entries`` entries.

Every float entry is within :data:`ENTRY_ULPS` units in the last place (relative) of the exact
weight: a matrix's int64 weight is rounded once (the division by ``2**K`` is exact), a form's
structured part and floor are rounded once each and added.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from countdp.values.mechanism import mechanism_of

ENTRY_ULPS = 4
"""Bound, in units of ``2^-53`` relative, on the rounding of one float entry (at most 3 happen)."""


class WeightBlocks:
    """Float blocks of the weights ``W[r, i] / 2**K`` (release ``r``, input ``i``) of one narrow mechanism."""

    def __init__(self, released: object, block_entries: int) -> None:
        """``released``: a certified mechanism releasing one value per count (any representation with
        float blocks); ``block_entries``: the most entries one block of :meth:`spans` holds."""
        self.mechanism = mechanism_of(released, "a consumer's remap")
        if self.mechanism.values_per_count != 1:
            raise ValueError("a consumer's remap needs a mechanism releasing one value per count, not a level chain")
        self.n = int(self.mechanism.n)
        self.N = self.n + 1
        self.block_entries = int(block_entries)
        self._matrix = None
        if self.mechanism.representation == "matrix":
            self._matrix = np.asarray(self.mechanism.weights, dtype=np.int64)
        else:
            try:  # a form without its own structured_float inherits float_weights, which raises
                self.mechanism.float_weights(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
            except (AttributeError, NotImplementedError):
                raise ValueError(f"a consumer's remap at large n needs float blocks of the weights, which a "
                                 f"{type(self.mechanism).__name__} does not give") from None

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``W[rows][:, cols] / 2**K`` as a ``len(rows) x len(cols)`` float array."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if self._matrix is not None:
            return self._matrix[np.ix_(rows, cols)] / float(self.mechanism.denominator)
        return self.mechanism.float_weights(rows[:, None], cols[None, :])

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The releases ``rows``' likelihoods of every input (``len(rows) x (n+1)``)."""
        return self.block(rows, np.arange(self.N))

    def columns(self, cols: np.ndarray) -> np.ndarray:
        """The inputs ``cols``' distributions over every release (``(n+1) x len(cols)``)."""
        return self.block(np.arange(self.N), cols)

    def spans(self, items: np.ndarray, width: int | None = None) -> Iterator[np.ndarray]:
        """``items`` in consecutive pieces, each of which, times ``width`` (default ``n + 1``) entries,
        fits one block."""
        items = np.asarray(items, dtype=np.int64)
        step = max(1, self.block_entries // max(1, self.N if width is None else int(width)))
        for start in range(0, items.size, step):
            yield items[start:start + step]


__all__ = ["ENTRY_ULPS", "WeightBlocks"]
