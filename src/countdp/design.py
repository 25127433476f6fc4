"""Mechanism design by linear programming (Section III and Theorem 2), and named designs.

The LP has one variable per entry of ``P`` (flattened row-major), the BasicDP constraints,
any subset of the seven properties, and a linear objective from :mod:`countdp.metrics`.
Every returned matrix is certified alpha-DP on its final floats (:mod:`countdp.certify`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from countdp import fast_design
from countdp.certify import Certificate, certify
from countdp.constraints import constraint_system, parse_properties
from countdp.mechanisms import CLOSED_FORMS
from countdp.metrics import loss_matrix, objective_value, parse_objective
from countdp.validation import check_alpha, check_distribution, check_n

NAMED_DESIGNS: dict[str, tuple[str, ...]] = {
    "WM": ("RM", "CM", "WH", "S"),  # the paper's text: WH + RM + CM (S is free, Theorem 1)
    "WH": ("WH", "S"),  # weak honesty alone: matches the paper's Figure 9 narrative
}
"""LP designs with a name: the property set each one solves for."""

MECHANISMS = ("GM", "EM", "UM", *NAMED_DESIGNS, "LP")

SOLVERS = {
    "HIGHS": ("simplex", "ipm"),
    "CLARABEL": ("ipm",),
}
"""Solvers and methods: HiGHS simplex (vertex solutions, the default) or interior point."""


class DesignError(RuntimeError):
    """An LP design could not be solved; the message names its parameters."""


@dataclass
class Design:
    """A mechanism with how it was made.  ``matrix[i, j] = Pr[output i | input j]``."""

    mechanism: str
    n: int
    alpha: float
    matrix: np.ndarray
    objective: str
    properties_requested: tuple[str, ...]
    objective_value: float
    certificate: Certificate
    solver: str = "closed-form"
    method: str = "closed-form"
    status: str = "optimal"
    solve_time: float = 0.0
    solver_objective: float | None = None
    aggregate: str = "sum"
    weights: list[float] | None = None
    extra: dict = field(default_factory=dict)


def _label(n: int, alpha: float, properties: tuple[str, ...], objective: object) -> str:
    props = "+".join(properties) or "none"
    return f"n={n}, alpha={alpha}, properties={props}, objective={objective}"


def _solve(problem: cp.Problem, solver: str, method: str) -> None:
    if solver == "HIGHS":
        problem.solve(solver=cp.HIGHS, highs_options={"solver": method})
    elif solver == "CLARABEL":
        problem.solve(solver=cp.CLARABEL)
    else:  # pragma: no cover - guarded by check_solver
        raise ValueError(solver)


def check_solver(solver: str, method: str | None) -> tuple[str, str]:
    """Normalise a solver/method pair, or raise ``ValueError`` naming the allowed values."""
    name = str(solver).upper()
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; allowed: {', '.join(SOLVERS)}")
    chosen = SOLVERS[name][0] if method is None else str(method).lower()
    if chosen not in SOLVERS[name]:
        raise ValueError(f"solver {name} has no method {method!r}; allowed: {', '.join(SOLVERS[name])}")
    return name, chosen


def design_lp(n: int, alpha: float, properties: object = (), objective: object = "L0",
              weights: object = None, solver: str = "HIGHS", method: str | None = None,
              aggregate: str = "sum", mechanism: str = "LP", backend: str = "auto") -> Design:
    """Solve the design LP: BasicDP + ``properties``, minimising ``objective``.

    ``weights`` is a prior over inputs (default uniform); ``aggregate="max"`` minimises the
    worst input's loss instead of the weighted sum (minimax).  ``backend``: ``"cvxpy"`` the
    plain dense model; ``"highs"`` the reduced model of :mod:`countdp.fast_design` (same
    optimal value; solver HIGHS; with ``method=None`` large models go to Clarabel, recorded in
    ``Design.solver``); ``"auto"`` (default) uses ``"highs"`` when the solver is HiGHS and
    ``n >= fast_design.AUTO_MIN_N``.  ``Design.extra["backend"]`` records which one ran.
    Raises ``ValueError`` for bad parameters and :class:`DesignError` when the solver does
    not return an optimum.
    """
    n, a = check_n(n), check_alpha(alpha)
    props = parse_properties(properties)
    obj = parse_objective(objective)
    method_given = method is not None
    solver, method = check_solver(solver, method)
    if aggregate not in ("sum", "max"):
        raise ValueError(f"aggregate must be 'sum' or 'max', got {aggregate!r}")
    w = np.full(n + 1, 1.0 / (n + 1)) if weights is None else check_distribution(weights, n)
    if backend not in ("auto", "cvxpy", "highs"):
        raise ValueError(f"backend must be 'auto', 'cvxpy' or 'highs', got {backend!r}")
    if backend == "highs" and solver != "HIGHS":
        raise ValueError(f"backend 'highs' needs solver HIGHS, got {solver}")
    if backend == "highs" or (backend == "auto" and solver == "HIGHS" and n >= fast_design.AUTO_MIN_N):
        try:
            fast = fast_design.fast_design(n, a, props, obj, None if weights is None else w, aggregate,
                                           method=method if method_given else "auto")
        except RuntimeError as exc:
            raise DesignError(f"fast design failed for {_label(n, a, props, obj)}: {exc}") from exc
        matrix, certificate = certify(fast.matrix, a)
        return Design(
            mechanism=mechanism, n=n, alpha=a, matrix=matrix, objective=str(obj),
            properties_requested=props, objective_value=objective_value(matrix, obj, w, aggregate),
            certificate=certificate, solver=fast.solver, method=fast.method, status=fast.status,
            solve_time=fast.solve_time, solver_objective=fast.solver_objective, aggregate=aggregate,
            weights=None if weights is None else w.tolist(), extra=fast.extra,
        )
    N = n + 1
    system = constraint_system(n, a, props)
    x = cp.Variable(N * N)
    constraints = [system.A_ub @ x >= system.b_ub, system.A_eq @ x == system.b_eq]
    C = loss_matrix(n, obj)
    if aggregate == "sum":
        goal = (C * w[None, :]).ravel() @ x
    else:
        t = cp.Variable()
        j = np.tile(np.arange(N), N)
        column_loss = sp.csr_matrix((C.ravel(), (j, np.arange(N * N))), shape=(N, N * N))
        constraints.append(column_loss @ x <= t)
        goal = t
    problem = cp.Problem(cp.Minimize(goal), constraints)
    start = time.perf_counter()
    try:
        _solve(problem, solver, method)
    except cp.error.SolverError as exc:
        raise DesignError(f"{solver} failed for {_label(n, a, props, obj)}: {exc}") from exc
    elapsed = time.perf_counter() - start
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or x.value is None:
        raise DesignError(f"{solver} returned status {problem.status!r} for {_label(n, a, props, obj)}")
    matrix, certificate = certify(x.value.reshape(N, N), a)
    optimality = fast_design.prove_matrix(n, a, props, obj, None if weights is None else w, aggregate, matrix)
    status = problem.status if optimality["certified"] else "not proven optimal"
    return Design(
        mechanism=mechanism, n=n, alpha=a, matrix=matrix, objective=str(obj),
        properties_requested=props,
        objective_value=objective_value(matrix, obj, w, aggregate),
        certificate=certificate, solver=solver, method=method, status=status,
        solve_time=elapsed, solver_objective=float(problem.value), aggregate=aggregate,
        weights=None if weights is None else w.tolist(), extra={"backend": "cvxpy", "optimality": optimality},
    )


def design_named(mechanism: str, n: int, alpha: float, objective: object = "L0",
                 properties: object = (), **lp_options) -> Design:
    """Build ``mechanism`` in GM, EM, UM (closed forms), WM, WH (named LPs) or LP (``properties``).

    Closed forms are certified like LP answers (GM's DP inequalities are all tight, so
    rounding can break one by an ulp; the certificate records any repair).
    """
    name = str(mechanism).upper()
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; allowed: {', '.join(MECHANISMS)}")
    if name in CLOSED_FORMS:
        n, a = check_n(n), check_alpha(alpha)
        obj = parse_objective(objective)
        matrix, certificate = certify(CLOSED_FORMS[name](n, a), a)
        return Design(mechanism=name, n=n, alpha=a, matrix=matrix, objective=str(obj),
                      properties_requested=(), objective_value=objective_value(matrix, obj),
                      certificate=certificate)
    props = NAMED_DESIGNS[name] if name in NAMED_DESIGNS else properties
    return design_lp(n, alpha, props, objective, mechanism=name, **lp_options)
