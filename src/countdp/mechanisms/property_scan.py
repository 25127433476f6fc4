"""The worst violation of each structural property, read off whole rows, columns and diagonals.

Each property is defined once, by its rows in :func:`countdp.design.constraints.property_rows`
(what the design LP imposes).  Evaluating those rows one by one gathers two entries per row
through index arrays, about 0.15 s per property at n = 2048; :func:`worst_violations` computes
the same numbers with slices and row/column reductions, about ten times faster, and is what
:func:`countdp.mechanisms.properties.check_all` (and so the artifact loader and ``countdp check``)
reports.

The results are bit-for-bit those of the rows, not merely close: every quantity is the same
IEEE difference of the same two entries (``fl(b - a) = -fl(a - b)``), and a maximum taken
before subtracting a constant equals the maximum of the differences (rounding is monotone).
``tests/services/test_artifacts.py`` checks the equality on designed, random and broken matrices.
"""

from __future__ import annotations

import numpy as np

from countdp.validation import check_matrix
from countdp.values.properties import PROPERTIES


def _worst(values: np.ndarray) -> float:
    """``max(0, max(values))`` as the row checkers report it (``-0.0`` becomes ``0.0``)."""
    return max(0.0, float(values.max(initial=0.0))) + 0.0


def _monotone(P: np.ndarray) -> float:
    """RM: entries grow towards the diagonal along each row (``CM`` is RM of the transpose)."""
    N = P.shape[0]
    step = P[:, 1:] - P[:, :-1]  # step[i, k] = P[i, k+1] - P[i, k]
    left_of_diagonal = np.arange(N - 1)[None, :] < np.arange(N)[:, None]  # k < i: the step must be >= 0
    return _worst(np.where(left_of_diagonal, -step, step))


def worst_violations(P: np.ndarray) -> dict[str, float]:
    """``{name: worst violation}`` of RH, RM, CH, CM, F, WH, S (0.0 when a property holds exactly)."""
    M = check_matrix(P)
    N = M.shape[0]
    diagonal = np.diagonal(M)
    return dict(zip(PROPERTIES, (
        _worst(M.max(axis=1) - diagonal),  # RH: P[i, i] >= P[i, j]
        _monotone(M),
        _worst(M.max(axis=0) - diagonal),  # CH: P[j, j] >= P[i, j]
        _monotone(np.ascontiguousarray(M.T)),
        _worst(np.abs(diagonal[1:] - diagonal[0])),  # F: every diagonal entry equal
        _worst(1.0 / N - diagonal),  # WH: P[i, i] >= 1/(n+1)
        _worst(np.abs(M - M[::-1, ::-1])),  # S: P[i, j] == P[n-i, n-j]
    ), strict=True))


__all__ = ["worst_violations"]
