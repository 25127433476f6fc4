"""One template width on the relaxed LP, proven on the full target LP: the large-n path for L0d, L1
and L2 with CM or CH (L0 too, though its own copied dual is used for it by default).

**Relaxed.**  The target's CM is replaced by CH (:mod:`countdp.design.reductions.relax_cm`: each
CH row is a sum of CM rows) and S and WH are dropped (:func:`relaxed_problem`); every row of the
relaxed LP is a row, or a sum of rows, of the target's, so its optimum is at most the target's.
On these designs the two optima coincide (the optimal design is monotone and symmetric anyway),
and the relaxation's optimal vertex is far less degenerate: with CM, whole strips of the corners
are tight and a dual of the target has many more tight rows than its complementary-slackness
system has equations.

**Template.**  The relaxed LP is solved at template size ``n0 = 3 W + 4`` to an optimal *vertex*
(a simplex basis; an interior point's dual carries every degenerate tight row, too many for a
support).  Which rows of the full relaxed LP carry a multiplier is read off its dual, copied by
the template's row map, plus the rows tight at every ``E z`` (:func:`template_support`); which
output rows are used, off its primal.

**Full size.**  The multipliers' values, and the vertex on which those rows are tight, solve
complementary slackness on the full relaxed LP by eliminating each output row's chain
(:mod:`countdp.design.template.chain_support`), in time and memory proportional to the matrix.
Where the support singles out no vertex (more paths than coupling unknowns: L0d's degenerate
far rows), the restricted primal's point ``E z``
(:func:`countdp.design.template.restricted.solve_template`) is proven with that dual instead.

**CM.**  Where the gap closes but the point breaks CM (the relaxation's optimal face is larger
than the LP's; RH+CM under L0,d is one such), the restricted primal is solved again with the
target's rows (CM kept, S and WH still dropped), and that point is proven with the same dual.

**Proof.**  The vertex (after the float DP certificate) is checked with that dual, CH's
multipliers spread over the CM rows and S's and WH's set to 0, on the *target's* full LP by the
independent weak-duality routine (:func:`countdp.design.template.proof.certify_expansion`): a dual
of the relaxation spread this way is a dual of the target with the same objective, and the check
also checks every row of the target (CM, S, WH) on the vertex.  Nothing above is trusted.
"""

from __future__ import annotations

import time

import numpy as np

from countdp.design.model import DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.polish import full_dual
from countdp.design.reductions.relax_cm import only_cm_broken, relaxed_properties
from countdp.design.settings import SolverSettings
from countdp.design.solvers.guided import run_guided
from countdp.design.solvers.highs import run_highs
from countdp.design.solvers.solved import Solved, polish_run
from countdp.design.strategy import SolveContext
from countdp.design.template.chain_support import build, solve_dual, solve_vertex
from countdp.design.template.geometry import cancel, feature_map
from countdp.design.template.proof import certify_expansion
from countdp.design.template.restricted import TemplateMaps, solve_template, template_maps

FREE_PROPERTIES = ("S", "WH")
"""Properties dropped from the relaxed LP: they hold at its optimum on these designs, and the
certificate on the target checks that they do."""


def relaxed_problem(target: DesignProblem) -> DesignProblem:
    """``target`` with CM replaced by CH and S and WH dropped (module docstring)."""
    props = relaxed_properties(target.properties) if "CM" in target.properties else target.properties
    props = tuple(p for p in props if p not in FREE_PROPERTIES)
    return DesignProblem(target.n, target.alpha, props, target.objective, target.weights, target.aggregate)


def prove_relaxed_width(target: DesignProblem, W: int, time_limit: float, *, context: SolveContext) -> dict:
    """The relaxed LP's vertex at template size ``n0 = 3 W + 4``, its support copied to size ``n``,
    the support dual and vertex on the full relaxed LP (the restricted primal's point where the
    support singles out no vertex), and the certificate on ``target``'s full LP (module docstring).

    Returns the certificate of :func:`countdp.design.template.proof.certify_expansion` with the
    ``"matrix"`` proven and the stage ``"seconds"``, or ``{"certified": False, "reason": ...}``."""
    settings = context.settings
    relaxed = relaxed_problem(target)
    n, alpha, props = target.n, target.alpha, relaxed.properties
    N, n0 = n + 1, 3 * W + 4
    seconds, began = {}, time.perf_counter()
    full = relaxed.lp()
    maps = template_maps(n, n0, W, alpha, props)
    info = {"template_n": n0, "width": W, "relaxed": "+".join(props)}
    try:
        support, used = template_support(full, maps, relaxed, W, context)
        seconds["template dual"] = time.perf_counter() - began
        y, vertex = chain_dual(full, support, used, settings.chain_refinements)
    except ValueError as exc:
        return not_proven(f"W={W}: {exc}")
    seconds["full dual"] = time.perf_counter() - began - sum(seconds.values())
    if vertex is None:  # the support does not single out a vertex: the restricted primal's point is proven
        z, _, why = solve_template(full, maps, n, alpha, props, W, min(n, 2 * n0), time_limit, False,
                                   settings=settings)
        if z is None:
            return not_proven(why)
        vertex, info["primal"] = maps.E @ z, "the restricted primal's point"
        seconds["template primal"] = time.perf_counter() - began - sum(seconds.values())
    closure = target.objective.name in settings.closure_objectives
    result = certify_expansion(target, vertex.reshape(N, N), y, props, info, closure_first=closure)
    seconds["certificate"] = time.perf_counter() - began - sum(seconds.values())
    if "CM" in target.properties and only_cm_broken(result):  # the relaxation's face is larger: a CM point on it
        kept = DesignProblem(n, alpha, tuple(p for p in target.properties if p not in FREE_PROPERTIES),
                             target.objective, target.weights, target.aggregate)
        kept_maps = template_maps(n, n0, W, alpha, kept.properties)
        z, _, why = solve_template(kept.lp(), kept_maps, n, alpha, kept.properties, W, min(n, 2 * n0), time_limit,
                                   False, settings=settings)
        if z is not None:
            info["primal"] = "the restricted primal's point with CM (the relaxation's point broke CM)"
            result = certify_expansion(target, (kept_maps.E @ z).reshape(N, N), y, props, info, closure_first=closure)
        seconds["point with CM"] = time.perf_counter() - began - sum(seconds.values())
    result["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    return result


def template_support(full, maps: TemplateMaps, relaxed: DesignProblem, W: int,
                     context: SolveContext) -> tuple[np.ndarray, np.ndarray]:
    """``(support, used)`` from an optimal vertex of the relaxed LP at template size ``n0`` (by
    :attr:`~SolverSettings.support_dual_methods`): the rows of the full relaxed LP ``full`` whose
    template row has a multiplier above :attr:`~SolverSettings.support_tol` of the largest, plus
    the rows tight at every ``E z`` (their template copy cancels to an empty row); and which output
    rows of size ``n`` are used (not all zero), each as its template row (that of its diagonal entry)."""
    settings = context.settings
    n0, N0 = 3 * W + 4, 3 * W + 5
    small = DesignProblem(n0, relaxed.alpha, relaxed.properties, relaxed.objective, None, "sum")
    lp = context.reduced_lp(small, fold=True, drop_implied=True)
    run = template_vertex(lp, settings)
    if run is None:
        raise ValueError(f"no vertex dual of the template-size LP by {', '.join(settings.support_dual_methods)}")
    u0, v0 = full_dual(lp, run.row_dual, run.col_dual)
    y = (maps.F @ np.concatenate([u0, v0[:N0]]))[: full.b_ub.size]
    tight = np.diff(cancel(full.A_ub, maps.col, maps.weight, N0 * N0).indptr) == 0
    P0 = (lp.expand @ run.y)[: N0 * N0].reshape(N0, N0)
    diagonal = np.arange(relaxed.N)
    row0, _, _ = feature_map(diagonal, diagonal, relaxed.n, n0, W)
    return np.flatnonzero((y > settings.support_tol * y.max()) | tight), P0.max(axis=1)[row0] > 0


def template_vertex(lp, settings: SolverSettings) -> Solved | None:
    """An optimal vertex of the reduced model ``lp``, polished from its basis, by the first of
    :attr:`~SolverSettings.support_dual_methods` that finds one (``guided``: the simplex from the
    basis of Clarabel's point, never the point itself); ``None`` when none does."""
    for method in settings.support_dual_methods:
        try:
            if method == "guided":
                run = run_guided(lp, template=False, settings=settings)
            else:
                run = run_highs(lp, method, settings.simplex_safety_seconds, settings=settings)
        except RuntimeError:
            continue
        run = polish_run(lp, run)
        if run.basis is not None:
            return run
    return None


def chain_dual(full, support: np.ndarray, used: np.ndarray, refinements: int) -> tuple[np.ndarray, np.ndarray]:
    """``(y, vertex)``: multipliers of ``full``'s inequality rows (nonzero on ``support`` only) and
    column sums leaving no reduced cost on the entries of the ``used`` output rows, and the vertex
    (flat) on which the support rows are tight (:mod:`countdp.design.template.chain_support`), or
    ``None`` when the support has fewer rows than conditions (the dual is then the least-squares
    solution of a system consistent at an optimal support, and no vertex is singled out).
    Raises ``ValueError`` when the support has more rows than its system has conditions, or the
    system is singular."""
    N = used.size
    live = np.repeat(used, N)
    support = support[(abs(full.A_ub[support]) @ live.astype(float)) > 0]  # rows on used entries only
    A_T, b_T, A_sums = full.A_ub[support], full.b_ub[support], full.A_eq[:N]
    system = build(A_T, b_T, A_sums, live)
    dual = solve_dual(system, A_T, A_sums, full.c, refinements)
    x = solve_vertex(system, A_T, A_sums, b_T, refinements) if system.square else None
    if not (np.all(np.isfinite(dual)) and (x is None or np.all(np.isfinite(x)))):
        raise ValueError("support system singular (non-finite solution)")
    y = np.zeros(full.b_ub.size + N)
    y[support], y[full.b_ub.size:] = dual[: support.size], dual[support.size:]
    return y, None if x is None else np.maximum(x, 0.0)
