"""Complementary slackness on the full design LP, solved by eliminating the chains of each output row.

The support dual (:mod:`countdp.design.template.support_dual`) asks for multipliers ``y`` of a
chosen set of rows (the *support*) and of the column sums that leave no reduced cost on the
positive entries of the design, ``M y = c`` with ``M = [A_T^T  A_eq^T]`` restricted to the live
entries (those of output rows that are not all zero), and for the vertex ``x`` on which those
rows are tight, ``M^T x = b``.  A general sparse LU of ``M`` (about ``N^2`` unknowns) is the
dominant cost of a large design; this module solves the same two systems using their structure,
in time and memory about proportional to the matrix.

**Chains.**  Most support rows (DP, RM) tie two neighbouring entries ``(i, j)`` and ``(i, j+1)``
of one output row, ``a x[i, j] + b x[i, j+1] >= 0``.  Along an output row they form paths (the
*components*, at most one such row per pair is kept as a chain edge; any other goes with the
coupling rows).  A component with ``k`` entries has ``k - 1`` edges, so its edges are fixed by
its equations up to one condition: the left null vector ``w`` of the path (``a w_j + b w_{j+1} =
0`` on each edge; ``w = alpha^|i - j|`` on a GM-like row) must annihilate the right-hand side.
Every other unknown ``s`` (the column sums and the coupling rows: CH, CM, RH, ...) enters through
a sparse ``B``; the conditions ``R s = W c`` with ``R = W B`` are a far smaller system (one row per
component, about ``N`` plus one per DP edge left slack).  Where the corners are narrow ``R`` is
nearly full (every path about a whole output row, touching every column sum), and LAPACK factorises
it, or forms its normal equations, fastest as a dense array.  Where they are wide the slack edges
add paths by the thousand, and a dense ``R`` grows as their square (13 GB at 40,000); there ``R``,
sparse since a path of the corners touches a few column sums and a coupling row a few paths, is
factorised by SuperLU (:attr:`~countdp.design.settings.ChainTuning.chain_dense_max_bytes`
chooses).  Given ``s``, the edge multipliers follow by
sweeping each path from both ends towards the largest ``w`` (each step then multiplies errors by
a factor of at most about one).  The vertex is ``x = w t`` on each component, with ``R^T t =
b_B``: the same factorisation.

Nothing here is trusted: the caller's certificate checks the result on the full model.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla


@dataclass
class ChainSystem:
    """The eliminated form of ``M y = c`` / ``M^T x = b`` (module docstring) on an ``N x N`` grid."""

    N: int
    live: np.ndarray  # (N*N,) bool: equations (entries of output rows that are not all zero)
    chain: np.ndarray  # support positions of the chain edges
    edge: np.ndarray  # (N, N-1) bool: an edge between (i, j) and (i, j+1)
    a: np.ndarray  # (N, N-1): the edge's coefficient at (i, j) (1 where no edge)
    b: np.ndarray  # (N, N-1): the edge's coefficient at (i, j+1) (0 where no edge)
    edge_row: np.ndarray  # (N, N-1): position in ``chain`` of the edge (0 where none)
    coupling: np.ndarray  # support positions of the other rows
    B: sp.csr_matrix  # (live entries, coupling rows + column sums)
    W: sp.csr_matrix  # (components, live entries): the null vectors
    comp: np.ndarray  # component of each live entry
    weight: np.ndarray  # w of each live entry
    use_left: np.ndarray  # (N, N-1) bool: edge taken from the left sweep
    lu: object  # LU of R (square) or of R^T R (more paths than coupling unknowns): LAPACK's or SuperLU's
    square: bool  # R square: the support singles out one dual and one vertex
    R: sp.csr_matrix  # (paths, coupling rows + column sums): W B


def chain_edges(A_T: sp.csr_matrix, b_T: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(chain, left, a, b)``: the support rows (positions in ``A_T``) kept as chain edges, the
    flat index of each one's left entry and its coefficients there and at the right entry.  A row
    is an edge when it has two entries, neighbours in one output row, a zero right-hand side and
    coefficients of opposite signs; the first such row of each pair is kept."""
    nnz = np.diff(A_T.indptr)
    two = np.flatnonzero((nnz == 2) & (b_T == 0))
    first, second = A_T.indptr[two], A_T.indptr[two] + 1
    p, q = A_T.indices[first], A_T.indices[second]
    cp, cq = A_T.data[first], A_T.data[second]
    swap = q < p
    left = np.where(swap, q, p)
    a, b = np.where(swap, cq, cp), np.where(swap, cp, cq)
    ok = (np.abs(p - q) == 1) & (left % N != N - 1) & (a * b < 0)
    two, left, a, b = two[ok], left[ok], a[ok], b[ok]
    _, keep = np.unique(left, return_index=True)
    return two[keep], left[keep], a[keep], b[keep]


def _null_vectors(edge: np.ndarray, a: np.ndarray, b: np.ndarray, live: np.ndarray):
    """``(comp, weight, peak)`` of the live entries: the path each lies on, its left null vector
    (largest entry 1 on each path) and the flat index of each path's largest entry."""
    N = edge.shape[0]
    ratio = np.where(edge, np.log(np.abs(a / np.where(edge, b, 1.0))), 0.0)
    lw = np.concatenate([np.zeros((N, 1)), np.cumsum(ratio, axis=1)], axis=1).ravel()
    start = np.ones((N, N), dtype=bool)
    start[:, 1:] = ~edge
    start = start.ravel()[live]
    lw = lw[live]
    comp = np.cumsum(start) - 1
    begins = np.flatnonzero(start)
    top = np.maximum.reduceat(lw, begins)
    weight = np.exp(lw - top[comp])
    order = np.lexsort((-weight, comp))  # per component, its largest w first
    peak = np.flatnonzero(live)[order[np.searchsorted(comp[order], np.arange(begins.size))]]
    return comp, weight, peak


def build(A_T: sp.csr_matrix, b_T: np.ndarray, A_sums: sp.csr_matrix, live: np.ndarray,
          dense_max_bytes: int) -> ChainSystem:
    """The eliminated system of support rows ``A_T`` (right-hand sides ``b_T``) and column sums
    ``A_sums`` on the live entries ``live`` (flat, ``N*N``), with the LU of ``R`` when it is square,
    else of ``R^T R``: dense where ``R`` as a dense array has at most ``dense_max_bytes``, else sparse
    (module docstring).  Raises ``ValueError`` when ``R`` has more columns than rows (more
    coupling unknowns than conditions: the support is too large to single out a dual) or is exactly
    singular."""
    N = A_sums.shape[0]
    chain, left, ca, cb = chain_edges(A_T, b_T, N)
    ei, ej = np.divmod(left, N)
    edge = np.zeros((N, N - 1), dtype=bool)
    edge[ei, ej] = True
    a, b, edge_row = np.ones((N, N - 1)), np.zeros((N, N - 1)), np.zeros((N, N - 1), dtype=np.int64)
    a[ei, ej], b[ei, ej], edge_row[ei, ej] = ca, cb, np.arange(chain.size)
    is_edge = np.zeros(A_T.shape[0], dtype=bool)
    is_edge[chain] = True
    coupling = np.flatnonzero(~is_edge)
    comp, weight, peak = _null_vectors(edge, a, b, live)
    idx = np.flatnonzero(live)
    B = sp.hstack([A_T[coupling].T, A_sums.T], format="csr")[idx]
    ncomp = int(comp.max()) + 1
    W = sp.csr_matrix((weight, (comp, np.arange(idx.size))), shape=(ncomp, idx.size))
    R = _path_sums(comp, weight, ncomp, B)
    flat = np.full(N * N, -1)
    flat[idx] = comp
    owner = flat.reshape(N, N)[:, :-1]  # the component of each edge (its left entry's)
    position = np.arange(N * N).reshape(N, N)[:, :-1]
    use_left = position < peak[np.maximum(owner, 0)]
    square = R.shape[0] == R.shape[1]
    if R.shape[0] < R.shape[1]:
        raise ValueError(f"support has {R.shape[1] - R.shape[0]:+d} coupling rows against the paths' conditions")
    lu = _factor(R, square, dense=8 * R.shape[0] * R.shape[1] <= dense_max_bytes)
    return ChainSystem(N, live, chain, edge, a, b, edge_row, coupling, B, W, comp, weight, use_left, lu, square, R)


def _factor(R: sp.csr_matrix, square: bool, dense: bool):
    """The LU of ``R`` (square) or of ``R^T R``: LAPACK's on dense arrays, or SuperLU's.  Raises
    ``ValueError`` where the matrix factorised is exactly singular (a zero pivot)."""
    if not dense:
        try:
            return spla.splu((R if square else R.T @ R).tocsc())
        except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
            raise ValueError(f"the paths' conditions are singular ({exc})") from None
    full = R.toarray()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", la.LinAlgWarning)  # a zero pivot: refused just below
        lu = la.lu_factor(full if square else full.T @ full, check_finite=False)
    if not np.all(np.diag(lu[0])):
        raise ValueError("the paths' conditions are singular (a zero pivot)")
    return lu


def _path_sums(comp: np.ndarray, weight: np.ndarray, ncomp: int, B: sp.spmatrix) -> sp.csr_matrix:
    """``W B``: each column of ``B`` (live entries x unknowns) summed along every path with the
    path's null vector, entry by entry (a sparse product is much slower here)."""
    entries = B.tocoo()
    return sp.csr_matrix((weight[entries.row] * entries.data, (comp[entries.row], entries.col)),
                         shape=(ncomp, B.shape[1]))


def path_conditions(system: ChainSystem, rows: sp.csr_matrix) -> sp.csr_matrix:
    """The columns of ``R`` that the constraint rows ``rows`` (over all ``N*N`` entries) would add
    as coupling unknowns: each row's coefficients on the live entries summed along every path."""
    return _path_sums(system.comp, system.weight, system.R.shape[0], rows[:, system.live].T)


def path_residual(system: ChainSystem, c: np.ndarray) -> np.ndarray:
    """``R s - W c`` per path for the coupling unknowns ``s`` that :func:`solve_dual` takes (exact
    for a square ``R``; the least-squares residual with more paths than coupling unknowns, zero
    when the support is consistent)."""
    rhs = system.W @ c[system.live]
    return system.R @ _coupling_solve(system, rhs, 0) - rhs


def _coupling_solve(system: ChainSystem, rhs: np.ndarray, trans: int) -> np.ndarray:
    """``R s = rhs`` (``trans=0``) or ``R^T t = rhs`` (``trans=1``) by the LU of a square ``R``;
    with more paths than coupling unknowns, ``s`` solves the normal equations (the system is
    consistent at an optimal support, and iterative refinement on the full residual follows)."""
    if not system.square:
        if trans:
            raise ValueError("the vertex is not unique on this support")
        rhs, trans = system.R.T @ rhs, 0
    if isinstance(system.lu, spla.SuperLU):
        return system.lu.solve(rhs, trans="T" if trans else "N")
    return la.lu_solve(system.lu, rhs, trans=trans, check_finite=False)


def _sweeps(system: ChainSystem, t: np.ndarray) -> np.ndarray:
    """The edge multipliers ``(N, N-1)`` that satisfy each entry's equation with residual ``t``
    (``(N, N)``), the paths swept from their ends towards their largest ``w``."""
    N, a, b, edge = system.N, system.a, system.b, system.edge
    left, right = np.zeros((N, N - 1)), np.zeros((N, N - 1))
    prev = np.zeros(N)
    for j in range(N - 1):  # a loop over columns, each step vectorised over the N output rows
        prev = np.where(edge[:, j], (t[:, j] - (b[:, j - 1] * prev if j else 0.0)) / a[:, j], 0.0)
        left[:, j] = prev
    nxt = np.zeros(N)
    for j in range(N - 2, -1, -1):
        after = a[:, j + 1] * nxt if j + 1 < N - 1 else 0.0
        nxt = np.where(edge[:, j], (t[:, j + 1] - after) / np.where(edge[:, j], b[:, j], 1.0), 0.0)
        right[:, j] = nxt
    return np.where(system.use_left, left, right)


def _dual_step(system: ChainSystem, c_live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(edge multipliers (N, N-1), s)`` solving ``M y = c`` for the live right-hand side ``c_live``."""
    s = _coupling_solve(system, system.W @ c_live, 0)
    t = np.zeros(system.N * system.N)
    t[system.live] = c_live - system.B @ s
    return _sweeps(system, t.reshape(system.N, system.N)), s


def _apply(system: ChainSystem, A_T: sp.csr_matrix, A_sums: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """``M y`` on the live entries."""
    k = A_T.shape[0]
    return (A_T.T @ y[:k] + A_sums.T @ y[k:])[system.live]


def solve_dual(system: ChainSystem, A_T: sp.csr_matrix, A_sums: sp.csr_matrix, c: np.ndarray,
               refinements: int) -> np.ndarray:
    """``y`` (support rows, then column sums) with ``M y = c`` on the live entries, with
    ``refinements`` steps of iterative refinement on the full residual."""
    k = A_T.shape[0]
    c_live = c[system.live]
    y = np.zeros(k + system.N)
    residual = c_live
    for _ in range(refinements + 1):
        edges, s = _dual_step(system, residual)
        y[system.chain[system.edge_row[system.edge]]] += edges[system.edge]
        y[system.coupling] += s[: system.coupling.size]
        y[k:] += s[system.coupling.size:]
        residual = c_live - _apply(system, A_T, A_sums, y)
    return y


def solve_vertex(system: ChainSystem, A_T: sp.csr_matrix, A_sums: sp.csr_matrix, b_T: np.ndarray,
                 refinements: int) -> np.ndarray:
    """``x`` (flat ``N*N``, zero off the live entries) with ``M^T x = b``: ``w t`` on each path,
    ``R^T t`` matching the coupling rows and the column sums (module docstring)."""
    gain = np.concatenate([b_T[system.coupling], np.ones(system.N)])
    coupled = sp.vstack([A_T[system.coupling], A_sums], format="csr")[:, np.flatnonzero(system.live)]
    x_live = np.zeros(system.comp.size)
    for _ in range(refinements + 1):
        t = _coupling_solve(system, gain - coupled @ x_live, 1)
        x_live += system.weight * t[system.comp]
    x = np.zeros(system.N * system.N)
    x[system.live] = x_live
    return x
