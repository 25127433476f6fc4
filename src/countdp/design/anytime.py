"""The best design the engine can prove feasible when it stops before a proof, with its certified gap.

It stops so at the caller's time limit (:mod:`countdp.design.watch`), or where the general path
does not fit the memory bound (:mod:`countdp.design.memory`) and a time limit was given.

**The design.** The candidates are the unproven answer of an earlier attempt, the point an
interrupted solve had reached (on a reduced model of the request's LP), each as it is and repaired
(:func:`repaired`: clipped, its columns normalised, symmetrised for S, then mixed with UM as
below), and the closed-form fallback (:func:`fallbacks`): GM, GM remapped (and EM, for L0 with F),
each mixed with UM to the least weight that holds every row of the LP. UM holds every DP row and
every property, and the LP's feasible set is convex, so the mixture with weight 1 (UM itself)
always holds: there is always a design. Each candidate is made alpha-DP by
:func:`countdp.privacy.certify.certify` (the repair :func:`countdp.design.designer.finish_design`
applies, deterministic, so the matrix checked is the one released) and kept only where it breaks no
row of the full LP (:meth:`countdp.design.model.DesignProblem.lp`) by more than
:data:`countdp.design.optimality.PRIMAL_TOL`; the one of least objective is the design.

**Its gap.**  The largest lower bound of weak duality among the duals at hand, each checked by the
independent routine :func:`countdp.design.optimality.check_optimality` (any multipliers give a valid
bound): the interrupted solve's (mapped to the full model), and for the sum the explicit dual of
GM remapped (:func:`countdp.design.remapped_gm.remap_dual`: an optimum of the LP without properties,
hence a lower bound with every property), and the lower bound an earlier attempt's certificate
proved on the same LP.  ``gap = upper - lower`` bounds how far the design is from the optimum.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from countdp.design.lp_solve import vertex_matrix
from countdp.design.model import DesignProblem
from countdp.design.optimality import PRIMAL_TOL, check_optimality, lower_column_multipliers
from countdp.design.polish import full_dual
from countdp.design.remapped_gm import remap_dual, remapped_geometric
from countdp.design.request import Answer, DesignRequest
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.certify import certify

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


def violation(problem: DesignProblem, x: np.ndarray) -> float:
    """The largest amount by which ``x`` breaks a row or a bound of ``problem``'s LP."""
    lp = problem.lp()
    return max(float(np.max(lp.b_ub - lp.A_ub @ x, initial=0.0)),
               float(np.max(np.abs(lp.A_eq @ x - lp.b_eq), initial=0.0)), float(np.max(-x, initial=0.0)))


def mixed_with_um(problem: DesignProblem, P: np.ndarray) -> np.ndarray:
    """``(1 - w) P + w UM`` with the least ``w`` in ``[0, 1]`` that holds every row of ``problem``'s
    LP broken by more than ``PRIMAL_TOL / 100`` (each row is linear in ``w``; an equality ``P`` breaks
    takes ``w = 1``).  Rows broken by rounding alone are left (the caller keeps a design only within
    ``PRIMAL_TOL``): UM holds CM and RM with equality, so no mixture short of UM itself mends them."""
    lp, um = problem.lp(), CLOSED_FORMS["UM"](problem.n, problem.alpha)
    x, xu = problem.point(P), problem.point(um)
    if np.max(np.abs(lp.A_eq @ x - lp.b_eq), initial=0.0) > PRIMAL_TOL:
        return um
    r, ru = lp.A_ub @ x - lp.b_ub, lp.A_ub @ xu - lp.b_ub
    broken = r < -PRIMAL_TOL / 100  # rows broken by rounding alone are left: UM holds CM and RM with equality
    if not broken.any():
        return P
    w = float(np.max(-r[broken] / np.maximum(ru[broken] - r[broken], 1e-300)))
    w = min(1.0, w * (1 + 1e-12))
    return um if w >= 1.0 else (1.0 - w) * P + w * um


def repaired(problem: DesignProblem, P: np.ndarray) -> np.ndarray:
    """A point that breaks rows (an interrupted solve's) made to hold them: negative entries set
    to 0, each column scaled to sum to one, averaged with its mirror image when S is requested,
    then :func:`mixed_with_um`."""
    P = np.maximum(np.asarray(P, float), 0.0)
    sums = P.sum(axis=0, keepdims=True)
    P = np.where(sums > 0, P / np.where(sums > 0, sums, 1.0), 1.0 / P.shape[0])  # an empty column: UM's
    if "S" in problem.properties:
        P = 0.5 * (P + P[::-1, ::-1])
    return mixed_with_um(problem, P)


def fallbacks(request: DesignRequest) -> list[tuple[str, np.ndarray]]:
    """The closed-form candidates (module docstring), each mixed with UM to hold every row."""
    n, alpha, problem = request.n, request.alpha, request.problem
    forms = [("GM", CLOSED_FORMS["GM"](n, alpha)),
             ("GM remapped", remapped_geometric(n, alpha, request.objective, request.weights))]
    if request.zero_one and "F" in request.properties:
        forms.append(("EM", CLOSED_FORMS["EM"](n, alpha)))
    return [(f"{name} mixed with UM", mixed_with_um(problem, P)) for name, P in forms]


def explicit_duals(request: DesignRequest) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """For the sum: GM remapped's explicit dual of the LP without properties, on the request's LP."""
    if request.aggregate != "sum":
        return []
    plain = DesignProblem(request.n, request.alpha, (), request.objective, request.weights)
    u, v = request.problem.dual_from(plain, *remap_dual(request.n, request.alpha, request.objective,
                                                       request.weights, plain.lp()))
    return [("the explicit dual of GM remapped (the LP without properties)", u, v)]


def interrupted(request: DesignRequest, stop) -> tuple[list, list]:
    """``(designs, duals)`` of a :class:`countdp.design.watch.TimeLimitReached`'s point, where it
    is a point of a reduced model of the request's size and aggregate (else none)."""
    lp, run = getattr(stop, "lp", None), getattr(stop, "run", None)
    problem = getattr(lp, "problem", None)
    if run is None or problem is None or problem.n != request.n or problem.aggregate != request.aggregate \
            or run.y.shape[0] != lp.A.shape[1]:
        return [], []
    label = f"the point {stop.what} had reached"
    u, v = request.problem.dual_from(problem, *full_dual(lp, run.row_dual, run.col_dual))
    return [(label, vertex_matrix(lp, run))], [(f"the duals {stop.what} had reached", u, v)]


def best_feasible(request: DesignRequest, designs: list[tuple[str, np.ndarray]]) -> tuple[str, np.ndarray, np.ndarray]:
    """``(label, raw, x)`` of the candidate of least objective that, certified alpha-DP, breaks no
    row of the LP by more than :data:`~countdp.design.optimality.PRIMAL_TOL` (the last fallback, UM
    mixed, always does)."""
    problem, best = request.problem, None
    c = problem.lp().c
    for label, raw in designs:
        try:
            x = problem.point(certify(raw, request.alpha)[0])
        except ValueError:  # CertificationError, or a column summing to 0
            continue
        if violation(problem, x) <= PRIMAL_TOL and (best is None or c @ x < c @ best[2]):
            best = (label, raw, x)
    if best is None:  # pragma: no cover - UM mixed with UM holds every row
        raise RuntimeError("no design holds every row of the LP")
    return best


def certified_gap(request: DesignRequest, x: np.ndarray, duals: list, recorded: list[tuple[str, float]]) -> dict:
    """The certificate of ``x`` with the dual of the largest lower bound (module docstring);
    ``recorded``: lower bounds proven on the same LP before (each with where it came from)."""
    full, best = request.problem.lp(), None
    zero = (np.zeros(full.b_ub.size), np.zeros(full.b_eq.size))
    for label, u, v in [*duals, ("no multipliers (the objective's own lower bound)", *zero)]:
        found = check_optimality(full, x, u, lower_column_multipliers(full, u, v))
        if "lower_bound" in found and (best is None or found["lower_bound"] > best["lower_bound"]):
            best = {**found, "dual_from": label}
    for label, lower in recorded:
        if lower > best["lower_bound"]:
            best.update(lower_bound=lower, dual_objective=lower, gap=best["upper_bound"] - lower,
                        dual_from=label)
            best["certified"] = bool(best["gap"] <= best["gap_tolerance_rel"] * max(1.0, abs(best["upper_bound"]))
                                     and best["max_primal_violation"] <= best["primal_tolerance"])
    return best


def stopped_answer(request: DesignRequest, earlier: Answer | None, stop, reason: str, started: float) -> Answer:
    """The answer when the engine stops before a proof (module docstring): the best design proven
    feasible, its certificate (``certified`` only if its gap closed all the same) and why it stopped
    (``extra["stopped"]``)."""
    designs, duals = interrupted(request, stop)
    recorded = []
    if earlier is not None:
        designs.insert(0, (f"the best unproven answer before ({earlier.method})", earlier.matrix))
        lower = earlier.extra.get("optimality", {}).get("lower_bound")
        if lower is not None:
            recorded.append(("the certificate of the best unproven answer before", float(lower)))
    designs += [(f"{label}, repaired", repaired(request.problem, P)) for label, P in designs]
    label, raw, x = best_feasible(request, designs + fallbacks(request))
    optimality = certified_gap(request, x, duals + explicit_duals(request), recorded)
    gap_rel = optimality["gap"] / max(1.0, abs(optimality["upper_bound"]))
    status = "optimal" if optimality["certified"] else "not proven optimal"
    LOG.info("%s: %s, objective %.10g, lower bound %.10g (gap %.3g, %.3g relative)", reason, label,
             optimality["upper_bound"], optimality["lower_bound"], optimality["gap"], gap_rel)
    stopped = {"reason": reason, "design_from": label, "lower_bound_from": optimality["dual_from"],
               "gap": optimality["gap"], "gap_rel": gap_rel}
    if earlier is not None and label.startswith(designs[0][0]):  # as it is, or repaired
        solver, method = earlier.solver, earlier.method
    else:
        solver, method = ("closed-form" if label.endswith("mixed with UM") else "interrupted"), label
    return Answer(raw, solver, method, status, time.perf_counter() - started, 0.0, float(optimality["upper_bound"]),
                  {"backend": "highs", "optimality": optimality, "stopped": stopped})
