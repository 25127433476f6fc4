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
(:func:`make_context`), bound to :mod:`countdp.design.lp_solve` with the settings given.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from countdp.design import lp_solve
from countdp.design.policy import choose_method
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
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


def make_context(settings: SolverSettings = DEFAULT_SETTINGS, start: float | None = None) -> SolveContext:
    """The context strategies get: ``settings`` bound into every shared sub-solve."""
    return SolveContext(settings=settings, start=time.perf_counter() if start is None else start,
                        reduced_lp=lp_solve.reduced_lp,
                        solve_proven=partial(lp_solve.solve_proven, settings=settings),
                        proven_points=partial(lp_solve.proven_points, settings=settings),
                        proven_point=partial(lp_solve.proven_point, settings=settings),
                        prove_matrix=partial(lp_solve.prove_matrix, settings=settings),
                        choose_method=partial(choose_method, settings=settings))


def uses_reduced_model(request: DesignRequest, settings: SolverSettings) -> bool:
    """Whether the request goes to the reduced model (else the plain cvxpy model): HiGHS, or any
    solver whose shortcuts are kept (Clarabel then solves the reduced model's general path)."""
    if request.backend == "highs":
        return True
    reduced = request.solver == "HIGHS" or request.keep_shortcuts
    return request.backend == "auto" and reduced and request.n >= settings.auto_min_n


def plan(request: DesignRequest, settings: SolverSettings = DEFAULT_SETTINGS) -> tuple[Strategy, ...]:
    """The strategies tried for ``request``, in order."""
    return REDUCED_MODEL_PLAN if uses_reduced_model(request, settings) else DENSE_PLAN


def _finish(answer: Answer, attempts: list[Attempt], strategies: dict[str, Strategy]) -> Answer:
    """``answer`` with every earlier attempt's record and the list of attempts in its ``extra``."""
    for attempt in attempts:
        if attempt.info is not None and attempt.answer is not answer:
            answer.extra.setdefault(strategies[attempt.strategy].extra_key, attempt.info)
    answer.extra["attempted"] = [attempt.summary() for attempt in attempts]
    return answer


def solve(request: DesignRequest, settings: SolverSettings = DEFAULT_SETTINGS) -> Answer:
    """The first proven answer of :func:`plan`'s strategies, else the best unproven one.

    Raises ``RuntimeError`` (with every failure's reason) when no strategy returned an answer."""
    context = make_context(settings)
    attempts: list[Attempt] = []
    strategies = {strategy.name: strategy for strategy in plan(request, settings)}
    best: Attempt | None = None
    for strategy in strategies.values():
        attempt = skipped_unless_accepted(strategy, request, context) or strategy.attempt(request, context)
        attempts.append(attempt)
        if attempt.outcome != "skipped":
            LOG.debug("%s: %s %s", strategy.name, attempt.outcome, attempt.reason)
        if attempt.proven:
            return _finish(attempt.answer, attempts, strategies)
        if attempt.answer is not None:
            best = attempt  # a later stage keeps the better of its own and the earlier answer
        if strategy is reduced_lp.STRATEGY and reduced_lp.STAGED not in context.notes:
            break  # the general path ran to its end: no later stage
    if best is None:
        failures = [a.reason for a in attempts if a.outcome == "failed"]
        raise RuntimeError(failures[-1] if failures else "no strategy answered")
    return _finish(best.answer, attempts, strategies)
