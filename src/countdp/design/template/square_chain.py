"""L1 and L2 at large ``n`` with wide corners: the square-corner primal of the relaxed LP, its dual by
chain elimination on the full LP, and the certificate on the full target LP.

**Relaxed.**  As for the relaxed template (:mod:`countdp.design.template.relaxed_proof`): CM becomes
CH, S and WH are dropped.  What is left (RM, RH, CH, the column sums, a uniform prior) is mirror
symmetric.

**Primal.**  The relaxed LP restricted to the square-corner form
(:func:`countdp.design.template.square_proof.square_primal`): a free ``(W + 1) x (W + 1)`` square at
each corner, mirror images, their rows and columns going on as geometric tails, GM in the middle.
Its unknowns grow as ``W^2``, where the relaxed template's LP grows as ``9 W^2`` in unknowns and far
faster in simplex work (its vertex took 20 s at ``W = 56`` for L2 and minutes wider).  The square is
first trimmed to the cells an L1 or L2 optimum leaves free (:mod:`countdp.design.template.square_trim`:
about a sixth of them at ``alpha = 0.97``), then tried whole where it fits.  The solvers of
:attr:`~ChainTuning.square_chain_primals` are tried in turn: HiGHS's interior point with crossover
and the exact vertex of its basis, then Clarabel's interior point.

**Dual.**  Every entry of an L1 or L2 optimum is positive, so every reduced cost is zero.  In each
output row the DP rows tight at the primal (slack at most a fraction ``tol`` of their terms' size)
join adjacent entries into paths, and the chain elimination of
:mod:`countdp.design.template.chain_support` solves the multipliers along each path from the column
sums and the coupling rows.  Only DP rows form the paths: an RM row tight where two entries are
equal may carry no multiplier at the optimum, and a path through it would force one.  The other
tight rows (RM, RH, CH) are the candidates of the completion
(:mod:`countdp.design.template.support_completion`), which adds those the path conditions need with
non-negative multipliers.  The tolerances of :attr:`~ChainTuning.square_chain_tight_tols` are tried
in turn, since an interior point's nearly tight rows are told from the tight ones only within its
accuracy.

**Proof.**  The chain's vertex and dual, CH's multipliers spread over the CM rows and S's and WH's set
to 0, are checked on the target's full LP by the independent weak-duality routine
(:func:`countdp.design.template.proof.certify_expansion`).  Where the completed support singles out
no vertex (more path conditions than unknowns), the primal itself is checked with the chain's
least-squares dual.  Nothing above is trusted: a wrong guess
leaves the gap open, and the next strategy runs.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from countdp.design.model import DesignProblem
from countdp.design.optimality import PRIMAL_TOL, not_proven
from countdp.design.settings import SolverSettings, running
from countdp.design.template.proof import certify_expansion
from countdp.design.template.relaxed_proof import chain_dual, cm_broken_by, kept_problem, relaxed_problem
from countdp.design.template.square_proof import square_primal


def dp_rows(A_ub: sp.spmatrix, N: int, alpha: float) -> np.ndarray:
    """Which inequality rows are DP rows: two entries of one output row, coefficients ``1`` and ``-alpha``."""
    A = sp.csr_matrix(A_ub)
    A.sort_indices()
    count = np.diff(A.indptr)
    two = count == 2
    first, last = A.indices[A.indptr[:-1][two]] // N, A.indices[A.indptr[1:][two] - 1] // N
    smallest = np.minimum(np.abs(A.data[A.indptr[:-1][two]]), np.abs(A.data[A.indptr[:-1][two] + 1]))
    mask = np.zeros(A.shape[0], dtype=bool)
    mask[np.flatnonzero(two)] = (first == last) & (np.abs(smallest - alpha) <= 1e-12 * max(alpha, 1e-300))
    return mask


def tight_rows(full, x: np.ndarray, tol: float) -> np.ndarray:
    """The inequality rows of ``full`` whose slack at ``x`` is at most ``tol`` of their terms' size."""
    slack = full.A_ub @ x - full.b_ub
    size = abs(full.A_ub) @ np.abs(x) + np.abs(full.b_ub)
    return np.flatnonzero(slack <= tol * size)


def relaxed_square_primal(target: DesignProblem, W: int, settings: SolverSettings, vertex: bool = False,
                          trim: tuple[float, float, float] | None = None) -> tuple:
    """``(problem, full, x, info)``: ``target``'s relaxed problem (module docstring), its LP, and
    the square-corner primal of width ``W`` on it expanded to the full size (flat ``N * N``; ``None``
    with the reason in ``info`` when the solver does not solve it); ``vertex`` and ``trim`` as for
    :func:`~countdp.design.template.square_proof.square_primal`."""
    return square_primal_on(relaxed_problem(target), W, settings, vertex, trim)


def square_design(target: DesignProblem, W: int, settings: SolverSettings) -> tuple:
    """``(problem, full, x, info)`` as :func:`relaxed_square_primal` by HiGHS's vertex, again on the LP
    with CM kept where the relaxed vertex breaks ``target``'s CM by more than rounding
    (``PRIMAL_TOL / 100``): a design to offer unproven, which must hold CM within ``PRIMAL_TOL``
    (UM, the repair, holds CM with equality and cannot mend it); at once where :func:`kept_first`."""
    if kept_first(target, settings):
        return square_primal_on(kept_problem(target), W, settings, vertex=True)
    problem, full, x, info = relaxed_square_primal(target, W, settings, vertex=True)
    if x is not None and cm_broken_by(target, problem, x) > PRIMAL_TOL / 100:
        problem, full, x, info = square_primal_on(kept_problem(target), W, settings, vertex=True)
    return problem, full, x, info


def square_primal_on(problem: DesignProblem, W: int, settings: SolverSettings, vertex: bool = False,
                     trim: tuple[float, float, float] | None = None) -> tuple:
    """``(problem, full, x, info)`` of :func:`relaxed_square_primal` on the LP of ``problem`` as given,
    the square trimmed by ``trim`` (:mod:`countdp.design.template.square_trim`) where given."""
    full = problem.lp()
    x, info = square_primal(full, problem.n, W, problem.alpha, settings, vertex, trim)
    return problem, full, x, info


def square_forms(W: int, settings: SolverSettings) -> tuple:
    """The square corners' forms tried in turn at width ``W``: the trimmed square
    (:attr:`~ChainTuning.square_chain_trim`, where set), then the full square where its ``(W + 1)^2 + 1``
    unknowns are at most :attr:`~ChainTuning.square_chain_max_unknowns`."""
    tuning = settings.chains
    full = (None,) if (W + 1) ** 2 + 1 <= tuning.square_chain_max_unknowns else ()
    return ((tuning.square_chain_trim,) if tuning.square_chain_trim is not None else ()) + full


def breaks_cm(target: DesignProblem, problem: DesignProblem, x: np.ndarray, settings: SolverSettings) -> bool:
    """Whether ``x``, solved on ``problem`` (CM relaxed to CH), breaks ``target``'s CM by more than
    :attr:`~ChainTuning.cm_break_tol` of its largest entry: the relaxation's optimum is then not the
    target's, and no dual of the relaxation proves it."""
    return cm_broken_by(target, problem, x) > settings.chains.cm_break_tol * float(np.max(x))


def prove_square_chain(target: DesignProblem, W: int, *, settings: SolverSettings) -> dict:
    """The square-corner primal of width ``W`` of ``target``'s relaxed LP, its chain dual, and the
    certificate on ``target``'s full LP (module docstring): for each form of :func:`square_forms`
    (the trimmed square first), each solver of :attr:`~ChainTuning.square_chain_primals` in turn
    until it closes; where the relaxed primal breaks CM (RH+CM at L1, alpha 0.95), on the LP with CM
    kept (:func:`with_primal`).  Returns the certificate of
    :func:`countdp.design.template.proof.certify_expansion` (with the ``"matrix"`` proven and the
    stage ``"seconds"``), or ``{"certified": False, "reason": ...}``."""
    unknown = [how for how in settings.chains.square_chain_primals if how not in PRIMALS]
    if unknown:
        raise ValueError(f"unknown square-corner primal {unknown[0]!r}; allowed: {', '.join(PRIMALS)}")
    began, seconds = time.perf_counter(), {}
    result = not_proven(f"W={W}: no primal tried")
    tries = [(trim, how) for trim in square_forms(W, settings) for how in settings.chains.square_chain_primals]
    for trim, how in tries:
        started = time.perf_counter()
        result = with_primal(target, W, how, settings, trim)
        form = "full" if trim is None else "trimmed"
        seconds[f"{form}, {how}: primal, chain and certificate"] = time.perf_counter() - started
        result["solver"] = PRIMALS[how]
        if result.get("certified"):
            break
    seconds["total"] = time.perf_counter() - began
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result


PRIMALS = {"vertex": "HIGHS", "clarabel": "CLARABEL"}
"""The solvers of the square corners' primal (:attr:`~ChainTuning.square_chain_primals`), each with
the solver name an answer records."""


def with_primal(target: DesignProblem, W: int, how: str, settings: SolverSettings,
                trim: tuple[float, float, float] | None = None) -> dict:
    """The square corners on the relaxed LP by the solver ``how`` (trimmed by ``trim`` where given),
    their chain dual and certificate; on the LP with CM kept where the relaxed point breaks
    ``target``'s CM.  A break beyond :data:`~countdp.design.optimality.PRIMAL_TOL` goes there at
    once: the certificate checks the target's rows on the chain's vertex (that point, where the
    primal is a vertex) and would refuse it.  A smaller one above :attr:`~ChainTuning.cm_break_tol`
    of the largest entry goes there once the chain on the relaxation has not closed."""
    why = "the relaxed primal broke CM"
    if kept_first(target, settings):
        why = f"CM with {'+'.join(settings.chains.cm_kept_with)}: the relaxation is skipped"
    else:
        problem, full, x, info = relaxed_square_primal(target, W, settings, how == "vertex", trim)
        if x is None:
            return not_proven(f"W={W}: {info} ({how})")
        info = {**info, "primal_solver": how}
        if cm_broken_by(target, problem, x) <= PRIMAL_TOL:
            result = chain_certificate(target, problem, full, x, W, info, settings)
            if result.get("certified") or not breaks_cm(target, problem, x, settings):
                return result
    running(settings, "the square corners with CM kept")
    kept, full, x, info = square_primal_on(kept_problem(target), W, settings, how == "vertex", trim)
    if x is None:
        return not_proven(f"W={W}: the square corners with CM kept not solved ({how})")
    info.update(primal=f"with CM kept ({why})", primal_solver=how)
    return chain_certificate(target, kept, full, x, W, info, settings)


def kept_first(target: DesignProblem, settings: SolverSettings) -> bool:
    """Whether ``target`` has CM and one of :attr:`~ChainTuning.cm_kept_with`, so that the square corners
    are solved with CM kept at once.  Either way the optimum is the same: the target holds CM, and where the
    relaxed optimum holds CM it is also the optimum with CM kept; only a relaxed solve thrown away is saved."""
    return "CM" in target.properties and any(p in target.properties for p in settings.chains.cm_kept_with)


def chain_certificate(target: DesignProblem, problem: DesignProblem, full, x: np.ndarray, W: int, info: dict,
                      settings: SolverSettings) -> dict:
    """The chain dual from the rows tight at ``x`` (a square-corner primal on ``problem``'s LP
    ``full``), at each tolerance of :attr:`~ChainTuning.square_chain_tight_tols` in turn, and the
    certificate of its vertex on ``target``'s full LP (module docstring): the first that closes, else
    the last tried.  Where the completed support leaves more path conditions than unknowns it singles
    out no vertex; its dual is then the least-squares solution, and ``x`` itself is certified with it
    (a HiGHS vertex holds every row to rounding; complementary slackness with ``x`` is what chose the
    support, so the gap closes where that dual is feasible)."""
    N = target.N
    info = {"template": "square corners, chain dual", "width": W, **info,
            "template_properties": "+".join(problem.properties)}
    is_dp, edges = dp_rows(full.A_ub, N, target.alpha), N * (N - 1)
    closure = target.objective.name in settings.chains.closure_objectives
    result = not_proven(f"W={W}: no tolerance tried")
    for tol in settings.chains.square_chain_tight_tols:
        running(settings, "the square corners' chain dual")
        tight = tight_rows(full, x, tol)
        support, candidates = tight[is_dp[tight]], tight[~is_dp[tight]]
        if edges - support.size > settings.chains.square_chain_max_breaks:
            result = not_proven(f"W={W}, tol={tol:g}: {edges - support.size:,} DP edges not tight, more than "
                                f"{settings.chains.square_chain_max_breaks:,}")
            continue
        try:
            y, vertex = chain_dual(full, support, np.ones(N, dtype=bool), settings, candidates)
        except ValueError as exc:
            result = not_proven(f"W={W}, tol={tol:g}: {exc}")
            continue
        record = {**info, "tight_tol": tol}
        if vertex is None:  # more path conditions than unknowns: the least-squares dual, with the primal itself
            vertex, record["certified_point"] = x, "the primal (the support singles out no vertex)"
        result = certify_expansion(target, vertex.reshape(N, N), y, problem.properties, record, closure_first=closure)
        if not result.get("certified") and vertex is not x:  # a degenerate primal: the chain's vertex may be
            # another one, slightly worse, while the primal itself is optimal under the same dual
            record["certified_point"] = "the primal (the chain's vertex did not close)"
            own = certify_expansion(target, x.reshape(N, N), y, problem.properties, record, closure_first=closure)
            result = own if own.get("certified") else result
        if result.get("certified"):
            break
    return result
