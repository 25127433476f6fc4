"""The square-corner template strategy: mirror-symmetric L0 at large ``n`` and ``alpha`` near 1, from two small
LPs (a restricted primal with a free square at each corner, and a dual restricted to copies of
classes and by complementary slackness), proven on the full model
(:mod:`countdp.design.template.square_proof`).

It applies where the large-n template does (:func:`countdp.design.policy.large_n_applies`: a
uniform-prior sum, CM or CH, no F, ``n`` from :attr:`~countdp.design.settings.TemplateTuning.template_min_n`)
for L0 whose LP the mirror maps to itself (with S or without: by Theorem 1 an L0 optimum has a
symmetric one beside it, so the template's symmetric answer, proven on the LP as asked, is optimal
either way), from a corner width of :attr:`~countdp.design.settings.TemplateTuning.square_min_width`
(:func:`countdp.design.template.square_proof.square_width`), when both corners and a middle fit
twice in ``n``.  The three-width template's unknowns grow as ``9 W^2``, these as ``W^2``: it is
tried first where the corners are wide.  Only a certificate that closes on the full model answers;
otherwise the attempt fails with the reason and the next strategy follows.
"""

from __future__ import annotations

import logging
import time

from countdp.design.policy import large_n_applies, planner_may_shortcut
from countdp.design.reductions.fold_symmetry import mirror_symmetric
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, certificate_attempt, skipped_unless_accepted
from countdp.design.template.square_proof import prove_square, square_width

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

LABEL = "square-corner template"
"""The method and reduction label of an answer from this strategy (stored in artifacts)."""


class SquareTemplate:
    """The square-corner template (module docstring), proven on the full model or given up."""

    name = LABEL
    extra_key = "square_template"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the planner chooses the method, closed forms are allowed, the objective is
        L0 with a mirror-symmetric LP, :func:`countdp.design.policy.large_n_applies` holds, the corner width is at least
        :attr:`~TemplateTuning.square_min_width` and ``n >= 4 (W + 1)``; else why not."""
        why = planner_may_shortcut(request)
        if why is not None:
            return why
        if request.objective.name != "L0" or not mirror_symmetric(request.problem):
            return "not L0 with a mirror-symmetric LP"
        why = large_n_applies(request, settings)
        if why is not None:
            return why
        if not 0.0 < request.alpha < 1.0:
            return f"alpha = {request.alpha:g} outside (0, 1)"
        W = square_width(request.alpha, settings)
        if W < settings.template.square_min_width:
            return f"corners {W} wide, below {settings.template.square_min_width} (alpha = {request.alpha:g})"
        if 4 * (W + 1) > request.n:
            return f"n={request.n} below twice both corners of width {W} (alpha = {request.alpha:g})"
        return None

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """The square-corner template at :func:`~countdp.design.template.square_proof.square_width`:
        ``proven`` with the answer, else ``failed`` with the certificate's record (kept in a later
        answer's ``extra["square_template"]``)."""
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        W = square_width(request.alpha, context.settings)
        LOG.info("square corners: the template of width %d, proven on the full model", W)
        result = prove_square(request.problem, W, settings=context.settings)
        seconds = time.perf_counter() - context.start
        return certificate_attempt(self, result, seconds, "CLARABEL", {"width": W, "seconds": result.get("seconds")})

STRATEGY = SquareTemplate()
