"""What every level chain derives from its levels and its ``K``: the protocol's members they share.

A level chain (the matrix chain, :class:`countdp.multilevel.chain.LevelChain`, or the structural
chain, :class:`countdp.multilevel.structural_chain.StructuralLevelChain`) releases one value per
level for each count, from one draw over ``2**K`` per level; together the levels are as private
as the least private one, level 0 (each later level is a post-processing of the one before).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


class LevelsBase:
    """The mechanism protocol's members of a chain with ``alphas`` (increasing) and ``K`` set by the subclass."""

    representation = "levels"
    """The protocol's name of this representation (:mod:`countdp.values.mechanism`)."""
    alphas: tuple[Fraction, ...]
    K: int
    n: int

    @property
    def levels(self) -> int:
        return len(self.alphas)

    @property
    def values_per_count(self) -> int:
        """One released value per level."""
        return self.levels

    @property
    def alpha(self) -> Fraction:
        """The guarantee of every level released together: the least private level's alpha (each set of
        levels is as private as its least private member)."""
        return self.alphas[0]

    @property
    def denominator(self) -> int:
        """``2**(K m)`` for ``m`` levels: the denominator of the joint distribution (the protocol's column)."""
        return self.level_denominator(self.levels - 1)

    def level_denominator(self, k: int) -> int:
        """``2**(K (k+1))``: the denominator of level ``k``'s marginal."""
        return 1 << (self.K * (k + 1))

    def checked_sample(self, counts, words, sizes) -> tuple[np.ndarray, np.ndarray]:
        """``sample``'s arguments as arrays ``(x, w)``, or a one-line ``ValueError``: counts integers in
        ``0..n``, every size this ``n``, and one uint64 word per level and count (levels first)."""
        x = np.asarray(counts)
        if x.dtype.kind not in "iu" or (x.size and (x.min() < 0 or x.max() > self.n)):
            raise ValueError(f"counts must be integers in 0..{self.n}")
        if sizes is not None and np.any(np.asarray(sizes) != self.n):
            raise ValueError(f"a level chain serves groups of size {self.n} only")
        w = np.asarray(words)
        if w.dtype != np.uint64 or w.shape != (self.levels, *x.shape):
            raise ValueError(f"{self.levels} levels need uint64 words shaped {(self.levels, *x.shape)}, one per "
                             f"level and count, got {w.dtype} {w.shape}")
        return x, w


__all__ = ["LevelsBase"]
