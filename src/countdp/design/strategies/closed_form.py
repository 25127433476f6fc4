"""Closed forms: no LP at all, where a theorem gives the optimum of the design LP.

* ``GM`` (Theorem 3 of the paper): objective L0, uniform weights, the sum, and GM satisfies every
  requested property (checked on GM's matrix with the LP's own operators, tolerance
  :attr:`~countdp.design.settings.ProofTuning.gm_tol`).  GM is an L0-optimal BasicDP mechanism,
  so the LP optimum with extra properties is at least L0(GM); GM is feasible, so it is optimal.
  This covers BasicDP alone, and WH (+S, +RM, +RH) when ``n >= 2a/(1-a)`` (Lemma 2).  It is
  checked by the explicit dual of GM remapped (for L0 the remap is the identity), else by an LP
  dual up to :attr:`~countdp.design.settings.ProofTuning.check_closed_form_max_n`.
* ``GM remapped`` (:mod:`countdp.design.remapped_gm`): the sum, any prior and any objective (each
  loss is non-decreasing in ``|i - j|``), except where ``GM`` applies.  GM followed by the best remap
  of its outputs (Ghosh, Roughgarden and Sundararajan) is an optimum of the LP without properties,
  so of the LP with every property it satisfies; proven by an explicit dual, not by an LP.  If
  that certificate does not close, the LP is solved (up to the check size; above it the theorem
  stands, the dual's gap recorded).
* ``EM`` (Theorem 4): objective L0 and F requested, any weights and either aggregate.  Under F every
  column's L0 loss is ``(n+1)/n (1 - y)``, independent of the weights, so the sum and the max are
  both that value; EM maximises ``y`` among fair BasicDP mechanisms and has all seven properties.
"""

from __future__ import annotations

import time

import numpy as np

from countdp.design.constraints import property_rows
from countdp.design.remapped_gm import THEOREM, remap_certificate, remapped_geometric
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.certify import certify
from countdp.values.objectives import objective_value

REMAPPED_GM = "GM remapped"
"""The closed form of :mod:`countdp.design.remapped_gm` (no property, any prior and objective)."""


def closed_form(request: DesignRequest, settings: SolverSettings) -> tuple[str, np.ndarray] | None:
    """``(name, matrix)`` when a theorem says it is an optimum of the request's LP (module
    docstring): ``name`` is ``"GM"``, ``"EM"`` or :data:`REMAPPED_GM`; else ``None``."""
    n, alpha, props = request.n, request.alpha, request.properties
    if request.zero_one and "F" in props:
        return "EM", CLOSED_FORMS["EM"](n, alpha)
    if request.aggregate != "sum":
        return None
    if not (request.zero_one and request.uniform):
        P = remapped_geometric(n, alpha, request.objective, request.weights)
        return (REMAPPED_GM, P) if satisfies(P, props, settings) else None
    P = CLOSED_FORMS["GM"](n, alpha)
    return ("GM", P) if satisfies(P, props, settings) else None


def satisfies(P: np.ndarray, properties: tuple[str, ...], settings: SolverSettings) -> bool:
    """Whether ``P`` breaks no row of any of ``properties`` by more than ``settings.proof.gm_tol``."""
    x = P.ravel()
    return all(property_rows(p, P.shape[0] - 1).violation(x) <= settings.proof.gm_tol for p in properties)


def _answer(request: DesignRequest, name: str, P: np.ndarray, note: str, optimality: dict, start: float) -> Answer:
    value = objective_value(P, request.objective, request.weights, request.aggregate)
    return Answer(P, "closed-form", name, "optimal", time.perf_counter() - start, 0.0, value,
                  {"backend": "highs", "reductions": [f"closed-form:{note}"], "optimality": optimality})


class ClosedForm:
    """GM, EM or GM remapped, each with its theorem and, where it closes, an explicit or LP dual."""

    name = "closed form"
    extra_key = "closed_form_check"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        return None if request.use_closed_forms else "closed forms switched off"

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        found = closed_form(request, context.settings)
        if found is None:
            return Attempt(self.name, "skipped", "no theorem gives this LP's optimum")
        name, P = found
        if name == REMAPPED_GM:
            return self._remapped(request, context, P)
        return self._theorem(request, context, name, P)

    def _remapped(self, request: DesignRequest, context: SolveContext, P: np.ndarray) -> Attempt:
        """GM remapped, proven by its explicit dual (or, above the check size, by the theorem)."""
        optimality = remap_certificate(request.n, request.alpha, request.objective, request.weights, P,
                                       request.properties)
        optimality["checked"] = bool(optimality["certified"])
        if not optimality["certified"] and request.n > context.settings.proof.check_closed_form_max_n:
            optimality = {"certified": True, "proof": THEOREM, "checked": False, "dual_check": optimality}
        if optimality["certified"]:
            answer = _answer(request, REMAPPED_GM, P, REMAPPED_GM, optimality, context.start)
            return Attempt(self.name, "proven", seconds=answer.solve_time, answer=answer)
        return Attempt(self.name, "unproven", "the explicit dual did not close: the LP is solved",
                       time.perf_counter() - context.start, info={"closed_form": REMAPPED_GM, **optimality})

    def _theorem(self, request: DesignRequest, context: SolveContext, name: str, P: np.ndarray) -> Attempt:
        """GM (Theorem 3) or EM (Theorem 4): the theorem stands; checked by a dual where one closes."""
        theorem = "Theorem 4" if name == "EM" else "Theorem 3"
        optimality = {"certified": True, "proof": theorem, "checked": False}
        explicit = None
        if name == "GM":  # GM is GM remapped by the identity: its explicit dual, no LP
            explicit = remap_certificate(request.n, request.alpha, request.objective, request.weights, P,
                                         request.properties)
        if explicit is not None and explicit["certified"]:
            optimality = {**explicit, "proof": f"{theorem}; explicit dual", "checked": True}
        elif request.n <= context.settings.proof.check_closed_form_max_n:  # also check it with an LP dual
            checked = context.solves.prove_matrix(request.problem, certify(P, request.alpha)[0], fallback=False)
            if checked["certified"]:
                optimality = {**checked, "proof": theorem, "checked": True}
            else:  # the theorem stands; the LP dual found did not confirm it to the gap
                optimality = {**optimality, "lp_check": checked}
        answer = _answer(request, name, P, f"{name} ({theorem})", optimality, context.start)
        return Attempt(self.name, "proven", seconds=answer.solve_time, answer=answer)


STRATEGY = ClosedForm()
