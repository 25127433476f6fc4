"""The shared LP sub-solves of the design engine: solve a reduced design LP, polish, prove, fall back.

Every strategy that solves a reduced model (:mod:`countdp.design.reduce`) does it here, through the
:class:`countdp.design.strategy.SolveContext` the planner binds to this module.

**Accuracy and proof** (:func:`solve_proven`).  HiGHS runs on a scaled copy of the model
(:mod:`countdp.design.solvers.scaling`) with its smallest feasibility tolerances; its vertex is
then recomputed exactly from the basis by one sparse LU (:mod:`countdp.design.polish`), which also
gives the duals.  The duals are mapped to the rows of the full model and checked by the
independent weak-duality routine of :mod:`countdp.design.optimality` on the matrix after
:func:`countdp.privacy.certify.certify`; the result is ``extra["optimality"]``.  Where certify's UM
mixture costs more than the gap allows (L2, whose UM loss is ~n^2/6), the vertex's DP closure
(:func:`countdp.design.polish.dp_closure`) is certified and proven instead.  An interior point's
dual that does not close is repaired first (:mod:`countdp.design.dual_repair`).  If the gap does
not close (or a solver fails, e.g. Clarabel's ``AlmostSolved``), the next method of
:data:`FALLBACKS` is tried; an answer no method proves is returned with its certificate marked
not certified and every attempt listed.

The methods: HiGHS dual simplex and HiGHS IPX + crossover (vertices), Clarabel's interior point
(not a vertex), and ``guided``: HiGHS simplex from a basis read off a guide point
(:func:`countdp.design.solvers.guided.run_guided`), the guide being the optimal vertex at a
smaller ``n`` spread out (:mod:`countdp.design.solvers.template_guide`) where that applies, else
Clarabel's point, which is itself offered to the proof and is the answer when proven.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np

from countdp.design.dual_repair import prove_dual
from countdp.design.model import DesignProblem
from countdp.design.optimality import OptimalityProof, not_proven
from countdp.design.policy import choose_method
from countdp.design.polish import certified_and_proven, dp_closure, full_dual
from countdp.design.reduce import ReducedLP, ReduceModel
from countdp.design.request import Answer
from countdp.design.settings import SolverSettings
from countdp.design.solvers.clarabel import run_clarabel
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.interior import drops_implied_bounds, interior_points
from countdp.design.solvers.solved import INTERIOR_GUIDE, Solved, polish_run
from countdp.design.solvers.template_guide import template_guide
from countdp.design.watch import current

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

CLARABEL_GUIDED = "guided by clarabel"
"""The fallback after a ``guided`` answer that a smaller design guided and that is not proven: the
same method with Clarabel's guide, a different vertex."""

FALLBACKS = {"clarabel": ("clarabel", "ipm", "simplex"), "simplex": ("simplex", "ipm"), "ipm": ("ipm", "simplex"),
             "guided": ("guided", CLARABEL_GUIDED, "simplex", "ipm")}
"""Methods tried in turn until one answer is proven optimal (its certificate closes)."""

SOLVER_LABELS = {"simplex": ("HIGHS", "simplex"), "ipm": ("HIGHS", "ipm+crossover"), "clarabel": ("CLARABEL", "ipm")}
"""``(solver, method)`` recorded for each method that answered (``guided``: :func:`solver_label`)."""

Prover = Callable[[ReducedLP, Solved, np.ndarray], dict]
"""Proves a matrix with a run's duals: ``prover(lp, run, P) -> optimality`` (default :func:`prove`)."""


def reduced_lp(problem: DesignProblem, fold: bool = True, drop_implied: bool = True) -> ReducedLP:
    """The reduced model of ``problem`` (:class:`countdp.design.reduce.ReduceModel`)."""
    return ReduceModel(fold, drop_implied).apply(problem)[0]


def prove(lp: ReducedLP, run: Solved, P: np.ndarray, *,
          settings: SolverSettings) -> OptimalityProof:
    """The optimality certificate of the matrix ``P`` with ``run``'s duals mapped to the full model
    (:func:`countdp.design.polish.full_dual`), by the independent check of :mod:`countdp.design.optimality`;
    an interior point's dual (not ``run.polished``) is repaired first if it does not close
    (:func:`countdp.design.dual_repair.prove_dual`).

    Weak duality does not care where the dual came from, so ``P`` may come from another solver."""
    full = lp.problem.lp()
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return prove_dual(full, lp.problem.point(P), u, v, repair=not run.polished, settings=settings)


def gap(optimality: dict) -> float:
    """The relative gap of a certificate (infinite when it has none)."""
    value = optimality.get("gap")
    return float("inf") if value is None else value / max(1.0, abs(optimality["upper_bound"]))


def vertex_matrix(lp: ReducedLP, run: Solved) -> np.ndarray:
    """The matrix of ``run``'s point, before :func:`countdp.privacy.certify.certify`
    (:func:`countdp.design.polish.dp_closure` of it when ``run.dp_closure``)."""
    N = lp.n + 1
    P = (lp.expand @ run.y)[: N * N].reshape(N, N)
    return dp_closure(P, lp.problem.alpha) if run.dp_closure else P


def proven_answer(lp: ReducedLP, run: Solved, chosen: str, tight: bool, prover: Prover | None = None, *,
                  settings: SolverSettings) -> tuple[np.ndarray, dict, bool]:
    """``(P, optimality, repaired)``: the certified matrix of a (polished) run, its optimality
    certificate, and whether the DP certificate had to repair it.  When that repair (a UM mixture)
    keeps the certificate of a polished vertex, or of Clarabel's point offered to the proof, from
    closing, the DP closure of the point (:func:`countdp.design.polish.dp_closure`) is certified and
    proven instead, and kept if it closes (``run.dp_closure``, ``optimality["dp_closure"]``).  A
    plain ``clarabel`` answer falls back to a vertex instead.  ``prover``: proves a matrix on another
    LP than ``lp``'s (default :func:`prove`, on ``lp.problem``)."""
    prover = prover or partial(prove, settings=settings)
    closure = (run.polished or run.guide.startswith(INTERIOR_GUIDE)) and not run.dp_closure
    _, P, certificate, optimality = certified_and_proven(vertex_matrix(lp, run), lp.problem.alpha,
                                                         lambda P: prover(lp, run, P), closure)
    if optimality.get("dp_closure"):
        run.dp_closure = True
    optimality["method"], optimality["polished"] = chosen, run.polished
    if run.guide:
        optimality["guide"] = run.guide
    if tight:
        optimality["tightened"] = True
    return P, optimality, certificate.repair_lambda > 0


def _run_method(lp: ReducedLP, chosen: str, tight: bool, previous: Solved | None, boost: float,
                accept: Callable[[Solved], bool], settings: SolverSettings) -> Solved:
    """One solver run of method ``chosen`` (a tightened re-solve from ``previous`` when ``tight``)."""
    if chosen == "clarabel":
        return run_clarabel(lp, drop_implied_bounds=drops_implied_bounds(lp, settings), settings=settings)
    if chosen in ("guided", CLARABEL_GUIDED) and not tight:
        return run_guided(lp, template=chosen == "guided", accept=accept,
                          guide=partial(template_guide, settings=settings), settings=settings)
    return run_highs(lp, "simplex" if tight else chosen, previous if tight else None, boost, settings=settings)


def _try_method(lp: ReducedLP, chosen: str, fallback: bool, attempts: list[str], best: tuple | None,
                offered: list, settings: SolverSettings) -> tuple | None:
    """Method ``chosen`` of :func:`solve_proven`, then its tightened re-solves while the DP repair of
    its vertex keeps the certificate open; the best answer so far (``best`` or better).  Failures
    and open certificates are appended to ``attempts``; ``offered`` collects Clarabel's points
    offered to the proof by the guided methods, with their proofs."""
    previous = None

    def accept(point: Solved, used: str = chosen) -> bool:  # Clarabel's point, proven as it is
        offered.append((point, proven_answer(lp, point, used, False, settings=settings)))
        return offered[-1][1][1]["certified"]

    for boost in (1.0, *settings.solver.tight_row_scales) if chosen != "clarabel" and fallback else (1.0,):
        tight = boost != 1.0
        label = f"{chosen} (tightened {boost:g})" if tight else chosen
        try:
            run = _run_method(lp, chosen, tight, previous, boost, accept, settings)
        except RuntimeError as exc:
            attempts.append(f"{label}: {exc}")
            break
        if tight:  # the re-solve starts from the vertex its guide led to
            run.guide = previous.guide
        previous, run = run, polish_run(lp, run)
        accepted = offered and offered[-1][0] is run  # its proof is already made
        P, optimality, repaired = (offered[-1][1] if accepted
                                   else proven_answer(lp, run, chosen, tight, settings=settings))
        if best is None or optimality["certified"] or gap(optimality) < gap(best[3]):
            best = (P, chosen, run, optimality)
        if optimality["certified"]:
            break
        attempts.append(f"{label}: certificate did not close (gap {optimality.get('gap')})")
        if not repaired:
            break  # tightening only helps a vertex that the DP repair had to move
    return best


def solve_proven(lp: ReducedLP, method: str, fallback: bool = True, methods: tuple[str, ...] | None = None, *,
                 settings: SolverSettings) -> tuple[np.ndarray, str, Solved, dict]:
    """Solve, polish and prove, falling back along :data:`FALLBACKS` (``fallback=False``: one
    attempt with ``method`` only; ``methods``: the methods of that chain to try, in its order).

    A HiGHS vertex whose DP repair was needed and whose certificate does not close is first
    re-solved from its basis with tightened rows (``settings.solver.tight_row_scales``;
    ``optimality["tightened"]``): HiGHS's feasibility tolerance can leave the exact vertex
    breaking a row by ~1e-13, and the UM repair of that costs more than the gap allows.
    Returns ``(P, method, run, optimality)`` for the first proven answer, else for the answer
    with the smallest gap, with ``optimality["certified"] = False`` and every attempt listed;
    raises ``RuntimeError`` if no method returned an answer at all."""
    attempts, best, offered = [], None, []
    chain = FALLBACKS[method] if fallback else (method,)
    for chosen in chain if methods is None else tuple(m for m in chain if m in methods):
        if chosen == CLARABEL_GUIDED and (best is None or not best[2].guide.startswith("the design")):
            continue  # the guided run had no template guide (or no answer): the same again would not help
        if attempts:
            LOG.info("not proven (%s); next: %s", attempts[-1], chosen)
        current().check(f"the method {chosen}")
        best = _try_method(lp, chosen, fallback, attempts, best, offered, settings)
        if best is not None and best[3]["certified"]:
            break
    if best is None:
        raise RuntimeError("; ".join(attempts))
    if attempts:
        best[3]["attempts"] = attempts
    return best


def proven_points(lp: ReducedLP, prover: Prover | None = None, what: str = "", *,
                  settings: SolverSettings) -> Iterator[tuple[Solved | None, dict]]:
    """Each of Clarabel's points of ``lp`` (:func:`countdp.design.solvers.interior.interior_points`,
    F's rows substituted out first) with its certificate (:func:`proven_answer`, ``prover`` as
    there), in turn; ``(None, why)`` when Clarabel fails before its first point (``what``
    prefixes the reason)."""
    run = None
    try:
        for run in interior_points(lp, substituted_first=True, settings=settings):
            yield run, proven_answer(lp, run, "guided", False, prover, settings=settings)[1]
    except RuntimeError as exc:
        if run is None:
            yield None, not_proven(f"{what}{exc}")


def proven_point(lp: ReducedLP, prover: Prover | None = None, what: str = "", *,
                 settings: SolverSettings) -> tuple[Solved | None, dict]:
    """The first proven of :func:`proven_points`, else the last tried; ``(None, why)`` when
    Clarabel fails."""
    found = (None, {})
    for found in proven_points(lp, prover, what, settings=settings):
        if found[1]["certified"]:
            break
    return found


def prove_matrix(problem: DesignProblem, matrix: np.ndarray, fallback: bool = True, *,
                 settings: SolverSettings) -> OptimalityProof:
    """``extra["optimality"]`` for a matrix found elsewhere (e.g. the plain cvxpy model).

    A dual of the design LP is computed on the reduced model (:func:`solve_proven`) and the
    independent check of :mod:`countdp.design.optimality` is run with *that* dual against ``matrix``:
    weak duality does not care where the dual came from, so this proves ``matrix`` optimal
    (to the gap) or reports that it is not."""
    lp = reduced_lp(problem)
    try:
        _, used, run, _ = solve_proven(lp, choose_method(lp, settings), fallback=fallback, settings=settings)
    except RuntimeError as exc:
        return not_proven(f"no dual: {exc}")
    return {**prove(lp, run, matrix, settings=settings), "dual_from": f"reduced model, {used}"}


def solver_label(used: str, run: Solved) -> tuple[str, str]:
    """``(solver, method)`` recorded for the method that answered; a guided simplex names its guide."""
    if used in ("guided", CLARABEL_GUIDED):
        if run.guide.startswith(INTERIOR_GUIDE):
            return SOLVER_LABELS["clarabel"]
        return "HIGHS", "simplex guided by " + (run.guide.split(" (")[0] or "clarabel")
    return SOLVER_LABELS[used]


def lp_extra(lp: ReducedLP, build: float, optimality: dict) -> dict:
    """``Answer.extra`` of an LP answer: the model's size, its reductions and the certificate."""
    return {"backend": "highs", "reductions": list(lp.reductions), "rows": int(lp.A.shape[0]),
            "cols": int(lp.A.shape[1]), "nnz": int(lp.A.nnz), "full_rows": int(lp.full_rows),
            "full_cols": int(lp.full_cols), "build_time": build, "optimality": optimality}


def proven_result(lp: ReducedLP, run: Solved, used: str, build: float, optimality: dict,
                  reductions: list[str], matrix: np.ndarray | None = None) -> Answer:
    """The :class:`countdp.design.request.Answer` of a proven answer found on ``lp`` by ``used``
    (``matrix``: the released matrix before certify, default :func:`vertex_matrix`), with the
    reductions that changed the LP solved appended to ``lp``'s."""
    extra = lp_extra(lp, build, optimality)
    extra["reductions"] += reductions
    return Answer(vertex_matrix(lp, run) if matrix is None else matrix, *solver_label(used, run), "optimal",
                  run.seconds, build, run.objective, extra)
