"""Where the conditioned release's fixed point is precise: the tilt, the leaves' columns, the windows.

None of this changes a probability (:mod:`countdp.invariants.group_total` decides every split exactly);
it decides how much work the certified bounds take and how often they must be refined.

* :func:`leaf_types`: the column each group's leaf is.  Groups sharing a mechanism (the same object)
  with at least ``n + 1`` members share a table of its ``n + 1`` columns (a leaf per possible count,
  computed once), others get one column each; which of the two is public (the sizes), so the number
  of leaves computed does not depend on the counts.
* :func:`tilt`: ``theta`` centring the tilted product on the total (floats).
* :func:`window_lengths`: the number of degrees a node's bounds keep.  A product of ``g`` leaves of
  size ``n`` has ``g n + 1`` coefficients, but those above ``2**-bits`` of its largest lie within about
  ``n sqrt(g bits)`` of its mean, whatever the counts (Hoeffding's inequality), so the length is fixed by
  the sizes.  Coefficients a window leaves out (only with ``window_slack < 1``) are not lost: they are
  folded into the node's radius (:func:`countdp.invariants.packed.bounds_product`).
* :func:`public_counts`: counts fixed by the sizes and the total alone, for the release's calibration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from countdp.values.mechanism import integer_weights


def public_counts(sizes: np.ndarray, total: int) -> np.ndarray:
    """Counts fixed by public facts only: ``total`` spread over the groups in proportion to their sizes
    (largest remainder), each within ``0..size``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    share = sizes * total // int(sizes.sum())
    rest = total - int(share.sum())
    order = np.argsort(-(sizes * total % int(sizes.sum())), kind="stable")
    share[order[:rest]] += 1
    return share


@dataclass(frozen=True)
class LeafTypes:
    """The distinct leaf columns (int64 arrays) and the one each group uses."""

    columns: list[np.ndarray]
    of_group: np.ndarray


def leaf_types(mechanisms: Sequence, counts: np.ndarray) -> LeafTypes:
    """Each group's column ``W[., x_g]``: from its mechanism's table of every column when at least ``n + 1``
    groups share the mechanism, else its own (see the module docstring)."""
    members: dict[int, list[int]] = {}
    for g, m in enumerate(mechanisms):
        members.setdefault(id(m), []).append(g)
    columns, of_group = [], np.zeros(len(mechanisms), dtype=np.int64)
    for groups in members.values():
        m, rows = mechanisms[groups[0]], np.asarray(groups)
        if len(groups) > m.n:
            of_group[rows] = len(columns) + counts[rows]
            columns += list(integer_weights(m).T)
        else:
            of_group[rows] = len(columns) + np.arange(len(groups))
            columns += [np.asarray(m.column(int(counts[g])), dtype=np.int64) for g in groups]
    return LeafTypes(columns, of_group)


def log_weights(columns: Sequence[np.ndarray]) -> np.ndarray:
    """``log W[y]`` of each column by row, ``-inf`` for a zero weight and past a column's end."""
    out = np.full((len(columns), max(len(c) for c in columns)), -np.inf)
    with np.errstate(divide="ignore"):
        for t, column in enumerate(columns):
            out[t, :len(column)] = np.log(column.astype(float))
    return out


def tilt(logw: np.ndarray, multiplicity: np.ndarray, total: int, steps: int, span: float) -> float:
    """``theta`` with ``sum_g E_theta[Y_g]`` close to ``total`` under the tilted laws ``W[y] theta**y`` of the
    columns (each ``multiplicity`` times): ``steps`` bisection steps on ``log2 theta`` within ``+-span``
    (no branch on the data); a float, and exactly a dyadic rational."""
    y = np.arange(logw.shape[1])
    low, high = -span, span
    for _ in range(steps):
        mid = (low + high) / 2
        z = logw + y * (mid * math.log(2))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        mean = float((multiplicity * (p * y).sum(axis=1) / p.sum(axis=1)).sum())
        low, high = ((low, mid), (mid, high))[mean < total]  # (no branch)
    return 2.0 ** ((low + high) / 2)


def window_lengths(sizes: np.ndarray, nodes: np.ndarray, bits: int, slack: float) -> np.ndarray:
    """The window length of each node ``(start, stop)`` (rows of ``nodes``) at ``bits`` bits, from the sizes alone.

    A node's tilted law is that of a sum ``S`` of independent counts, group ``g``'s in ``0..n_g``, whatever
    the counts and ``theta``; by Hoeffding's inequality ``P(|S - E S| >= t) <= 2 exp(-2 t**2 / sum n_g**2)``.
    Its largest coefficient holds at least ``1 / count`` of the mass, so every coefficient more than
    ``t = sqrt(sum n_g**2 (bits ln 2 + ln(2 count)) / 2)`` from the mean is below ``2**-bits`` of the
    largest: the window is ``2 t + 3`` degrees (``slack`` times that; floats, only for a length), at most
    ``count``.
    """
    ends = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
    squares = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.float64) ** 2)])
    count = ends[nodes[:, 1]] - ends[nodes[:, 0]] + 1
    spread = np.sqrt((squares[nodes[:, 1]] - squares[nodes[:, 0]]) / 2 * (bits * math.log(2) + np.log(2 * count)))
    return np.clip(np.ceil(slack * (2 * spread + 3)), 1, count).astype(np.int64)


__all__ = ["LeafTypes", "leaf_types", "log_weights", "public_counts", "tilt", "window_lengths"]
