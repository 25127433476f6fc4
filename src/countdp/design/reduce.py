"""The reduced design LP: the model of :mod:`countdp.design.model` with fewer rows and variables.

The reduced model selects rows of :meth:`countdp.design.model.DesignProblem.lp` (so the row
origins are exact indices of the full model, which the dual mapping of
:mod:`countdp.design.polish` needs) and changes variables.  Every step either keeps the
feasible set exactly, or is an exact change of variables, so the optimal value is unchanged.

Reductions (each recorded in ``Design.extra["reductions"]``):

1. **Closed forms** (no LP at all, where a theorem gives the optimum): in
   :mod:`countdp.design.strategies.closed_form`.

2. **Implied constraints dropped** (the feasible set is unchanged; ``x >= 0`` is a bound):

   * RM => RH: ``P[i,i] - P[i,j]`` is a telescoping sum of RM rows, so every RH row is a
     non-negative combination of RM rows.  Likewise CM => CH.
   * CH => WH: summing ``P[j,j] >= P[i,j]`` over ``i`` gives ``(n+1) P[j,j] >= 1``.
   * RM halves the DP rows.  Left of the diagonal (``j+1 <= i``) RM gives
     ``P[i,j+1] >= P[i,j]``, hence ``P[i,j+1] >= P[i,j] >= alpha P[i,j]`` (``P >= 0``,
     ``alpha < 1``): the DP row ``P[i,j+1] >= alpha P[i,j]`` is implied.  Right of the diagonal
     (``j >= i``) RM gives ``P[i,j] >= P[i,j+1] >= alpha P[i,j+1]``: the DP row
     ``P[i,j] >= alpha P[i,j+1]`` is implied.  Only the rows bounding the entry *farther* from
     the diagonal from below (``far >= alpha near``) remain.

3. **Symmetry folded** (only when ``S`` is requested): the feasible set lies in
   ``{x : P[i,j] = P[n-i,n-j]}``, parametrised exactly by one variable per orbit
   ``{k, N*N-1-k}``: ``x = E y``.  Substituting gives ``(A E) y >= b`` and cost ``E^T c``,
   for *any* objective and weights (it is a change of variables on the feasible set, not the
   Theorem 1 argument, so it needs S requested but not a symmetric objective).  A row and its
   mirror image become identical and are dropped, and the S equalities become ``0 = 0``.

4. **Clean-up**: rows with one non-zero become variable bounds (WH's ``P[i,i] >= 1/N``, the
   DP rows whose two entries fold into one orbit), empty rows are dropped after checking
   them, exact duplicate rows are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignProblem
from countdp.design.polish import full_dual
from countdp.design.reductions.chain import Reduction


@dataclass
class ReducedLP:
    """``min cost @ y`` s.t. ``row_lower <= A y <= row_upper``, ``col_lower <= y <= col_upper``.

    ``expand`` maps ``y`` back to ``x = P.ravel()`` (plus the minimax variable, if any, as the
    last entry), so ``x = expand @ y``.  ``row_origin[r]`` is the row of the full model of
    :meth:`countdp.design.model.DesignProblem.lp` (inequalities first, then equalities) that row
    ``r`` comes from; ``singletons`` holds the rows turned into bounds (``var``, ``coef``,
    ``lo``, ``hi``, ``origin``); ``problem`` the model's definition; ``folded`` whether
    symmetry was folded.
    """

    cost: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    expand: sp.csr_matrix
    n: int
    reductions: list[str] = field(default_factory=list)
    full_rows: int = 0  # rows of the plain formulation (with x >= 0 as rows)
    full_cols: int = 0
    row_origin: np.ndarray | None = None
    singletons: dict | None = None
    problem: DesignProblem | None = None
    folded: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape


def dp_rows_kept(n: int, row_monotone: bool) -> np.ndarray:
    """Indices of the DP rows not implied by RM (module docstring, item 2): all without RM."""
    N = n + 1
    if not row_monotone:
        return np.arange(2 * N * n)
    i, j = np.divmod(np.arange(N * n), n)  # rows of each block: row i, pair (j, j+1)
    keep_forward = j < i  # P[i,j] >= a P[i,j+1]: implied by RM when j >= i
    keep_backward = j >= i  # P[i,j+1] >= a P[i,j]: implied by RM when j+1 <= i
    return np.flatnonzero(np.concatenate([keep_forward, keep_backward]))


def implied_drops(properties: tuple[str, ...]) -> tuple[str, ...]:
    """Requested properties whose rows are implied by other requested ones (RH, CH, WH)."""
    props = set(properties)
    drops = []
    if "RH" in props and "RM" in props:
        drops.append("RH")
    if "CH" in props and "CM" in props:
        drops.append("CH")
    if "WH" in props and ({"CH", "CM"} & props):
        drops.append("WH")
    return tuple(drops)


def dedup_rows(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row ``(A[r], lo[r], hi[r])``, in order (sorts
    ``A``'s indices in place: rows are compared entry by entry)."""
    A.sort_indices()
    nnz = np.diff(A.indptr)
    keep = []
    for k in np.unique(nnz):
        rows = np.flatnonzero(nnz == k)
        if k == 0:
            keep.append(rows[:1])
            continue
        pos = A.indptr[rows][:, None] + np.arange(k)[None, :]
        key = np.hstack([A.indices[pos].astype(float), A.data[pos], lo[rows, None], hi[rows, None]])
        _, first = np.unique(key, axis=0, return_index=True)
        keep.append(rows[np.sort(first)])
    return np.sort(np.concatenate(keep)) if keep else np.zeros(0, int)




def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijection of uint64 in which every input bit affects every output bit."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def row_hashes(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every row ``(A[r], lo[r], hi[r])`` from its exact bits: the sum of a mixed
    hash of each entry ``(column, value)``, mixed with the bounds.  Equal rows hash equal;
    different rows collide with probability ~2^-64 (a plain weighted sum of the column indices
    collided on rows with equal index sums)."""
    nnz = np.diff(A.indptr)
    h = np.zeros(A.shape[0], np.uint64)
    row = np.repeat(np.arange(A.shape[0]), nnz)
    lo, hi = np.ascontiguousarray(lo, float), np.ascontiguousarray(hi, float)
    with np.errstate(over="ignore"):
        entry = _mix64(_mix64(A.indices.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)) ^ A.data.view(np.uint64))
        np.add.at(h, row, entry)
        h = _mix64(h ^ _mix64(lo.view(np.uint64) + np.uint64(1))) ^ _mix64(hi.view(np.uint64) + np.uint64(2))
        return _mix64(h + nnz.astype(np.uint64))


def _kept_rows(problem: DesignProblem, fold: bool, drop_implied: bool) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(kept_ub, kept_eq, reductions)``: the rows of the full model kept (module docstring, 2-3)."""
    full = problem.lp()
    reductions: list[str] = []
    drops = implied_drops(problem.properties) if drop_implied else ()
    if drops:
        reductions.append("implied:" + ",".join(drops))
    rm = drop_implied and "RM" in problem.properties
    if rm:
        reductions.append("dp-halved-by-RM")
    selected = {"ub": np.ones(full.b_ub.size, bool), "eq": np.ones(full.b_eq.size, bool)}
    dp_kind, dp_block = problem.blocks["dp"]
    selected[dp_kind][dp_block] = False
    selected[dp_kind][dp_block.start + dp_rows_kept(problem.n, rm)] = True
    for name in drops + (("S",) if fold else ()):
        kind, block = problem.blocks[name]
        selected[kind][block] = False
    return np.flatnonzero(selected["ub"]), np.flatnonzero(selected["eq"]), reductions


def _change_of_variables(size: int, fold: bool, extra_cols: int) -> tuple[sp.csr_matrix, int]:
    """``(E, m)``: ``x = E y`` with one variable per mirror orbit when ``fold`` (else the identity),
    the minimax variable appended when ``extra_cols``; ``m`` the entries' variables."""
    if fold:
        flat = np.arange(size)
        rep = np.minimum(flat, size - 1 - flat)
        _, orbit = np.unique(rep, return_inverse=True)
        m = int(orbit.max()) + 1
        E = sp.csr_matrix((np.ones(size), (flat, orbit)), shape=(size, m))
    else:
        m = size
        E = sp.identity(size, format="csr")
    if extra_cols:
        E = sp.block_diag([E, sp.identity(1)], format="csr")
    return E, m


def _singletons_to_bounds(A: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, origin: np.ndarray,
                          col_lo: np.ndarray, col_hi: np.ndarray) -> tuple[dict, np.ndarray]:
    """Rows of one non-zero turned into the bounds ``col_lo``, ``col_hi`` (updated in place), after
    checking the empty rows: ``(singletons, multi)``, the record of the rows turned into bounds and
    the rows of two or more non-zeros."""
    nnz = np.diff(A.indptr)
    empty = np.flatnonzero(nnz == 0)
    if np.any(lo[empty] > 1e-12) or np.any(hi[empty] < -1e-12):
        raise ValueError("reduced LP has an infeasible empty row")  # pragma: no cover - cannot happen
    single = np.flatnonzero(nnz == 1)
    var = A.indices[A.indptr[single]]
    coef = A.data[A.indptr[single]]
    if single.size:
        low, high = lo[single] / coef, hi[single] / coef
        low, high = np.where(coef > 0, low, high), np.where(coef > 0, high, low)
        np.maximum.at(col_lo, var, low)
        np.minimum.at(col_hi, var, high)
    singletons = {"var": var, "coef": coef, "lo": lo[single], "hi": hi[single], "origin": origin[single]}
    return singletons, np.flatnonzero(nnz >= 2)


def build_reduced_lp(n: int, alpha: float, properties: object = (), objective: object = "L0",
                     weights: np.ndarray | None = None, aggregate: str = "sum",
                     fold_symmetry: bool = True, drop_implied: bool = True) -> ReducedLP:
    """The design LP of :class:`countdp.design.model.DesignProblem`, reduced (module docstring, 2-4)."""
    problem = DesignProblem(n, alpha, properties, objective, weights, aggregate)
    full = problem.lp()
    size = (n + 1) * (n + 1)
    fold = fold_symmetry and "S" in problem.properties
    kept_ub, kept_eq, reductions = _kept_rows(problem, fold, drop_implied)
    origin = np.concatenate([kept_ub, full.b_ub.size + kept_eq])
    A_ub, b_ub, A_eq, b_eq = full.A_ub[kept_ub], full.b_ub[kept_ub], full.A_eq[kept_eq], full.b_eq[kept_eq]
    extra_cols = 1 if aggregate == "max" else 0
    E, m = _change_of_variables(size, fold, extra_cols)
    if fold:
        reductions.append("symmetry-folded")
    A = sp.vstack([A_ub, A_eq], format="csr") @ E
    A = A.tocsr()
    A.sum_duplicates()
    A.data[np.abs(A.data) < 1e-15] = 0.0
    A.eliminate_zeros()
    lo = np.concatenate([b_ub, b_eq])
    hi = np.concatenate([np.full(b_ub.size, np.inf), b_eq])
    cost = E.T @ full.c
    col_lo = np.concatenate([np.zeros(m), np.full(extra_cols, -np.inf)])
    col_hi = np.full(m + extra_cols, np.inf)
    singletons, multi = _singletons_to_bounds(A, lo, hi, origin, col_lo, col_hi)
    if singletons["var"].size:
        reductions.append("singletons-to-bounds")
    A, lo, hi, origin = A[multi], lo[multi], hi[multi], origin[multi]
    keep = dedup_rows(A, lo, hi)
    if keep.size < A.shape[0]:
        reductions.append("duplicate-rows")
    A, lo, hi, origin = A[keep], lo[keep], hi[keep], origin[keep]
    return ReducedLP(cost=np.asarray(cost, float), A=A.tocsr(), row_lower=lo, row_upper=hi,
                     col_lower=col_lo, col_upper=col_hi, expand=E, n=n, reductions=reductions,
                     full_rows=size + full.b_ub.size + full.b_eq.size, full_cols=size + extra_cols,
                     row_origin=origin, singletons=singletons, problem=problem, folded=fold)


@dataclass(frozen=True)
class ReducedInverse:
    """Maps answers on a :class:`ReducedLP` back to the full model it was reduced from."""

    lp: ReducedLP

    def invert_primal(self, y: np.ndarray) -> np.ndarray:
        """The matrix ``P`` of a point ``y`` of the reduced model."""
        N = self.lp.n + 1
        return (self.lp.expand @ y)[: N * N].reshape(N, N)

    def invert_dual(self, row_dual: np.ndarray, col_dual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A dual ``(u, v)`` of the full model from the reduced model's row and column duals
        (:func:`countdp.design.polish.full_dual`)."""
        return full_dual(self.lp, row_dual, col_dual)


class ReduceModel(Reduction):
    """The reductions of this module (implied rows dropped, S folded, singletons as bounds,
    duplicates dropped) as one step: ``apply(problem)`` gives the reduced model and its inverse."""

    def __init__(self, fold_symmetry: bool = True, drop_implied: bool = True):
        self.fold_symmetry, self.drop_implied = fold_symmetry, drop_implied

    def apply(self, problem: DesignProblem) -> tuple[ReducedLP, ReducedInverse]:
        lp = build_reduced_lp(problem.n, problem.alpha, problem.properties, problem.objective, problem.weights,
                              problem.aggregate, self.fold_symmetry, self.drop_implied)
        return lp, ReducedInverse(lp)
