"""A square-corner design without its matrix: two integer corner squares, their geometric tails, and GM between.

Near alpha = 1 the L0 optimum of WM's property set is, at large ``n``, free only in a
``(W + 1)^2`` square at each corner, the two mirror images (:mod:`countdp.design.template.square_geometry`).
The rows of a corner square go on across as alpha-geometric tails, its columns go on downwards
the same way, and the middle is GM.  This form holds exactly that, as integer tables whose size
does not depend on ``n``:

* ``strip`` (``(W + 1) x (W + 1 + L)``): rows ``0..W`` of the top-left corner: the square, then each
  row's tail (entry ``(i, W + a)`` for ``a = 1..L``, its last column zero);
* ``lower`` (``L x (W + 1)``): the square's column tails, entry ``(d - 1, k)`` at row ``W + d`` of
  column ``k <= W`` (its last row zero);
* ``band`` (``L + 1``): GM's weights ``g[e]`` at distance ``e`` from the diagonal (the last zero).

Column ``j`` of size ``n`` reads the strip's column ``j`` on rows ``0..W`` (zero past its width), the
mirror image of the strip's column ``n - j`` on rows ``n - W..n``, and between them the column
tails (``j <= W``), their mirror images (``j >= n - W``), or the band ``g[|i - j|]``.  Each column
adds a floor that takes what it leaves of ``D = 2^K``: ``res_j = D - total_j`` split over the
``n + 1`` rows as ``f + [i < r]``.

**The certificate** (:meth:`StructuralCorners.structure_checks`).  Neighbouring inputs compare
entries of one row.  On rows ``0..W`` they are neighbours in a row of ``strip`` (or zeros past it);
on the rows below a square they are neighbours in a row of ``[lower | g[d - 1]]`` or of the band;
the bottom rows are the mirror image.  So every DP inequality of every size is

1. ``alpha x <= y + sigma`` for neighbours ``x, y`` (both orders) in ``strip``'s rows, in the rows of
   ``[lower | g[d - 1]]`` and in ``band``: about ``(W + 1)(2 L + W)`` exact comparisons, whatever
   ``n``, with the tables' last entries zero; and
2. ``sigma + alpha F' <= F`` between the floors: with every column total of every size of the range
   in ``[M_lo, M_hi]`` this follows from
   ``(1 - alpha)(D - M_hi) >= alpha (M_hi - M_lo) + (1 + sigma + alpha) N - 1`` at ``N = hi + 1``.

The bounds are exact: a middle column's total is ``A(j) + B(n - j)`` (its upper and lower halves),
bounded by their maxima and minima over all distances, and a corner column's total is computed
for every size of the range until it stops changing.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from countdp.privacy.inverse_cdf import bisect_rows
from countdp.structural.chain import exact_sum, exact_sums, ratio_holds
from countdp.structural.form import StructuralMechanism, floor_draws

ARGUMENT = ("neighbouring inputs of every size compare neighbours in a row of the corner strip, of the column "
            "tails beside the band's g[d-1], or of the band (the bottom corner is the mirror image): "
            "alpha x <= y + sigma for all of them, and the floors cover sigma and each other by the "
            "bounds on every column total of the size range")


class StructuralCorners(StructuralMechanism):
    """A square-corner design for the sizes of a range, from its integer tables (module docstring)."""

    argument = ARGUMENT

    def __init__(self, mechanism: str, n: int, alpha: Fraction, K: int, strip: np.ndarray, lower: np.ndarray,
                 band: np.ndarray, sigma: int, sizes: tuple[int, int], source: dict | None = None) -> None:
        self.mechanism = mechanism
        self.strip, self.lower, self.band = (_frozen(t) for t in (strip, lower, band))
        self.W = self.strip.shape[0] - 1
        self.L = self.band.size - 1
        self.sigma = int(sigma)
        self.source = dict(source or {})
        self.stripcum = np.cumsum(self.strip.T, axis=1)  # (width, W + 1): a strip column's rows, cumulative
        self.lowercum = np.cumsum(self.lower.T, axis=1)  # (W + 1, L): a square column's tail, cumulative
        self.gcum = np.cumsum(self.band)  # g[0..e]
        self.gup = np.concatenate([[0], np.cumsum(self.band[1:])])  # g[1..e]
        self.sizes = (int(sizes[0]), int(sizes[1]))
        self.bounds = self.total_bounds()
        super().__init__(n, alpha, K, (1 << K) - self.bounds[1], sizes)

    @property
    def width(self) -> int:
        return self.strip.shape[1]

    # -- column totals ------------------------------------------------------------------------
    def _strip_total(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=np.int64)
        inside = k < self.width
        return np.where(inside, self.stripcum[np.where(inside, k, 0), -1], 0)

    def _lower_total(self, k: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The first ``rows`` entries of square column ``k``'s tail (``rows`` clipped to ``0..L``)."""
        t = np.clip(rows, 0, self.L)
        return np.where(t > 0, self.lowercum[k, np.maximum(t - 1, 0)], 0)

    def _parts(self, j: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each input's structured total in three parts (``j <= n / 2``): its strip column, what lies
        between the corners (the square column's tail, or the band above and below the diagonal),
        and the mirrored strip column.  Each is at most 2^62 when the certificate holds."""
        W, L = self.W, self.L
        square = j <= W
        k = np.where(square, j, 0)
        band = self.gup[np.clip(j - W - 1, 0, L)] + self.gcum[np.clip(n - W - 1 - j, 0, L)]
        between = np.where(square, self._lower_total(k, n - 2 * W - 1), band)
        return self._strip_total(j), between, self._strip_total(n - j)

    def totals(self, j: np.ndarray, n: np.ndarray | int) -> np.ndarray:
        """Every input's structured total at size ``n`` (``j`` in ``0..n``), exact int64 (the certificate
        bounds every total by 2^62, so the sum never wraps)."""
        j, n = np.asarray(j, dtype=np.int64), np.asarray(n, dtype=np.int64)
        top, between, bottom = self._parts(np.where(2 * j > n, n - j, j), n)
        return top + between + bottom

    def total_bounds(self) -> tuple[int, int]:
        """``(M_lo, M_hi)``: the smallest and largest column total of any size of the range (module
        docstring), its parts added in Python integers: exact whenever each part is at most 2^62,
        which the certificate checks with exact sums before it trusts these bounds."""
        W, L, (lo, hi) = self.W, self.L, self.sizes
        far = np.arange(W + 1, W + L + self.width + 3, dtype=np.int64)  # distances past which nothing changes
        strip = self._strip_total(far).astype(object)
        up = strip + self.gup[np.clip(far - W - 1, 0, L)].astype(object)
        down = strip + self.gcum[np.clip(far - W - 1, 0, L)].astype(object)
        ns = np.arange(lo, min(hi, lo + 2 * W + L + self.width + 2) + 1, dtype=np.int64)
        parts = self._parts(np.arange(W + 1, dtype=np.int64)[None, :], ns[:, None])
        corner = sum(part.astype(object) for part in parts)
        return (min(min(up) + min(down), min(corner.ravel())), max(max(up) + max(down), max(corner.ravel())))

    # -- the integer weights, column by column ------------------------------------------------
    def structured_column(self, j: int) -> np.ndarray:
        """Input ``j``'s weights without its floor (length ``n + 1``)."""
        n, W, L = self.n, self.W, self.L
        flip = 2 * j > n
        jj = n - j if flip else j
        out = np.zeros(n + 1, dtype=np.int64)
        if jj < self.width:
            out[:W + 1] += self.strip[:, jj]
        if n - jj < self.width:
            out[n - W:] += self.strip[::-1, n - jj]
        if jj <= W:
            t = min(L, n - 2 * W - 1)
            out[W + 1:W + 1 + t] += self.lower[:t, jj]
        else:
            e = np.abs(np.arange(W + 1, n - W) - jj)
            out[W + 1:n - W] += np.where(e <= L, self.band[np.minimum(e, L)], 0)
        return out[::-1] if flip else out

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The structured part at ``(i, j)`` over ``2**K`` (floats), by :meth:`structured_column`'s rule entry by
        entry: the strip on rows ``0..W``, its mirror image on rows ``n - W..n``, and between them the column
        tails (``j <= W``) or the band (inputs past ``n / 2`` read the mirror image)."""
        n, W, L, width = self.n, self.W, self.L, self.width
        flip = 2 * j > n
        jj, ii = np.where(flip, n - j, j), np.where(flip, n - i, i)
        top = np.where((ii <= W) & (jj < width), self.strip[np.minimum(ii, W), np.minimum(jj, width - 1)], 0)
        bottom = np.where((ii >= n - W) & (n - jj < width),
                          self.strip[np.clip(n - ii, 0, W), np.clip(n - jj, 0, width - 1)], 0)
        d, square = ii - W - 1, jj <= W
        tails = np.where(square & (d >= 0) & (d < min(L, n - 2 * W - 1)),
                         self.lower[np.clip(d, 0, L - 1), np.minimum(jj, W)], 0)
        e = np.abs(ii - jj)
        band = np.where(~square & (d >= 0) & (ii <= n - W - 1) & (e <= L), self.band[np.minimum(e, L)], 0)
        return (top + bottom + tails + band) / float(self.denominator)

    def floor_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Input ``j``'s own floor at row ``i`` over ``2**K``: what its column leaves of ``D``, split as
        ``f + [i < r]``."""
        f, r = np.divmod(self.denominator - self.totals(j, self.n), self.n + 1)
        return (f + (i < r)) / float(self.denominator)

    def input_column(self, j: int) -> np.ndarray:
        f, r = divmod(self.denominator - int(self.totals(np.array(j), self.n)), self.n + 1)
        out = self.structured_column(int(j)) + f
        out[:r] += 1
        return out

    def dense_weights(self) -> np.ndarray:
        """The whole matrix, column by column (for the tests' sizes: it is ``(n + 1)^2``)."""
        return np.stack([self.column(j) for j in range(self.n + 1)], axis=1)

    # -- sampling ------------------------------------------------------------------------------
    def category_masses(self) -> np.ndarray:
        """One category, the largest structured total (what the base class checks against ``D``)."""
        return np.array([self.bounds[1]], dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Memory held by the tables and their cumulative sums: what the mechanism costs instead of ``8 (n+1)^2``."""
        return sum(int(t.nbytes) for t in (self.strip, self.lower, self.band, self.stripcum, self.lowercum,
                                            self.gcum, self.gup))

    def _block(self, columns: np.ndarray, draws: np.ndarray, ns, fine) -> np.ndarray:
        """Floor first (``v < res_j``), then the column's strip, the tails or band above and below, and
        the mirrored strip, each an exact inverse-CDF lookup in its own cumulative table."""
        n = np.broadcast_to(np.asarray(ns, dtype=np.int64), columns.shape)
        W, L = self.W, self.L
        flip = 2 * columns > n
        jj = np.where(flip, n - columns, columns)
        res = self.denominator - self.totals(jj, n)
        out = floor_draws(draws, res, n)
        w = draws - res
        square = jj <= W
        top = self._strip_total(jj)
        at = (w >= 0) & (w < top)
        out[at] = _flip(row_search(self.stripcum, jj[at], w[at]), n[at], flip[at])
        w = w - top
        k = np.where(square, jj, 0)
        tail = np.where(square, self._lower_total(k, n - 2 * W - 1), self.gup[np.clip(jj - W - 1, 0, L)])
        at = (w >= 0) & (w < tail) & square
        out[at] = _flip(W + 1 + row_search(self.lowercum, k[at], w[at]), n[at], flip[at])
        at = (w >= 0) & (w < tail) & ~square
        out[at] = _flip(jj[at] - np.searchsorted(self.gup, w[at], side="right"), n[at], flip[at])
        w = w - tail
        below = np.where(square, 0, self.gcum[np.clip(n - W - 1 - jj, 0, L)])
        at = (w >= 0) & (w < below)
        out[at] = _flip(jj[at] + np.searchsorted(self.gcum, w[at], side="right"), n[at], flip[at])
        w = w - below
        at = w >= 0
        out[at] = _flip(n[at] - row_search(self.stripcum, n[at] - jj[at], w[at]), n[at], flip[at])
        return out

    # -- the certificate -----------------------------------------------------------------------
    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        strip, lower, band, s = self.strip, self.lower, self.band, self.sigma
        beside = np.concatenate([lower, band[:-1, None]], axis=1)  # rows W + d: the tails, then g[d - 1]
        top = max(int(strip.max(initial=0)), int(lower.max(initial=0)), int(band.max(initial=0))) + s
        cap = min(top, 1 << 62)
        pairs = [_both_ways(strip, s, cap, self.alpha), _both_ways(beside, s, cap, self.alpha),
                 _both_ways(band[None, :], s, cap, self.alpha)]
        shape = (self.W >= 1 and strip.shape[1] == self.W + 1 + self.L and lower.shape == (self.L, self.W + 1)
                 and self.L >= 1)
        sums = [*exact_sums(strip, 0), *exact_sums(lower, 0), exact_sum(band) + exact_sum(band[1:])]
        return [("the tables have the corner's shape and entries in 0..2^62 - sigma",
                 np.array([shape, min(strip.min(), lower.min(), band.min()) >= 0, top <= 1 << 62, s >= 0])),
                ("every part of a column, and the largest total, at most 2^62 (exact sums: no int64 wraps)",
                 np.array([max(sums) <= 1 << 62, self.bounds[1] <= self.denominator])),
                ("the tables end in zeros", np.concatenate([strip[:, -1] == 0, lower[-1] == 0, band[-1:] == 0])),
                ("the sizes leave a middle between twice both corners", np.array([self.sizes[0] >= 4 * (self.W + 1)])),
                ("alpha-DP within sigma between neighbouring inputs", np.concatenate([p.ravel() for p in pairs])),
                ("each floor covers sigma and its neighbour's floor", self._floors_hold())]

    def floor_need(self) -> Fraction:
        """The smallest floor reserve ``D - M_hi`` the certificate accepts for these tables and sizes:
        ``(alpha (M_hi - M_lo) + (1 + sigma + alpha) N - 1) / (1 - alpha)`` at ``N = hi + 1``."""
        a, N = self.alpha, self.sizes[1] + 1
        low, high = self.bounds
        return (a * (high - low) + (1 + self.sigma + a) * N - 1) / (1 - a)

    def _floors_hold(self) -> np.ndarray:
        return np.array([self.denominator - self.bounds[1] >= self.floor_need()])

    @property
    def uniform_share(self) -> float:
        """The largest floor's share of a column: the most UM weight any input's column holds."""
        return (self.denominator - self.bounds[0]) / self.denominator

    def parameters(self) -> dict:
        return {"structure": "square corners", "corner_width": self.W, "tail_length": self.L,
                "sigma": self.sigma, **self.source}

    def tables(self) -> list[np.ndarray]:
        return [self.strip.ravel(), self.lower.ravel(), self.band]

    def table_arrays(self) -> dict[str, np.ndarray]:
        """The tables by name, as a cache stores them."""
        return {"strip": self.strip, "lower": self.lower, "band": self.band}


def row_search(cumulative: np.ndarray, rows: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """For each (row, draw), the smallest ``i`` with ``draw < cumulative[row, i]`` (rows non-decreasing;
    every draw below its row's last entry): the inverse CDF's bisection over the whole row."""
    lo = np.zeros(rows.shape, dtype=np.int64)
    bisect_rows(cumulative, rows, draws, lo, np.full(rows.shape, cumulative.shape[1] - 1, dtype=np.int64))
    return lo


def _flip(rows: np.ndarray, n: np.ndarray, flip: np.ndarray) -> np.ndarray:
    return np.where(flip, n - rows, rows)


def _both_ways(table: np.ndarray, sigma: int, cap: int, alpha: Fraction) -> np.ndarray:
    """``alpha x <= y + sigma`` for every pair of neighbours along ``table``'s rows, both orders."""
    left, right = table[:, :-1], table[:, 1:]
    return ratio_holds(left, np.minimum(right + sigma, cap), alpha) & \
        ratio_holds(right, np.minimum(left + sigma, cap), alpha)


def _frozen(table: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(table, dtype=np.int64)
    out.setflags(write=False)
    return out


__all__ = ["StructuralCorners", "row_search"]
