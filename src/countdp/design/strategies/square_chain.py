"""The square corners with the chain dual: L1 and L2 at large ``n`` where the corners are wide, from a
restricted primal with a free square at each corner and a dual solved by chain elimination on the
full LP, proven on the full model (:mod:`countdp.design.template.square_chain`).

It applies where the large-n template does (:func:`countdp.design.policy.large_n_applies`: a
uniform-prior sum, CM or CH, no F, ``n`` from :attr:`~countdp.design.settings.TemplateTuning.template_min_n`)
for the objectives of :attr:`~countdp.design.settings.ChainTuning.square_chain_objectives`, from a
corner width of :attr:`~countdp.design.settings.ChainTuning.square_chain_min_width`, when both
corners fit in ``n`` with a middle between them and the primal is small enough
(:func:`countdp.design.policy.square_chain_widths`), and narrower after the relaxed template where it did
not close (:data:`AFTER_TEMPLATE`).  It is tried before the relaxed template, whose
template-size vertex grows far faster with the width, with RH too: where the relaxed corners break
CM (RH+CM) they are solved again with CM kept.  Only a certificate that closes on the full model
answers; otherwise the attempt fails with the reason and the next strategy follows.
"""

from __future__ import annotations

import logging

from countdp.design.policy import large_n_applies, planner_may_shortcut, square_chain_widths
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, skipped_unless_accepted, widths_attempt
from countdp.design.template.square_chain import prove_square_chain

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

LABEL = "square corners, chain dual"
"""The method and reduction label of an answer from this strategy (stored in artifacts)."""


class SquareChain:
    """The square corners with the chain dual (module docstring), proven on the full model or given up;
    ``narrow``: the corners below :attr:`~ChainTuning.square_chain_min_width`, tried after the relaxed
    template (:data:`AFTER_TEMPLATE`), where its certificate did not close."""

    def __init__(self, narrow: bool = False) -> None:
        self.narrow = narrow
        self.name = LABEL + (", after the relaxed template" if narrow else "")
        self.extra_key = "square_chain" + ("_narrow" if narrow else "")

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the planner chooses the method, closed forms are allowed, the objective is
        one of :attr:`~ChainTuning.square_chain_objectives`,
        :func:`countdp.design.policy.large_n_applies` holds and the rule's width is tried
        (:func:`countdp.design.policy.square_chain_widths`); else why not."""
        why = planner_may_shortcut(request)
        if why is not None:
            return why
        if request.objective.name not in settings.chains.square_chain_objectives:
            return f"objective {request.objective.name} not in {settings.chains.square_chain_objectives}"
        why = large_n_applies(request, settings)
        if why is not None:
            return why
        return square_chain_widths(request.n, request.alpha, request.objective, settings, self.narrow)[1]

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """Each width of :func:`countdp.design.policy.square_chain_widths` in turn: ``proven`` with the
        first answer whose certificate closes, else ``failed`` with the last width's record (kept in a
        later answer's ``extra["square_chain"]``); every width tried is listed in ``"widths"``."""
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        widths, _ = square_chain_widths(request.n, request.alpha, request.objective, context.settings, self.narrow)

        def prove(W: int) -> dict:
            LOG.info("square corners of width %d, the chain dual, proven on the full model", W)
            return prove_square_chain(request.problem, W, settings=context.settings)

        return widths_attempt(self, widths, prove, context, "CLARABEL",
                              lambda W, result: {"width": W, "seconds": result.get("seconds")})


STRATEGY = SquareChain()
AFTER_TEMPLATE = SquareChain(narrow=True)
"""Narrow corners (L2 from alpha about 0.86 to 0.885, L1 from 0.91 to 0.927), where the relaxed template
is as fast but its certificate may not close (RH+CM+WH+S, L2, alpha 0.88: gap 7.3e-7 at both widths)."""
