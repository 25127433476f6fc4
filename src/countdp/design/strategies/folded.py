"""A mirror-symmetric LP without S, solved with S folded in and proven without it.

Theorem 1: the mirror ``P[i, j] -> P[n-i, n-j]`` maps such an LP to itself, so adding S keeps its
optimum; the folded model has half the variables and is less degenerate
(:mod:`countdp.design.reductions.fold_symmetry`).  Its answer is proven on the LP without S with
the folded model's dual unfolded.  It is tried where the LP's own solve would be ``guided`` (the
objectives other than L0), and for L0 where alpha is too near 1 for a template
(:func:`countdp.design.policy.too_near_one`) and Clarabel's point answers.

Where no template applies (:func:`countdp.design.policy.guide_applies`: alpha near 1) only the
guided methods run on the folded model; when neither is proven, the LP without S is solved next,
with every fallback, which is cheaper there than the cold methods on the folded model.  Where a
template applies, the cold simplex on the folded model comes next (cheaper than without S).
"""

from __future__ import annotations

import logging
import time

from countdp.design.lp_solve import CLARABEL_GUIDED
from countdp.design.optimality import not_proven
from countdp.design.policy import guide_applies
from countdp.design.reductions.fold_symmetry import FOLDED, UNFOLDED_DUAL, FoldS, prove_unfolded
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategies.through_reductions import Reduced, ThroughReductions
from countdp.design.strategy import SolveContext

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


class FoldedS(ThroughReductions):
    """Solve with S folded in (Theorem 1), prove on the LP without S (module docstring)."""

    name = "S folded"
    extra_key = "folded"
    reductions = (FoldS(),)
    model = "the folded model"
    zero_one_near_one = True

    def conditions(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        if not request.fold_symmetry or "S" in request.properties:
            return "S requested, or folding switched off"
        return None

    def solve_reduced(self, request: DesignRequest, context: SolveContext, start: Reduced) -> Attempt:
        settings, plain, lp = context.settings, request.problem, start.lp
        if request.zero_one:
            methods = (settings.solver.large_method,)
        else:  # the cold simplex only where a template applies (module docstring)
            methods = ("guided", CLARABEL_GUIDED) + (("simplex",) if guide_applies(plain, settings) else ())
        LOG.info("S folded in (same optimum, half the variables): %s rows, proven without S", f"{lp.A.shape[0]:,}")
        try:
            P, used, run, folded_optimality = context.solves.solve_proven(lp, self.method(request, settings),
                                                                          methods=methods)
        except RuntimeError as exc:
            return Attempt(self.name, "failed", str(exc), time.perf_counter() - start.began,
                           info=not_proven(str(exc)))
        optimality = self.certificate(lp, run, P, plain, used, folded_optimality, settings)
        unproven = ("not proven without S", {**optimality, "folded_optimality": folded_optimality})
        return self.finish(start, (lp, run, used), optimality, [FOLDED], unproven)

    @staticmethod
    def certificate(lp, run, P, plain, used: str, folded_optimality: dict, settings: SolverSettings) -> dict:
        """The certificate of ``P`` on the LP without S (:func:`prove_unfolded`), with how it was found."""
        optimality = prove_unfolded(lp, run, P, plain, settings=settings)
        optimality.update(method=used, dual=UNFOLDED_DUAL)
        if run.guide:
            optimality["guide"] = run.guide
        if run.dp_closure:
            optimality["dp_closure"] = True
        if "attempts" in folded_optimality:
            optimality["attempts"] = folded_optimality["attempts"]
        return optimality


STRATEGY = FoldedS()
