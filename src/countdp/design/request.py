"""The design engine's shapes: what is asked (:class:`DesignRequest`), what one strategy did
(:class:`Attempt`) and what answers (:class:`Answer`).

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]``, ``N = n + 1``,
``alpha = e^-eps`` (``alpha`` near 1 is more private).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from countdp.design.model import DesignProblem
from countdp.values.objectives import Objective, parse_objective
from countdp.values.properties import parse_properties

if TYPE_CHECKING:  # annotations only: the reduced model imports the solvers' stack
    from countdp.design.reduce import ReducedLP

METHODS = ("auto", "simplex", "ipm", "clarabel", "guided")
"""Algorithms for the reduced model: HiGHS dual simplex, HiGHS interior point + crossover (both
vertices), Clarabel's interior point (not a vertex), or HiGHS simplex from a basis read off a guide
point (a vertex); ``auto`` lets the planner choose by model size and objective."""


@dataclass(frozen=True, eq=False)
class DesignRequest:
    """One design LP: BasicDP + ``properties`` at ``(n, alpha)``, minimising ``objective`` under the
    prior ``weights`` (``None``: uniform) summed over inputs (``aggregate="sum"``) or for the worst
    input (``"max"``).  ``method``: ``"auto"`` or one algorithm of :data:`METHODS`, honoured as
    asked: alone (the plain LP, no template strategy), or with ``keep_shortcuts`` as the general
    path's algorithm only (the reduced LP, solved when no shortcut answers first);
    ``use_closed_forms``, ``fold_symmetry`` and ``drop_implied`` switch off a shortcut or
    a reduction (tests compare with and without).  ``solver`` and ``backend`` choose between the
    reduced model (``backend="highs"``: HiGHS and Clarabel) and the plain dense cvxpy model
    (``"cvxpy"``; ``"auto"``: by size, :attr:`~countdp.design.settings.SolverTuning.auto_min_n`);
    with the cvxpy model, ``method`` is the cvxpy solver's (HiGHS ``simplex``/``ipm``, Clarabel ``ipm``)."""

    n: int
    alpha: float
    properties: tuple[str, ...] = ()
    objective: Objective = field(default_factory=lambda: parse_objective("L0"))
    weights: np.ndarray | None = None
    aggregate: str = "sum"
    method: str = "auto"
    use_closed_forms: bool = True
    fold_symmetry: bool = True
    drop_implied: bool = True
    solver: str = "HIGHS"
    backend: str = "auto"
    keep_shortcuts: bool = False

    @classmethod
    def of(cls, n: int, alpha: float, properties: object = (), objective: object = "L0",
           weights: np.ndarray | None = None, aggregate: str = "sum", **options) -> DesignRequest:
        """A request from loose values: properties and objective parsed, ``alpha`` a float."""
        method = options.get("method", "auto")
        if options.get("backend", "auto") != "cvxpy" and method not in METHODS:
            raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
        return cls(n, float(alpha), parse_properties(properties), parse_objective(objective), weights, aggregate,
                   **options)

    @cached_property
    def problem(self) -> DesignProblem:
        """The LP's definition (its rows, costs and dual mapping)."""
        return DesignProblem(self.n, self.alpha, self.properties, self.objective, self.weights, self.aggregate)

    @property
    def uniform(self) -> bool:
        """Whether the prior is uniform (given as ``None`` or as equal weights)."""
        return uniform_weights(self.weights, self.n)

    @property
    def zero_one(self) -> bool:
        """Whether the objective is L0 (= L0,d with ``d = 0``)."""
        return is_zero_one(self.objective)

    def label(self) -> str:
        """The request's parameters, for messages."""
        return (f"n={self.n}, alpha={self.alpha}, properties={'+'.join(self.properties) or 'none'}, "
                f"objective={self.objective}")


def uniform_weights(weights: np.ndarray | None, n: int) -> bool:
    """Whether ``weights`` is the uniform prior over ``0..n`` (``None`` is)."""
    return weights is None or bool(np.allclose(weights, 1.0 / (n + 1), rtol=0, atol=1e-15))


def is_zero_one(objective: Objective) -> bool:
    """Whether a parsed objective is L0 (= L0,d with ``d = 0``)."""
    return objective.name == "L0" or (objective.name == "L0d" and objective.d == 0)


@dataclass
class Answer:
    """A design's matrix (before :func:`countdp.privacy.certify.certify`, which the caller applies;
    it is deterministic, so ``extra["optimality"]`` certifies the matrix released), how it was
    found, and the LP's size.  ``status`` is ``"optimal"`` only when that certificate closes."""

    matrix: np.ndarray
    solver: str
    method: str
    status: str
    solve_time: float
    build_time: float
    solver_objective: float
    extra: dict


OUTCOMES = ("proven", "unproven", "failed", "skipped")
"""What an attempt came to: an answer proven optimal, an answer whose certificate did not close,
no answer (the reason says why), or not tried (the strategy did not apply)."""


@dataclass(frozen=True)
class Stage:
    """What a strategy run in two stages leaves for its later stage: the reduced model ``lp`` (built
    in ``build`` seconds), the first stage's ``solve_proven`` result ``first`` (``None`` when no
    method answered) and ``error``, why not.  The reduced LP's guided methods leave it for the cold
    methods, which run after the symmetrized solve on the same model."""

    lp: ReducedLP
    build: float
    first: tuple | None
    error: str


@dataclass
class Attempt:
    """What one strategy did with a request: its ``outcome`` (:data:`OUTCOMES`), why, how long it
    took, its answer if any, and ``info``, the strategy's record that the final answer keeps in
    ``extra[strategy.extra_key]`` (e.g. the large-n template's widths tried).  ``stage``: what the
    attempt leaves for a later strategy (:class:`Stage`); ``final``: no later strategy is tried
    (the attempt ran its path to its end)."""

    strategy: str
    outcome: str
    reason: str = ""
    seconds: float = 0.0
    answer: Answer | None = None
    info: dict | None = None
    stage: Stage | None = None
    final: bool = False

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; allowed: {', '.join(OUTCOMES)}")

    @property
    def proven(self) -> bool:
        return self.outcome == "proven"

    def summary(self) -> dict:
        """The attempt as recorded in ``extra["attempted"]``: JSON, and no timing, so that the same
        design gives the same artifact (timings are in the answer's ``solve_time``)."""
        out = {"strategy": self.strategy, "outcome": self.outcome}
        if self.reason:
            out["reason"] = self.reason
        return out
