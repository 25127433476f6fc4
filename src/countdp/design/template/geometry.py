"""The template's geometry: which template entry and which template row an entry or a row of the
size-``n`` design LP copies, and the exact row arithmetic of the restricted LPs built from them.

Far from the two corners an optimal design looks like GM: along the diagonal it is translation
invariant, and away from the diagonal it decays by ``alpha`` per step.  An entry ``(i, j)`` is
described by three distances: ``a = min(i, j)`` (to the top-left corner), ``b = n - max(i, j)``
(to the bottom-right one) and ``e = |i - j|`` (to the diagonal), ``a + e + b = n``.  Clipping
each at a width ``W`` and giving the remainder to one unclipped distance (``e`` first, then
``a``, then ``b``) sends ``(i, j)`` to an entry ``(i0, j0)`` of a template of size ``n0 + 1``
(``n0 = 3 W + 4``) with the same clipped distances, the same side of the diagonal, and ``e - e0``
extra diagonal steps (:func:`feature_map`).  A constraint row is sent to the template row of its
first entry (:func:`row_map`, at level ``W + 1``).

Conventions: ``P[i, j] = Pr[output i | input j]``, ``N = n + 1``, ``x = P.ravel()``; the rows are
those of :func:`countdp.design.optimality.design_lp_model`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from countdp.design.reduce import dedup_rows, row_hashes


def feature_map(i: np.ndarray, j: np.ndarray, n: int, n0: int, W: int) -> tuple[np.ndarray, ...]:
    """Template entry ``(i0, j0)`` of entry ``(i, j)`` and the extra distance ``e - e0`` (docstring)."""
    a, b, d = np.minimum(i, j), n - np.maximum(i, j), i - j
    e = np.abs(d)
    a1, b1, e1 = np.minimum(a, W), np.minimum(b, W), np.minimum(e, W)
    e0 = np.where(e >= W, n0 - a1 - b1, e1)
    a0 = np.where((e < W) & (a >= W), n0 - e1 - b1, a1)
    b0 = n0 - a0 - e0
    lo, hi = a0, n0 - b0
    return np.where(d >= 0, hi, lo), np.where(d >= 0, lo, hi), e - e0


def row_entries(n: int, props: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first entry ``(i, j)`` of every inequality row of the full model, block by block."""
    N = n + 1
    i, j = np.divmod(np.arange(N * n), n)
    blocks = [(i, j), (i, j)]  # DP forward, DP backward
    ii, jj = np.indices((N, N))
    for name in props:
        if name in ("RM", "CM"):
            first, second = (jj < ii, jj > ii) if name == "RM" else (ii > jj, ii < jj)
            blocks.append((np.concatenate([ii[first], ii[second]]), np.concatenate([jj[first], jj[second]])))
        elif name in ("RH", "CH"):
            off = ii != jj
            blocks.append((ii[off], jj[off]))
        elif name == "WH":
            blocks.append((np.arange(N), np.arange(N)))
        elif name != "S":
            raise ValueError(f"large-n path does not handle property {name}")
    return blocks


def row_map(n: int, n0: int, W: int, props: tuple[str, ...]) -> np.ndarray:
    """For every inequality row of the size-``n`` model, the template row it copies."""
    N0 = n0 + 1
    out, offset = [], 0
    for (pi, pj), (qi, qj) in zip(row_entries(n, props), row_entries(n0, props), strict=True):
        table = np.full((N0, N0), -1)
        table[qi, qj] = offset + np.arange(qi.size)
        i0, j0, _ = feature_map(pi, pj, n, n0, W + 1)
        rows = table[i0, j0]
        if np.any(rows < 0):
            raise ValueError("template row missing")  # pragma: no cover - the map keeps the block
        out.append(rows)
        offset += qi.size
    return np.concatenate(out)


def cancel(A: sp.csr_matrix, col: np.ndarray, weight: np.ndarray, ncol: int) -> sp.csr_matrix:
    """``A @ E`` (``E`` maps entry ``k`` to ``weight[k] * z[col[k]]``) with the coefficients
    that cancel in exact arithmetic (``alpha^(k+1)`` against ``alpha * alpha^k``) set to zero: a
    rounding residue would otherwise become a spurious row ``-tiny * z >= 0`` once rows are
    normalised."""
    A = A.tocoo()
    if A.nnz == 0:  # e.g. no one-entry rows: a property set without WH
        return sp.csr_matrix((A.shape[0], ncol))
    key = A.row.astype(np.int64) * ncol + col[A.col]
    order = np.argsort(key, kind="stable")
    key, terms = key[order], (A.data * weight[A.col])[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    value = np.add.reduceat(terms, first)
    size = np.add.reduceat(np.abs(terms), first)
    keep = np.abs(value) > 1e-12 * size
    rows, cols = np.divmod(key[first][keep], ncol)
    return sp.csr_matrix((value[keep], (rows, cols)), shape=(A.shape[0], ncol))


def merge_rows(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray):
    """``A``, ``lo``, ``hi`` without exact duplicate rows and without empty rows (checked: an
    empty row whose bounds exclude 0 raises ``ValueError``)."""

    A = A.tocsr()
    A.sum_duplicates()
    A.eliminate_zeros()
    empty = np.diff(A.indptr) == 0
    if np.any(lo[empty] > 0) or np.any(hi[empty] < 0):
        raise ValueError("restricted LP has an infeasible empty row")
    keep = np.flatnonzero(~empty)
    A, lo, hi = A[keep], lo[keep], hi[keep]
    keep = first_of_each(A, lo, hi)
    return A[keep], lo[keep], hi[keep]


def first_of_each(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row ``(A[r], lo[r], hi[r])``: rows are
    grouped by a 64-bit hash of their exact bits, then every row is compared with its group's
    first row (a collision falls back to the exact row comparison of :mod:`countdp.design.reduce`)."""
    A.sort_indices()  # the comparison below goes entry by entry
    h = row_hashes(A, lo, hi)
    nnz = np.diff(A.indptr)
    row = np.repeat(np.arange(A.shape[0]), nnz)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    rep = first[inverse]
    same = (nnz == nnz[rep]) & (lo == lo[rep]) & (hi == hi[rep])
    start, rstart = A.indptr[row], A.indptr[rep[row]]
    other = np.minimum(rstart + np.arange(A.nnz) - start, max(A.nnz - 1, 0))
    same_entry = (A.indices == A.indices[other]) & (A.data == A.data[other])
    ok = same.copy()
    np.logical_and.at(ok, row, same_entry)
    if not ok.all():
        return dedup_rows(A, lo, hi)  # pragma: no cover - a 64-bit hash collision
    return np.sort(first)
