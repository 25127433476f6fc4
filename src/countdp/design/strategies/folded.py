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

from countdp.design.lp_solve import CLARABEL_GUIDED, proven_result
from countdp.design.optimality import not_proven
from countdp.design.policy import guide_applies, too_near_one
from countdp.design.reductions.fold_symmetry import FOLDED, FoldS, mirror_symmetric, prove_unfolded
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, skipped_unless_accepted

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

UNFOLDED_DUAL = "the S-folded model's, mirrored and averaged"
"""The ``dual`` recorded in the certificate of a folded design."""


class FoldedS:
    """Solve with S folded in (Theorem 1), prove on the LP without S (module docstring)."""

    name = "S folded"
    extra_key = "folded"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        if request.method != "auto":
            return "a method was asked for"
        if not request.fold_symmetry or "S" in request.properties:
            return "S requested, or folding switched off"
        if request.zero_one and not too_near_one(request.n, request.alpha, settings):
            return "L0 away from alpha near 1 (the large-n template's)"
        if not mirror_symmetric(request.problem):
            return "not mirror symmetric"
        return None

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        began = time.perf_counter()
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        settings, plain = context.settings, request.problem
        folded, _ = FoldS().apply(plain)
        lp = context.reduced_lp(folded, True, request.drop_implied)
        chosen = settings.large_method if request.zero_one else "guided"
        if context.choose_method(lp) != chosen:
            return Attempt(self.name, "skipped", f"the folded model is not solved by {chosen}",
                           time.perf_counter() - began)
        build = time.perf_counter() - context.start
        if request.zero_one:
            methods = (settings.large_method,)
        else:  # the cold simplex only where a template applies (module docstring)
            methods = ("guided", CLARABEL_GUIDED) + (("simplex",) if guide_applies(plain, settings) else ())
        LOG.info("S folded in (same optimum, half the variables): %s rows, proven without S", f"{lp.A.shape[0]:,}")
        try:
            P, used, run, folded_optimality = context.solve_proven(lp, chosen, methods=methods)
        except RuntimeError as exc:
            return Attempt(self.name, "failed", str(exc), time.perf_counter() - began,
                           info=not_proven(str(exc)))
        optimality = self.certificate(lp, run, P, plain, used, folded_optimality, settings)
        seconds = time.perf_counter() - began
        if not optimality["certified"]:
            return Attempt(self.name, "unproven", "not proven without S", seconds,
                           info={**optimality, "folded_optimality": folded_optimality})
        return Attempt(self.name, "proven", seconds=seconds,
                       answer=proven_result(lp, run, used, build, optimality, [FOLDED]))

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
