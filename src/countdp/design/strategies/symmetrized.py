"""A mirror-symmetric LP with S requested, answered by the LP without S, symmetrized.

Where the guided methods on the folded model (the LP with S) did not prove it, Clarabel's point
of the LP without S may: it is proven there, averaged with its mirror image (which holds S and
is as good, the mirror mapping the LP to itself: Theorem 1), and proven on the LP with S with the
dual of the LP without S, S's rows given 0 (:class:`countdp.design.reductions.fold_symmetry.DropS`).
Only the point is tried (no template, no simplex), and only where no guide template applies
(:func:`countdp.design.policy.guide_applies`: alpha near 1): where one does, the entries fall to
``alpha^n`` and Clarabel's point is rarely proven, while the cold simplex on the folded model,
which comes next, answers.  The planner runs this between the guided and the cold methods of the
reduced model.
"""

from __future__ import annotations

import logging
import time

from countdp.design.dual_repair import prove_dual
from countdp.design.lp_solve import vertex_matrix
from countdp.design.model import DesignProblem
from countdp.design.policy import guide_applies
from countdp.design.polish import full_dual
from countdp.design.reductions.fold_symmetry import PADDED_DUAL, SYMMETRIZED, DropS
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategies.through_reductions import Reduced, ThroughReductions
from countdp.design.strategy import SolveContext
from countdp.privacy.certify import certify

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


class SymmetrizedS(ThroughReductions):
    """Clarabel's point of the LP without S, symmetrized and proven with S (module docstring)."""

    name = "S symmetrized"
    extra_key = "symmetrized"
    reductions = (DropS(),)
    model = "the model without S"

    def conditions(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        if "S" not in request.properties or request.zero_one:
            return "needs S requested, and an objective other than L0"
        return None

    def conditions_reduced(self, request: DesignRequest, settings: SolverSettings,
                           reduced: DesignProblem) -> str | None:
        if guide_applies(request.problem, settings):
            return "a guide template applies (the cold simplex on the folded model answers)"
        return None

    def solve_reduced(self, request: DesignRequest, context: SolveContext, start: Reduced) -> Attempt:
        target, lp, inverse = request.problem, start.lp, start.inverse
        LOG.info("the LP without S, then averaged with its mirror image")
        run, plain_optimality = context.solves.proven_point(lp, what="without S: ")
        if run is None:
            return Attempt(self.name, "failed", plain_optimality["reason"], time.perf_counter() - start.began,
                           info=plain_optimality)
        if not plain_optimality["certified"]:
            return Attempt(self.name, "unproven", "without S: not proven", time.perf_counter() - start.began,
                           info={**plain_optimality, "reason": "without S: not proven"})
        raw = inverse.invert_primal(vertex_matrix(lp, run))
        u, v = inverse.invert_dual(*full_dual(lp, run.row_dual, run.col_dual))
        optimality = prove_dual(target.lp(), target.point(certify(raw, request.alpha)[0]), u, v,
                                settings=context.settings)
        optimality.update(method="guided", guide=run.guide, dual=PADDED_DUAL)
        if run.dp_closure:
            optimality["dp_closure"] = True
        unproven = ("the symmetrized point is not proven with S", optimality)
        return self.finish(start, (lp, run, "guided"), optimality, [SYMMETRIZED], unproven, raw)


STRATEGY = SymmetrizedS()
