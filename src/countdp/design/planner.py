"""The planner: the ordered strategies for a design request, tried until one answer is proven.

::

    DesignRequest ──► plan() ──► [closed form] ─► [relaxed large-n template] ─► [square-corner template]
                                  ─► [large-n template] ─► [CM relaxed to CH]
                                  ─► [S folded] ─► [reduced LP] ─► [symmetrized] ─► [cold methods]
                      (backend cvxpy or a small n: [dense cvxpy model])

Each strategy first says whether it applies (``accepts``); each attempt is recorded, with why it
was skipped or failed, in ``Answer.extra["attempted"]``, and the record of every earlier attempt
that left one is kept in ``Answer.extra[strategy.extra_key]``.  The first proven answer wins.
When none is proven, the reduced LP's answer stands (``status = "not proven optimal"``), or the
better of the guided and the cold stage (by the certificate's gap).  The strategies share
sub-solves through the :class:`countdp.design.strategy.SolveContext` built here
(:func:`make_context`): :class:`EngineSolves`, :mod:`countdp.design.lp_solve` under the settings
given.  The planner knows no strategy by name: an attempt may leave a stage for a later one
(``Attempt.stage``, seen there through ``SolveContext.earlier``) or end the plan (``Attempt.final``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from countdp.design import lp_solve
from countdp.design.model import DesignProblem
from countdp.design.policy import choose_method
from countdp.design.reduce import ReducedLP
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import SolverSettings
from countdp.design.solvers.solved import Solved
from countdp.design.strategies import (
    closed_form,
    cm_relaxation,
    dense_cvxpy,
    folded,
    large_n_template,
    reduced_lp,
    relaxed_template,
    square_template,
    symmetrized,
)
from countdp.design.strategy import SolveContext, Strategy, skipped_unless_accepted

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

REDUCED_MODEL_PLAN: tuple[Strategy, ...] = (
    closed_form.STRATEGY,
    relaxed_template.STRATEGY,
    square_template.STRATEGY,
    large_n_template.STRATEGY,
    cm_relaxation.STRATEGY,
    folded.STRATEGY,
    reduced_lp.STRATEGY,
    symmetrized.STRATEGY,
    reduced_lp.COLD,
)
"""The strategies on the reduced model, in the order they are tried."""

DENSE_PLAN: tuple[Strategy, ...] = (dense_cvxpy.STRATEGY,)
"""The plain cvxpy model alone (``backend="cvxpy"``, a small ``n``, or Clarabel through cvxpy)."""


@dataclass(frozen=True)
class EngineSolves:
    """The shared sub-solves (:class:`countdp.design.strategy.SubSolves`): :mod:`countdp.design.lp_solve`
    and :func:`countdp.design.policy.choose_method`, every one under ``settings``."""

    settings: SolverSettings

    def reduced_lp(self, problem: DesignProblem, fold: bool = True, drop_implied: bool = True) -> ReducedLP:
        return lp_solve.reduced_lp(problem, fold, drop_implied)

    def solve_proven(self, lp: ReducedLP, method: str, fallback: bool = True,
                     methods: tuple[str, ...] | None = None) -> tuple[np.ndarray, str, Solved, dict]:
        return lp_solve.solve_proven(lp, method, fallback, methods, settings=self.settings)

    def proven_points(self, lp: ReducedLP, prover=None, what: str = "") -> Iterator[tuple[Solved | None, dict]]:
        return lp_solve.proven_points(lp, prover, what, settings=self.settings)

    def proven_point(self, lp: ReducedLP, prover=None, what: str = "") -> tuple[Solved | None, dict]:
        return lp_solve.proven_point(lp, prover, what, settings=self.settings)

    def prove_matrix(self, problem: DesignProblem, matrix: np.ndarray, fallback: bool = True) -> dict:
        return lp_solve.prove_matrix(problem, matrix, fallback, settings=self.settings)

    def choose_method(self, lp: ReducedLP) -> str:
        return choose_method(lp, self.settings)


def make_context(settings: SolverSettings, start: float | None = None) -> SolveContext:
    """The context strategies get: the sub-solves, every one under ``settings``."""
    return SolveContext(EngineSolves(settings), time.perf_counter() if start is None else start)


def uses_reduced_model(request: DesignRequest, settings: SolverSettings) -> bool:
    """Whether the request goes to the reduced model (else the plain cvxpy model): HiGHS, or any
    solver whose shortcuts are kept (Clarabel then solves the reduced model's general path)."""
    if request.backend == "highs":
        return True
    reduced = request.solver == "HIGHS" or request.keep_shortcuts
    return request.backend == "auto" and reduced and request.n >= settings.solver.auto_min_n


def plan(request: DesignRequest, settings: SolverSettings) -> tuple[Strategy, ...]:
    """The strategies tried for ``request``, in order."""
    return REDUCED_MODEL_PLAN if uses_reduced_model(request, settings) else DENSE_PLAN


def _finish(answer: Answer, attempts: list[Attempt], strategies: dict[str, Strategy]) -> Answer:
    """``answer`` with every earlier attempt's record and the list of attempts in its ``extra``."""
    for attempt in attempts:
        if attempt.info is not None and attempt.answer is not answer:
            answer.extra.setdefault(strategies[attempt.strategy].extra_key, attempt.info)
    answer.extra["attempted"] = [attempt.summary() for attempt in attempts]
    return answer


def solve(request: DesignRequest, settings: SolverSettings) -> Answer:
    """The first proven answer of :func:`plan`'s strategies, else the best unproven one.

    Raises ``RuntimeError`` (with every failure's reason) when no strategy returned an answer."""
    context = make_context(settings)
    attempts: list[Attempt] = []
    strategies = {strategy.name: strategy for strategy in plan(request, settings)}
    best: Attempt | None = None
    for strategy in strategies.values():
        context = replace(context, earlier=tuple(attempts))
        attempt = skipped_unless_accepted(strategy, request, context) or strategy.attempt(request, context)
        attempts.append(attempt)
        if attempt.outcome != "skipped":
            LOG.debug("%s: %s %s", strategy.name, attempt.outcome, attempt.reason)
        if attempt.proven:
            return _finish(attempt.answer, attempts, strategies)
        if attempt.answer is not None:
            best = attempt  # a later stage keeps the better of its own and the earlier answer
        if attempt.final:
            break  # the attempt ran its path to its end: no later stage
    if best is None:
        failures = [a.reason for a in attempts if a.outcome == "failed"]
        raise RuntimeError(failures[-1] if failures else "no strategy answered")
    return _finish(best.answer, attempts, strategies)
