"""Column monotonicity relaxed to column honesty: solve the cheaper LP, prove on the LP with CM.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]`` (rows outputs, columns inputs),
``N = n + 1``, ``alpha = e^-eps``; duals in the sign convention of
:mod:`countdp.design.optimality` (``A_ub x >= b_ub`` with ``u >= 0``).

CM asks each column to rise towards its diagonal entry, one row per adjacent pair; CH only
that the diagonal entry be its column's largest.  Each CH row is the sum of the CM rows on
its column's path to the diagonal, so CM implies CH and the LP with CH in place of CM is a
relaxation: its optimum is at most the LP's.  For an interior point method CM is the costly
part: on WM's model (WH + RM + CM, S folded) at ``n = 256`` Clarabel took 53 to 104 iterations
of ~0.2 s (L1 at alpha = 0.99, L0,1 at 0.91 and 0.99: 11 to 16 s), on the same model with CH
33 to 47 iterations of ~0.11 s (3.4 to 5.4 s).  In those cases the two optima were equal, and
the relaxation's interior point (the centre of its optimal face) held CM.

So, where the LP with CM would be answered by Clarabel's point (a ``guided`` model from
:data:`countdp.design.seed.MIN_N` with no template guide, :func:`countdp.design.seed.applies`),
the relaxation's point is computed and proven on the LP with CM instead: the relaxation's dual,
with each CH multiplier added to every CM row on its path (:func:`spread_dual`), is a dual of
the LP with CM with the same objective and the same reduced costs, and the independent check of
:mod:`countdp.design.optimality` on the LP with CM also checks that the point holds every CM row.

When the optima are equal but the relaxation's optimal face is larger, its centre may break CM
(LP with WH and CM, L0,1, n = 12, alpha = 0.91: CM broken by 4.6e-5).  Then the gap closes and
only CM rows are broken, and a point of the LP with CM is sought on the relaxation's optimal
face (:func:`on_face`: by complementary slackness with the spread dual, rows with positive
multipliers held tight and the cost dropped), which that same dual proves.  When neither proves
it (the relaxation strictly better, say), the caller solves the LP with CM.  Where a template
applies, its simplex is faster: WM at n = 256, alpha = 0.5 took 2.8 to 3.2 s from the template,
6.7 to 7.9 s by the relaxation (L0,1, L1; L2's was not proven).  Except for L0,d (``d >= 1``) with
F (:func:`before_template`), whose templates rarely guide.

L0 has its own path, the large-n template (:mod:`countdp.design.large_n`), but where alpha is too
near 1 for any template (:func:`countdp.design.seed.too_near_one`) that fails and Clarabel's point
of the LP with CM answered instead: at n = 256, alpha = 0.99, LP with CM, RM+CM, RH+CM, CM+S,
RM+CM+S and RH+CM+S took 20.9, 19.5, 41.7, 9.7, 9.4 and 18.1 s; by the relaxation (and its
face) 6.9 to 7.5 s, all proven (2026-11-24).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import numpy as np

from countdp.design.constraints import parse_properties
from countdp.design.model import DesignProblem

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

RELAXATION = "CM relaxed to CH, proven with CM"
"""The entry of ``extra["reductions"]`` of a design answered by the relaxation."""


def relaxed_properties(properties: tuple[str, ...]) -> tuple[str, ...]:
    """``properties`` with CM replaced by CH."""
    return parse_properties([p for p in properties if p != "CM"] + ["CH"])


def cm_multipliers(n: int, ch: np.ndarray) -> np.ndarray:
    """Multipliers of the CM rows (in :func:`countdp.design.constraints.property_rows` order)
    whose combination of rows equals that of the CH rows with multipliers ``ch``.

    Below the diagonal (``i > j``) CM row ``(k, j)`` is ``P[k-1, j] - P[k, j] >= 0`` and
    CH row ``(i, j)`` is the sum of CM rows ``(k, j)`` for ``j < k <= i``, so CM row ``(k, j)``
    gets the CH multipliers of every ``i >= k``; above it, mirrored."""
    N = n + 1
    U = np.zeros((N, N))
    U[~np.eye(N, dtype=bool)] = ch  # CH rows: every off-diagonal entry, row-major
    below = np.flip(np.cumsum(np.flip(np.tril(U, -1), 0), 0), 0)
    above = np.cumsum(np.triu(U, 1), 0)
    i, j = np.indices((N, N))
    return np.concatenate([below[i > j], above[i < j]])


def spread_dual(relaxed: DesignProblem, target: DesignProblem, u: np.ndarray,
                v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dual ``(u, v)`` of ``target`` (an LP with CM) from one of ``relaxed`` (the same LP with
    CH in place of CM): the blocks of the same name copied, CH's multipliers spread over the CM
    rows (:func:`cm_multipliers`), ``target``'s own CH rows (if any) given 0."""
    out_u, out_v = target.dual_from(relaxed, u, v)
    if "CH" in target.blocks:
        out_u[target.blocks["CH"][1]] = 0.0
    out_u[target.blocks["CM"][1]] = cm_multipliers(target.n, u[relaxed.blocks["CH"][1]])
    return out_u, out_v


def target_dual(target: DesignProblem, relaxed: DesignProblem, lp, run) -> tuple[np.ndarray, np.ndarray] | None:
    """The dual, on ``target``'s LP, of a solve ``run`` of a reduced model ``lp`` of ``relaxed``
    (S folded or not): mapped to the full model, unfolded if S was folded in, then spread
    (:func:`spread_dual`).  ``None`` when the rows are not closed under the mirror."""
    from countdp.design.mirror import unfolded_dual
    from countdp.design.polish import full_dual

    u, v = full_dual(lp, run.row_dual, run.col_dual)
    if lp.problem.properties != relaxed.properties:  # S folded in, not requested
        dual = unfolded_dual(lp.problem, relaxed.lp(), u, v)
        if dual is None:
            return None
        u, v = dual
    return spread_dual(relaxed, target, u, v)


def check_with(target: DesignProblem, u: np.ndarray, v: np.ndarray, P: np.ndarray, repair: bool = True) -> dict:
    """The independent check (:mod:`countdp.design.optimality`) of ``P`` on ``target``'s LP with the
    dual ``(u, v)``, repaired first if it does not close and ``repair`` (:mod:`countdp.design.dual_repair`)."""
    from countdp.design.dual_repair import prove_dual

    return prove_dual(target.lp(), target.point(P), u, v, repair)


def prover(target: DesignProblem, relaxed: DesignProblem):
    """A ``prover`` for :func:`countdp.design.fast._proven_answer`: the certificate, on
    ``target``'s LP, of a matrix found on a reduced model of ``relaxed`` (S folded or not)."""

    def prove_on_target(lp, run, P: np.ndarray) -> dict:
        dual = target_dual(target, relaxed, lp, run)
        if dual is None:
            return {"certified": False, "reason": "rows not closed under the mirror"}
        return check_with(target, *dual, P, repair=not run.polished)

    return prove_on_target


FACE_TOL = 1e-8
"""A multiplier or reduced cost above this times the largest cost marks its row tight (its
variable 0) on the relaxation's optimal face (:func:`face_model`).  Measured on LP with RH and CM,
L0,1, n = 256, alpha = 0.99: the same 18,370 inequality rows marked from 1e-4 to 1e-10 (18,545 at
1e-12); at n = 12, alpha = 0.91 with WH, 63 from 1e-2 to 1e-12."""


def face_model(lp, u: np.ndarray, v: np.ndarray, reduced_cost: np.ndarray):
    """``lp`` (a reduced model of the LP with CM) cut down to the optimal face of a dual ``(u, v)``
    of its full model (``reduced_cost``: in ``lp``'s columns): each inequality row with a positive
    multiplier made an equality, each variable with a positive reduced cost fixed at 0
    (complementary slackness), the cost dropped.  Every feasible point of it is optimal, with
    ``(u, v)`` as its certificate."""
    unit = FACE_TOL * float(np.abs(lp.cost).max(initial=0.0))
    multipliers = np.concatenate([u, np.abs(v)])[lp.row_origin]
    tight = (multipliers > unit) & ~np.isfinite(lp.row_upper)
    fixed = reduced_cost > unit
    return replace(lp, cost=np.zeros_like(lp.cost), row_upper=np.where(tight, lp.row_lower, lp.row_upper),
                   col_upper=np.where(fixed, 0.0, lp.col_upper))


FACE = "CM restored on the relaxation's optimal face"
"""The entry of ``extra["reductions"]`` of a relaxed design whose point was moved by :func:`on_face`."""


def _only_cm_broken(optimality: dict) -> bool:
    """Whether a failed proof on the LP with CM closed its gap but its point breaks a row (CM:
    the relaxation's point holds every other row of the LP)."""
    gap = optimality.get("gap")
    return (gap is not None and gap <= optimality["gap_tolerance_rel"] * max(1.0, abs(optimality["upper_bound"]))
            and optimality["max_primal_violation"] > optimality["primal_tolerance"])


def on_face(target: DesignProblem, relaxed: DesignProblem, lp, run, fold: bool, objective: object,
            weights: np.ndarray | None, aggregate: str, drop_implied: bool):
    """When the relaxation's optimum is the LP's but its point (the centre of a larger optimal
    face) breaks CM: a point of the LP with CM on the relaxation's optimal face
    (:func:`face_model`), by Clarabel, proven with the relaxation's spread dual.
    ``(face_lp, (run, optimality))`` when proven, ``(why, None)`` when not.

    Measured on LP with RH and CM, L0,1, n = 256, alpha = 0.99: the relaxation's centre breaks CM
    by 2.7e-7; Clarabel on the LP with CM took 29 s ('AlmostSolved', proven), on the face 5.9 s."""
    from countdp.design.fast import build_reduced_lp, proven_point
    from countdp.design.mirror import mirrored_multipliers

    dual = target_dual(target, relaxed, lp, run)
    if dual is None:
        return {"certified": False, "reason": "rows not closed under the mirror"}, None
    u, v = dual
    full_lp = build_reduced_lp(target.n, target.alpha, target.properties + (("S",) if fold else ()), objective,
                               weights, aggregate, True, drop_implied)
    face_u, face_v = full_lp.problem.dual_from(target, u, v)
    if full_lp.folded:  # a folded row stands for a row and its mirror image: tight if either is
        face_u = np.maximum(face_u, mirrored_multipliers(full_lp.problem, face_u))
    face = face_model(full_lp, face_u, face_v, run.col_dual)
    LOG.info("the relaxation's point breaks CM: a point on its optimal face")
    point, optimality = proven_point(face, lambda _lp, _run, P: check_with(target, u, v, P), "face: ")
    if point is None:
        return optimality, None
    optimality["dual"] = "the LP's with CH in place of CM, CH's multipliers spread over the CM rows"
    if not optimality["certified"]:
        return {**optimality, "reason": "the point on the face is not proven"}, None
    return face, (point, optimality)


def before_template(problem: DesignProblem) -> bool:
    """Whether the relaxation is tried even where a template applies: L0,d (``d >= 1``) with F.
    Measured at n = 256, L0,1, with and without S: the relaxation answered LP with RH+CM+F
    (alpha = 0.5 and 0.62), CM+F and RM+CM+F (0.62) in 2.7 to 9.8 s, where the template (at
    n = 160 not solved, or not guiding) and Clarabel's point of the LP with CM had taken 17 s to
    over 60 s.  It costs: LP with RM+CM+F at 0.5, whose template guides (6.6 and 9.0 s before),
    took 17 to 22 s, its relaxation not proven (about 10 s for its two points); with the refined
    point of :func:`countdp.design.backends.interior_points` the relaxation is proven there
    (19.7 and 20.8 s in a sweep at load 2 on a machine about 1.8 times slower)."""
    from countdp.design.seed import point_before_template

    return point_before_template(problem)


def relaxed_design(n: int, alpha: float, props: tuple[str, ...], objective: object, weights: np.ndarray | None,
                   aggregate: str, drop_implied: bool, start: float) -> tuple[object, dict | None]:
    """For an LP with CM whose solve would be Clarabel's point (module docstring):
    the relaxation's point, proven on the LP with CM.  ``(FastResult, None)`` when proven,
    ``(None, why)`` when tried and not proven, ``(None, None)`` when it does not apply."""
    from countdp.design import seed
    from countdp.design.fast import (
        LARGE_METHOD,
        build_reduced_lp,
        choose_method,
        is_zero_one,
        proven_points,
        proven_result,
    )
    from countdp.design.mirror import mirror_symmetric

    if "CM" not in props or n < seed.MIN_N:
        return None, None
    target = DesignProblem(n, alpha, props, objective, weights, aggregate)
    relaxed = DesignProblem(n, alpha, relaxed_properties(props), objective, weights, aggregate)
    zero_one = is_zero_one(relaxed.objective)
    if (zero_one and not seed.too_near_one(n, alpha)) or (seed.applies(relaxed) and not before_template(relaxed)):
        # L0's paths (the large-n template), or a template's simplex
        return None, None
    fold = "S" not in props and mirror_symmetric(target)
    lp = build_reduced_lp(n, alpha, relaxed.properties + (("S",) if fold else ()), objective, weights, aggregate,
                          True, drop_implied)
    if choose_method(lp) != (LARGE_METHOD if zero_one else "guided"):
        return None, None
    build = time.perf_counter() - start
    LOG.info("CM relaxed to CH: the relaxation's interior point, proven with CM")
    reductions, face_why = [RELAXATION], None
    run, optimality = None, {}
    for run, optimality in proven_points(lp, prover(target, relaxed), "relaxation: "):
        if run is None or optimality["certified"]:
            break
        if _only_cm_broken(optimality):  # a point holding CM on the same optimal face, else the next point's
            face_why, found = on_face(target, relaxed, lp, run, fold, objective, weights, aggregate, drop_implied)
            if found is not None:
                lp, (point, optimality) = face_why, found
                # the face has no cost: the relaxation's objective stays
                run = replace(point, seconds=run.seconds + point.seconds, objective=run.objective)
                reductions.append(FACE)
                break
    if run is None:
        return None, optimality
    optimality["dual"] = "the LP's with CH in place of CM, CH's multipliers spread over the CM rows"
    if not optimality["certified"]:
        if face_why is not None:
            optimality["face"] = face_why
        return None, optimality
    return proven_result(lp, run, "guided", build, optimality, reductions), None
