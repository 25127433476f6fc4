"""The plain dense model through cvxpy: one variable per entry of ``P``, every constraint row.

Used for small models (``n`` below :attr:`~countdp.design.settings.SolverTuning.auto_min_n`,
whose vertex choice the small-n figures were made with), for Clarabel through cvxpy, and when
``backend="cvxpy"`` is asked.  The answer is proven with the duals cvxpy returns, checked by the
independent routine of :mod:`countdp.design.optimality`; where they do not close (or there are
none, as for minimax), by a dual of the reduced model (the context's ``prove_matrix``: weak
duality does not care where the dual came from).
"""

from __future__ import annotations

import time

import numpy as np

from countdp.design.dual_repair import prove_dual
from countdp.design.highspy_loader import load_highspy
from countdp.design.optimality import not_proven
from countdp.design.request import Answer, Attempt, DesignRequest
from countdp.design.settings import SolverSettings, running
from countdp.design.strategy import SolveContext
from countdp.privacy.certify import certify

DEFAULT_METHODS = {"HIGHS": "simplex", "CLARABEL": "ipm"}
"""The cvxpy solver's method when the request leaves it to the planner (``"auto"``)."""


def _solve(problem, solver: str, method: str, settings: SolverSettings) -> None:
    running(settings, "cvxpy")
    import cvxpy as cp  # lazy: the modelling layer is only needed on this path

    if solver == "HIGHS":
        load_highspy(settings.solver.verbose)  # cvxpy's model is not the first of the process: its banner stays silent
        tol = settings.solver.highs_tol
        problem.solve(solver=cp.HIGHS, verbose=settings.solver.verbose,
                      highs_options={"solver": method, "primal_feasibility_tolerance": tol,
                                     "dual_feasibility_tolerance": tol})
    elif solver == "CLARABEL":
        problem.solve(solver=cp.CLARABEL, verbose=settings.solver.verbose)
    else:  # pragma: no cover - guarded by the designer's check_solver
        raise ValueError(solver)


def solver_dual_certificate(model, constraints: list, matrix: np.ndarray, solver: str, *,
                            settings: SolverSettings) -> dict:
    """The optimality certificate of ``matrix`` with the duals cvxpy's ``solver`` returned for
    ``constraints`` (``[A_ub x >= b_ub, A_eq x == b_eq]`` of ``model.system()``), checked by the
    independent routine of :mod:`countdp.design.optimality` on ``model.lp()``.

    ``model.system()`` starts with the rows ``x >= 0`` (bounds in ``model.lp()``: their multipliers
    are reduced costs, dropped), and cvxpy's multipliers of ``==`` rows have the opposite sign to
    ``v``'s in ``c - A_ub^T u - A_eq^T v``.  Minimax (one more variable) is not mapped:
    ``{"certified": False}``, as when the solver gave no duals."""
    ub, eq = (constraint.dual_value for constraint in constraints[:2])
    if model.aggregate != "sum" or ub is None or eq is None:
        return not_proven("no duals to map")
    u = np.asarray(ub, float).ravel()[model.size:]
    proof = prove_dual(model.lp(), model.point(matrix), u, -np.asarray(eq, float).ravel(), repair=False,
                       settings=settings)
    return {**proof, "dual_from": f"cvxpy ({solver}), the solver's own"}


def _model(request: DesignRequest):
    """``(problem, x, constraints)``: the cvxpy problem of the request's plain model."""
    import cvxpy as cp  # lazy: the modelling layer is only needed on this path

    model = request.problem
    system = model.system()
    N = request.n + 1
    x = cp.Variable(N * N)
    constraints = [system.A_ub @ x >= system.b_ub, system.A_eq @ x == system.b_eq]
    if request.aggregate == "sum":
        goal = model.weighted_cost @ x
    else:
        t = cp.Variable()
        constraints.append(model.column_loss @ x <= t)
        goal = t
    return cp.Problem(cp.Minimize(goal), constraints), x, constraints


class DenseCvxpy:
    """The plain model through cvxpy (module docstring)."""

    name = "dense cvxpy model"
    extra_key = "dense_cvxpy"

    def accepts(self, request: DesignRequest, settings: SolverSettings) -> str | None:
        return None

    def attempt(self, request: DesignRequest, context: SolveContext) -> Attempt:
        import cvxpy as cp  # lazy: the modelling layer is only needed on this path

        problem, x, constraints = _model(request)
        method = DEFAULT_METHODS[request.solver] if request.method == "auto" else request.method
        start = time.perf_counter()
        try:
            _solve(problem, request.solver, method, context.settings)
        except cp.error.SolverError as exc:
            return Attempt(self.name, "failed", f"{request.solver} failed: {exc}", time.perf_counter() - start)
        elapsed = time.perf_counter() - start
        if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or x.value is None:
            return Attempt(self.name, "failed", f"{request.solver} returned status {problem.status!r}", elapsed)
        N = request.n + 1
        raw = x.value.reshape(N, N)
        matrix = certify(raw, request.alpha)[0]  # deterministic: the matrix the designer releases
        optimality = solver_dual_certificate(request.problem, constraints, matrix, request.solver,
                                             settings=context.settings)
        if not optimality["certified"]:  # a dual of the reduced model instead (another solve)
            optimality = context.solves.prove_matrix(request.problem, matrix)
        status = problem.status if optimality["certified"] else "not proven optimal"
        answer = Answer(raw, request.solver, method, status, elapsed, 0.0, float(problem.value),
                        {"backend": "cvxpy", "optimality": optimality})
        return Attempt(self.name, "proven" if optimality["certified"] else "unproven", "", elapsed, answer)


STRATEGY = DenseCvxpy()
