"""The general path: the reduced model (:mod:`countdp.design.reduce`), solved, polished and proven.

The algorithm is chosen by size and objective (:func:`countdp.design.policy.choose_method`) or as
asked, then :func:`countdp.design.lp_solve.solve_proven` falls back along its chain until an
answer is proven.  For an LP with S whose model is ``guided``, the work is split in two stages so
that the symmetrized solve (:mod:`countdp.design.strategies.symmetrized`) can come between them:
:class:`ReducedLP` runs only the guided methods and leaves the model as its attempt's
:class:`countdp.design.request.Stage`; :class:`ColdMethods` runs the cold simplex and interior
point on it after.  Unstaged, the reduced LP's attempt is final: no later strategy follows.  An
answer no method proves is returned with ``status = "not proven optimal"`` and every attempt listed.
"""

from __future__ import annotations

import logging
import time

from countdp.design.lp_solve import CLARABEL_GUIDED, gap, lp_extra, solver_label, vertex_matrix
from countdp.design.request import Answer, Attempt, DesignRequest, Stage
from countdp.design.settings import SolverSettings
from countdp.design.strategy import SolveContext

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them


def answer_of(lp, build: float, solved: tuple, settings: SolverSettings) -> Answer:
    """The :class:`Answer` of ``solve_proven``'s ``(P, used, run, optimality)`` on ``lp``."""
    _, used, run, optimality = solved
    extra = lp_extra(lp, build, optimality)
    if used == "clarabel":
        extra["kkt_solver"] = settings.solver.clarabel_direct_method
    solver, label = solver_label(used, run)
    status = "optimal" if optimality["certified"] else "not proven optimal"
    return Answer(vertex_matrix(lp, run), solver, label, status, run.seconds, build, run.objective, extra)


def _attempt(name: str, answer: Answer, seconds: float, final: bool = False) -> Attempt:
    outcome = "proven" if answer.status == "optimal" else "unproven"
    reason = "" if outcome == "proven" else "no method closed the certificate"
    return Attempt(name, outcome, reason, seconds, answer, final=final)


def staged(request: DesignRequest, chosen: str) -> bool:
    """Whether the guided methods run first and the cold ones after the symmetrized solve: an LP
    with S requested whose model is ``guided``, with the method chosen automatically."""
    return request.method == "auto" and chosen == "guided" and "S" in request.properties


class ReducedLP:
    """The reduced model with the method chosen (or asked for) and its fallbacks."""

    name = "reduced LP"
    extra_key = "reduced_lp"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        return None

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        lp = context.solves.reduced_lp(request.problem, request.fold_symmetry, request.drop_implied)
        build = time.perf_counter() - context.start
        chosen = context.solves.choose_method(lp) if request.method == "auto" else request.method
        LOG.info("the reduced LP: %s rows, %s columns; method %s", f"{lp.A.shape[0]:,}", f"{lp.A.shape[1]:,}",
                 chosen)
        began = time.perf_counter()
        if not staged(request, chosen):
            try:
                solved = context.solves.solve_proven(lp, chosen)
            except RuntimeError as exc:
                return Attempt(self.name, "failed", str(exc), time.perf_counter() - began, final=True)
            return _attempt(self.name, answer_of(lp, build, solved, context.settings), time.perf_counter() - began,
                            final=True)
        first, error = None, ""
        try:  # the LP without S (symmetrized) comes before the cold methods
            first = context.solves.solve_proven(lp, "guided", methods=("guided", CLARABEL_GUIDED))
        except RuntimeError as exc:
            error = str(exc)
        stage = Stage(lp, build, first, error)
        if first is not None and first[3]["certified"]:
            answer = answer_of(lp, build, first, context.settings)
            return Attempt(self.name, "proven", seconds=time.perf_counter() - began, answer=answer, stage=stage)
        return Attempt(self.name, "failed", error or "the guided methods did not prove it; cold methods follow",
                       time.perf_counter() - began, stage=stage)


class ColdMethods:
    """After the guided methods and the symmetrized solve: the cold simplex and interior point on
    the same reduced model, keeping the guided answer when it has the smaller gap."""

    name = "reduced LP, cold methods"
    extra_key = "cold_methods"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        return None if request.method == "auto" and "S" in request.properties else "only after the guided stage"

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        stage = context.stage()
        if stage is None:
            return Attempt(self.name, "skipped", "no guided stage ran")
        lp, build, first, error = stage.lp, stage.build, stage.first, stage.error
        began = time.perf_counter()
        try:
            rest = context.solves.solve_proven(lp, "guided", methods=("simplex", "ipm"))
        except RuntimeError as exc:
            if first is None:
                return Attempt(self.name, "failed", f"{error}; {exc}", time.perf_counter() - began)
            rest = None
        if rest is None or (first is not None and not rest[3]["certified"] and gap(first[3]) < gap(rest[3])):
            solved = first
        else:
            earlier = first[3].get("attempts", []) if first is not None else [error]
            rest[3]["attempts"] = earlier + rest[3].get("attempts", [])
            solved = rest
        return _attempt(self.name, answer_of(lp, build, solved, context.settings), time.perf_counter() - began)


STRATEGY = ReducedLP()
COLD = ColdMethods()
