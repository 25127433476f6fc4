"""The one interface every design strategy implements, and the context the planner hands it.

A strategy answers a :class:`countdp.design.request.DesignRequest` one way (a closed form, the
large-n template, the CM relaxation, ...).  :meth:`Strategy.accepts` says cheaply whether it
applies (``None``) or why not (a reason); :meth:`Strategy.attempt` tries it and returns an
:class:`countdp.design.request.Attempt`.  A strategy imports the numerical kernels it needs
(solvers, reductions, proofs) but never another strategy or the planner: the sub-solves it
shares with them (the general LP with its fallbacks, Clarabel's proven points, re-proving a
matrix) go through the :class:`SolveContext` the planner provides, whose :class:`SubSolves` all
run under the caller's settings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from countdp.design.request import Answer, Attempt, DesignRequest, Stage
from countdp.design.settings import SolverSettings

if TYPE_CHECKING:  # annotations only: the reduced model and the solvers' shapes
    import numpy as np

    from countdp.design.model import DesignProblem
    from countdp.design.reduce import ReducedLP
    from countdp.design.solvers.solved import Solved

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


class SubSolves(Protocol):
    """The sub-solves strategies share, every one under :attr:`settings` (the planner's are
    :class:`countdp.design.planner.EngineSolves`, bound to :mod:`countdp.design.lp_solve`)."""

    settings: SolverSettings
    """The settings every sub-solve runs under: the caller's."""

    def reduced_lp(self, problem: DesignProblem, fold: bool = True, drop_implied: bool = True) -> ReducedLP:
        """The reduced model of ``problem`` (cached per problem)."""

    def solve_proven(self, lp: ReducedLP, method: str, fallback: bool = True,
                     methods: tuple[str, ...] | None = None) -> tuple[np.ndarray, str, Solved, dict]:
        """``(P, method, run, optimality)``: ``lp`` solved, polished and proven, with fallbacks."""

    def proven_points(self, lp: ReducedLP, prover=None, what: str = "") -> Iterator[tuple[Solved | None, dict]]:
        """Clarabel's points of ``lp``, each with its proof."""

    def proven_point(self, lp: ReducedLP, prover=None, what: str = "") -> tuple[Solved | None, dict]:
        """The first proven of :meth:`proven_points` (or the last)."""

    def prove_matrix(self, problem: DesignProblem, matrix: np.ndarray, fallback: bool = True) -> dict:
        """The certificate of a matrix found elsewhere."""

    def choose_method(self, lp: ReducedLP) -> str:
        """The algorithm ``method="auto"`` runs on ``lp``."""


@dataclass(frozen=True)
class SolveContext:
    """What the planner lends a strategy: the shared sub-solves (with the settings they run under),
    the time the request started, and the attempts made before this one (``earlier``: a later
    stage finds there the :class:`countdp.design.request.Stage` an earlier one left)."""

    solves: SubSolves
    start: float
    earlier: tuple[Attempt, ...] = ()

    @property
    def settings(self) -> SolverSettings:
        """The caller's settings: those of every sub-solve."""
        return self.solves.settings

    def stage(self) -> Stage | None:
        """The stage the latest earlier attempt left, if any."""
        return next((attempt.stage for attempt in reversed(self.earlier) if attempt.stage is not None), None)


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
    :func:`countdp.design.template.proof.certify_expansion` returns it, its arrays removed here, and
    its ``"solver"``, where it names one, in place of ``solver``):
    ``proven`` with the matrix proven, the certificate in ``extra["optimality"]`` and ``record`` in
    ``extra[strategy.extra_key]``; else ``failed`` with why (the gap and the violation when the
    certificate did not close) and the certificate beside ``record["width"]``."""
    P = result.pop("matrix", None)
    result.pop("u", None), result.pop("v", None)
    solver = result.pop("solver", solver)  # a certificate may name the solver of its primal
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


def widths_attempt(strategy: Strategy, widths, prove, context: SolveContext, solver: str,
                   record: Callable[[int, dict], dict]) -> Attempt:
    """Each width of ``widths`` in turn, proven by ``prove(W)`` (a certificate as
    :func:`certificate_attempt` takes it): ``proven`` with the first whose certificate closes, else
    ``failed`` with the last width's record; ``record(W, result)`` is the width's record, to which
    every width tried so far, with its outcome and reason, is added as ``"widths"``."""
    tried, attempt = [], None
    for W in widths:
        result = prove(W)
        seconds = time.perf_counter() - context.start
        attempt = certificate_attempt(strategy, result, seconds, solver, {**record(W, result), "widths": tried})
        tried.append({"width": W, "outcome": attempt.outcome, "reason": attempt.reason})
        if attempt.outcome == "proven":
            return attempt
    attempt.info["widths"] = tried
    return attempt
