"""A template design without its matrix: a canonical integer mechanism whose middle column repeats.

The large-n template designs (:mod:`countdp.design.template`) are GM-like away from their corners:
between the corners every column is the same column moved down the diagonal.  So the design for
any size ``n`` is held as a *canonical* integer matrix ``S`` of size ``m + 1 = 2c + 2`` (its
corners, and two middle columns ``c`` and ``c + 1`` that are the same column moved down one
row), and size ``n >= m`` is ``S`` with its middle column repeated:

* input ``j <= c`` reads column ``j`` of ``S`` on rows ``0..m`` (shift 0);
* input ``j >= n - c`` reads column ``j - (n - m)`` of ``S`` on rows ``n - m .. n`` (shift ``n - m``);
* every input between reads column ``c`` moved down by ``j - c``.

Each column adds its floor: column ``k`` of ``S`` has the reserve ``R + delta[k]`` (what its
structured total leaves of ``D = 2^K``), split over the ``n + 1`` rows as ``f + [i < r]``.

**The certificate** (:meth:`StructuralSpread.structure_checks`).  Two neighbouring inputs of size
``n`` read two neighbouring columns of ``S`` under one shift (``c`` and ``c + 1`` for every pair
in the middle, because column ``c + 1`` is column ``c`` moved down one row), or a column and the
floor alone.  So every DP inequality of every size is ``alpha (S[i, k'] + F') <= S[i, k] + F``
for neighbouring columns ``k, k'`` of ``S``, with floors ``F``.  It holds when

1. ``alpha S[i, k'] <= S[i, k] + sigma`` for every row and both orders (checked entry by entry,
   exact 128-bit products: ``m^2`` comparisons, whatever ``n``), and
2. ``sigma + alpha F' <= F`` for the floors of every pair and size: with
   ``(R + delta - N + 1)/N <= F`` and ``F' <= (R + delta')/N + 1`` this follows from
   ``(1 - alpha) R >= alpha delta' - delta + (1 + sigma + alpha) N - 1`` at the largest ``N`` of
   the range (one exact rational comparison per pair).

It also checks that column ``c + 1`` is column ``c`` moved down with nothing falling off either
end, that the two share their reserve, and that every column totals ``D``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws
from countdp.structural.chain import exact_sums, ratio_holds
from countdp.structural.form import StructuralMechanism, floor_draws

ARGUMENT = ("every pair of neighbouring inputs of every size reads two neighbouring columns of the canonical "
            "matrix under one shift (the middle repeats columns c and c+1, which are one column moved down a "
            "row), or floors alone: alpha S[i,k'] <= S[i,k] + sigma entry by entry, and each floor exceeds "
            "alpha times its neighbour's by sigma at the largest size of the range")


class StructuralSpread(StructuralMechanism):
    """A template design for sizes ``n >= m`` from its canonical integer matrix (module docstring)."""

    argument = ARGUMENT

    def __init__(self, mechanism: str, n: int, alpha: Fraction, K: int, reserve: int, S: np.ndarray,
                 delta: np.ndarray, sigma: int, sizes: tuple[int, int] | None = None,
                 source: dict | None = None) -> None:
        self.mechanism = mechanism
        self.S = np.ascontiguousarray(S, dtype=np.int64)
        self.S.setflags(write=False)
        self.delta = np.ascontiguousarray(delta, dtype=np.int64)
        self.delta.setflags(write=False)
        self.m = self.S.shape[0] - 1
        self.c = (self.m - 1) // 2
        self.sigma = int(sigma)
        self.source = dict(source or {})
        self._cumulative = None
        super().__init__(n, alpha, K, reserve, sizes)

    # -- where an input reads the canonical matrix ---------------------------------------------
    def placement(self, j: np.ndarray, n: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """For inputs ``j`` of size ``n``: the canonical column each reads and the row shift."""
        j = np.asarray(j, dtype=np.int64)
        n = np.asarray(n, dtype=np.int64)
        c, m = self.c, self.m
        right = j >= n - c
        column = np.where(j <= c, j, np.where(right, j - (n - m), c))
        shift = np.where(j <= c, 0, np.where(right, n - m, j - c))
        return column, shift

    def column_reserve(self, k: np.ndarray) -> np.ndarray:
        """``R + delta[k]``: the floor's draws in canonical column ``k``."""
        return self.reserve + self.delta[np.asarray(k, dtype=np.int64)]

    # -- the integer weights, column by column ------------------------------------------------
    def input_column(self, j: int) -> np.ndarray:
        n = self.n
        k, shift = (int(x) for x in self.placement(np.array(j), n))
        f, r = divmod(int(self.column_reserve(np.array(k))), n + 1)
        out = np.full(n + 1, f, dtype=np.int64)
        out[:r] += 1
        out[shift:shift + self.m + 1] += self.S[:, k]
        return out

    def dense_weights(self) -> np.ndarray:
        """The whole matrix, placed block by block: the left and right canonical columns, the middle
        column moved down once per input, and each column's floor."""
        n, m, c = self.n, self.m, self.c
        N = n + 1
        W = np.zeros((N, N), dtype=np.int64)
        W[:m + 1, :c + 1] = self.S[:, :c + 1]
        W[n - m:, n - c:] = self.S[:, c + 1:]
        middle = np.arange(c + 1, n - c)
        if middle.size:
            rows = middle[None, :] - c + np.arange(m + 1)[:, None]
            W[rows, np.broadcast_to(middle, rows.shape)] = self.S[:, c][:, None]
        k, _ = self.placement(np.arange(N), n)
        f, r = np.divmod(self.column_reserve(k), N)
        return W + f[None, :] + (np.arange(N)[:, None] < r[None, :])

    def structured_column(self, j: int) -> np.ndarray:
        """Input ``j``'s weights without its floor: its canonical column at its shift, zero elsewhere."""
        k, shift = (int(x) for x in self.placement(np.array(j), self.n))
        out = np.zeros(self.n + 1, dtype=np.int64)
        out[shift:shift + self.m + 1] = self.S[:, k]
        return out

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The structured part at ``(i, j)`` over ``2**K`` (floats): input ``j``'s canonical column at its shift."""
        k, shift = self.placement(j, self.n)
        row = i - shift
        inside = (row >= 0) & (row <= self.m)
        return np.where(inside, self.S[np.clip(row, 0, self.m), k], 0) / float(self.denominator)

    def floor_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Input ``j``'s own floor at row ``i`` over ``2**K``: its column's reserve split as ``f + [i < r]``."""
        k, _ = self.placement(j, self.n)
        f, r = np.divmod(self.column_reserve(k), self.n + 1)
        return (f + (i < r)) / float(self.denominator)

    # -- sampling ------------------------------------------------------------------------------
    def category_masses(self) -> np.ndarray:
        """One category, the largest structured total of a column (what the base class checks against ``D``)."""
        return np.array([min(max(self.column_totals()), 1 << 62)], dtype=np.int64)

    def sampler_tables(self):
        """Per canonical column, the cumulative weights over ``[floor, rows 0..m]``, and their guide."""
        if self._cumulative is None:
            table = np.concatenate([self.column_reserve(np.arange(self.m + 1))[:, None], self.S.T], axis=1)
            cumulative = np.cumsum(table, axis=1)
            if (cumulative[:, -1] != self.denominator).any():
                raise ValueError(f"{self.mechanism} n={self.n}: a column's draws do not total 2^{self.K}; not sampled")
            self._cumulative = cumulative, guide_table(cumulative, self.K)
        return self._cumulative

    def _block(self, columns: np.ndarray, draws: np.ndarray, ns, fine) -> np.ndarray:
        cumulative, guide = self.sampler_tables()
        k, shift = self.placement(columns, ns)
        category = outputs_for_draws(cumulative, self.K, k, draws, guide)
        out = category - 1 + shift
        low = np.flatnonzero(category == 0)
        if low.size:
            out[low] = floor_draws(draws[low], self.column_reserve(k[low]), ns if np.ndim(ns) == 0 else ns[low])
        return out

    # -- the certificate -----------------------------------------------------------------------
    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        S, c, m, D = self.S, self.c, self.m, self.denominator
        left, right = S[:, :-1], S[:, 1:]
        bound = min(int(S.max(initial=0)) + self.sigma, 1 << 62)
        dp = ratio_holds(left, np.minimum(right + self.sigma, bound), self.alpha) & \
            ratio_holds(right, np.minimum(left + self.sigma, bound), self.alpha)
        moved = np.concatenate([[S[0, c + 1] == 0, S[m, c] == 0, self.delta[c] == self.delta[c + 1]],
                                S[1:, c + 1] == S[:-1, c]])
        totals = self.column_totals()
        return [("the canonical matrix has m = 2c + 1, entries in 0..2^62 and a reserve per column",
                 np.array([m == 2 * c + 1 and m >= 3, S.min(initial=0) >= 0, int(S.max(initial=0)) + self.sigma
                           <= 1 << 62, (self.delta >= 0).all(), self.delta.size == m + 1, self.sigma >= 0])),
                ("column c + 1 is column c moved down one row", moved),
                ("every column totals 2^K", np.array([self.reserve + t == D for t in totals])),
                ("the sizes are at least the canonical size", np.array([self.sizes[0] >= m])),
                ("alpha-DP within sigma between neighbouring canonical columns", dp.ravel()),
                ("each floor covers sigma and its neighbour's floor", self._floors_hold())]

    def _floors_hold(self) -> np.ndarray:
        """``(1 - alpha) R >= alpha delta' - delta + (1 + sigma + alpha) N - 1`` for every neighbouring
        pair, at ``N = hi + 1``."""
        a, N = self.alpha, self.sizes[1] + 1
        return np.array([(1 - a) * self.reserve >= worst_floor_term(self.delta, a) + (1 + self.sigma + a) * N - 1])

    def column_totals(self) -> list[int]:
        """Each canonical column's structured total plus its reserve's excess, exactly (Python integers:
        a stored table is re-certified, and an altered one must not wrap around 2^63)."""
        return [total + int(d) for total, d in zip(exact_sums(self.S, 0), self.delta, strict=True)]

    @property
    def uniform_share(self) -> float:
        """The largest floor's share of a column: the most UM weight any input's column holds."""
        return (self.reserve + int(self.delta.max(initial=0))) / self.denominator

    def parameters(self) -> dict:
        return {"canonical_size": self.m, "middle_column": self.c, "sigma": self.sigma, **self.source}

    def tables(self) -> list[np.ndarray]:
        return [self.S.ravel(), self.delta]

    def table_arrays(self) -> dict[str, np.ndarray]:
        """The tables by name, as a cache stores them."""
        return {"S": self.S, "delta": self.delta}


def worst_floor_term(delta: np.ndarray, alpha: Fraction) -> Fraction:
    """``max(alpha delta' - delta)`` over neighbouring columns, both orders, exactly: the reserves' part
    of the floors' condition (module docstring, condition 2)."""
    d = np.asarray(delta).astype(object)
    if d.size < 2:
        return Fraction(0)
    return Fraction(max(max(alpha * d[1:] - d[:-1]), max(alpha * d[:-1] - d[1:])))


__all__ = ["StructuralSpread", "worst_floor_term"]
