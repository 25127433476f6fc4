"""The planner: the ordered strategies for a design request, tried until one answer is proven.

::

    DesignRequest ──► plan() ──► [closed form] ─► [square corners, chain dual] ─► [relaxed large-n template]
                                  ─► [narrow square corners] ─► [square-corner template] ─► [large-n template]
                                  ─► [square corners within the bound: time limit only, unproven]
                                  ─► [CM relaxed to CH]
                                  ─► [S folded] ─► [reduced LP] ─► [symmetrized] ─► [cold methods]
                      (backend cvxpy or a small n: [dense cvxpy model])

Each strategy first says whether it applies (``accepts``); each attempt is recorded, with why it
was skipped or failed, in ``Answer.extra["attempted"]``, and the record of every earlier attempt
that left one is kept in ``Answer.extra[strategy.extra_key]``.  The first proven answer wins.
When none is proven, the reduced LP's answer stands (``status = "not proven optimal"``), or the
better of the guided and the cold stage (by the certificate's gap).  The strategies share
sub-solves through the :class:`countdp.design.strategy.SolveContext` built here
(:func:`make_context`): :class:`EngineSolves`, :mod:`countdp.design.lp_solve` under the settings
given.  Before the first strategy of :data:`GENERAL_PATH` (a full-size LP) it checks the general
path's memory estimate against ``settings.solver.memory_bound`` and says the closed-form design
and lower bound it starts from; at the caller's time limit it returns the best design proven
feasible with its certified gap (:mod:`countdp.design.anytime`).  The planner knows no strategy by
name: an attempt may leave a stage for a later one
(``Attempt.stage``, seen there through ``SolveContext.earlier``) or end the plan (``Attempt.final``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from countdp.design import lp_solve
from countdp.design.anytime import stopped_answer
from countdp.design.memory import MemoryBoundError, MemoryRefusal, memory_refusal
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
    square_bound,
    square_chain,
    square_template,
    symmetrized,
)
from countdp.design.strategy import SolveContext, Strategy, skipped_unless_accepted
from countdp.design.watch import IDLE, TimeLimitReached, current

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

REDUCED_MODEL_PLAN: tuple[Strategy, ...] = (
    closed_form.STRATEGY,
    square_chain.STRATEGY,
    relaxed_template.STRATEGY,
    square_chain.AFTER_TEMPLATE,
    square_template.STRATEGY,
    large_n_template.STRATEGY,
    square_bound.STRATEGY,
    cm_relaxation.STRATEGY,
    folded.STRATEGY,
    reduced_lp.STRATEGY,
    symmetrized.STRATEGY,
    reduced_lp.COLD,
)
"""The strategies on the reduced model, in the order they are tried."""

GENERAL_PATH: tuple[Strategy, ...] = (cm_relaxation.STRATEGY, folded.STRATEGY, reduced_lp.STRATEGY,
                                      symmetrized.STRATEGY, reduced_lp.COLD, dense_cvxpy.STRATEGY)
"""The strategies that solve an LP of the full size: bounded by ``settings.solver.memory_bound``
(:mod:`countdp.design.memory`)."""

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


def bound_error(request: DesignRequest, refused: MemoryRefusal, attempts: list = ()) -> MemoryBoundError:
    """The one-line refusal of a request only the general path could answer, which ``refused`` keeps
    from running: give a time limit, or raise the bound, unless the estimate is past the machine's
    memory (:attr:`~countdp.design.memory.MemoryRefusal.past_machine`), where no bound would help; its
    parts (the fast paths of ``attempts`` that failed) kept for a caller that words its own."""
    raise_it = "" if refused.past_machine else ", or raise the bound (--memory-bound) to run it"
    return MemoryBoundError(f"{request.label()}: no fast path answers, and {refused.reason}; give a time limit "
                            f"(--time-limit, time_limit=) for the best design within the bound with its gap{raise_it}",
                            request.label(), refused.reason,
                            tuple(f"{a.strategy}: {a.reason}" for a in attempts if a.outcome == "failed"), request.n)


def _general_start(request: DesignRequest, settings: SolverSettings, watch) -> MemoryRefusal | None:
    """Before the first general strategy: why it is not run (its memory estimate above the bound),
    or ``None``, after saying, under a time limit, the best closed-form design and lower bound so
    far (the gap the general path starts from; the request's watch keeps the design's objective
    for the solvers' progress).  Without a time limit that start is not computed (it costs seconds
    at large ``n``, and no answer would use it)."""
    refused = memory_refusal(request.n, settings)
    if (refused is None and request.n >= settings.solver.auto_min_n and watch is not IDLE
            and watch.time_limit is not None):
        start = stopped_answer(request, None, None, "the general path starts from", time.perf_counter())
        watch.upper = start.solver_objective
    return refused


def _attempts(request: DesignRequest, settings: SolverSettings, attempts: list[Attempt]) -> tuple:
    """Run :func:`plan`'s strategies into ``attempts``: ``(proven, best, refused)``, the proven
    attempt, else the best unproven one and why the general path was not run (memory).  Under a time
    limit where the design within the bound applies, the strategies before it share
    :attr:`~SolverTuning.fast_path_share` of the limit (:func:`_fast_share`); one stopped there fails,
    and the rest of the limit is the bound's."""
    context, watch = make_context(settings), current()
    best, refused, general = None, None, False
    full_limit, share = watch.time_limit, _fast_share(request, settings, watch)
    if share is not None:
        watch.time_limit = share
    try:
        for strategy in plan(request, settings):
            if share is not None and strategy is square_bound.STRATEGY:
                watch.time_limit, share = full_limit, None
            try:
                watch.check(f"the strategy {strategy.name}")
                if strategy in GENERAL_PATH and not general:
                    general, refused = True, _general_start(request, settings, watch)
                if strategy in GENERAL_PATH and refused is not None:
                    attempts.append(Attempt(strategy.name, "skipped", refused.reason))
                    continue
                context = replace(context, earlier=tuple(attempts))
                attempt = skipped_unless_accepted(strategy, request, context) or strategy.attempt(request, context)
            except TimeLimitReached:
                if share is None:
                    raise
                attempt = Attempt(strategy.name, "failed", f"stopped at the fast paths' share of the time limit "
                                                           f"({share:.3g} s of {full_limit:.3g} s)")
            attempts.append(attempt)
            if attempt.outcome != "skipped":
                LOG.debug("%s: %s %s", strategy.name, attempt.outcome, attempt.reason)
            if attempt.proven:
                return attempt, best, refused
            if attempt.answer is not None:
                best = attempt  # a later stage keeps the better of its own and the earlier answer
            if attempt.final:
                break  # the attempt ran its path to its end: no later stage
    finally:
        watch.time_limit = full_limit
    return None, best, refused


def _fast_share(request: DesignRequest, settings: SolverSettings, watch) -> float | None:
    """The seconds of the caller's time limit the strategies before the design within the bound may
    use (:attr:`~SolverTuning.fast_path_share` of it), where that design applies
    (:meth:`countdp.design.strategies.square_bound.SquareBound.accepts`); ``None`` elsewhere."""
    if watch.time_limit is None or square_bound.STRATEGY.accepts(request, settings) is not None:
        return None
    return watch.time_limit * settings.solver.fast_path_share


def solve(request: DesignRequest, settings: SolverSettings) -> Answer:
    """The first proven answer of :func:`plan`'s strategies, else the best unproven one.

    At the caller's time limit (:mod:`countdp.design.watch`), or where the general path's memory
    estimate is above ``settings.solver.memory_bound`` and a time limit was given, the best design
    proven feasible so far with its certified gap (:mod:`countdp.design.anytime`).  Raises
    :class:`countdp.design.memory.MemoryBoundError` (a ``ValueError``) when only the general path
    could answer and it does not fit, without a time limit; ``RuntimeError`` (with every failure's
    reason) when no strategy returned an answer."""
    attempts: list[Attempt] = []
    strategies = {strategy.name: strategy for strategy in plan(request, settings)}
    started, watch = time.perf_counter(), current()
    try:
        proven, best, refused = _attempts(request, settings, attempts)
    except TimeLimitReached as stop:
        if watch.interrupted:  # the user's interrupt stopped the solver: no design is made
            raise KeyboardInterrupt from None
        earlier = next((a.answer for a in reversed(attempts) if a.answer is not None), None)
        answer = stopped_answer(request, earlier, stop, f"the time limit ({stop.what})", started)
        return _finish(answer, attempts, strategies)
    if proven is not None:
        return _finish(proven.answer, attempts, strategies)
    if refused is not None and watch.time_limit is not None:  # the best unproven answer, repaired, with its gap
        earlier = None if best is None else best.answer
        return _finish(stopped_answer(request, earlier, None, refused.reason, started), attempts, strategies)
    if best is None and refused is not None:
        raise bound_error(request, refused, attempts)
    if best is None:
        failures = [a.reason for a in attempts if a.outcome == "failed"]
        raise RuntimeError(failures[-1] if failures else "no strategy answered")
    return _finish(best.answer, attempts, strategies)
