"""What the strategies that solve one reduced LP through their reductions share: when they apply,
how they start and how an attempt ends.

:mod:`~countdp.design.strategies.folded` (S folded in), :mod:`~countdp.design.strategies.symmetrized`
(S dropped) and :mod:`~countdp.design.strategies.cm_relaxation` (CM relaxed to CH) each declare
their reductions (:class:`countdp.design.reductions.chain.Reduction`), applied as one
:class:`countdp.design.reductions.chain.Chain`, and the method that must answer the reduced model.
They apply only when the planner chooses the method, only where their own conditions hold, for
L0 (where they take it at all) only where alpha is too near 1 for the large-n template, and only
where their reductions accept the problem.  Their attempt solves the reduced model only where the
planner's method choice for it is theirs, and answers only what the proof on the requested LP closes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from countdp.design.lp_solve import proven_result
from countdp.design.model import DesignProblem
from countdp.design.policy import too_near_one
from countdp.design.reduce import ReducedLP
from countdp.design.reductions.chain import Chain, ChainInverse, Reduction
from countdp.design.request import Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.solvers.solved import Solved
from countdp.design.strategy import SolveContext, skipped_unless_accepted


@dataclass(frozen=True)
class Reduced:
    """The start of an attempt: when it began, the chain of reductions applied, the reduced problem,
    the chain's inverse, its reduced model ``lp`` and the time from the request's start to the
    model built (``build``)."""

    began: float
    chain: Chain
    problem: DesignProblem
    inverse: ChainInverse
    lp: ReducedLP
    build: float


class ThroughReductions:
    """A strategy that solves its reductions' model (module docstring); subclasses say what differs."""

    name: str
    extra_key: str
    reductions: tuple[Reduction, ...] = ()
    """The reductions applied in order; all must accept the request's problem."""
    optional: tuple[Reduction, ...] = ()
    """Reductions applied after them where they accept."""
    model: str = ""
    """The reduced model as a skipped attempt names it."""
    zero_one_near_one: bool = False
    """Whether L0 is taken, where alpha is too near 1 for the large-n template."""

    def conditions(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """Why the strategy's own conditions do not hold (checked before the reductions), or ``None``."""
        return None

    def conditions_reduced(self, request: DesignRequest, settings: SolverSettings,
                           reduced: DesignProblem) -> str | None:
        """Why not, judged on the reduced problem (checked last), or ``None``."""
        return None

    def method(self, request: DesignRequest, settings: SolverSettings) -> str:
        """The method the planner must choose for the reduced model."""
        return settings.solver.large_method if request.zero_one else "guided"

    def chain(self, problem: DesignProblem) -> Chain:
        """The declared reductions, and those optional ones that accept what they make of ``problem``."""
        reduced, _ = Chain(self.reductions).apply(problem)
        return Chain(self.reductions + Chain.accepted(self.optional, reduced).reductions)

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        if request.method != "auto":
            return "a method was asked for"
        why = self.conditions(request, settings)
        if why is not None:
            return why
        if self.zero_one_near_one and request.zero_one and not too_near_one(request.n, request.alpha, settings):
            return "L0 away from alpha near 1 (the large-n template's)"
        refused = Chain(self.reductions).refused(request.problem)
        if refused is not None:
            return refused
        return self.conditions_reduced(request, settings, Chain(self.reductions).apply(request.problem)[0])

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """The ``skipped`` attempt of :meth:`start`, else :meth:`solve_reduced`'s."""
        start = self.start(request, context)
        return start if isinstance(start, Attempt) else self.solve_reduced(request, context, start)

    def solve_reduced(self, request: DesignRequest, context: SolveContext, start: Reduced) -> Attempt:
        """The attempt on the reduced model ``start.lp``; never raises for a solver's failure."""
        raise NotImplementedError

    def start(self, request: DesignRequest, context: SolveContext) -> Reduced | Attempt:
        """The reduced model, or the ``skipped`` attempt where the strategy does not apply or the
        planner would not solve the reduced model by :meth:`method`."""
        began = time.perf_counter()
        skipped = skipped_unless_accepted(self, request, context)
        if skipped is not None:
            return skipped
        chain = self.chain(request.problem)
        problem, inverse = chain.apply(request.problem)
        lp = context.solves.reduced_lp(problem, True, request.drop_implied)
        chosen = self.method(request, context.settings)
        if context.solves.choose_method(lp) != chosen:
            return Attempt(self.name, "skipped", f"{self.model} is not solved by {chosen}",
                           time.perf_counter() - began)
        return Reduced(began, chain, problem, inverse, lp, time.perf_counter() - context.start)

    def finish(self, start: Reduced, found: tuple[ReducedLP, Solved, str], optimality: dict, reductions: list[str],
               unproven: tuple[str, dict], matrix: np.ndarray | None = None) -> Attempt:
        """The attempt of a point ``found = (lp, run, method)`` with its certificate on the requested
        LP: ``proven`` with its answer, else ``unproven`` with ``unproven = (reason, info)``."""
        seconds = time.perf_counter() - start.began
        if not optimality["certified"]:
            return Attempt(self.name, "unproven", unproven[0], seconds, info=unproven[1])
        lp, run, used = found
        return Attempt(self.name, "proven", seconds=seconds,
                       answer=proven_result(lp, run, used, start.build, optimality, reductions, matrix))
