"""What every structural (matrix-free) mechanism shares: a per-row floor, its certificate, its sampler.

A structural mechanism's integer weights over ``D = 2**K`` are ``W[i, j] = s(i, j) + f + [i < r]``:
a *structured part* ``s`` (defined by a short table and a rule, :mod:`countdp.structural.geometric`,
:mod:`countdp.structural.fair`) plus a *floor* that is the same in every column of a row.  Adding a
row-constant ``t >= 0`` to both sides of ``alpha x <= y`` keeps it true, so the floor never breaks a
DP inequality; it pays for the rounding of the table and takes what the table leaves of ``D``:
the *reserve* ``R = D - (column total of s)``, split as ``f = R // (n+1)``, ``r = R mod (n+1)``.

One table serves a whole *range of group sizes* ``[lo, hi]`` (``sizes``): the structured part's
categories and the reserve do not depend on ``n`` inside it, only the floor's split does, and a
larger floor only widens every DP inequality's margin.  So the certificate, checked once with
the smallest floor of the range, ``R // (hi + 1)``, covers every size in it, and a table release
with a million distinct group sizes builds a handful of tables.

A draw ``v`` in ``[0, D)`` for input ``j`` of a group of size ``n`` is sampled in two steps, exactly:

* ``v < R``: the floor's draws; output ``i`` receives ``f + [i < r]`` of them;
* otherwise the draw falls in one of the structured part's *categories* (a distance from the
  diagonal, an exponent of alpha), whose masses are the same in every column and every size of
  the range; the category, ``j`` and ``n`` give the output in O(1) (:meth:`category_outputs`).

The category is one exact inverse-CDF lookup over ``[R, masses...]``
(:func:`countdp.privacy.inverse_cdf.outputs_for_draws`, with its guide table), so output ``i`` is
drawn for exactly ``W[i, j]`` of the ``D`` draws: the distribution of the matrix of these weights,
with nothing of size ``n^2`` (or ``n``) built.

**Two words for large groups.**  Every entry far from the diagonal is at least about
``1 / (1 - alpha)`` units (in integers, ``ceil(alpha v) = v`` once ``v <= 1 / (1 - alpha)``), so
at ``K = 62`` the floor is a uniform of weight about ``n / ((1 - alpha) 2^62)``, which adds
``n^2 / 6`` times that to the MSE: nothing at ``n = 10^5``, ten times GM's own RMSE at
``n = 10^7``.  Large groups therefore use ``K = 124`` (:data:`WIDE_K`): the draw is
``v = w1 2^62 + w2``.  The first word ``w1`` (62 bits, the row's word) finds the category through
the guide table of the cumulative masses' high halves; only when a category boundary falls
inside ``w1``'s cell of ``2^62`` draws (at most one cell per category, so about ``10^-15`` of the
rows) is a second word ``w2`` drawn (``fine``) and the boundary compared exactly.  The tables
then hold Python integers.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import json
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws
from countdp.structural.chain import exact_sum
from countdp.values.alpha import alpha_text

COARSE_BITS = 62
"""Bits of a draw taken from the row's word; a wider ``K`` takes its other bits from a second word."""
WIDE_K = 124
"""``K`` of the structural forms for large groups (two 62-bit words per draw, the second rarely)."""
BLOCK = 1 << 14
"""Rows the sampler maps at a time: its temporaries (128 kB each) then stay in a core's cache and below
the allocator's threshold for fresh pages, which makes sampling two to three times faster than at 2^16."""
CONSTRUCTION = 1
"""The version of the tables' construction: raised whenever a change gives a mechanism other tables, so
a cache written by another version is never read as this one's (its records sit under another name)."""
NARROW_MAX_N = 2048
"""Largest group size whose structural form is over ``2^62`` by default: the matrix path's largest size
(each size up to it is designed and proven as a matrix; a template design is spread beyond it)."""

REPRESENTATION = "structural"
"""The sidecar's and the cache's name for a matrix-free mechanism (a matrix's is ``"matrix"``)."""


@dataclass(frozen=True)
class StructuralCheck:
    """The structural certificate's verdict: ``checks`` exact integer comparisons stand for every
    DP inequality of every size in ``sizes``; ``reason`` names the first failure."""

    holds: bool
    mechanism: str
    alpha_exact: str
    K: int
    sizes: tuple[int, int]
    checks: int
    argument: str
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class StructuralMechanism:
    """Base of the matrix-free mechanisms: the floor, the sampler's first step, and the certificate's shell.

    Subclasses set ``mechanism`` and ``argument`` and implement :meth:`structured_column`,
    :meth:`category_masses`, :meth:`category_outputs`, :meth:`structure_checks`,
    :meth:`parameters` and :meth:`tables`.  ``reserve`` is ``R`` of the module docstring;
    ``structured_total`` (every column's total of the structured part) is the exact sum of the
    category masses.
    """

    mechanism = ""
    argument = ""
    representation = REPRESENTATION
    """The protocol's name of this representation (:mod:`countdp.values.mechanism`)."""
    values_per_count = 1

    def __init__(self, n: int, alpha: Fraction, K: int, reserve: int, sizes: tuple[int, int] | None = None,
                 coarse_bits: int = COARSE_BITS) -> None:
        """``coarse_bits``: the bits of a draw in its first word (62; tests take fewer, to enumerate)."""
        if not 1 <= K <= 2 * coarse_bits or not 1 <= coarse_bits <= COARSE_BITS:
            raise ValueError(f"K must be in 1..{2 * coarse_bits} (coarse bits 1..{COARSE_BITS}), got {K}")
        self.alpha, self.K, self.reserve = alpha, int(K), int(reserve)
        self.coarse_bits = min(int(coarse_bits), self.K)
        self.sizes = (int(n), int(n)) if sizes is None else (int(sizes[0]), int(sizes[1]))
        self.masses = np.asarray(self.category_masses(), dtype=object if self.wide else np.int64)
        self.structured_total = exact_sum(self.masses)
        self._sampler = None
        self._set_size(int(n))

    def _set_size(self, n: int) -> None:
        if not self.sizes[0] <= n <= self.sizes[1]:
            raise ValueError(f"{self.mechanism}'s table serves group sizes {self.sizes[0]}..{self.sizes[1]}, not {n}")
        self.n = n
        self.floor, self.extra_rows = divmod(self.reserve, n + 1)

    def for_size(self, n: int) -> StructuralMechanism:
        """The same tables for another group size of the range (nothing is rebuilt or re-certified)."""
        other = copy.copy(self)
        other._set_size(int(n))
        return other

    # -- the integer weights, column by column ------------------------------------------------
    @property
    def denominator(self) -> int:
        return 1 << self.K

    @property
    def wide(self) -> bool:
        """Whether a draw takes a second word (``K`` beyond the first word's bits); weights are then Python ints."""
        return self.K > self.coarse_bits

    @property
    def uniform_share(self) -> float:
        """The floor's share of each column: the weight of UM mixed into the mechanism."""
        return self.reserve / self.denominator

    def column(self, j: int | np.ndarray) -> np.ndarray:
        """Input ``j``'s integer weights over the ``n + 1`` outputs (length ``n + 1``, summing to ``2**K``);
        for an array of inputs, their columns side by side (each built by :meth:`input_column`)."""
        inputs = np.asarray(j)
        if inputs.size and (inputs.min() < 0 or inputs.max() > self.n):
            raise ValueError(f"input {int(inputs.min()) if inputs.min() < 0 else int(inputs.max())} is outside "
                             f"0..{self.n}")
        if inputs.ndim == 0:
            return self.input_column(int(inputs))
        return np.stack([self.input_column(int(x)) for x in inputs.tolist()], axis=1)

    def input_column(self, j: int) -> np.ndarray:
        """One input's column (``0 <= j <= n``): the floor plus the structured part."""
        return self.row_floor() + self.structured_column(j)

    def row_floor(self) -> np.ndarray:
        """``f + [i < r]`` for every row ``i`` (Python integers for a wide form: its floor may pass 2^63)."""
        out = np.full(self.n + 1, self.floor, dtype=object if self.wide else np.int64)
        out[:self.extra_rows] += 1
        return out

    def dense_weights(self) -> np.ndarray:
        """The ``(n+1) x (n+1)`` weights, the matrix form's, built at once by each structure's own rule
        (a second construction, which the tests compare with :meth:`column`)."""
        raise NotImplementedError

    def float_weights(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``W[i, j] / 2**K`` in floats for broadcastable arrays of outputs ``i`` and inputs ``j``: any block
        of rows or columns without the matrix (a consumer's remap reads both).  The structured part and
        the floor are each rounded once and then added, so every entry is within 3 units in the last
        place (relative) of the exact weight."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        return self.structured_float(i, j) + self.floor_float(i, j)

    def floor_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The floor ``(f + [i < r]) / 2**K`` at ``(i, j)`` (the same in every column; a form whose
        columns have floors of their own overrides this)."""
        low, high = (float(v) / self.denominator for v in (self.floor, self.floor + 1))
        return np.where(i < self.extra_rows, high, low)

    # -- sampling ------------------------------------------------------------------------------
    def outputs(self, columns: np.ndarray, draws: np.ndarray, sizes: np.ndarray | None = None,
                fine=None) -> np.ndarray:
        """For each (input, draw, group size), the output released; exact, vectorised.

        ``draws``: in ``[0, 2**K)``, or for a wide mechanism the first word's ``coarse_bits``
        (``v = w1 2^(K - coarse_bits) + w2``); ``fine`` then gives ``w2`` for the rows that need
        it: an array aligned with ``draws``, or a function of those rows' positions returning
        their second words (in ``[0, 2^(K - coarse_bits))``).  ``sizes`` (per row, within
        :attr:`sizes`) defaults to this object's ``n``.  Long inputs are taken in blocks of
        :data:`BLOCK` rows, so the temporaries stay in cache.
        """
        columns = np.asarray(columns, dtype=np.int64)
        draws = np.asarray(draws, dtype=np.int64)
        if sizes is None:
            ns = np.int64(self.n)
        else:
            ns = np.asarray(sizes, dtype=np.int64)
            if ns.size and (ns.min() < self.sizes[0] or ns.max() > self.sizes[1]):
                raise ValueError(f"{self.mechanism}'s table serves group sizes {self.sizes[0]}..{self.sizes[1]}")
        out = np.empty(draws.shape, dtype=np.int64)
        for start in range(0, draws.size, BLOCK):
            block = slice(start, start + BLOCK)
            out[block] = self._block(columns[block], draws[block], ns if ns.ndim == 0 else ns[block],
                                     _shifted(fine, start, block))
        return out

    def _block(self, columns: np.ndarray, draws: np.ndarray, ns: np.ndarray, fine) -> np.ndarray:
        if not self.masses.size and not self.wide:  # the floor alone (UM): every draw is the floor's
            return self._floor_outputs(draws, ns)
        cumulative, guide = self.sampler_tables()
        category = outputs_for_draws(cumulative, self.coarse_bits, np.zeros(draws.shape, dtype=np.int64), draws,
                                     guide)
        if self.wide:
            low, floor_outputs = self._settle_cells(category, draws, ns, fine)
        else:
            low = np.flatnonzero(category == 0)
            floor_outputs = self._floor_outputs(draws[low], ns if ns.ndim == 0 else ns[low]) if low.size else None
        out = self.category_outputs(columns, category - 1, ns)
        if low.size:
            out[low] = floor_outputs
        return out

    def _floor_outputs(self, v: np.ndarray, n: np.ndarray) -> np.ndarray:
        return floor_draws(v, self.reserve, n)

    def _settle_cells(self, category: np.ndarray, draws: np.ndarray, ns: np.ndarray,
                      fine) -> tuple[np.ndarray, np.ndarray]:
        """Wide draws: the rows whose first word does not settle the category take a second word.

        ``category`` (the first category whose high half exceeds ``w1``) is exact unless the
        category before it ends inside ``w1``'s cell, or the draw is the floor's (whose output
        needs the whole draw); those rows compare ``v = w1 2^b + w2`` with the exact cumulative
        masses (Python integers), in place.  Returns the floor's rows and their outputs.  (When
        the reserve is below one cell, as it always is, category 0 comes only from that compare.)
        """
        cumulative, _ = self.sampler_tables()
        high = cumulative[0]
        if high[0] > 0:
            pending = np.flatnonzero((category == 0) | (high[np.maximum(category - 1, 0)] == draws))
        else:
            pending = np.flatnonzero(high[category - 1] == draws)
        if pending.size == 0:
            return pending, np.zeros(0, dtype=np.int64)
        if fine is None:
            raise ValueError(f"{self.mechanism}: {pending.size} draw(s) need a second word and none was given")
        second = np.asarray(fine(pending) if callable(fine) else np.asarray(fine)[pending], dtype=np.int64)
        bits, exact = self.K - self.coarse_bits, self._exact_cumulative
        floor_outputs = {}
        for row, w1, w2 in zip(pending.tolist(), draws[pending].tolist(), second.tolist(), strict=True):
            v = (w1 << bits) | w2
            category[row] = c = bisect.bisect_right(exact, v)
            if c == 0:
                f, r = divmod(self.reserve, (int(ns) if np.ndim(ns) == 0 else int(ns[row])) + 1)
                floor_outputs[row] = v // (f + 1) if v < r * (f + 1) else r + (v - r * (f + 1)) // f
        low = np.array(sorted(floor_outputs), dtype=np.int64)
        return low, np.array([floor_outputs[row] for row in low.tolist()], dtype=np.int64)

    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None,
               second=None) -> np.ndarray:
        """Each row's release from a uniform 64-bit word: its top ``K`` bits are the draw.

        When ``K`` is wider than the first word's bits, the word gives the draw's top bits and
        ``second(rows)`` a uniform 64-bit word for each of the rare rows (positions in ``words``)
        that need the rest, whose top ``K - coarse_bits`` bits are taken.
        """
        if np.ndim(counts) == 0:  # one count
            return self.sample(np.reshape(counts, 1), np.reshape(np.asarray(words, dtype=np.uint64), 1), sizes,
                               second)[0]
        draws = (np.asarray(words, dtype=np.uint64) >> np.uint64(64 - self.coarse_bits)).astype(np.int64)
        fine = None
        if second is not None:
            shift = np.uint64(64 - (self.K - self.coarse_bits))

            def fine(rows):
                return (np.asarray(second(rows), dtype=np.uint64) >> shift).astype(np.int64)

        return self.outputs(counts, draws, sizes, fine)

    def sampler_tables(self) -> tuple[np.ndarray, tuple[np.ndarray, int]]:
        """The one-row cumulative table over ``[reserve, categories...]`` and its guide (built once).

        Raises ``ValueError`` unless the masses end exactly at ``2**K``: the inverse CDF needs it.
        """
        if self._sampler is None:
            if self.reserve + self.structured_total != self.denominator:
                raise ValueError(f"{self.mechanism} n={self.n}: its draws do not total 2^{self.K}; not sampled")
            cumulative = np.cumsum(np.concatenate([[self.reserve], self.masses]))
            if self.wide:  # the high halves for the first word; the exact sums for the rare second
                self._exact_cumulative = cumulative.tolist()
                cumulative = np.array([c >> (self.K - self.coarse_bits) for c in self._exact_cumulative],
                                      dtype=np.int64)
            cumulative = cumulative.astype(np.int64)[None, :]
            self._sampler = cumulative, guide_table(cumulative, self.coarse_bits)
        return self._sampler

    # -- the certificate -----------------------------------------------------------------------
    @property
    def min_floor(self) -> int:
        """The smallest floor of any size in the range: the one the certificate checks with."""
        return self.reserve // (self.sizes[1] + 1)

    def certify(self) -> StructuralCheck:
        """Decide, in integer arithmetic on the tables the sampler reads, that every size of the range is alpha-DP."""
        failures, checks = [], 1
        if self.reserve < 0 or not 1 <= self.sizes[0] <= self.sizes[1]:
            failures.append(f"the reserve ({self.reserve}) must be non-negative and the sizes a range of n >= 1")
        total = self.reserve + self.structured_total
        if total != self.denominator:
            failures.append(f"a column sums to {total}, not 2^{self.K}")
        for name, ok in self.structure_checks():
            ok = np.asarray(ok, dtype=bool)
            checks += int(ok.size)
            if not ok.all():
                failures.append(f"{name} fails at entry {int(np.argmin(ok))}")
        return StructuralCheck(holds=not failures, mechanism=self.mechanism, alpha_exact=alpha_text(self.alpha),
                               K=self.K, sizes=self.sizes, checks=checks, argument=self.argument,
                               reason="; ".join(failures[:3]))

    def describe(self) -> dict:
        """The bytes a cache keeps: what the mechanism is, the sizes it serves, its parameters and tables' digest."""
        return {"representation": REPRESENTATION, "construction": CONSTRUCTION, "mechanism": self.mechanism,
                "alpha_exact": alpha_text(self.alpha), "K": self.K, "sizes": list(self.sizes),
                "reserve": self.reserve, **self.parameters(), "tables_sha256": self.digest()}

    def digest(self) -> str:
        """SHA-256 of the tables and parameters that define every weight of every size in the range."""
        head = {"construction": CONSTRUCTION, "mechanism": self.mechanism, "alpha": alpha_text(self.alpha), "K": self.K,
                "sizes": list(self.sizes),
                "reserve": self.reserve, **self.parameters()}
        h = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
        for table in self.tables():
            if np.asarray(table).dtype == object:  # Python integers: 16 bytes each, little-endian
                h.update(b"".join(int(x).to_bytes(16, "little") for x in table))
            else:
                h.update(np.ascontiguousarray(table, dtype="<i8").tobytes())
        return h.hexdigest()

    @property
    def nbytes(self) -> int:
        """Memory held by the tables and the sampler's guide: what the mechanism costs instead of ``8 (n+1)^2``."""
        cumulative, (guide, _) = self.sampler_tables()
        return sum(int(t.nbytes) for t in self.tables()) + int(cumulative.nbytes) + int(guide.nbytes)

    # -- what a structure defines --------------------------------------------------------------
    def structured_column(self, j: int) -> np.ndarray:
        raise NotImplementedError

    def structured_float(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def category_masses(self) -> np.ndarray:
        raise NotImplementedError

    def category_outputs(self, columns: np.ndarray, category: np.ndarray, n: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def structure_checks(self) -> list[tuple[str, np.ndarray]]:
        raise NotImplementedError

    def parameters(self) -> dict:
        return {}

    def tables(self) -> list[np.ndarray]:
        return []


def floor_draws(v: np.ndarray, reserve, n) -> np.ndarray:
    """The outputs of a floor's draws ``v < reserve`` over ``n + 1`` rows: output ``i`` takes
    ``f + [i < r]`` of them, in order (``f, r = divmod(reserve, n + 1)``; per row or one for all)."""
    f, r = np.divmod(reserve, n + 1)
    wide = r * (f + 1)
    return np.where(v < wide, v // (f + 1), r + (v - wide) // np.maximum(f, 1))


def _shifted(fine, start: int, block: slice):
    """``fine`` for one block of rows: an array sliced, or a function called with the rows' positions."""
    if fine is None or not callable(fine):
        return None if fine is None else np.asarray(fine)[block]
    return lambda rows: fine(rows + start)


__all__ = ["BLOCK", "COARSE_BITS", "CONSTRUCTION", "REPRESENTATION", "WIDE_K", "StructuralCheck", "StructuralMechanism",
           "floor_draws"]
