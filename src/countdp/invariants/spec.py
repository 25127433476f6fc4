"""Subset-sum invariants over a partition of the cells into blocks, and the block sums they allow.

An invariant here is "the cells of an index set sum to a value" (Gong and Meng's total
population, female population, voting-age population).  The cells are partitioned into
*blocks* (labels given by the caller); an invariant is supported when its index set is a
union of whole blocks, so it is a linear equation on the block sums alone:
``matrix @ block_sums == values`` with a 0/1 ``matrix`` (invariants x blocks).  Together with
non-negative cells this is everything the exact sampler (:mod:`countdp.invariants.block_sums`)
needs: the table's law factorises into the law of the block-sum vector and, given it, each
block's cells on their own.

Supported, precisely:

* equality invariants that are plain sums (coefficients 0 or 1) of cells, each a union of
  blocks, with non-negative integer values;
* every block lies in at least one invariant (so every cell is bounded by that invariant's
  value and the support is finite);
* the cells are non-negative integers (the only inequality);
* at most ``limit`` block-sum vectors satisfy the equations (they are enumerated).

Anything else (weights other than 0/1, an index set cutting a block, a cell in no invariant,
equations with no non-negative solution) is refused with a one-line ``ValueError``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class SubsetSum:
    """The invariant ``sum(table[cells]) == value``; ``value=None`` means the confidential table's sum."""

    name: str
    cells: tuple[int, ...]
    value: int | None = None


@dataclass(frozen=True)
class BlockSystem:
    """Validated invariants as equations on block sums, with every block-sum vector they allow.

    ``blocks[b]``: the cell indices of block ``b`` (ascending); ``matrix[i, b] = 1`` when
    invariant ``i`` contains block ``b``; ``values[i]``: its value; ``bounds[b]``: the largest
    sum block ``b`` has in any of them;
    ``feasible``: every non-negative integer vector ``s`` with ``matrix @ s == values``, one per row (block order).
    """

    names: tuple[str, ...]
    blocks: tuple[tuple[int, ...], ...]
    matrix: np.ndarray
    values: np.ndarray
    bounds: np.ndarray
    feasible: np.ndarray
    n_cells: int

    def cell_matrix(self) -> np.ndarray:
        """The invariants over cells: ``(invariants, cells)`` 0/1, so ``cell_matrix @ table == values``."""
        out = np.zeros((len(self.names), self.n_cells), dtype=np.int64)
        for b, cells in enumerate(self.blocks):
            out[:, list(cells)] = self.matrix[:, [b]]
        return out

    def satisfied(self, tables: np.ndarray) -> np.ndarray:
        """Per table (rows of ``tables``): every invariant holds exactly and every cell is >= 0."""
        tables = np.atleast_2d(np.asarray(tables))
        if not np.issubdtype(tables.dtype, np.integer):
            raise ValueError("tables must hold integers")
        sums = tables.astype(np.int64) @ self.cell_matrix().T
        return (sums == self.values[None, :]).all(axis=1) & (tables >= 0).all(axis=1)


def subset_sums_from_matrix(matrix: object, values: object = None,
                            names: Sequence[str] | None = None) -> tuple[SubsetSum, ...]:
    """Equality invariants ``matrix @ table == values`` as :class:`SubsetSum`, refusing any non-0/1 coefficient."""
    A = np.asarray(matrix)
    if A.ndim != 2 or not np.issubdtype(A.dtype, np.number):
        raise ValueError(f"the invariant matrix must be a 2-d numeric array, got shape {A.shape}")
    bad = np.argwhere((A != 0) & (A != 1))
    if bad.size:
        row, col = bad[0]
        raise ValueError(f"invariant row {row} has coefficient {A[row, col]!r} at cell {col}: "
                         f"only plain sums of cells (coefficients 0 or 1) are supported")
    given = [None] * A.shape[0] if values is None else [int(v) for v in np.asarray(values).ravel()]
    if len(given) != A.shape[0]:
        raise ValueError(f"{len(given)} invariant values for {A.shape[0]} invariant rows")
    labels = list(names) if names is not None else [f"row {i}" for i in range(A.shape[0])]
    return tuple(SubsetSum(labels[i], tuple(int(c) for c in np.flatnonzero(A[i])), given[i])
                 for i in range(A.shape[0]))


def block_system(true_cells: np.ndarray, block_labels: Sequence[object], invariants: Sequence[SubsetSum],
                 limit: int = 1_000_000) -> BlockSystem:
    """Check ``invariants`` against the blocks of ``block_labels`` and enumerate the block sums they allow.

    ``true_cells``: the confidential table (flat, non-negative integers), which supplies the
    value of every invariant given as ``None``.  Blocks are numbered in order of first
    appearance of their label.  Raises a one-line ``ValueError`` for anything unsupported (see
    the module docstring).
    """
    x = np.asarray(true_cells)
    if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or (x < 0).any():
        raise ValueError("the confidential table must be a flat array of non-negative integers")
    labels = list(block_labels)
    if len(labels) != x.size:
        raise ValueError(f"{len(labels)} block labels for {x.size} cells")
    order = list(dict.fromkeys(labels))
    blocks = tuple(tuple(i for i, lab in enumerate(labels) if lab == name) for name in order)
    block_of = np.array([order.index(lab) for lab in labels])
    if not invariants:
        raise ValueError("at least one invariant is needed: without one the cells are unbounded")
    matrix = np.zeros((len(invariants), len(blocks)), dtype=np.int64)
    values = np.zeros(len(invariants), dtype=np.int64)
    for i, inv in enumerate(invariants):
        matrix[i], values[i] = _invariant_row(inv, x, blocks, block_of)
    uncovered = np.flatnonzero(matrix.sum(axis=0) == 0)
    if uncovered.size:
        raise ValueError(f"block {order[uncovered[0]]!r} is in no invariant, so its cells are unbounded: "
                         f"every cell must lie in some invariant")
    bounds = np.array([values[matrix[:, b] == 1].min() for b in range(len(blocks))], dtype=np.int64)
    feasible = _feasible_block_sums(matrix, values, bounds, limit)
    return BlockSystem(tuple(inv.name for inv in invariants), blocks, matrix, values, feasible.max(axis=0), feasible,
                       int(x.size))


def _invariant_row(inv: SubsetSum, x: np.ndarray, blocks: tuple[tuple[int, ...], ...],
                   block_of: np.ndarray) -> tuple[np.ndarray, int]:
    """The 0/1 block row and the value of one invariant, or a one-line ``ValueError``."""
    cells = sorted(set(int(c) for c in inv.cells))
    if not cells or cells[0] < 0 or cells[-1] >= x.size or len(cells) != len(inv.cells):
        raise ValueError(f"invariant {inv.name!r} must list distinct cell indices in 0..{x.size - 1}")
    row = np.zeros(len(blocks), dtype=np.int64)
    for b in sorted(set(block_of[cells].tolist())):
        if not set(blocks[b]) <= set(cells):
            raise ValueError(f"invariant {inv.name!r} contains part of block {b} but not all of it: "
                             f"each invariant must be a union of whole blocks")
        row[b] = 1
    value = int(x[cells].sum()) if inv.value is None else inv.value
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"invariant {inv.name!r} must have a non-negative integer value, got {inv.value!r}")
    return row, int(value)


def _feasible_block_sums(matrix: np.ndarray, values: np.ndarray, bounds: np.ndarray, limit: int) -> np.ndarray:
    """Every integer ``s`` with ``matrix @ s == values`` and ``0 <= s <= bounds`` (exact elimination).

    The equations are brought to reduced row echelon form in Fractions; the free block sums
    run over their ranges and the pivot ones are solved for, kept when integral and in range.
    """
    pivots, rows = _rref(matrix, values)
    free = [b for b in range(matrix.shape[1]) if b not in pivots]
    count = math.prod(int(bounds[b]) + 1 for b in free)
    if count > limit:
        raise ValueError(f"the invariants leave {count} block-sum vectors to enumerate, more than the limit {limit}")
    grid = np.array(list(itertools.product(*(range(int(bounds[b]) + 1) for b in free))), dtype=np.int64)
    grid = grid.reshape(count, len(free))
    sums = np.zeros((count, matrix.shape[1]), dtype=np.int64)
    sums[:, free] = grid
    ok = np.ones(count, dtype=bool)
    for pivot, row in zip(pivots, rows, strict=True):
        scale = math.lcm(*(c.denominator for c in row))
        coef = np.array([int(row[b] * scale) for b in free], dtype=np.int64)
        numerator = int(row[-1] * scale) - grid @ coef
        ok &= numerator % scale == 0
        sums[:, pivot] = numerator // scale
    ok &= ((sums >= 0) & (sums <= bounds[None, :])).all(axis=1)
    if not ok.any():
        raise ValueError("the invariants have no solution in non-negative integers")
    return sums[ok]


def _rref(matrix: np.ndarray, values: np.ndarray) -> tuple[list[int], list[list[Fraction]]]:
    """Reduced row echelon form of ``[matrix | values]`` in Fractions: pivot columns and their rows."""
    rows = [[Fraction(int(v)) for v in r] + [Fraction(int(val))] for r, val in zip(matrix, values, strict=True)]
    pivots: list[int] = []
    top = 0
    for col in range(matrix.shape[1]):
        found = next((i for i in range(top, len(rows)) if rows[i][col] != 0), None)
        if found is None:
            continue
        rows[top], rows[found] = rows[found], rows[top]
        lead = rows[top][col]
        rows[top] = [v / lead for v in rows[top]]
        for i in range(len(rows)):
            if i != top and rows[i][col] != 0:
                factor = rows[i][col]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[top], strict=True)]
        pivots.append(col)
        top += 1
    if any(all(v == 0 for v in r[:-1]) and r[-1] != 0 for r in rows[top:]):
        raise ValueError("the invariants contradict each other: no table satisfies them all")
    return pivots, rows[:top]
