"""The relaxed large-n template strategy: a design at large ``n`` from an optimal vertex of the LP
with CM relaxed to CH (S and WH dropped; CM kept where the relaxation is strictly better) at
template size, its dual and vertex solved on the full LP by chain elimination, and the certificate
checked on the full requested LP (:mod:`countdp.design.template.relaxed_proof`).

It applies where the large-n template does (:func:`countdp.design.policy.large_n_applies`: a
uniform-prior sum, CM or CH, no F, ``n`` from :attr:`~countdp.design.settings.TemplateTuning.template_min_n`),
for the objectives of :attr:`~countdp.design.settings.ChainTuning.relaxed_objectives`, with one
width (:func:`countdp.design.policy.relaxed_width`) whose template fits twice in ``n`` (below that
the corners are not yet those of every larger ``n``, and the template is most of the model) and
is at most :attr:`~countdp.design.settings.ChainTuning.relaxed_max_template_n` wide.  Only
a certificate that closes on the full model answers; otherwise the attempt fails with the reason
and the next strategy follows.
"""

from __future__ import annotations

import logging
import time

from countdp.design.policy import large_n_applies, planner_may_shortcut, relaxed_width
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, certificate_attempt, skipped_unless_accepted
from countdp.design.template.relaxed_proof import prove_relaxed_width

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

LABEL = "relaxed large-n template"
"""The method and reduction label of an answer from this strategy (stored in artifacts)."""


class RelaxedTemplate:
    """The relaxed large-n template (module docstring), proven on the full model or given up."""

    name = LABEL
    extra_key = "relaxed_template"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the planner chooses the method, closed forms are allowed,
        :func:`countdp.design.policy.large_n_applies` holds, the objective is one of
        :attr:`~ChainTuning.relaxed_objectives`, its width's template fits twice in ``n`` and is
        at most :attr:`~ChainTuning.relaxed_max_template_n` wide."""
        why = planner_may_shortcut(request)
        if why is not None:
            return why
        if request.objective.name not in settings.chains.relaxed_objectives:
            return f"objective {request.objective.name} not in {settings.chains.relaxed_objectives}"
        why = large_n_applies(request, settings)
        if why is not None:
            return why
        W = relaxed_width(request.alpha, request.objective, settings)
        if W is None or 2 * (3 * W + 4) > request.n:
            return f"n={request.n} below twice the template of width {W} (alpha = {request.alpha:g})"
        if 3 * W + 4 > settings.chains.relaxed_max_template_n:
            return (f"the template of width {W} ({3 * W + 4} wide, alpha = {request.alpha:g}) is wider than "
                    f"{settings.chains.relaxed_max_template_n}")
        return None

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """The relaxed template at :func:`countdp.design.policy.relaxed_width`: ``proven`` with the
        answer, else ``failed`` with the certificate's record (kept in a later answer's
        ``extra["relaxed_template"]``)."""
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        settings = context.settings
        W = relaxed_width(request.alpha, request.objective, settings)
        LOG.info("relaxed large n: the template of width %d (n = %d), proven on the full model", W, 3 * W + 4)
        result = prove_relaxed_width(request.problem, W, context=context)
        seconds = time.perf_counter() - context.start
        record = {"width": W, "template_n": 3 * W + 4, "seconds": result.get("seconds")}
        return certificate_attempt(self, result, seconds, "HIGHS", record)

STRATEGY = RelaxedTemplate()
