"""UM without its matrix: every column is the same near-even split of ``D = 2**K`` over the n + 1 outputs.

Output ``i`` receives ``floor(D / (n+1)) + [i < D mod (n+1)]`` draws in every column.  Each row is
constant across inputs, so every DP inequality holds with ratio one, for every alpha: the whole
mechanism is the floor of :mod:`countdp.structural.form`, and its certificate is the column total.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.structural.form import StructuralMechanism


class StructuralUM(StructuralMechanism):
    """UM over ``2**K``: the floor alone."""

    mechanism = "UM"
    argument = "every row is constant across inputs (ratio one); the certificate is the column total"

    def structured_column(self, j: int) -> np.ndarray:
        return np.zeros(self.n + 1, dtype=np.int64)

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return np.zeros(np.broadcast(i, j).shape)

    def dense_weights(self) -> np.ndarray:
        """The whole matrix at once: row ``i`` is ``floor(D / (n+1)) + [i < D mod (n+1)]`` in every column."""
        return np.broadcast_to(self.row_floor()[:, None], (self.n + 1, self.n + 1)).copy()

    def category_masses(self) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)

    def category_outputs(self, columns: np.ndarray, category: np.ndarray, n: np.ndarray) -> np.ndarray:
        return np.zeros(category.shape, dtype=np.int64)  # every draw is the floor's

    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        return []

    @property
    def uniform_share(self) -> float:
        return 0.0  # UM is the uniform mechanism itself: nothing is mixed in


def uniform_form(n: int, alpha: Fraction, K: int) -> StructuralUM:
    """UM for groups of size ``n`` over ``2**K``."""
    D = 1 << K
    if n + 1 > D:
        raise ValueError(f"UM for groups of {n:,} needs n + 1 <= 2^{K}")
    return StructuralUM(n, alpha, K, D, (1, D - 1))


__all__ = ["StructuralUM", "uniform_form"]
