"""The record of one solver run on a reduced design LP, and its exact polish from the basis.

Each solver of :mod:`countdp.design.solvers` returns a :class:`Solved`: the point, its duals in
HiGHS's sign convention (``col_dual = cost - A^T row_dual``), the basis when there is one, and
what ran.  :func:`polish_run` recomputes a basis's vertex and duals exactly
(:func:`countdp.design.polish.basis_vertex`), which removes the solver's tolerance from the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from countdp.design.polish import basis_vertex
from countdp.design.reduce import ReducedLP

INTERIOR_GUIDE = "no vertex: clarabel's interior point, proven as it is"
"""``Solved.guide`` of an interior point offered to the proof as it is (recorded in artifacts)."""


@dataclass
class Solved:
    """One solver run on the reduced model: ``y`` and its duals (HiGHS sign convention:
    ``col_dual = cost - A^T row_dual``), the basis if there is one, and what ran."""

    y: np.ndarray
    row_dual: np.ndarray
    col_dual: np.ndarray
    status: str
    objective: float
    seconds: float
    basis: tuple | None = None
    polished: bool = False
    highs_basis: object = None
    guide: str = ""  # what seeded the guided simplex's basis guess
    dp_closure: bool = False  # the matrix released is polish.dp_closure of the vertex
    primal_residual: float = 0.0  # Clarabel's relative primal residual at its last iterate (0: not Clarabel)
    pivots: int = 0  # HiGHS's simplex iterations (0: not a simplex run)


def polish_run(lp: ReducedLP, run: Solved) -> Solved:
    """The exact vertex and duals of ``run``'s basis (:func:`countdp.design.polish.basis_vertex`), if any;
    ``run`` itself when it has no basis or the basis is not square and regular."""
    if run.basis is None:
        return run
    found = basis_vertex(lp, *run.basis)
    if found is None:
        return run
    y, row_dual, col_dual = found
    return Solved(y, row_dual, col_dual, run.status, float(lp.cost @ y), run.seconds, run.basis, True, run.highs_basis,
                  run.guide)
