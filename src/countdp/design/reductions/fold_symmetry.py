"""Mirror symmetry of the design LP: fold S in to solve, unfold the dual to prove without it;
or drop S to solve, average the point with its mirror image to answer with it.

The mirror ``P[i, j] -> P[n-i, n-j]`` maps every property of the paper to itself and every
objective here (each loss depends on ``|i - j|``) to itself; with weights that are symmetric
too (``w[j] = w[n-j]``, e.g. uniform), Theorem 1 says the LP with ``S`` added has the same
optimum as the LP without it.  The folded LP has half the variables, and its optimum is unique
more often (the LP without S is degenerate along the mirror), which is what a basis guess read
off an interior point needs.

The folded LP's dual is not a dual of the LP without S (it has multipliers for the S rows).
:func:`unfolded_dual` drops them and averages the rest with its mirror image: if ``(u, v, w)``
is dual feasible with S, then for each orbit ``{k, k'}`` the reduced costs without S satisfy
``r(k) >= w`` and ``r(k') >= -w``; averaging ``(u, v)`` with its mirror image gives both
entries the reduced cost ``(r(k) + r(k')) / 2 >= 0``, and leaves the dual objective unchanged
(the right-hand sides are mirror invariant).  The row permutation is found by hashing each row's
entries exactly; the independent check of :mod:`countdp.design.optimality` decides whether the
result proves anything, so a wrong permutation can only fail to prove.

The other way round (:class:`DropS`): a point of the LP without S, averaged with its mirror
image (:func:`symmetrize`), holds S and is as good (the mirror maps the LP to itself); a dual of
the LP without S, with S's rows given 0, is a dual of the LP with S (which only adds rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from countdp.design.dual_repair import prove_dual
from countdp.design.model import DesignLP, DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.polish import full_dual
from countdp.design.reductions.chain import Reduction
from countdp.design.settings import SolverSettings

SYMMETRIC_PROPERTIES = {"RH", "RM", "CH", "CM", "F", "WH", "S"}
"""Properties mapped to themselves by the mirror (all seven of the paper)."""

HASH_SEED = 20181
"""Seed of the random column weights hashing each row in :func:`mirror_rows`."""

LEAST_SQUARES_TOL = 1e-12
"""Relative residual up to which :func:`least_squares_mirrored` accepts its solution as exact."""

FOLDED = "S folded without S requested (Theorem 1)"
"""The entry of ``extra["reductions"]`` of a design solved with S folded in and proven without it."""

SYMMETRIZED = "solved without S, averaged with its mirror image"
"""The entry of ``extra["reductions"]`` of a design with S answered by the LP without S, symmetrized."""

UNFOLDED_DUAL = "the S-folded model's, mirrored and averaged"
"""The ``dual`` recorded in the certificate of a folded design."""

PADDED_DUAL = "the LP's without S, S's rows given 0"
"""The ``dual`` recorded in the certificate of a symmetrized design."""

NOT_CLOSED = "rows not closed under the mirror"
"""The reason recorded when a dual cannot be mirrored."""


def mirror_symmetric(problem: DesignProblem) -> bool:
    """Whether the mirror maps the LP to itself: properties, weights and objective."""
    w = problem.prior
    return set(problem.properties) <= SYMMETRIC_PROPERTIES and bool(np.array_equal(w, w[::-1]))


def mirror_columns(columns: int, size: int) -> np.ndarray:
    """The mirror as a column permutation: the first ``size`` (``P.ravel()``) reversed, the rest fixed."""
    flip = np.arange(columns)
    flip[:size] = size - 1 - flip[:size]
    return flip


def mirror_rows(A: sp.csr_matrix, b: np.ndarray, size: int, equalities: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """``(s, sign)``: the mirror image of row ``r`` is ``sign[r]`` times row ``s[r]`` (with the
    right-hand side; ``s`` a permutation; the first ``size`` columns are ``P.ravel()``, reversed
    by the mirror, later ones fixed).  Only equalities may match with ``sign = -1``.  ``None``
    when the rows are not closed under the mirror.  Rows are compared by exact hashes of their
    entries (a collision can only make the certificate fail)."""
    A = sp.csr_matrix(A)
    if A.shape[0] == 0:
        return np.zeros(0, int), np.ones(0)
    if np.any(np.diff(A.indptr) == 0):
        return None
    flip = mirror_columns(A.shape[1], size)
    h = np.random.default_rng(HASH_SEED).integers(1, 2**62, size=A.shape[1] + 1, dtype=np.uint64)
    data_codes = np.unique(np.concatenate([A.data, -A.data]), return_inverse=True)[1].astype(np.uint64) + np.uint64(1)
    rhs_codes = np.unique(np.concatenate([b, -b]), return_inverse=True)[1].astype(np.uint64) * h[-1]
    k, m = A.data.size, b.size

    def keys(columns: np.ndarray, negate: bool) -> np.ndarray:
        values = data_codes[k:] if negate else data_codes[:k]
        with np.errstate(over="ignore"):
            return np.add.reduceat(h[columns] * values, A.indptr[:-1]) + (rhs_codes[m:] if negate else rhs_codes[:m])

    own, mirrored = keys(A.indices, False), keys(flip[A.indices], False)
    if equalities:  # a row and its negation are the same equality: compare the smaller key
        own_neg, mirrored_neg = keys(A.indices, True), keys(flip[A.indices], True)
        own_key, mirrored_key = np.minimum(own, own_neg), np.minimum(mirrored, mirrored_neg)
    else:
        own_key, mirrored_key = own, mirrored
    by_own, by_mirrored = np.argsort(own_key, kind="stable"), np.argsort(mirrored_key, kind="stable")
    if not np.array_equal(own_key[by_own], mirrored_key[by_mirrored]):
        return None
    s = np.empty(m, int)
    s[by_mirrored] = by_own
    return s, np.where(mirrored == own[s], 1.0, -1.0)


def mirrored(y: np.ndarray, s: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """The multipliers of the mirrored LP: row ``s[r]`` gets ``sign[r] * y[r]`` (``(s, sign)`` from
    :func:`mirror_rows`)."""
    out = np.empty_like(y)
    out[s] = sign * y
    return out


def mirrored_multipliers(problem: DesignProblem, u: np.ndarray) -> np.ndarray:
    """The multipliers ``u`` of ``problem``'s inequality rows, each moved to its mirror image's
    row (``u`` itself when the rows are not closed under the mirror)."""
    full = problem.lp()
    found = mirror_rows(full.A_ub, full.b_ub, problem.size, equalities=False)
    return u if found is None else mirrored(u, *found)


def least_squares_mirrored(A: sp.csr_matrix, b: np.ndarray, v: np.ndarray, size: int) -> np.ndarray | None:
    """Mirrored multipliers of equality rows whose *span* is mirror invariant but whose rows are
    not (F is written ``P[i, i] = P[0, 0]``): the least-squares solution ``y`` of
    ``A^T y = mirror(A^T v)``, or ``None`` unless it is exact to rounding and keeps ``b @ y``."""
    g = (A.T @ v)[mirror_columns(A.shape[1], size)]
    try:
        y = spla.splu(sp.csc_matrix(A @ A.T)).solve(A @ g)
    except RuntimeError:  # singular: dependent equality rows
        return None
    scale = max(1.0, float(np.abs(g).max()))
    if (np.abs(A.T @ y - g).max() > LEAST_SQUARES_TOL * scale
            or abs(b @ y - b @ v) > LEAST_SQUARES_TOL * max(1.0, abs(b @ v))):
        return None
    return y


def unfolded_dual(folded: DesignProblem, plain: DesignLP, u: np.ndarray,
                  v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The dual ``(u, v)`` of ``folded`` (the LP with S) as a dual of ``plain`` (the same LP
    without S): S multipliers dropped, the rest averaged with its mirror image (module
    docstring).  ``None`` when the rows are not closed under the mirror."""
    kind, rows = folded.blocks["S"]
    keep = np.ones(v.size, bool)
    keep[rows] = False
    v = v[keep]
    if kind != "eq" or v.size != plain.b_eq.size or u.size != plain.b_ub.size:
        return None
    ub = mirror_rows(plain.A_ub, plain.b_ub, folded.size, equalities=False)
    if ub is None:
        return None
    eq = mirror_rows(plain.A_eq, plain.b_eq, folded.size, equalities=True)
    v_mirrored = mirrored(v, *eq) if eq is not None else least_squares_mirrored(plain.A_eq, plain.b_eq, v,
                                                                                folded.size)
    if v_mirrored is None:
        return None
    return (u + mirrored(u, *ub)) / 2.0, (v + v_mirrored) / 2.0


def symmetrize(P: np.ndarray) -> np.ndarray:
    """``P`` averaged with its mirror image ``P[n-i, n-j]``: it holds S, and is as good as ``P``
    on a mirror-symmetric LP."""
    return (P + P[::-1, ::-1]) / 2.0


def prove_unfolded(folded_lp, run, P: np.ndarray, plain: DesignProblem, *,
                   settings: SolverSettings) -> dict:
    """The optimality certificate of ``P`` for ``plain`` (no S) from ``run``, a solve of the
    reduced model ``folded_lp`` (with S): :func:`unfolded_dual`, then the independent check (an
    interior point's dual repaired as ``settings`` say, :func:`countdp.design.dual_repair.prove_dual`)."""
    full = plain.lp()
    dual = unfolded_dual(folded_lp.problem, full, *full_dual(folded_lp, run.row_dual, run.col_dual))
    if dual is None:
        return not_proven(NOT_CLOSED)
    return prove_dual(full, plain.point(P), *dual, repair=not run.polished, settings=settings)


def without_s(problem: DesignProblem) -> DesignProblem:
    """``problem`` with S removed from its properties."""
    return DesignProblem(problem.n, problem.alpha, tuple(p for p in problem.properties if p != "S"),
                         problem.objective, problem.weights, problem.aggregate)


def with_s(problem: DesignProblem) -> DesignProblem:
    """``problem`` with S added to its properties."""
    return DesignProblem(problem.n, problem.alpha, (*problem.properties, "S"), problem.objective,
                         problem.weights, problem.aggregate)


@dataclass(frozen=True)
class Unfold:
    """The way back from the LP with S folded in (``folded``) to the LP without it (``plain``)."""

    folded: DesignProblem
    plain: DesignProblem

    def invert_dual(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """A dual of ``folded``'s full LP as one of ``plain``'s (:func:`unfolded_dual`)."""
        return unfolded_dual(self.folded, self.plain.lp(), u, v)

    def invert_primal(self, P: np.ndarray) -> np.ndarray:
        """A point of the LP with S is one of the LP without it (S only adds rows)."""
        return P


class FoldS(Reduction):
    """Add S to a mirror-symmetric LP (Theorem 1: the same optimum, half the variables once folded)."""

    refusal = "not mirror symmetric"

    def accepts(self, problem: DesignProblem) -> bool:
        """A mirror-symmetric LP without S."""
        return "S" not in problem.properties and mirror_symmetric(problem)

    def apply(self, problem: DesignProblem) -> tuple[DesignProblem, Unfold]:
        """``problem`` with S added, and the inverse that turns its dual into one of ``problem``."""
        folded = with_s(problem)
        return folded, Unfold(folded, problem)


@dataclass(frozen=True)
class Symmetrize:
    """The way back from the LP without S (``plain``) to the LP with it (``target``)."""

    target: DesignProblem
    plain: DesignProblem

    def invert_dual(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A dual of ``plain``'s full LP as one of ``target``'s, S's rows given 0."""
        return self.target.dual_from(self.plain, u, v)

    def invert_primal(self, P: np.ndarray) -> np.ndarray:
        """A point of ``plain`` as one of ``target`` (:func:`symmetrize`)."""
        return symmetrize(P)


class DropS(Reduction):
    """Remove S from a mirror-symmetric LP that asks for it: solve without, symmetrize the answer."""

    refusal = "not mirror symmetric"

    def accepts(self, problem: DesignProblem) -> bool:
        """A mirror-symmetric LP with S."""
        return "S" in problem.properties and mirror_symmetric(problem)

    def apply(self, problem: DesignProblem) -> tuple[DesignProblem, Symmetrize]:
        """``problem`` without S, and the inverse that maps its answers back to ``problem``."""
        plain = without_s(problem)
        return plain, Symmetrize(problem, plain)
