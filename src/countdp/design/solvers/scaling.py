"""The reduced design LP in the units HiGHS's and Clarabel's absolute tolerances suit.

Column ``k`` is scaled by ``alpha^|i-j|`` of its first entry ``(i, j)`` (an entry's natural size:
DP ties it to its row's diagonal by that factor; floor
:attr:`~countdp.design.settings.SolverTuning.col_scale_floor`) and each row by one over its
largest column-scaled coefficient.  Without this an entry of size ``alpha^40 ~ 1e-12``
(``alpha = 1/2``) can be left 0 beside a neighbour of 1e-10, breaking a DP row by ~1e-10.
Scaling is an exact change of units: :class:`Scaling` applies it, its inverse maps a solve back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from countdp.design.reduce import ReducedLP
from countdp.design.reductions.chain import Reduction
from countdp.design.settings import SolverSettings
from countdp.design.solvers.solved import INTERIOR_GUIDE, Solved


def scales(lp: ReducedLP, *, settings: SolverSettings) -> tuple[np.ndarray, np.ndarray]:
    """``(col, row)``: column scales ``alpha^|i-j|`` (at least ``settings.solver.col_scale_floor``: HiGHS's
    dual tolerance acts on ``scale * reduced cost``, so a tinier scale would let it accept reduced
    costs wrong by ``tolerance / scale``) and row scales ``1 / max |coefficient|`` of the
    column-scaled rows (module docstring)."""
    N = lp.n + 1
    E = sp.csc_matrix(lp.expand)
    first = E.indices[E.indptr[:-1]]
    i, j = np.divmod(np.minimum(first, N * N - 1), N)
    d = np.where(first < N * N, np.abs(i - j), 0)
    col = np.maximum(lp.problem.alpha ** d.astype(float), settings.solver.col_scale_floor)
    scaled = sp.csr_matrix(lp.A @ sp.diags(col))
    row = 1.0 / np.maximum(abs(scaled).max(axis=1).toarray().ravel(), 1e-300)
    return col, row


def scaled_model(lp: ReducedLP, col: np.ndarray, row: np.ndarray) -> ReducedLP:
    """``lp`` in scaled units: ``y = col * y_scaled``, row ``r`` multiplied by ``row[r]``."""
    return replace(lp, A=sp.csr_matrix(sp.diags(row) @ lp.A @ sp.diags(col)), cost=lp.cost * col,
                   col_lower=lp.col_lower / col, col_upper=lp.col_upper / col,
                   row_lower=lp.row_lower * row, row_upper=lp.row_upper * row)


def unscaled(run: Solved, col: np.ndarray, row: np.ndarray, guide: str = INTERIOR_GUIDE) -> Solved:
    """``run`` (a solve of :func:`scaled_model`) in the units of the model it was scaled from,
    its ``guide`` set to ``guide``."""
    return replace(run, y=run.y * col, row_dual=run.row_dual * row, col_dual=run.col_dual / col, guide=guide)


@dataclass(frozen=True)
class ScalingInverse:
    """Maps a solve of the scaled model back to the model's units (``col``, ``row``: the scales)."""

    col: np.ndarray
    row: np.ndarray

    def invert_primal(self, y: np.ndarray) -> np.ndarray:
        """A point of the scaled model in the model's units."""
        return y * self.col

    def invert_dual(self, row_dual: np.ndarray, col_dual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row and column duals of the scaled model in the model's units."""
        return row_dual * self.row, col_dual / self.col

    def invert_run(self, run: Solved, guide: str = INTERIOR_GUIDE) -> Solved:
        """A whole run of the scaled model in the model's units (:func:`unscaled`)."""
        return unscaled(run, self.col, self.row, guide)


@dataclass(frozen=True)
class Scaling(Reduction):
    """The scaling of the module docstring as a reduction: ``apply(lp) -> (scaled, inverse)``.
    ``row_boost`` multiplies every row scale (a tightened re-solve's rows)."""

    settings: SolverSettings
    row_boost: float = 1.0

    def apply(self, lp: ReducedLP) -> tuple[ReducedLP, ScalingInverse]:
        """``lp`` scaled, and the map of a solve of it back to ``lp``'s units."""
        col, row = scales(lp, settings=self.settings)
        row = row * self.row_boost
        return scaled_model(lp, col, row), ScalingInverse(col, row)
