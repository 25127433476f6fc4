"""The relaxed large-n template strategy: a design at large ``n`` from an optimal vertex of the LP
with CM relaxed to CH (S and WH dropped; CM kept where the relaxation is strictly better) at
template size, its dual and vertex solved on the full LP by chain elimination, and the certificate
checked on the full requested LP (:mod:`countdp.design.template.relaxed_proof`).

It applies where the large-n template does (:func:`countdp.design.policy.large_n_applies`: a
uniform-prior sum, CM or CH, no F, ``n`` from :attr:`~countdp.design.settings.TemplateTuning.template_min_n`),
for the objectives of :attr:`~countdp.design.settings.ChainTuning.relaxed_objectives`, where the
rule's width (:func:`countdp.design.policy.relaxed_width`) gives a template that fits twice in
``n`` (below that the corners are not yet those of every larger ``n``, and the template is most of
the model) and is at most :attr:`~countdp.design.settings.ChainTuning.relaxed_max_template_n`
wide.  Where its certificate does not close, the width
:attr:`~countdp.design.settings.ChainTuning.relaxed_widening` times wider is tried once, if it fits
too (:func:`countdp.design.policy.relaxed_widths`).  Only a certificate that closes on the full
model answers; otherwise the attempt fails with the reason and the next strategy follows.
"""

from __future__ import annotations

import logging

from countdp.design.policy import large_n_applies, planner_may_shortcut, relaxed_widths
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext, skipped_unless_accepted, widths_attempt
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
        :attr:`~ChainTuning.relaxed_objectives`, its rule's width's template fits twice in ``n`` and
        is at most :attr:`~ChainTuning.relaxed_max_template_n` wide."""
        why = planner_may_shortcut(request)
        if why is not None:
            return why
        if request.objective.name not in settings.chains.relaxed_objectives:
            return f"objective {request.objective.name} not in {settings.chains.relaxed_objectives}"
        why = large_n_applies(request, settings)
        if why is not None:
            return why
        return relaxed_widths(request.n, request.alpha, request.objective, settings)[1]

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """The relaxed template at each of :func:`countdp.design.policy.relaxed_widths` in turn:
        ``proven`` with the first answer whose certificate closes, else ``failed`` with the last
        width's certificate record (kept in a later answer's ``extra["relaxed_template"]``); every
        width tried, with its outcome, is listed in the record's ``"widths"``."""
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        widths, _ = relaxed_widths(request.n, request.alpha, request.objective, context.settings)

        def prove(W: int) -> dict:
            LOG.info("relaxed large n: the template of width %d (n = %d), proven on the full model", W, 3 * W + 4)
            return prove_relaxed_width(request.problem, W, context=context)

        return widths_attempt(self, widths, prove, context, "HIGHS",
                              lambda W, result: {"width": W, "template_n": 3 * W + 4, "seconds": result.get("seconds")})


STRATEGY = RelaxedTemplate()
