"""The congenial table, sampled exactly: double-geometric cells conditioned on block-sum invariants.

Gong and Meng's conditional mechanism releases the noisy table ``y`` with law
``Pr[y] ∝ prod_c alpha^|y_c - x_c|`` (independent two-sided geometric noise around the
confidential cells ``x``), restricted to tables with every invariant sum equal to the
confidential one and every cell ``>= 0``.  When each invariant is a sum over whole blocks of a
partition of the cells (:mod:`countdp.invariants.spec`) that law factorises:

1. the block-sum vector ``s`` has ``Pr[s] ∝ prod_B G_B(s_B)``, over the vectors the equations
   allow, where ``G_B(t)`` is the total weight of block ``B``'s cell vectors summing to ``t``;
2. given ``s``, each block's cells are drawn one at a time: cell ``k`` with ``r`` left to
   place takes ``y`` with weight ``w(y) = alpha^|y - x_k| F(r - y)``, ``F = G_{B,k+1}`` the
   suffix sums of the block's later cells, and the last cell takes what is left.

Exactness: ``alpha = p/q`` is an exact rational (use
:func:`countdp.values.alpha.alpha_from_epsilon`, the smallest multiple of ``2**-63`` at or
above ``e^-epsilon``, so the guarantee is never weaker than asked).  ``G_{B,k}(r)`` is a sum of
``alpha^d`` with ``d <= D_k(r) = r + x_k + ... + x_last`` (the largest L1 distance of those
cells from ``x`` at sum ``r``), so it is kept as the integer ``G_{B,k}(r) q**D_k(r)`` ("row
scale"; thousands of bits: exactness needs them, and the row scale keeps them about half as
long as one common scale).  In row scale the weights of cell ``k``'s row ``r`` are the integers
``w(y) = p**|y - x_k| q**(2 min(y, x_k)) F(r - y)`` (``F`` in its own row scale), so no
division is ever needed.  A cell costs ``O(bound x (1 + x_k))`` big-integer operations, not
``O(bound**2)``: with ``R(s) = sum_{y = x_k..s} p**(y - x_k) F(s - y)``, one multiplication and
one addition per ``s`` (``R(s) = F(s - x_k) + p R(s - 1)``), the row total is
``T_r = H_r + q**(2 x_k) R(r)``, ``H_r`` the sum of the ``x_k`` terms ``y < x_k``.

Each decision is an exact choice among integer weights (:mod:`countdp.invariants.prefix_choice`):
62-bit prefix thresholds ``floor(2**62 C_j / T_r)`` per (cell, remaining sum ``r``),
``C_j = w(0) + ... + w(j-1)``, stored as int64 rows, answer a batch of draws with numpy
compares; a word that ties a threshold (probability below ``2**-55`` per decision) is settled
exactly from the row's exact weights (on the block's common scale ``q**(bound + sum(x_B))``).
A row is built the first time a draw needs it, from brackets of a few hundred bits
(:func:`~countdp.invariants.prefix_choice.bracketed_floors`): ``C_j`` for ``j <= x_k`` is
bracketed directly, and ``j > x_k`` through the exact identity
``T_r - C_j = p**e q**(2 x_k) R(r - e)``, ``e = j - x_k``; any entry the brackets leave
undecided sends its row to the exact route
(:func:`~countdp.invariants.prefix_choice.prefix_thresholds` on the exact weights).  Either way
the thresholds are the same exact floors, and no floating point enters any decision, so a
drawn table has exactly the conditional law (:meth:`ConditionalTableSampler.probability`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate

import numpy as np

from countdp.invariants.prefix_choice import (
    PAD,
    bracket,
    bracketed_floors,
    choose,
    choose_one,
    prefix_thresholds,
    prefix_words,
    reciprocal_bracket,
    resolve_tie,
)
from countdp.invariants.spec import BlockSystem, SubsetSum, block_system
from countdp.values.alpha import exact_alpha

MIN_GUARD_BITS = 32
"""Shortest brackets that can decide a 62-bit floor of a product of two (see :func:`bracketed_floors`)."""


@dataclass(frozen=True)
class SamplerSettings:
    """``batch``: tables per vectorised pass of :meth:`ConditionalTableSampler.draw` (memory ~ batch x bound x 8 bytes);
    ``scalar_up_to``: at most this many tables go one by one (binary searches), skipping numpy's per-call cost;
    ``max_block_vectors``: refuse invariants leaving more block-sum vectors than this;
    ``guard_bits``: bits kept of each factor when bracketing a threshold (>= 32; each extra bit halves the
    chance that a row needs the exact route, which gives the same thresholds, more slowly)."""

    batch: int = 8192
    scalar_up_to: int = 16
    max_block_vectors: int = 1_000_000
    guard_bits: int = 96

    def __post_init__(self) -> None:
        if self.guard_bits < MIN_GUARD_BITS:
            raise ValueError(f"guard_bits must be >= {MIN_GUARD_BITS}, got {self.guard_bits}")


Brackets = tuple[np.ndarray, np.ndarray]
"""Entrywise ``value in [m, m + 1) 2**e``: an object array of mantissas ``m`` and an int64 array of ``e``."""


def _brackets(values: Sequence[int], bits: int, reciprocal: bool = False) -> Brackets:
    """:func:`bracket` (or :func:`reciprocal_bracket`) of each positive value; 0 stands for an unused slot."""
    pairs = [(reciprocal_bracket if reciprocal else bracket)(v, bits) if v else (1, 0) for v in values]
    return np.array([m for m, _ in pairs], dtype=object), np.array([e for _, e in pairs], dtype=np.int64)


def power_brackets(base: int, top: int, bits: int) -> Brackets:
    """Brackets of ``base**e`` for ``e = 0..top`` (exact powers, built by repeated multiplication)."""
    powers = [1]
    for _ in range(top):
        powers.append(powers[-1] * base)
    return _brackets(powers, bits)


def _times_q_power(values: object, n: int, q: int) -> object:
    """``values * q**n`` (elementwise on object arrays): a shift when ``q = 2**b``."""
    return values << ((q.bit_length() - 1) * n) if q & (q - 1) == 0 else values * q**n


@dataclass
class _Decision:
    """Cell ``k``'s choice given ``r`` left in its block: brackets of its prefix sums, and its threshold rows.

    ``head[r, j-1]``: brackets of ``C_j`` (``j <= x``) in row ``r``; ``tail[s]``: of
    ``q**(2x) R(s)``; ``inverse[r]``: of ``1 / T_r`` (all in row scale, module docstring).
    ``table[r, :r]``: the thresholds of row ``r`` once ``ready[r]``.
    """

    x: int
    head: Brackets
    tail: Brackets
    inverse: Brackets
    table: np.ndarray
    ready: np.ndarray


@dataclass(frozen=True)
class _Block:
    """One block: exact suffix sums ``reduced[k][r] = G_{B,k}(r) q**(r + x_k + ... + x_last)``, one decision per cell
    but the last, and ``scale = bound + sum(x)``, the common exponent making every ``G_B(t) q**scale`` an integer."""

    cells: tuple[int, ...]
    x: tuple[int, ...]
    bound: int
    scale: int
    reduced: list[list[int]]
    decisions: list[_Decision]

    def block_sums(self, q: int) -> list[int]:
        """``G_B(t) q**scale`` for ``t = 0..bound``: the block's exact weights on the common scale."""
        return [_times_q_power(v, self.bound - t, q) for t, v in enumerate(self.reduced[0])]


def _cell_step(xk: int, following: list[int], bound: int, p: int, q: int, bits: int) -> tuple[list[int], _Decision]:
    """Exact suffix sums from cell ``k`` on (``T_r = H_r + q**(2 x_k) R(r)``, module docstring), and its decision.

    ``following``: the exact suffix sums of the later cells (row scale).  The ``x_k`` head terms
    ``p**(x_k - y) q**(2y) F(r - y)`` come from ``x_k`` elementwise multiplications by ``p`` of
    the whole ``F`` (object arrays: the big-integer arithmetic in C loops); ``R`` is one
    multiplication and one addition per ``s``.  No division: every term is an integer.
    """
    powers = [np.array(following, dtype=object)]
    for _ in range(xk):
        powers.append(powers[-1] * p)
    head = np.zeros((bound + 1, xk), dtype=object)
    for y in range(min(xk, bound + 1)):
        head[y:, y] = _times_q_power(powers[xk - y][:bound + 1 - y], 2 * y, q)
    head = np.cumsum(head, axis=1) if xk else head
    tail, acc = [0] * (bound + 1), 0
    for s in range(xk, bound + 1):
        acc = following[s - xk] + acc * p
        tail[s] = acc
    tail = _times_q_power(np.array(tail, dtype=object), 2 * xk, q).tolist()
    totals = [h + t for h, t in zip(head[:, -1].tolist() if xk else [0] * (bound + 1), tail, strict=True)]
    flat = _brackets(head.ravel().tolist(), bits)
    decision = _Decision(xk, (flat[0].reshape(head.shape), flat[1].reshape(head.shape)), _brackets(tail, bits),
                         _brackets(totals, bits, reciprocal=True),
                         np.full((bound + 1, bound + 2), PAD, dtype=np.int64), np.zeros(bound + 1, dtype=bool))
    return totals, decision


def _block(cells: tuple[int, ...], x: tuple[int, ...], bound: int, p: int, q: int, bits: int) -> _Block:
    """All exact suffix sums and the (not yet filled) decisions of one block (cells in ascending index order)."""
    last = x[-1]
    reduced: list[list[int]] = [[] for _ in x]
    reduced[-1] = [p ** abs(r - last) * q ** (2 * min(r, last)) for r in range(bound + 1)]
    decisions: list[_Decision] = [None] * (len(x) - 1)  # type: ignore[list-item]
    for k in range(len(x) - 2, -1, -1):
        reduced[k], decisions[k] = _cell_step(x[k], reduced[k + 1], bound, p, q, bits)
    return _Block(cells, x, bound, bound + sum(x), reduced, decisions)


def _ranks(counts: np.ndarray) -> np.ndarray:
    """``0, 1, ..., c - 1`` for each count ``c`` in turn (positions within groups of a repeat)."""
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


class ConditionalTableSampler:
    """Exact draws of the double-geometric table conditioned on subset-sum invariants and ``cells >= 0``.

    ``true_cells``: the confidential table, flat (non-negative integers); ``block_labels``: one
    label per cell, defining the blocks; ``invariants``: :class:`~countdp.invariants.spec.SubsetSum`
    equalities, each a union of blocks (values default to the confidential sums); ``alpha``:
    the exact per-cell alpha (a Fraction or "p/q").  Construction computes every exact suffix
    sum and the block-sum choice; each cell's threshold row for a remaining sum is built the
    first time a draw needs it, and :meth:`draw` then costs one 62-bit word per decision.
    """

    def __init__(self, true_cells: object, block_labels: Sequence[object], invariants: Sequence[SubsetSum],
                 alpha: object, settings: SamplerSettings = SamplerSettings()) -> None:
        self.x = np.asarray(true_cells)
        self.alpha = exact_alpha(alpha)
        self.settings = settings
        self.system: BlockSystem = block_system(self.x, block_labels, invariants, settings.max_block_vectors)
        p, q, bits = self.alpha.numerator, self.alpha.denominator, settings.guard_bits
        self._blocks = [_block(cells, tuple(int(v) for v in self.x[list(cells)]), int(bound), p, q, bits)
                        for cells, bound in zip(self.system.blocks, self.system.bounds, strict=True)]
        self._p_powers = power_brackets(p, int(self.system.bounds.max()), bits)
        sums = [block.block_sums(q) for block in self._blocks]
        weights = [math.prod(block[s] for block, s in zip(sums, row, strict=True))
                   for row in self.system.feasible.tolist()]
        self._outer_cumulative = list(accumulate(weights))
        self._outer = np.full(len(weights), PAD, dtype=np.int64)
        self._outer[:-1] = prefix_thresholds(self._outer_cumulative[:-1], self._outer_cumulative[-1])
        self._scales = math.prod(q**block.scale for block in self._blocks)

    @property
    def decisions(self) -> int:
        """Random words per table: one for the block-sum vector, one per cell but the last of each block."""
        return 1 + sum(len(block.cells) - 1 for block in self._blocks)

    @property
    def normaliser(self) -> Fraction:
        """``Z = sum over allowed tables of alpha^L1(table, x)``, exactly."""
        return Fraction(self._outer_cumulative[-1], self._scales)

    def probability(self, table: object) -> Fraction:
        """The exact conditional probability of ``table`` (flat): ``alpha^L1 / Z``, 0 outside the invariants."""
        t = np.asarray(table).ravel()
        if t.shape != self.x.shape or not self.system.satisfied(t[None, :])[0]:
            return Fraction(0)
        d = int(np.abs(t.astype(np.int64) - self.x).sum())
        p, q = self.alpha.numerator, self.alpha.denominator
        return Fraction(p**d * self._scales, q**d * self._outer_cumulative[-1])

    def log_weight(self, tables: object) -> np.ndarray:
        """Unnormalised log weights ``L1 * ln(alpha)`` per row (``-inf`` outside the invariants); floats."""
        t = np.atleast_2d(np.asarray(tables))
        distance = np.abs(t.astype(np.int64) - self.x[None, :]).sum(axis=1)
        log_alpha = math.log(self.alpha.numerator) - math.log(self.alpha.denominator)
        return np.where(self.system.satisfied(t), distance * log_alpha, -np.inf)

    def thresholds(self, block: int, cell: int, remaining: int) -> np.ndarray:
        """The prefix thresholds of one decision, for audits: ``floor(2**62 C_j / T)`` for ``j = 1..remaining``.

        ``block``: index into ``system.blocks``; ``cell``: position in that block (not the last);
        ``remaining``: the block's sum left for this cell and the later ones (``0..bounds[block]``).
        """
        chosen = self._blocks[block]
        if not (0 <= cell < len(chosen.decisions) and 0 <= remaining <= chosen.bound):
            raise ValueError(f"block {block} has decisions for cells 0..{len(chosen.decisions) - 1} and remaining "
                             f"sums 0..{chosen.bound}, not cell {cell} with {remaining}")
        self._fill(chosen, cell, np.array([remaining]))
        return chosen.decisions[cell].table[remaining, :remaining].copy()

    def draw(self, rng: object = None, size: int = 1) -> np.ndarray:
        """``size`` tables (rows, int64) drawn exactly; ``rng=None``: the OS's secure source, or a numpy Generator."""
        out = np.empty((size, self.x.size), dtype=np.int64)
        for start in range(0, size, self.settings.batch):
            stop = min(size, start + self.settings.batch)
            words = prefix_words(rng, (stop - start) * self.decisions).reshape(stop - start, self.decisions)
            out[start:stop] = self.tables_from_words(words, rng)
        return out

    def tables_from_words(self, words: np.ndarray, rng: object = None) -> np.ndarray:
        """The tables that uniform 62-bit ``words`` (int64, one row of :attr:`decisions` per table) decide.

        Column 0 chooses the block-sum vector (a row of ``system.feasible``); then, block by block
        (in ``system.blocks`` order), one column per cell but the last, in ascending cell order.
        A word decides its choice alone unless it equals a prefix threshold; then the tie is
        settled exactly with a uniform integer from ``rng`` (see
        :mod:`countdp.invariants.prefix_choice`).  With uniform words this is :meth:`draw`.
        """
        n = words.shape[0]
        if n <= self.settings.scalar_up_to:
            return np.array([self._table_from_words(row, rng) for row in words.tolist()],
                            dtype=np.int64).reshape(n, self.x.size)
        choice, tie = choose(np.broadcast_to(self._outer, (n, self._outer.size)), words[:, 0])
        for i in np.flatnonzero(tie):
            choice[i] = resolve_tie(words[i, 0], self._outer_cumulative[:-1], self._outer_cumulative[-1], rng)
        sums = self.system.feasible[choice]
        table = np.empty((n, self.x.size), dtype=np.int64)
        column = 1
        for b, block in enumerate(self._blocks):
            remaining = sums[:, b].copy()
            for k, cell in enumerate(block.cells[:-1]):
                self._fill(block, k, np.unique(remaining))
                y, tie = choose(block.decisions[k].table[remaining], words[:, column])
                for i in np.flatnonzero(tie):
                    y[i] = self._resolve(block, k, int(remaining[i]), int(words[i, column]), rng)
                table[:, cell] = y
                remaining -= y
                column += 1
            table[:, block.cells[-1]] = remaining
        return table

    def _table_from_words(self, words: list[int], rng: object) -> list[int]:
        """One table from its words: the vectorised rule of :meth:`tables_from_words`, by binary searches."""
        choice, tie = choose_one(self._outer, words[0])
        if tie:
            choice = resolve_tie(words[0], self._outer_cumulative[:-1], self._outer_cumulative[-1], rng)
        table = [0] * self.x.size
        column = 1
        for block, remaining in zip(self._blocks, self.system.feasible[choice].tolist(), strict=True):
            for k, cell in enumerate(block.cells[:-1]):
                decision = block.decisions[k]
                if not decision.ready[remaining]:
                    self._fill(block, k, np.array([remaining]))
                y, tie = choose_one(decision.table[remaining], words[column])
                table[cell] = self._resolve(block, k, remaining, words[column], rng) if tie else y
                remaining -= table[cell]
                column += 1
            table[block.cells[-1]] = remaining
        return table

    def _fill(self, block: _Block, k: int, rows: np.ndarray) -> None:
        """Build the threshold rows ``rows`` of cell ``k`` not built yet (module docstring: brackets, else exact).

        Row ``r`` holds ``j = 1..r``: ``j <= x_k`` from the brackets of ``C_j`` and ``1 / T_r``;
        ``j > x_k`` (``e = j - x_k``) as ``2**62 - ceil(2**62 p**e q**(2 x_k) R(r - e) / T_r)``.
        """
        decision = block.decisions[k]
        rows = rows[~decision.ready[rows]]
        if not rows.size:
            return
        xk, inverse = decision.x, decision.inverse
        count = np.minimum(rows, xk)
        r, j = np.repeat(rows, count), _ranks(count)
        head, head_ok = bracketed_floors([(decision.head[0][r, j], decision.head[1][r, j]),
                                          (inverse[0][r], inverse[1][r])])
        decision.table[r, j] = head
        count = np.maximum(rows - xk, 0)
        r2, e = np.repeat(rows, count), _ranks(count) + 1
        tail, tail_ok = bracketed_floors([(self._p_powers[0][e], self._p_powers[1][e]),
                                          (decision.tail[0][r2 - e], decision.tail[1][r2 - e]),
                                          (inverse[0][r2], inverse[1][r2])], complement=True)
        decision.table[r2, xk + e - 1] = tail
        for row in np.union1d(r[~head_ok], r2[~tail_ok]).tolist():
            cumulative = self._row_cumulative(block, k, row)
            decision.table[row, :row] = prefix_thresholds(cumulative[:-1], cumulative[-1])
        decision.ready[rows] = True

    def _row_cumulative(self, block: _Block, k: int, r: int) -> list[int]:
        """The exact cumulative weights ``C_1, ..., C_r, T`` of cell ``k`` with ``r`` left, on the block's common scale.

        Term ``y`` is ``p**|y - x_k| q**(2 min(y, x_k)) F(r - y)`` (row scale) times
        ``q**(scale - r - x_k - ... - x_last)``: the integers ``G alpha^d q**scale`` themselves.
        """
        p, q, xk, following = self.alpha.numerator, self.alpha.denominator, block.x[k], block.reduced[k + 1]
        factor = q ** (block.scale - r - sum(block.x[k:]))
        return list(accumulate(following[r - y] * p ** abs(y - xk) * q ** (2 * min(y, xk)) * factor
                               for y in range(r + 1)))

    def _resolve(self, block: _Block, k: int, r: int, word: int, rng: object) -> int:
        """A tied word at cell ``k`` with ``r`` left: the row's exact weights rebuilt from the suffix sums."""
        cumulative = self._row_cumulative(block, k, r)
        return resolve_tie(word, cumulative[:-1], cumulative[-1], rng)
