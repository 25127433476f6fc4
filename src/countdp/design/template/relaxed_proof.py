"""One template width on the relaxed LP, proven on the full target LP: the large-n path for L0d, L1
and L2 with CM or CH (L0 too, though its own copied dual is used for it by default).

**Relaxed.**  The target's CM is replaced by CH (:mod:`countdp.design.reductions.relax_cm`: each
CH row is a sum of CM rows) and S and WH are dropped (:func:`relaxed_problem`); every row of the
relaxed LP is a row, or a sum of rows, of the target's, so its optimum is at most the target's.
On most of these designs the two optima coincide (the optimal design is monotone and symmetric
anyway), and the relaxation's optimal vertex is far less degenerate: with CM, whole strips of the
corners are tight and a dual of the target has many more tight rows than its
complementary-slackness system has equations.  Where the relaxation is strictly better (L2 on
RH+CM at some alpha near 0.9, ``docs/tuning.md``), which the template shows once the relaxation's
certificate has not closed (:func:`kept_vertex`), CM is kept instead (:func:`kept_problem`).

**Template.**  The relaxed LP is solved at template size ``n0 = 3 W + 4`` to an optimal *vertex*
(a simplex basis; an interior point's dual carries every degenerate tight row, too many for a
support).  For the objectives of :attr:`~ChainTuning.folded_template_objectives` (L0,d) it is
solved with S kept, folded by the mirror, and its dual averaged with its mirror image
(:func:`mirror_average`): a dual of the LP without S, for half the unknowns.  Which rows of the
full relaxed LP carry a multiplier is read off its dual, copied by the template's row map, plus
the rows tight at every ``E z`` (:func:`template_support`); which output rows are used, off its
primal.

**Full size.**  The multipliers' values, and the vertex on which those rows are tight, solve
complementary slackness on the full relaxed LP by eliminating each output row's chain
(:mod:`countdp.design.template.chain_support`), in time and memory proportional to the matrix.
Where the support singles out no vertex (more paths than coupling unknowns: L0d's degenerate
far rows), the restricted primal's point ``E z``
(:func:`countdp.design.template.restricted.solve_template`) is proven with that dual instead,
averaged with its mirror image where the target asks for S (:func:`restricted_point`).
Where the support leaves path conditions unmet (a degenerate template vertex gave no multiplier
to a row the full size needs, as the CM rows between two equal output rows of L2's corner), it is
completed from the rows tight at the template's vertex
(:mod:`countdp.design.template.support_completion`).

**The target's rows.**  Where the gap closes but the point breaks a row the template's LP dropped
(CM, S or WH: the template's optimal face is larger than the target's; RH+CM under L0,d is one
such), the restricted primal is solved again with the target's rows (S by the mirror average), and
that point is proven with the same dual (:func:`point_on_target`).

**Proof.**  The vertex (after the float DP certificate) is checked with that dual, CH's
multipliers spread over the CM rows (where CM was relaxed) and S's and WH's set to 0, on the *target's* full LP by the
independent weak-duality routine (:func:`countdp.design.template.proof.certify_expansion`): a dual
of the relaxation spread this way is a dual of the target with the same objective, and the check
also checks every row of the target (CM, S, WH) on the vertex.  Nothing above is trusted.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from countdp.design.constraints import property_rows
from countdp.design.model import DesignProblem
from countdp.design.optimality import PRIMAL_TOL, not_proven
from countdp.design.polish import full_dual
from countdp.design.reductions.fold_symmetry import mirror_rows, mirror_symmetric
from countdp.design.reductions.relax_cm import only_cm_broken, relaxed_properties
from countdp.design.settings import SolverSettings, running
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.solved import Solved, polish_run
from countdp.design.strategy import SolveContext
from countdp.design.template.chain_support import solve_dual, solve_vertex
from countdp.design.template.geometry import cancel, feature_map
from countdp.design.template.proof import certify_expansion
from countdp.design.template.restricted import TemplateMaps, solve_template, template_maps
from countdp.design.template.support_completion import completed

FREE_PROPERTIES = ("S", "WH")
"""Properties dropped from the relaxed LP: they hold at its optimum on these designs, and the
certificate on the target checks that they do."""


def relaxed_problem(target: DesignProblem) -> DesignProblem:
    """``target`` with CM replaced by CH and S and WH dropped (module docstring)."""
    kept = kept_problem(target)
    return sized(kept, target.n, relaxed_properties(kept.properties) if "CM" in kept.properties else None)


def kept_problem(target: DesignProblem) -> DesignProblem:
    """``target`` with S and WH dropped and CM kept: the template's LP where the relaxation is
    strictly better than the target (:func:`kept_vertex`)."""
    return sized(target, target.n, tuple(p for p in target.properties if p not in FREE_PROPERTIES))


def sized(problem: DesignProblem, n: int, properties: tuple[str, ...] | None = None) -> DesignProblem:
    """``problem`` at size ``n`` (its prior kept only at its own size, else uniform), with
    ``properties`` in place of its own when given."""
    weights = problem.weights if n == problem.n else None
    return DesignProblem(n, problem.alpha, problem.properties if properties is None else properties,
                         problem.objective, weights, problem.aggregate if n == problem.n else "sum")


class TemplateSupport(NamedTuple):
    """What the full-size dual copies from the template's optimal vertex (:func:`template_support`)."""

    support: np.ndarray
    """Rows of the full LP whose template row carries a multiplier, or that are tight at every ``E z``."""
    used: np.ndarray
    """Output rows of size ``n`` that are not all zero."""
    candidates: np.ndarray
    """Rows of the full LP whose template row is tight at the template's vertex (for the completion)."""


def prove_relaxed_width(target: DesignProblem, W: int, *, context: SolveContext) -> dict:
    """The relaxed LP's vertex at template size ``n0 = 3 W + 4``, its support copied to size ``n`` and
    completed, the support dual and vertex on the full LP (the restricted primal's point where the
    support singles out no vertex), and the certificate on ``target``'s full LP (module docstring);
    where that does not close, the same with CM kept if the relaxation is strictly better
    (:func:`kept_vertex`).

    Returns the certificate of :func:`countdp.design.template.proof.certify_expansion` with the
    ``"matrix"`` proven and the stage ``"seconds"``, or ``{"certified": False, "reason": ...}``."""
    began = time.perf_counter()
    problem = relaxed_problem(target)
    try:
        vertex = template_solution(problem, W, context)
    except ValueError as exc:
        return not_proven(f"W={W}: {exc}")
    result = prove_on(target, W, problem, vertex, context, {"template dual": time.perf_counter() - began})
    if result.get("certified"):
        return result
    relaxed = time.perf_counter() - began
    kept = kept_vertex(target, W, vertex, context)
    if kept is None:
        return result
    return prove_on(target, W, kept_problem(target), kept, context,
                    {"relaxed attempt": relaxed, "template dual with CM kept": time.perf_counter() - began - relaxed})


def prove_on(target: DesignProblem, W: int, problem: DesignProblem, vertex: TemplateVertex, context: SolveContext,
             seconds: dict) -> dict:
    """The support of ``vertex`` (of ``problem``'s LP at template size) copied to size ``n``, the
    chain dual and vertex, and the certificate on ``target``'s full LP (:func:`prove_relaxed_width`),
    with the stage ``seconds`` so far."""
    settings, began = context.settings, time.perf_counter() - sum(seconds.values())
    n, alpha, N = target.n, target.alpha, target.N
    props = problem.properties
    info = {"template_n": 3 * W + 4, "width": W, "template_properties": "+".join(props)}
    full = problem.lp()
    maps = template_maps(n, 3 * W + 4, W, alpha, props)
    try:
        found = template_support(full, maps, problem, W, vertex, settings)
        y, point = chain_dual(full, found.support, found.used, settings, found.candidates)
    except ValueError as exc:
        return not_proven(f"W={W}: {exc}")
    seconds["full dual"] = time.perf_counter() - began - sum(seconds.values())
    on_target = False
    if point is None:  # the support singles out no vertex: the restricted primal's point
        point = restricted_point(target, W, problem, full, maps, settings)
        if point is None:
            return not_proven(f"W={W}: the restricted primal not solved")
        info["primal"] = "the restricted primal's point"
        seconds["template primal"] = time.perf_counter() - began - sum(seconds.values())
        on_target = breaks_relaxed_cm(target, problem, point.reshape(N, N))
    del full, maps, found  # the target's LP is built next: two full LPs are not held at once
    problem.release_lp()
    closure = target.objective.name in settings.chains.closure_objectives
    if on_target:  # the certificate would fail on CM: what answers if the target's rows are not solved
        result = not_proven(f"W={W}: the restricted point breaks CM, and the one on the target's rows was not solved")
    else:
        result = certify_expansion(target, point.reshape(N, N), y, props, info, closure_first=closure)
        seconds["certificate"] = time.perf_counter() - began - sum(seconds.values())
    if on_target or (set(target.properties) - set(props) and only_cm_broken(result)):
        result = point_on_target(target, W, y, props, info, closure, settings) or result
        seconds["point on the target's rows"] = time.perf_counter() - began - sum(seconds.values())
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result


def breaks_relaxed_cm(target: DesignProblem, problem: DesignProblem, P: np.ndarray) -> bool:
    """Whether the matrix ``P`` breaks CM by more than the certificate's ``PRIMAL_TOL`` where
    ``target`` has CM and ``problem``, its relaxation, does not.  The relaxed LP's restricted point
    is read this way before its certificate, which checks CM within the same tolerance (UM's repair
    shrinks a violation only by ``1 - lambda``): where it breaks CM, the restricted primal is solved
    on the target's rows at once (:func:`point_on_target`), and the certificate that would fail is
    not run.  The rule reads the point itself, not the template's vertex: on WM under L0,1 the
    template's vertex breaks CM and the restricted point does not."""
    return cm_broken_by(target, problem, P.ravel()) > PRIMAL_TOL


def cm_broken_by(target: DesignProblem, problem: DesignProblem, x: np.ndarray) -> float:
    """How far ``x``, solved on ``problem``, breaks ``target``'s CM (0 where ``target`` has no CM or
    ``problem`` keeps it)."""
    if "CM" not in target.properties or "CM" in problem.properties:
        return 0.0
    return property_rows("CM", target.n).violation(x)


def point_on_target(target: DesignProblem, W: int, y: np.ndarray, props: tuple[str, ...], info: dict,
                    closure: bool, settings: SolverSettings) -> dict | None:
    """Where the template's point breaks a row of ``target`` that its LP dropped (CM relaxed to CH,
    S, WH) with the gap closed (the optimal face of the template's LP is larger than the
    target's): the restricted primal's point of ``target`` itself, certified with the same dual
    ``y``; ``None`` when that primal is not solved."""
    on_rows = sized(target, target.n, tuple(p for p in target.properties if p != "S"))
    maps = template_maps(target.n, 3 * W + 4, W, target.alpha, on_rows.properties)
    point = restricted_point(target, W, on_rows, on_rows.lp(), maps, settings)
    del on_rows, maps  # its LP is freed before the certificate reads the target's
    if point is None:
        return None
    info["primal"] = "the restricted primal's point on the target's rows (the template's point broke one)"
    return certify_expansion(target, point.reshape(target.N, target.N), y, props, info, closure_first=closure)


def restricted_point(target: DesignProblem, W: int, problem: DesignProblem, full, maps: TemplateMaps,
                     settings: SolverSettings) -> np.ndarray | None:
    """The restricted primal's point (flat, size ``n``) of ``problem`` (``target``'s LP with other
    properties; ``full`` its LP and ``maps`` its template maps, which the caller has built), at the
    template of width ``W`` (:func:`countdp.design.template.restricted.solve_template`), or ``None``;
    averaged with its mirror image where ``target`` asks for S and that LP is mirror symmetric.  The
    point is an interior point of a large optimal face (L0,d's), which need not be symmetric (CH+WH+S
    under L0,1 at alpha 0.97: S broken by 5e-7); its mirror image is on the same face, so their mean
    is too, and it holds S."""
    z, _, _ = solve_template(full, maps, target.n, target.alpha, problem.properties, W,
                             min(target.n, 2 * (3 * W + 4)), False, settings=settings)
    if z is None:
        return None
    point = maps.E @ z
    return (point + point[::-1]) / 2.0 if "S" in target.properties and mirror_symmetric(problem) else point


class TemplateVertex(NamedTuple):
    """An optimal vertex of an LP at template size (:func:`template_solution`)."""

    dual: np.ndarray
    """Its multipliers of the template's inequality rows and column sums."""
    point: np.ndarray
    """Its matrix, ``(n0 + 1, n0 + 1)``."""
    value: float
    """Its objective."""
    tight: np.ndarray
    """Which of the template's inequality rows are tight at it, within
    :attr:`~ChainTuning.completion_tight_tol` of their terms' size."""


def kept_vertex(target: DesignProblem, W: int, vertex: TemplateVertex, context: SolveContext) -> TemplateVertex | None:
    """The template's vertex with CM kept (:func:`kept_problem`) where the relaxation is strictly
    better at template size, else ``None``: where the relaxed ``vertex`` breaks CM by more than
    :attr:`~ChainTuning.cm_break_tol` of its largest entry, the template with CM kept is solved, and
    if its optimum is above the relaxed one by more than :attr:`~ChainTuning.relaxation_gap_tol`
    (relative), no dual of the relaxation proves the target.  It is asked only once the relaxation's
    certificate has not closed: a vertex that breaks CM at the same optimum (a larger optimal face,
    as RH+CM's and WM's under L0,d) is proven through the relaxation (:func:`point_on_target`), and
    the template with CM kept cost as much again (67 s on WM, L0,1, 0.97)."""
    settings, n0 = context.settings, 3 * W + 4
    kept = kept_problem(target)
    if "CM" not in target.properties or cm_break(vertex.point, kept, n0) <= settings.chains.cm_break_tol:
        return None
    try:
        with_cm = template_solution(kept, W, context)
    except ValueError:  # no vertex with CM at template size: nothing more to try
        return None
    gap_tol = settings.chains.relaxation_gap_tol
    return with_cm if with_cm.value - vertex.value > gap_tol * max(1.0, abs(with_cm.value)) else None


def cm_break(point: np.ndarray, kept: DesignProblem, n0: int) -> float:
    """The largest violation of :func:`kept_problem`'s rows at template size by the template's
    vertex ``point`` (of the relaxed LP, which has every other row), over its largest entry."""
    small = sized(kept, n0).lp()
    return float(np.max(small.b_ub - small.A_ub @ point.ravel(), initial=0.0) / point.max())


def template_solution(problem: DesignProblem, W: int, context: SolveContext) -> TemplateVertex:
    """An optimal vertex of ``problem``'s LP at template size ``n0 = 3 W + 4`` (by
    :attr:`~ChainTuning.support_dual_methods`).  Raises ``ValueError`` when no method finds one."""
    settings = context.settings
    n0, N0 = 3 * W + 4, 3 * W + 5
    small = sized(problem, n0)
    folded = (problem.objective.name in settings.chains.folded_template_objectives and "S" not in small.properties
              and mirror_symmetric(small))
    solved = sized(problem, n0, small.properties + ("S",)) if folded else small
    lp = context.solves.reduced_lp(solved, fold=True, drop_implied=True)
    run = template_vertex(lp, settings)
    if run is None:
        methods = settings.chains.support_dual_methods
        raise ValueError(f"no vertex dual of the template-size LP by {', '.join(methods) or 'no method'}")
    u0, v0 = full_dual(lp, run.row_dual, run.col_dual)
    v0 = v0[:N0]  # the column sums' multipliers (S's, where folded, follow them)
    point, model = (lp.expand @ run.y)[: N0 * N0], small.lp()
    if folded:
        u0, v0 = mirror_average(model, small.size, u0, v0)
    tight = model.A_ub @ point - model.b_ub <= settings.chains.completion_tight_tol * (abs(model.A_ub) @ point)
    return TemplateVertex(np.concatenate([u0, v0]), point.reshape(N0, N0), float(model.c @ point), tight)


def mirror_average(model, size: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)`` (multipliers of ``model``'s inequality rows and column sums, a dual of the LP with
    S) averaged with their mirror images: a dual of ``model`` (the LP without S) with the same
    objective.  Each entry's reduced cost is then the mean of its own and its mirror's with S, whose
    multipliers cancel in that sum, so none is negative where the folded LP's orbits have none."""
    mirror = mirror_rows(model.A_ub, model.b_ub, size, False)
    if mirror is None:
        raise ValueError("the template's rows are not closed under the mirror")
    return (u + u[mirror[0]]) / 2.0, (v + v[::-1]) / 2.0


def template_support(full, maps: TemplateMaps, problem: DesignProblem, W: int, vertex: TemplateVertex,
                     settings: SolverSettings) -> TemplateSupport:
    """The support copied from the template's vertex (:func:`template_solution`):
    the rows of the full LP ``full`` whose template row has a multiplier above
    :attr:`~TemplateTuning.support_tol` of the largest, plus the rows tight at every ``E z`` (their
    template copy cancels to an empty row); which output rows of size ``n`` are used (not all
    zero), each as its template row (that of its diagonal entry); and the rows whose template row
    is tight at the vertex (:attr:`TemplateVertex.tight`)."""
    dual, point, _, at_vertex = vertex
    N0 = point.shape[0]
    y = (maps.F @ dual)[: full.b_ub.size]
    tight = np.diff(cancel(full.A_ub, maps.col, maps.weight, N0 * N0).indptr) == 0
    diagonal = np.arange(problem.N)
    row0, _, _ = feature_map(diagonal, diagonal, problem.n, N0 - 1, W)
    copied = maps.F[: full.b_ub.size].indices  # each row's template row (one entry per row)
    return TemplateSupport(np.flatnonzero((y > settings.template.support_tol * y.max()) | tight),
                           point.max(axis=1)[row0] > 0,
                           np.flatnonzero(at_vertex[copied]))


def template_vertex(lp, settings: SolverSettings) -> Solved | None:
    """An optimal vertex of the reduced model ``lp``, polished from its basis, by the first of
    :attr:`~ChainTuning.support_dual_methods` that finds one (``guided``: the simplex from the
    basis of Clarabel's point, never the point itself; ``simplex``: HiGHS's dual simplex from a cold
    start; each within :attr:`~ChainTuning.support_dual_iterations`; ``ipm``: HiGHS's interior
    point and crossover); ``None`` when none does.  No limit is in seconds: which method answers is
    the same under any load."""
    for method in settings.chains.support_dual_methods:
        try:
            if method == "guided":
                run = run_guided(lp, settings.chains.support_dual_iterations, template=False, settings=settings)
            else:
                run = run_highs(lp, method, iterations=settings.chains.support_dual_iterations, settings=settings)
        except RuntimeError:
            continue
        run = polish_run(lp, run)
        if run.basis is not None:
            return run
    return None


def chain_dual(full, support: np.ndarray, used: np.ndarray, settings: SolverSettings,
               candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, vertex)``: multipliers of ``full``'s inequality rows (nonzero on ``support`` only,
    completed from ``candidates`` by :func:`countdp.design.template.support_completion.completed`
    where the support leaves path conditions unmet) and column sums leaving no reduced cost on the
    entries of the ``used`` output rows, and the vertex (flat) on which the support rows are tight
    (:mod:`countdp.design.template.chain_support`, :attr:`~ChainTuning.chain_refinements` steps
    of refinement), or ``None`` when the support has fewer rows than conditions (the dual is then
    the least-squares solution of a system consistent at an optimal support, and no vertex is
    singled out).  Raises ``ValueError`` when the support has more rows than its system has
    conditions, or the system is singular."""
    running(settings, "the chain dual")
    N, refinements = used.size, settings.chains.chain_refinements
    live = np.repeat(used, N)
    support = support[(abs(full.A_ub[support]) @ live.astype(float)) > 0]  # rows on used entries only
    candidates = np.empty(0, dtype=np.int64) if candidates is None else candidates
    support, system = completed(full, support, used, candidates, settings)
    A_T, b_T, A_sums = full.A_ub[support], full.b_ub[support], full.A_eq[:N]
    dual = solve_dual(system, A_T, A_sums, full.c, refinements)
    x = solve_vertex(system, A_T, A_sums, b_T, refinements) if system.square else None
    if not (np.all(np.isfinite(dual)) and (x is None or np.all(np.isfinite(x)))):
        raise ValueError("support system singular (non-finite solution)")
    y = np.zeros(full.b_ub.size + N)
    y[support], y[full.b_ub.size:] = dual[: support.size], dual[support.size:]
    return y, None if x is None else np.maximum(x, 0.0)
