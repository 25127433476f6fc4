"""Column monotonicity relaxed to column honesty: solve the cheaper LP, prove on the LP with CM.

Conventions as everywhere: ``P[i, j] = Pr[output i | input j]`` (rows outputs, columns inputs),
``N = n + 1``, ``alpha = e^-eps``; duals in the sign convention of
:mod:`countdp.design.optimality` (``A_ub x >= b_ub`` with ``u >= 0``).

CM asks each column to rise towards its diagonal entry, one row per adjacent pair; CH only that
the diagonal entry be its column's largest.  Each CH row is the sum of the CM rows on its
column's path to the diagonal, so CM implies CH and the LP with CH in place of CM is a
relaxation: its optimum is at most the LP's.  For an interior point method CM is the costly
part, and the relaxation's interior point (the centre of its optimal face) often holds CM.

The relaxation's dual, with each CH multiplier added to every CM row on its path
(:func:`spread_dual`), is a dual of the LP with CM with the same objective and the same reduced
costs, and the independent check of :mod:`countdp.design.optimality` on the LP with CM also
checks that the point holds every CM row.  When the optima are equal but the relaxation's optimal
face is larger, its centre may break CM; then a point of the LP with CM on that face
(:func:`face_model`: by complementary slackness with the spread dual, rows with positive
multipliers held tight and the cost dropped) is proven by the same dual.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from countdp.design.dual_repair import prove_dual
from countdp.design.model import DesignProblem
from countdp.design.optimality import not_proven
from countdp.design.polish import full_dual
from countdp.design.reductions.chain import Reduction
from countdp.design.reductions.fold_symmetry import NOT_CLOSED, unfolded_dual
from countdp.design.settings import SolverSettings
from countdp.values.properties import parse_properties

RELAXATION = "CM relaxed to CH, proven with CM"
"""The entry of ``extra["reductions"]`` of a design answered by the relaxation."""

FACE = "CM restored on the relaxation's optimal face"
"""The entry of ``extra["reductions"]`` of a relaxed design whose point was moved onto the face."""

SPREAD_DUAL = "the LP's with CH in place of CM, CH's multipliers spread over the CM rows"
"""The ``dual`` recorded in the certificate of a relaxed design."""


def relaxed_properties(properties: tuple[str, ...]) -> tuple[str, ...]:
    """``properties`` with CM replaced by CH."""
    return parse_properties([p for p in properties if p != "CM"] + ["CH"])


def cm_multipliers(n: int, ch: np.ndarray) -> np.ndarray:
    """Multipliers of the CM rows (in :func:`countdp.design.constraints.property_rows` order)
    whose combination of rows equals that of the CH rows with multipliers ``ch``.

    Below the diagonal (``i > j``) CM row ``(k, j)`` is ``P[k-1, j] - P[k, j] >= 0`` and
    CH row ``(i, j)`` is the sum of CM rows ``(k, j)`` for ``j < k <= i``, so CM row ``(k, j)``
    gets the CH multipliers of every ``i >= k``; above it, mirrored."""
    N = n + 1
    U = np.zeros((N, N))
    U[~np.eye(N, dtype=bool)] = ch  # CH rows: every off-diagonal entry, row-major
    below = np.flip(np.cumsum(np.flip(np.tril(U, -1), 0), 0), 0)
    above = np.cumsum(np.triu(U, 1), 0)
    i, j = np.indices((N, N))
    return np.concatenate([below[i > j], above[i < j]])


def spread_dual(relaxed: DesignProblem, target: DesignProblem, u: np.ndarray,
                v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dual ``(u, v)`` of ``target`` (an LP with CM) from one of ``relaxed`` (the same LP with
    CH in place of CM): the blocks of the same name copied, CH's multipliers spread over the CM
    rows (:func:`cm_multipliers`), ``target``'s own CH rows (if any) given 0."""
    out_u, out_v = target.dual_from(relaxed, u, v)
    if "CH" in target.blocks:
        out_u[target.blocks["CH"][1]] = 0.0
    out_u[target.blocks["CM"][1]] = cm_multipliers(target.n, u[relaxed.blocks["CH"][1]])
    return out_u, out_v


def target_dual(target: DesignProblem, relaxed: DesignProblem, lp, run) -> tuple[np.ndarray, np.ndarray] | None:
    """The dual, on ``target``'s LP, of a solve ``run`` of a reduced model ``lp`` of ``relaxed``
    (S folded or not): mapped to the full model, unfolded if S was folded in, then spread
    (:func:`spread_dual`).  ``None`` when the rows are not closed under the mirror."""
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    if lp.problem.properties != relaxed.properties:  # S folded in, not requested
        dual = unfolded_dual(lp.problem, relaxed.lp(), u, v)
        if dual is None:
            return None
        u, v = dual
    return spread_dual(relaxed, target, u, v)


def check_with(target: DesignProblem, u: np.ndarray, v: np.ndarray, P: np.ndarray, repair: bool = True, *,
               settings: SolverSettings) -> dict:
    """The independent check (:mod:`countdp.design.optimality`) of ``P`` on ``target``'s LP with the
    dual ``(u, v)``, repaired first if it does not close and ``repair`` (:mod:`countdp.design.dual_repair`)."""
    return prove_dual(target.lp(), target.point(P), u, v, repair, settings=settings)


def prover(target: DesignProblem, relaxed: DesignProblem, *, settings: SolverSettings):
    """A ``prover`` for the proven points of a reduced model of ``relaxed`` (S folded or not):
    ``prove(lp, run, P)`` is the certificate of ``P`` on ``target``'s LP, with the spread dual."""

    def prove_on_target(lp, run, P: np.ndarray) -> dict:
        dual = target_dual(target, relaxed, lp, run)
        if dual is None:
            return not_proven(NOT_CLOSED)
        return check_with(target, *dual, P, repair=not run.polished, settings=settings)

    return prove_on_target


def face_model(lp, u: np.ndarray, v: np.ndarray, reduced_cost: np.ndarray, *,
               settings: SolverSettings):
    """``lp`` (a reduced model of the LP with CM) cut down to the optimal face of a dual ``(u, v)``
    of its full model (``reduced_cost``: in ``lp``'s columns): each inequality row with a
    multiplier above :attr:`~ProofTuning.face_tol` times the largest cost made an equality,
    each variable with a reduced cost above it fixed at 0 (complementary slackness), the cost
    dropped.  Every feasible point of it is optimal, with ``(u, v)`` as its certificate."""
    unit = settings.proof.face_tol * float(np.abs(lp.cost).max(initial=0.0))
    multipliers = np.concatenate([u, np.abs(v)])[lp.row_origin]
    tight = (multipliers > unit) & ~np.isfinite(lp.row_upper)
    fixed = reduced_cost > unit
    return replace(lp, cost=np.zeros_like(lp.cost), row_upper=np.where(tight, lp.row_lower, lp.row_upper),
                   col_upper=np.where(fixed, 0.0, lp.col_upper))


def only_cm_broken(optimality: dict) -> bool:
    """Whether a failed proof on the LP with CM closed its gap but its point breaks a row (CM:
    the relaxation's point holds every other row of the LP)."""
    gap = optimality.get("gap")
    return (gap is not None and gap <= optimality["gap_tolerance_rel"] * max(1.0, abs(optimality["upper_bound"]))
            and optimality["max_primal_violation"] > optimality["primal_tolerance"])


@dataclass(frozen=True)
class Spread:
    """The way back from the relaxation (``relaxed``, CH in place of CM) to the LP with CM (``target``)."""

    relaxed: DesignProblem
    target: DesignProblem

    def invert_dual(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A dual of ``relaxed``'s full LP as one of ``target``'s (:func:`spread_dual`)."""
        return spread_dual(self.relaxed, self.target, u, v)

    def invert_primal(self, P: np.ndarray) -> np.ndarray:
        """A point of the relaxation is a candidate point of the LP with CM (the proof checks CM)."""
        return P


class RelaxCM(Reduction):
    """Replace CM by CH: a relaxation whose dual, spread, is a dual of the LP with CM.  A point of
    the relaxation is one of the LP only if it holds CM, which the proof on the LP checks."""

    refusal = "no CM to relax"

    def accepts(self, problem: DesignProblem) -> bool:
        """An LP with CM."""
        return "CM" in problem.properties

    def apply(self, problem: DesignProblem) -> tuple[DesignProblem, Spread]:
        """``problem`` with CM replaced by CH, and the inverse that spreads its dual back."""
        relaxed = DesignProblem(problem.n, problem.alpha, relaxed_properties(problem.properties), problem.objective,
                                problem.weights, problem.aggregate)
        return relaxed, Spread(relaxed, problem)
