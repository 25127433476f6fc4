"""The design objectives of the paper (Definitions 3 and 5), as values every layer shares.

:class:`Objective` names a loss, :func:`loss_matrix` gives its costs ``C[i, j]`` of reporting ``i``
when the truth is ``j``, and :func:`objective_value` scores a mechanism
``P[i, j] = Pr[output i | input j]`` for a prior ``w`` over inputs.  ``L0`` and ``L0d:D`` carry the
``(n+1)/n`` rescaling that gives UM a score of 1, ``L1`` and ``L2`` do not; ``aggregate="max"`` is
the minimax variant.  The design engine minimises these, the studies report them, and the
release-error measures of :mod:`countdp.evaluate.metrics` parse their names here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from countdp.validation import check_distribution, check_matrix


@dataclass(frozen=True)
class Objective:
    """A loss ``name`` in {L0, L0d, L1, L2} (with threshold ``d`` for L0d: ``|i - j| > d``)."""

    name: str
    d: int = 0

    def __str__(self) -> str:
        return f"L0d:{self.d}" if self.name == "L0d" else self.name

    @property
    def slug(self) -> str:
        """A file-name-safe spelling, e.g. ``L0d1``."""
        return f"L0d{self.d}" if self.name == "L0d" else self.name


def parse_objective(spec: object) -> Objective:
    """Parse ``L0``, ``L0d:D`` (or ``L0dD``), ``L1``, ``L2`` (case-insensitive), or raise."""
    if isinstance(spec, Objective):
        return spec
    text = str(spec).strip().upper().replace(",", "")
    if text in ("L0", "L1", "L2"):
        return Objective(text)
    if text.startswith("L0D"):
        rest = text[3:].lstrip(":=")
        if rest.isdigit():
            return Objective("L0d", int(rest))
        raise ValueError(f"objective {spec!r}: L0d needs a threshold d >= 0, as L0d:1")
    raise ValueError(f"unknown objective {spec!r}; allowed: L0, L0d:D (D >= 0), L1, L2")


def loss_matrix(n: int, objective: object) -> np.ndarray:
    """``C[i, j]``: the loss of reporting ``i`` when the truth is ``j`` under ``objective``."""
    obj = parse_objective(objective)
    i = np.arange(n + 1)
    dist = np.abs(i[:, None] - i[None, :]).astype(float)
    if obj.name == "L0":
        return (dist > 0) * (n + 1) / n
    if obj.name == "L0d":
        return (dist > obj.d) * (n + 1) / n
    return dist if obj.name == "L1" else dist**2


def objective_value(P: np.ndarray, objective: object = "L0", weights: object = None,
                    aggregate: str = "sum") -> float:
    """The design objective of ``P``: ``sum_j w_j sum_i C[i,j] P[i,j]`` (or ``max_j`` column loss).

        >>> round(countdp.objective_value(countdp.geometric(4, 0.5), "L0"), 12)  # GM: 2a/(1+a) = 2/3
        0.666666666667
    """
    M = check_matrix(P)
    n = M.shape[0] - 1
    if aggregate not in ("sum", "max"):
        raise ValueError(f"aggregate must be 'sum' or 'max', got {aggregate!r}")
    w = np.full(n + 1, 1.0 / (n + 1)) if weights is None else check_distribution(weights, n)
    column_loss = (loss_matrix(n, objective) * M).sum(axis=0)
    return float(column_loss.max()) if aggregate == "max" else float(w @ column_loss)
