"""An LP with CM whose solve would be Clarabel's point: the relaxation's point (CH in place of
CM), proven on the LP with CM.

For an interior point method CM is the costly part of the model; the relaxation
(:mod:`countdp.design.reductions.relax_cm`) is cheaper, and its point, the centre of its optimal
face, often holds CM.  Its dual, spread over the CM rows, proves the point on the LP with CM (the
independent check also checks every CM row).  When the proof closes its gap but the point breaks
CM (the relaxation's optimal face is larger than the LP's), a point of the LP with CM on that face
is sought (:meth:`CMRelaxation.on_face`) and proven by the same dual.  When neither proves it
(the relaxation strictly better, say), the general LP follows.

Tried from :attr:`~countdp.design.settings.TemplateTuning.template_min_n` where no guide template
applies (alpha near 1: a template's simplex is faster where one does), except for L0,d
(``d >= 1``) with F (:func:`countdp.design.policy.point_before_template`), whose templates rarely
guide; and for L0 where alpha is too near 1 for the large-n template
(:func:`countdp.design.policy.too_near_one`).  A mirror-symmetric relaxation without S is solved
with S folded in.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import numpy as np

from countdp.design.model import DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.policy import guide_applies, point_before_template
from countdp.design.reductions.chain import Chain
from countdp.design.reductions.fold_symmetry import NOT_CLOSED, FoldS, mirrored_multipliers
from countdp.design.reductions.relax_cm import (
    FACE,
    RELAXATION,
    SPREAD_DUAL,
    RelaxCM,
    check_with,
    face_model,
    only_cm_broken,
    prover,
    target_dual,
)
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategies.through_reductions import Reduced, ThroughReductions
from countdp.design.strategy import SolveContext

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


class CMRelaxation(ThroughReductions):
    """The relaxation's point (or a point on its optimal face), proven on the LP with CM."""

    name = "CM relaxation"
    extra_key = "cm_relaxation"
    reductions = (RelaxCM(),)
    optional = (FoldS(),)
    model = "the relaxation"
    zero_one_near_one = True

    def conditions(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        if "CM" not in request.properties or request.n < settings.template.template_min_n:
            return f"needs CM and n from {settings.template.template_min_n}"
        return None

    def conditions_reduced(self, request: DesignRequest, settings: SolverSettings,
                           reduced: DesignProblem) -> str | None:
        if guide_applies(reduced, settings) and not point_before_template(reduced):
            return "a guide template applies (its simplex answers)"
        return None

    def solve_reduced(self, request: DesignRequest, context: SolveContext, start: Reduced) -> Attempt:
        target = request.problem
        relaxed, _ = Chain(self.reductions).apply(target)
        fold = len(start.chain.reductions) > len(self.reductions)
        LOG.info("CM relaxed to CH: the relaxation's interior point, proven with CM")
        lp, run, optimality, reductions = self.relaxation_points(request, context, target, relaxed, start.lp, fold)
        if run is None:
            return Attempt(self.name, "failed", optimality.get("reason", "no point"),
                           time.perf_counter() - start.began, info=optimality)
        unproven = ("the relaxation's points are not proven with CM", optimality)
        return self.finish(start, (lp, run, "guided"), optimality, reductions, unproven)

    def relaxation_points(self, request: DesignRequest, context: SolveContext, target: DesignProblem,
                          relaxed: DesignProblem, lp, fold: bool) -> tuple:
        """Clarabel's points of the relaxation ``lp`` in turn, each proven on the LP with CM, until
        one is; a point that only breaks CM is replaced by one on the relaxation's optimal face
        (:meth:`on_face`) if that is proven.  ``(lp, run, optimality, reductions)``: the model the
        answer's point lives on (the face's, if moved), the point (``None``: no point at all), its
        certificate (with the face's failure as ``"face"`` when not proven)."""
        reductions, face_why = [RELAXATION], None
        run, optimality = None, {}
        prove = prover(target, relaxed, settings=context.settings)
        for run, optimality in context.solves.proven_points(lp, prover=prove, what="relaxation: "):
            if run is None or optimality["certified"]:
                break
            if only_cm_broken(optimality):  # a point holding CM on the same optimal face, else the next point's
                face_why, found = self.on_face(request, context, target, relaxed, lp, run, fold)
                if found is not None:
                    lp, (point, optimality) = face_why, found
                    # the face has no cost: the relaxation's objective stays
                    run = replace(point, seconds=run.seconds + point.seconds, objective=run.objective)
                    reductions.append(FACE)
                    break
        if run is None:
            return lp, None, optimality, reductions
        optimality["dual"] = SPREAD_DUAL
        if not optimality["certified"] and face_why is not None:
            optimality["face"] = face_why
        return lp, run, optimality, reductions

    @staticmethod
    def on_face(request: DesignRequest, context: SolveContext, target: DesignProblem, relaxed: DesignProblem,
                lp, run, fold: bool) -> tuple:
        """When the relaxation's optimum is the LP's but its point (the centre of a larger optimal
        face) breaks CM: a point of the LP with CM on the relaxation's optimal face
        (:func:`countdp.design.reductions.relax_cm.face_model`), by Clarabel, proven with the
        relaxation's spread dual.  ``(face_lp, (run, optimality))`` when proven, ``(why, None)`` when not."""
        dual = target_dual(target, relaxed, lp, run)
        if dual is None:
            return not_proven(NOT_CLOSED), None
        u, v = dual
        folded, _ = Chain(CMRelaxation.optional if fold else ()).apply(target)
        full_lp = context.solves.reduced_lp(folded, True, request.drop_implied)
        face_u, face_v = full_lp.problem.dual_from(target, u, v)
        if full_lp.folded:  # a folded row stands for a row and its mirror image: tight if either is
            face_u = np.maximum(face_u, mirrored_multipliers(full_lp.problem, face_u))
        face = face_model(full_lp, face_u, face_v, run.col_dual, settings=context.settings)
        LOG.info("the relaxation's point breaks CM: a point on its optimal face")
        def prove_on_face(_lp, _run, P):  # the spread dual proves every point of the face
            return check_with(target, u, v, P, settings=context.settings)

        point, optimality = context.solves.proven_point(face, prover=prove_on_face, what="face: ")
        if point is None:
            return optimality, None
        optimality["dual"] = SPREAD_DUAL
        if not optimality["certified"]:
            return {**optimality, "reason": "the point on the face is not proven"}, None
        return face, (point, optimality)


STRATEGY = CMRelaxation()
