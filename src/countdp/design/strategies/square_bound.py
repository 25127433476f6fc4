"""The best design within the bound: where no fast path has proven the request, the caller gave a time
limit and the general path does not fit the memory bound, the square-corner primal of the relaxed LP
(:func:`countdp.design.template.square_chain.square_design`; with CM kept where the relaxed one breaks
CM) as an unproven design.

Without it the engine stops there with the closed-form fallback (GM or GM remapped mixed with UM),
often UM itself near alpha = 1 (docs/design.md, step 2d, has the measurements).  The square corners restrict
the relaxed LP (CM as CH, S and WH dropped) to a free square at each corner, geometric tails and GM
in the middle: every design of that form that holds the relaxed LP's rows is a design of the
relaxed LP, and its optimum is close to the full optimum wherever the corners are about as wide as
the optimum's (:func:`countdp.design.policy.square_bound_width`).  It is not trusted: the planner
hands it to :func:`countdp.design.anytime.stopped_answer`, which repairs it (columns normalised,
the least UM that holds every row of the full LP), certifies it DP, keeps it only if it breaks no
row of the LP as asked, and bounds its gap by weak duality.  Nothing is proven optimal here, so it
runs only under the caller's time limit, where the answer is "the best design proven feasible".
"""

from __future__ import annotations

import logging
import time

from countdp.design.memory import memory_refusal
from countdp.design.policy import large_n_applies, planner_may_shortcut, square_bound_width
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, skipped_unless_accepted
from countdp.design.template.square_chain import square_design
from countdp.design.watch import current

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

LABEL = "square corners within the bound (not proven)"
"""The method label of an answer from this strategy (stored in artifacts)."""


class SquareBound:
    """The square-corner primal as the unproven design under a time limit (module docstring)."""

    name = LABEL
    extra_key = "square_bound"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the planner chooses the method, closed forms are allowed,
        :func:`countdp.design.policy.large_n_applies` holds, the caller gave a time limit, the general
        path does not fit the memory bound and the corners fit; else why not."""
        why = planner_may_shortcut(request) or large_n_applies(request, settings)
        if why is not None:
            return why
        if current().time_limit is None:
            return "no time limit: only a proven design is returned"
        if memory_refusal(request.n, settings) is None:
            return "the general path fits the memory bound"
        return square_bound_width(request.n, request.alpha, request.objective, settings)[1]

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """``unproven`` with the square-corner primal as the answer (status ``not proven optimal``,
        no certificate: the planner's stopped answer certifies it), or ``failed`` when HiGHS does
        not solve the restricted LP (the closed-form fallbacks then answer)."""
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        W, _ = square_bound_width(request.n, request.alpha, request.objective, context.settings)
        LOG.info("no proven path fits: square corners of width %d as the design within the bound", W)
        began = time.perf_counter()
        problem, full, x, info = square_design(request.problem, W, context.settings)
        seconds = time.perf_counter() - began
        record = {"width": W, "template_properties": "+".join(problem.properties)}
        if x is None:
            return Attempt(self.name, "failed", f"W={W}: {info}", seconds, info=record)
        record.update(info)
        answer = Answer(x.reshape(request.n + 1, request.n + 1), "HIGHS", self.name, "not proven optimal", seconds,
                        0.0, float(full.c @ x), {"backend": "highs", "reductions": [self.name], self.extra_key: record})
        return Attempt(self.name, "unproven", "the relaxed LP's square corners, not proven", seconds, answer, record)


STRATEGY = SquareBound()
