"""Designs on the reduced model through the planner, for tests that compare paths and settings."""

from __future__ import annotations

from dataclasses import replace

from countdp.design.planner import make_context, solve
from countdp.design.request import Answer, DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.strategy import SolveContext


class OverriddenSolves:
    """The sub-solves of ``base`` with some replaced by the callables given (a test's stand-ins)."""

    def __init__(self, base, **methods):
        self.base = base
        self.__dict__.update(methods)

    def __getattr__(self, name):
        return getattr(self.base, name)


def overriding(context: SolveContext, **methods) -> SolveContext:
    """``context`` with the sub-solves named in ``methods`` replaced (the others and the settings kept)."""
    return replace(context, solves=OverriddenSolves(context.solves, **methods))


def reduced_design(n: int, alpha: float, properties: object = (), objective: object = "L0", weights=None,
                   aggregate: str = "sum", settings: SolverSettings = DEFAULT_SETTINGS, **options) -> Answer:
    """The planner's answer on the reduced model (``backend="highs"`` at every ``n``); ``options``:
    the :class:`countdp.design.request.DesignRequest` switches (``method``, ``use_closed_forms``, ...)."""
    request = DesignRequest.of(n, alpha, properties, objective, weights, aggregate, backend="highs", **options)
    return solve(request, settings)


def general_optimum(n: int, alpha: float, properties: object, objective: object = "L0") -> float:
    """The general LP's optimum (the reduced model, the method ``auto`` would choose), proven."""
    context = make_context(DEFAULT_SETTINGS)
    lp = context.solves.reduced_lp(DesignRequest.of(n, alpha, properties, objective).problem)
    _, _, _, optimality = context.solves.solve_proven(lp, context.solves.choose_method(lp))
    assert optimality["certified"]
    return optimality["primal_objective"]
