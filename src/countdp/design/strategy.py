"""The one interface every design strategy implements, and the context the planner hands it.

A strategy answers a :class:`countdp.design.request.DesignRequest` one way (a closed form, the
large-n template, the CM relaxation, ...).  :meth:`Strategy.accepts` says cheaply whether it
applies (``None``) or why not (a reason); :meth:`Strategy.attempt` tries it and returns an
:class:`countdp.design.request.Attempt`.  A strategy imports the numerical kernels it needs
(solvers, reductions, proofs) but never another strategy or the planner: the sub-solves it
shares with them (the general LP with its fallbacks, Clarabel's proven points, re-proving a
matrix) go through the :class:`SolveContext` the planner provides.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


@dataclass
class SolveContext:
    """What the planner lends a strategy: the settings, the time the request started, and the
    shared sub-solves (bound by the planner to :mod:`countdp.design.lp_solve`).

    * ``reduced_lp(problem, fold, drop_implied)``: the reduced model of a
      :class:`countdp.design.model.DesignProblem` (cached per request);
    * ``solve_proven(lp, method, fallback=True, methods=None)``: ``(P, method, run, optimality)``;
    * ``proven_points(lp, prover=None, what="")``: Clarabel's points of ``lp``, each with its proof;
    * ``proven_point(lp, prover=None, what="")``: the first proven of them (or the last);
    * ``prove_matrix(problem, matrix, fallback=True)``: the certificate of a matrix found elsewhere;
    * ``choose_method(lp)``: the algorithm ``method="auto"`` runs on ``lp``.
    """

    settings: SolverSettings = DEFAULT_SETTINGS
    start: float = 0.0
    reduced_lp: Callable = None
    solve_proven: Callable = None
    proven_points: Callable[..., Iterator] = None
    proven_point: Callable = None
    prove_matrix: Callable = None
    choose_method: Callable = None
    notes: dict = field(default_factory=dict)


class Strategy(Protocol):
    """One way to answer a design request (module docstring)."""

    name: str
    """The strategy's name in attempts and logs."""
    extra_key: str
    """Where an answer from a later strategy keeps this one's record (``Answer.extra[extra_key]``)."""

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        """``None`` when the strategy applies to ``request``, else the reason it does not."""

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        """Try the strategy; never raises for a solver's failure (that is a ``failed`` attempt)."""


def skipped_unless_accepted(strategy: Strategy, request: DesignRequest, context: SolveContext) -> Attempt | None:
    """The ``skipped`` attempt of a strategy that does not apply to ``request`` (its reason
    recorded), else ``None``: the planner asks before every attempt, and a strategy's
    ``attempt`` asks again when it is called directly."""
    reason = strategy.accepts(request, context.settings)
    return None if reason is None else Attempt(strategy.name, "skipped", reason)


def certificate_attempt(strategy: Strategy, result: dict, seconds: float, solver: str, record: dict) -> Attempt:
    """The attempt of a strategy whose answer is a full-model certificate ``result`` (as
    :func:`countdp.design.template.proof.certify_expansion` returns it, its arrays removed here):
    ``proven`` with the matrix proven, the certificate in ``extra["optimality"]`` and ``record`` in
    ``extra[strategy.extra_key]``; else ``failed`` with why (the gap and the violation when the
    certificate did not close) and the certificate beside ``record["width"]``."""
    P = result.pop("matrix", None)
    result.pop("u", None), result.pop("v", None)
    if not result["certified"]:
        violation = result.get("max_primal_violation")
        reason = result.get("reason") or (f"W={record['width']}: the certificate did not close (gap "
                                          f"{result.get('gap'):.3g}, violation {violation:.3g})")
        LOG.info("%s: %s; the next strategy", strategy.name, reason)
        return Attempt(strategy.name, "failed", reason, seconds, info={"width": record["width"], **result,
                                                                       "reason": reason})
    answer = Answer(P, solver, strategy.name, "optimal", seconds, 0.0, result["primal_objective"],
                    {"backend": "highs", "reductions": [strategy.name], "optimality": result,
                     strategy.extra_key: record})
    return Attempt(strategy.name, "proven", seconds=seconds, answer=answer)
