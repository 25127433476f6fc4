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
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from countdp.privacy.alpha import alpha_text
from countdp.privacy.inverse_cdf import guide_table, outputs_for_draws
from countdp.structural.chain import exact_sum

BLOCK = 1 << 16
"""Rows the sampler maps at a time (its temporaries then fit in a core's cache)."""
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

    def __init__(self, n: int, alpha: Fraction, K: int, reserve: int, sizes: tuple[int, int] | None = None) -> None:
        if not 1 <= K <= 62:
            raise ValueError(f"K must be in 1..62, got {K}")
        self.alpha, self.K, self.reserve = alpha, int(K), int(reserve)
        self.sizes = (int(n), int(n)) if sizes is None else (int(sizes[0]), int(sizes[1]))
        self.masses = np.asarray(self.category_masses(), dtype=np.int64)
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
    def uniform_share(self) -> float:
        """The floor's share of each column: the weight of UM mixed into the mechanism."""
        return self.reserve / self.denominator

    def column(self, j: int) -> np.ndarray:
        """Input ``j``'s integer weights over the ``n + 1`` outputs (length ``n + 1``, summing to ``2**K``)."""
        if not 0 <= j <= self.n:
            raise ValueError(f"input {j} is outside 0..{self.n}")
        out = np.full(self.n + 1, self.floor, dtype=np.int64)
        out[:self.extra_rows] += 1
        return out + self.structured_column(int(j))

    def dense_weights(self) -> np.ndarray:
        """The ``(n+1) x (n+1)`` weights, the matrix form's, built at once by each structure's own rule
        (a second construction, which the tests compare with :meth:`column`)."""
        raise NotImplementedError

    # -- sampling ------------------------------------------------------------------------------
    def outputs(self, columns: np.ndarray, draws: np.ndarray, sizes: np.ndarray | None = None) -> np.ndarray:
        """For each (input, draw in ``[0, 2**K)``, group size), the output released; exact, vectorised.

        ``sizes`` (per row, within :attr:`sizes`) defaults to this object's ``n``.  Long inputs are
        taken in blocks of :data:`BLOCK` rows, so the temporaries stay in cache.
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
            out[block] = self._block(columns[block], draws[block], ns if ns.ndim == 0 else ns[block])
        return out

    def _block(self, columns: np.ndarray, draws: np.ndarray, ns: np.ndarray) -> np.ndarray:
        cumulative, guide = self.sampler_tables()
        category = outputs_for_draws(cumulative, self.K, np.zeros(draws.shape, dtype=np.int64), draws, guide)
        out = self.category_outputs(columns, category - 1, ns)
        low = np.flatnonzero(category == 0)
        if low.size:
            v, n = draws[low], ns if ns.ndim == 0 else ns[low]
            f, r = np.divmod(self.reserve, n + 1)
            wide = r * (f + 1)
            out[low] = np.where(v < wide, v // (f + 1), r + (v - wide) // np.maximum(f, 1))
        return out

    def sample(self, counts: np.ndarray, words: np.ndarray, sizes: np.ndarray | None = None) -> np.ndarray:
        """Each row's release from a uniform 64-bit word: its top ``K`` bits are the draw."""
        draws = (np.asarray(words, dtype=np.uint64) >> np.uint64(64 - self.K)).astype(np.int64)
        return self.outputs(counts, draws, sizes)

    def sampler_tables(self) -> tuple[np.ndarray, tuple[np.ndarray, int]]:
        """The one-row cumulative table over ``[reserve, categories...]`` and its guide (built once).

        Raises ``ValueError`` unless the masses end exactly at ``2**K``: the inverse CDF needs it.
        """
        if self._sampler is None:
            if self.reserve + self.structured_total != self.denominator:
                raise ValueError(f"{self.mechanism} n={self.n}: its draws do not total 2^{self.K}; not sampled")
            cumulative = np.cumsum(np.concatenate([[self.reserve], self.masses]))[None, :]
            self._sampler = cumulative, guide_table(cumulative, self.K)
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
        return {"representation": REPRESENTATION, "mechanism": self.mechanism, "alpha_exact": alpha_text(self.alpha),
                "K": self.K, "sizes": list(self.sizes), "reserve": self.reserve, **self.parameters(),
                "tables_sha256": self.digest()}

    def digest(self) -> str:
        """SHA-256 of the tables and parameters that define every weight of every size in the range."""
        head = {"mechanism": self.mechanism, "alpha": alpha_text(self.alpha), "K": self.K, "sizes": list(self.sizes),
                "reserve": self.reserve, **self.parameters()}
        h = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
        for table in self.tables():
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


__all__ = ["BLOCK", "REPRESENTATION", "StructuralCheck", "StructuralMechanism"]
