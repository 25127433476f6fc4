"""The large-n template strategy: a design at large ``n`` from a small template LP, proven
optimal on the full model (:mod:`countdp.design.template`), or given up with the reason.

It applies to L0, L0d, L1 and L2 with a uniform prior summed over inputs, CM or CH and no F,
from :attr:`~countdp.design.settings.TemplateTuning.template_min_n` (:func:`countdp.design.policy.large_n_applies`),
when the planner chooses the method and closed forms are allowed.  The template widths tried are
:func:`countdp.design.policy.template_widths`; a template is solved at twice its size (the rows of
every kind appear there), and one that does not fit twice in ``n`` costs about as much as the
general path, so it is not tried.  Only a certificate that closes on the full model answers; the
record of the widths tried goes to ``extra["large_n"]`` of whichever answer comes next.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from countdp.design.model import DesignProblem
from countdp.design.policy import large_n_applies, planner_may_shortcut, template_widths
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext
from countdp.design.template.proof import prove_width

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

LABEL = "large-n template"
"""The method and reduction label of an answer from this strategy (stored in artifacts)."""


def large_n_design(request: DesignRequest, *, widths: tuple[int, ...] | None = None, at_full_size: bool = True,
                   context: SolveContext) -> tuple[np.ndarray | None, dict]:
    """``(P, info)``: a proven-optimal design of ``request`` (L0, L0d, L1 or L2, uniform prior, the
    sum; the prior given is not used), or ``(None, info)`` with ``info["reason"]``.  ``widths``
    default: :func:`countdp.design.policy.template_widths` (at most two: the widths tried are
    counted, not timed, so the same widths are tried under any load); tuning and the general
    sub-solve from ``context``.

    A template is solved at twice its size.  One that does not fit twice in ``n`` is solved at
    ``n`` itself if it is the first width and ``at_full_size``, else not at all (the planner's
    choice: such a template costs as much as the general path); a wider one never.

    ``P`` is the expanded template solution before :func:`countdp.privacy.certify.certify` (as
    every strategy returns matrices), or its DP closure (``info["optimality"]["dp_closure"]``);
    ``info["optimality"]`` is the certificate of :func:`countdp.design.optimality.check_optimality`
    on the full model, with the expanded dual, for ``certify(P)`` (deterministic, so for the matrix
    the caller releases).  For L0, ``info["template_dual"]`` is the template dual that proved it, in
    units where the costs are 1: it proves the same template's spread at other sizes
    (:func:`countdp.design.template.proof.prove_copied_dual`)."""
    settings = context.settings
    n, alpha, objective = request.n, request.alpha, request.objective
    start = time.perf_counter()
    tried = []
    if widths is None:
        widths = template_widths(alpha, objective, settings)
        if not widths:
            return None, {"used": False, "tried": [], "seconds": time.perf_counter() - start,
                          "reason": _no_width_reason(settings)}
    problem = None
    for k, W in enumerate(widths):
        if 3 * W + 4 > n or ((k or not at_full_size) and 2 * (3 * W + 4) > n):
            break
        if problem is None:
            problem = DesignProblem(n, alpha, request.properties, objective)
        LOG.info("large n: the template of width %d (n = %d), proven on the full model", W, 3 * W + 4)
        result = prove_width(problem, W, template_size=2 * (3 * W + 4), context=context)
        P = result.pop("matrix", None)
        result.pop("u", None), result.pop("v", None)
        template_dual = result.pop("template_dual", None)
        tried.append({"width": W, "gap": result.get("gap"), "certified": result["certified"],
                      **({"reason": result["reason"]} if "reason" in result else {})})
        if result["certified"]:
            return P, {"used": True, "width": W, "template_n": 3 * W + 4, "tried": tried,
                       "seconds": time.perf_counter() - start, "optimality": result, "template_dual": template_dual}
        if 2 * (3 * W + 4) >= n:
            break  # a wider template would be most of the model: the general path is as good
    if tried:
        reason = "no template width closed the certificate"
    else:
        twice = "twice " if not at_full_size else ""
        reason = (f"n={n} below {twice}the template of width {widths[0]} (n = {3 * widths[0] + 4}), "
                  f"as wide as the corners at alpha = {alpha:g}")
    return None, {"used": False, "reason": reason, "tried": tried, "seconds": time.perf_counter() - start}


def _no_width_reason(settings: SolverSettings) -> str:
    """Why no width is tried for an objective other than L0 (its corners are wider than every one)."""
    tuning = settings.template
    return (f"alpha^W > {tuning.support_corner_decay} for every width W in {tuning.support_widths}: "
            "corners wider than every template")


class LargeNTemplate:
    """The large-n template path (module docstring), proven on the full model or given up."""

    name = LABEL
    extra_key = "large_n"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the planner chooses the method, closed forms are allowed and
        :func:`countdp.design.policy.large_n_applies` holds; else why not."""
        return planner_may_shortcut(request) or large_n_applies(request, settings)

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """The template design at the widths of :func:`countdp.design.policy.template_widths`, none
        solved at full size; ``proven`` with the answer, else ``failed`` with the record of the
        widths tried (``info``, kept in a later answer's ``extra["large_n"]``)."""
        P, large = large_n_design(request, at_full_size=False, context=context)
        large.pop("template_dual", None)  # an array: the record keeps the width that proves it
        seconds = time.perf_counter() - context.start
        if P is None:
            LOG.info("large n: %s; the general path", large["reason"])
            return Attempt(self.name, "failed", large["reason"], seconds, info=large)
        answer = Answer(P, "CLARABEL", LABEL, "optimal", seconds, 0.0, large["optimality"]["primal_objective"],
                        {"backend": "highs", "reductions": [LABEL], "optimality": large.pop("optimality"),
                         "large_n": large})
        return Attempt(self.name, "proven", seconds=seconds, answer=answer)


STRATEGY = LargeNTemplate()
