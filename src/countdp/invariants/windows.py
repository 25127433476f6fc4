"""Where the conditioned release's fixed point is precise: the tilt, the leaves' columns, the windows.

None of this changes a probability (:mod:`countdp.invariants.group_total` decides every split exactly);
it decides how much work the certified bounds take and how often they must be refined, with floats.

* :func:`leaf_types`: the column each group's leaf is.  Groups sharing a mechanism (the same object)
  with at least ``n + 1`` members share a table of its ``n + 1`` columns (a leaf per possible count,
  computed once), others get one column each; which of the two is public (the sizes), so the number
  of leaves computed does not depend on the counts.
* :func:`tilt`: ``theta`` centring the tilted product on the total.
* :class:`Windows`: the number of degrees a node's bounds keep.  A product of ``g`` leaves has
  ``sum n + 1`` coefficients, but those above ``2**-bits`` of its largest span only about
  ``sqrt(g)`` times a leaf's spread.  The length is estimated for the *public counts* (the total
  spread over the groups in proportion to their sizes, :func:`public_counts`) by a Chernoff bound of
  their tilted laws, so it is fixed by the sizes, the total and the settings; ``window_slack``
  widens it for counts whose laws are wider.  Coefficients a window leaves out are not lost: they are
  folded into the node's radius (:func:`countdp.invariants.packed.bounds_product`).
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


def cumulants(logw: np.ndarray, lambdas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K(l) = log sum_y exp(logw[y] + l y)`` and its derivative (the mean at ``l``), per row and ``l``."""
    k, mean, y = np.empty((len(logw), len(lambdas))), np.empty((len(logw), len(lambdas))), np.arange(logw.shape[1])
    for at in range(0, len(lambdas), 16):  # (by chunks of lambda: memory)
        z = logw[:, None, :] + lambdas[None, at:at + 16, None] * y
        top = z.max(axis=2, keepdims=True)
        p = np.exp(z - top)
        mass = p.sum(axis=2)
        k[:, at:at + 16], mean[:, at:at + 16] = np.log(mass) + top[..., 0], (p * y).sum(axis=2) / mass
    return k, mean


class Windows:
    """Window lengths of the nodes of a partition, from its public counts (see the module docstring).

    ``points`` values of ``lambda > 0`` (and as many below 0), geometric from ``1e-7`` to ``64``; a node's
    window runs from the mean at the first ``lambda < 0`` to that at the first ``lambda > 0`` where the
    Chernoff exponent ``K(0) - K(l) + l K'(l)`` exceeds ``bits ln 2 + ln(count)``, times ``slack``.
    """

    def __init__(self, mechanisms: Sequence, sizes: np.ndarray, total: int, steps: int, span: float,
                 points: int, slack: float) -> None:
        counts, first = public_counts(sizes, total), {}
        kinds = np.array([first.setdefault(id(m), len(first)) for m in mechanisms], dtype=np.int64)
        _, head, of_group = np.unique(kinds * (int(counts.max()) + 1) + counts, return_index=True,
                                      return_inverse=True)  # (mechanism, public count) pairs: public
        logw = log_weights([np.asarray(mechanisms[g].column(int(counts[g])), dtype=np.int64) for g in head])
        self.theta = theta = tilt(logw, np.bincount(of_group, minlength=len(head)), total, steps, span)
        grid = np.geomspace(1e-7, 64.0, points)
        self.lambdas, self.slack, self.points = np.concatenate([-grid[::-1], [0.0], grid]), slack, points
        self.cgf, self.mean = cumulants(logw + math.log(theta) * np.arange(logw.shape[1]), self.lambdas)
        self.prefix = np.vstack([np.zeros(len(head), np.int64), np.cumsum(np.eye(len(head), dtype=np.int64)[of_group],
                                                                        axis=0)])  # groups of each kind before g
        self.ends = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])

    def lengths(self, nodes: np.ndarray, bits: int) -> np.ndarray:
        """The window length of each node ``(start, stop)`` (rows of ``nodes``) at ``bits`` bits."""
        counts = self.prefix[nodes[:, 1]] - self.prefix[nodes[:, 0]]
        k, m = counts @ self.cgf, counts @ self.mean
        size = self.ends[nodes[:, 1]] - self.ends[nodes[:, 0]] + 1
        z = self.points
        rate = k[:, [z]] - k + self.lambdas * m
        beyond = rate >= (bits * math.log(2) + np.log(size))[:, None]
        up, down = beyond[:, z + 1:], beyond[:, :z][:, ::-1]
        high = np.where(up.any(axis=1), m[:, z + 1:][np.arange(len(m)), up.argmax(axis=1)], size - 1)
        low = np.where(down.any(axis=1), m[:, :z][:, ::-1][np.arange(len(m)), down.argmax(axis=1)], 0)
        return np.clip(np.ceil(self.slack * (high - low + 1)), 1, size).astype(np.int64)


__all__ = ["LeafTypes", "Windows", "cumulants", "leaf_types", "log_weights", "public_counts", "tilt"]
