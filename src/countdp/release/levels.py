"""Multi-level columns of a table release: one count released at several privacy levels.

``countdp release ... --levels 1/2,2/3,9/10`` gives every count column one noisy column per
level, ``noisy_<c>_level1`` (alpha 1/2, the least private) to ``noisy_<c>_level3`` (alpha 9/10).
Each group size gets its own Gupte-Sundararajan chain (:func:`countdp.multilevel.chain.build_level_chain`):
level 1 is drawn from M(n, alpha_1) and level k+1 from the certified transition applied to
level k, so a consumer who holds any set of levels learns no more than the least private level
among them.  The whole column is charged alpha_1's epsilon, once.  M is GM (Gupte and
Sundararajan's case: every pair of levels works) or EM, WM, WH where each level is a
post-processing of the one before (otherwise the release is refused, naming the size and pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from countdp.multilevel.chain import ChainSettings, LevelChain, build_level_chain


@dataclass(frozen=True)
class LevelDesign:
    """A group size's chain, shaped like a designed mechanism where the release reads one
    (``mechanism``, ``objective``, ``n``, ``released``: level 1's weights)."""

    chain: LevelChain
    objective: str = "L0"

    @property
    def mechanism(self) -> str:
        return self.chain.mechanism

    @property
    def n(self) -> int:
        return self.chain.n

    @property
    def released(self):
        """Level 1's weights for a matrix chain; the chain itself for a structural one (no matrix to hold)."""
        return self.chain if getattr(self.chain, "structural", False) else self.chain.first


def level_design(n: int, levels, mechanism: str = "GM") -> LevelDesign:
    """The certified chain of ``mechanism`` (GM, EM, WM or WH) for group size ``n`` at ``levels``
    (increasing alphas); ``ValueError`` (one line) where a level is not a post-processing of the one before.
    GM beyond the matrix chain's limit is a structural chain (no matrix)."""
    return LevelDesign(build_level_chain(n, levels, mechanism=mechanism))


class LevelMechanisms:
    """``mechanism_for(k, n)`` of a ``--levels`` release: each size's chain, and which sizes hold matrices."""

    def __init__(self, columns, mechanism: str) -> None:
        self.columns, self.mechanism = columns, mechanism

    def __call__(self, k: int, n: int) -> LevelDesign:
        return level_design(n, self.columns[k].levels, self.mechanism)

    def matrix_sizes(self, k: int, sizes: np.ndarray) -> np.ndarray:
        """The sizes whose chain holds matrices: all but GM's beyond the matrix chain's limit (structural)."""
        sizes = np.asarray(sizes)
        return sizes[sizes <= ChainSettings().matrix_limit("GM")] if self.mechanism in (None, "GM") else sizes


class LevelsSampler:
    """One count column's chains, one per group size: every row's noisy count at every level."""

    def __init__(self, designs: list[LevelDesign]) -> None:
        self.chains = [design.chain for design in designs]

    def sample(self, counts: np.ndarray, size_index: np.ndarray | None, words: list[np.ndarray],
               second=None) -> list[np.ndarray]:
        """Per level, each row's noisy count; ``words[l]`` holds one uniform 64-bit word per row for level ``l``.

        ``second(level, rows)``: a further word for each of ``rows`` (row numbers in this batch) of
        level ``level``'s stream, for the rare draws of a structural chain over ``2^124`` that need one.
        """
        stacked = np.stack(words)
        if size_index is None or len(self.chains) == 1:
            return list(self.chains[0].sample(counts, stacked, second=_positions(second, np.arange(len(counts)))))
        out = np.empty(stacked.shape, dtype=np.int64)
        order = np.argsort(size_index, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(size_index, minlength=len(self.chains)))])
        for s in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[s]:bounds[s + 1]]
            out[:, rows] = self.chains[s].sample(counts[rows], stacked[:, rows], second=_positions(second, rows))
        return list(out)


def _positions(second, rows: np.ndarray):
    """A chain's ``second(positions)`` (level-major, in its words) from the release's ``second(level, rows)``."""
    if second is None:
        return None
    return lambda positions: _by_level(second, rows, np.asarray(positions, dtype=np.int64))


def _by_level(second, rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Each position's word from its level's stream, at its row of the batch."""
    levels, within = np.divmod(positions, len(rows))
    out = np.empty(positions.size, dtype=np.uint64)
    for level in np.unique(levels).tolist():
        at = np.flatnonzero(levels == level)
        out[at] = second(level, rows[within[at]])
    return out


__all__ = ["LevelDesign", "LevelMechanisms", "LevelsSampler", "level_design"]
