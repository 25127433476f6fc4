"""Mirror symmetry of the design LP: solve with S folded in, prove without it.

The mirror ``P[i, j] -> P[n-i, n-j]`` maps every property of the paper to itself and every
objective here (each loss depends on ``|i - j|``) to itself; with weights that are symmetric
too (``w[j] = w[n-j]``, e.g. uniform), Theorem 1 says the LP with ``S`` added has the same
optimum as the LP without it.  The folded LP has half the variables, and its optimum is unique
more often (the LP without S is degenerate along the mirror), which is what the basis guess
of :func:`countdp.design.backends.guess_basis` needs.

The folded LP's dual is not a dual of the LP without S (it has multipliers for the S rows).
:func:`unfolded_dual` drops them and averages the rest with its mirror image: if ``(u, v, w)``
is dual feasible with S, then for each orbit ``{k, k'}`` the reduced costs without S satisfy
``r(k) >= w`` and ``r(k') >= -w``; averaging ``(u, v)`` with its mirror image gives both
entries the reduced cost ``(r(k) + r(k')) / 2 >= 0``, and leaves the dual objective unchanged
(the right-hand sides are mirror invariant).  The row permutation is found by hashing each row's entries exactly;
the independent check of :mod:`countdp.design.optimality` decides whether the result proves
anything, so a wrong permutation can only fail to prove.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignLP, DesignProblem

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

SYMMETRIZED = "solved without S, averaged with its mirror image"
"""The entry of ``extra["reductions"]`` of a design answered by :func:`symmetrized_design`."""

SYMMETRIC_PROPERTIES = {"RH", "RM", "CH", "CM", "F", "WH", "S"}
"""Properties mapped to themselves by the mirror (all seven of the paper)."""


def mirror_symmetric(problem: DesignProblem) -> bool:
    """Whether the mirror maps the LP to itself: properties, weights and objective."""
    w = problem.prior
    return set(problem.properties) <= SYMMETRIC_PROPERTIES and bool(np.array_equal(w, w[::-1]))


def _mirror_columns(columns: int, size: int) -> np.ndarray:
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
    flip = _mirror_columns(A.shape[1], size)
    h = np.random.default_rng(20181).integers(1, 2**62, size=A.shape[1] + 1, dtype=np.uint64)
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


def _mirrored(y: np.ndarray, s: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """The multipliers of the mirrored LP: row ``s[r]`` gets ``sign[r] * y[r]``."""
    out = np.empty_like(y)
    out[s] = sign * y
    return out


def mirrored_multipliers(problem: DesignProblem, u: np.ndarray) -> np.ndarray:
    """The multipliers ``u`` of ``problem``'s inequality rows, each moved to its mirror image's
    row (``u`` itself when the rows are not closed under the mirror)."""
    full = problem.lp()
    found = mirror_rows(full.A_ub, full.b_ub, problem.size, equalities=False)
    return u if found is None else _mirrored(u, *found)


def unfolded_dual(folded: DesignProblem, plain: DesignLP, u: np.ndarray,
                  v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The dual ``(u, v)`` of ``folded`` (the LP with S) as a dual of ``plain`` (the same LP
    without S): S multipliers dropped, the rest averaged with its mirror image (docstring)."""
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
    v_mirrored = _mirrored(v, *eq) if eq is not None else _solve_mirrored(plain.A_eq, plain.b_eq, v, folded.size)
    if v_mirrored is None:
        return None
    return (u + _mirrored(u, *ub)) / 2.0, (v + v_mirrored) / 2.0


def _solve_mirrored(A: sp.csr_matrix, b: np.ndarray, v: np.ndarray, size: int) -> np.ndarray | None:
    """Mirrored multipliers of equality rows whose *span* is mirror invariant but whose rows are
    not (F is written ``P[i, i] = P[0, 0]``): the least-squares solution ``y`` of
    ``A^T y = mirror(A^T v)``, or ``None`` unless it is exact to rounding and keeps ``b @ y``."""
    import scipy.sparse.linalg as spla

    g = (A.T @ v)[_mirror_columns(A.shape[1], size)]
    try:
        y = spla.splu(sp.csc_matrix(A @ A.T)).solve(A @ g)
    except RuntimeError:  # singular: dependent equality rows
        return None
    scale = max(1.0, float(np.abs(g).max()))
    if np.abs(A.T @ y - g).max() > 1e-12 * scale or abs(b @ y - b @ v) > 1e-12 * max(1.0, abs(b @ v)):
        return None
    return y


def prove_unfolded(folded_lp, run, P: np.ndarray, plain: DesignProblem) -> dict:
    """The optimality certificate of ``P`` for ``plain`` (no S) from ``run``, a solve of the
    reduced model ``folded_lp`` (with S): :func:`unfolded_dual`, then the independent check."""
    from countdp.design.dual_repair import prove_dual
    from countdp.design.polish import full_dual

    full = plain.lp()
    dual = unfolded_dual(folded_lp.problem, full, *full_dual(folded_lp, run.row_dual, run.col_dual))
    if dual is None:
        return {"certified": False, "reason": "rows not closed under the mirror"}
    return prove_dual(full, plain.point(P), *dual, repair=not run.polished)


def folded_design(n: int, alpha: float, props: tuple[str, ...], objective: object, weights: np.ndarray | None,
                  aggregate: str, drop_implied: bool,
                  start: float) -> tuple[object, dict | None]:
    """For a mirror-symmetric LP without S whose solve would be ``guided``, or L0's Clarabel point
    where alpha is too near 1 for a template (:func:`countdp.design.seed.too_near_one`): solve it
    with S folded in (Theorem 1: same optimum, half the variables) and prove the answer on the LP
    without S.  ``(FastResult, None)`` when proven, ``(None, why)`` when tried and not proven,
    ``(None, None)`` when it does not apply (L0 elsewhere, asymmetric weights or properties, a
    small model).  L0 at n = 256, alpha = 0.99, LP with CH: Clarabel took 1.6 s folded, 4.6 s not.

    Where no template applies (:func:`countdp.design.seed.applies`: alpha near 1) only the guided
    methods are tried on the folded model; when neither is proven, the caller solves the LP
    without S, with every fallback.  The cold ones cost more on the folded model than that: LP
    with RM, L1, n = 256, alpha = 0.99, whose folded Clarabel point ended 'AlmostSolved' (not
    proven), took 92 s of cold simplex there (IPX: 73 s), against 6.7 s for the proven point of
    the model without S.  Where a template applies, the cold simplex on the folded model comes
    next: LP with RH, CH and F, L0,1, n = 256, alpha = 0.5, whose Clarabel points end
    'AlmostSolved' folded and not, took 10 s of it folded and 61 s without S."""
    from countdp.design import seed
    from countdp.design.fast import (
        CLARABEL_GUIDED,
        LARGE_METHOD,
        build_reduced_lp,
        choose_method,
        is_zero_one,
        proven_result,
        solve_proven,
    )

    plain = DesignProblem(n, alpha, props, objective, weights, aggregate)
    zero_one = is_zero_one(plain.objective)
    if (zero_one and not seed.too_near_one(n, alpha)) or not mirror_symmetric(plain):
        return None, None
    lp = build_reduced_lp(n, alpha, (*props, "S"), objective, weights, aggregate, True, drop_implied)
    chosen = LARGE_METHOD if zero_one else "guided"
    if choose_method(lp) != chosen:
        return None, None
    build = time.perf_counter() - start
    if zero_one:
        methods = (LARGE_METHOD,)
    else:
        methods = ("guided", CLARABEL_GUIDED) + (("simplex",) if seed.applies(plain) else ())  # see the docstring
    LOG.info("S folded in (same optimum, half the variables): %s rows, proven without S", f"{lp.A.shape[0]:,}")
    try:
        P, used, run, folded_optimality = solve_proven(lp, chosen, methods=methods)
    except RuntimeError as exc:
        return None, {"certified": False, "reason": str(exc)}
    optimality = prove_unfolded(lp, run, P, plain)
    optimality.update(method=used, dual="the S-folded model's, mirrored and averaged")
    if run.guide:
        optimality["guide"] = run.guide
    if run.dp_closure:
        optimality["dp_closure"] = True
    if "attempts" in folded_optimality:
        optimality["attempts"] = folded_optimality["attempts"]
    if not optimality["certified"]:
        return None, {**optimality, "folded_optimality": folded_optimality}
    return proven_result(lp, run, used, build, optimality, ["S folded without S requested (Theorem 1)"]), None


def symmetrized_design(n: int, alpha: float, props: tuple[str, ...], objective: object,
                       weights: np.ndarray | None, aggregate: str, drop_implied: bool,
                       start: float) -> tuple[object, dict | None]:
    """For a mirror-symmetric LP with S requested, whose folded model the guided methods did not
    prove: Clarabel's point of the LP without S (as :func:`countdp.design.backends.run_guided`
    computes it), proven there, averaged with its mirror image and proven on the LP with S.  The
    average is feasible with S and as good (the mirror maps the LP to itself: Theorem 1); the dual
    of the LP without S, with S's rows given 0, is a dual of the LP with S (which only adds rows).
    ``(FastResult, None)`` when proven, ``(None, why)`` when tried and not proven, ``(None, None)``
    when it does not apply.

    Measured: LP with RM and S, L1 and L2, n = 256, alpha = 0.99, whose folded Clarabel point
    ends 'AlmostSolved' (not proven) and whose cold simplex then took minutes: the model without
    S ends 'Solved' and is proven.  Only the point is tried (no template, no simplex), and only
    where no template applies (:func:`countdp.design.seed.applies`: alpha near 1, where Clarabel's
    point answered every design of the n = 256 sweep at alpha = 0.99).  Where one does, its
    entries fall to alpha^n (1e-77 at alpha = 0.5) and Clarabel's point is rarely proven: LP with
    RH, CH, F and S, L0,1, n = 256, alpha = 0.5 ended 'AlmostSolved' there after 15 s, while the
    cold simplex on the folded model, which comes next, answers in 10 s."""
    from countdp.design import seed
    from countdp.design.dual_repair import prove_dual
    from countdp.design.fast import (
        build_reduced_lp,
        choose_method,
        is_zero_one,
        proven_point,
        proven_result,
        vertex_matrix,
    )
    from countdp.design.polish import full_dual
    from countdp.privacy.certify import certify

    target = DesignProblem(n, alpha, props, objective, weights, aggregate)
    if ("S" not in props or is_zero_one(target.objective) or not mirror_symmetric(target)
            or seed.applies(target)):
        return None, None
    lp = build_reduced_lp(n, alpha, tuple(p for p in props if p != "S"), objective, weights, aggregate, True,
                          drop_implied)
    if choose_method(lp) != "guided":
        return None, None
    build = time.perf_counter() - start
    LOG.info("the LP without S, then averaged with its mirror image")
    run, plain_optimality = proven_point(lp, what="without S: ")
    if run is None:
        return None, plain_optimality
    if not plain_optimality["certified"]:
        return None, {**plain_optimality, "reason": "without S: not proven"}
    raw = vertex_matrix(lp, run)
    raw = (raw + raw[::-1, ::-1]) / 2.0
    full = target.lp()
    u, v = target.dual_from(lp.problem, *full_dual(lp, run.row_dual, run.col_dual))
    optimality = prove_dual(full, target.point(certify(raw, alpha)[0]), u, v)
    optimality.update(method="guided", guide=run.guide, dual="the LP's without S, S's rows given 0")
    if run.dp_closure:
        optimality["dp_closure"] = True
    if not optimality["certified"]:
        return None, optimality
    return proven_result(lp, run, "guided", build, optimality, [SYMMETRIZED], raw), None
