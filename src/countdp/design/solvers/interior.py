"""Clarabel's interior points of a reduced design LP, on the scaled model, with F's rows kept or
substituted out.

A point is solved on the scaled model (:mod:`countdp.design.solvers.scaling`), the cost divided by
:func:`countdp.design.solvers.clarabel.objective_scale`, at Clarabel's tolerance
:attr:`~countdp.design.settings.SolverTuning.guide_clarabel_tol` (a point proven as it is needs
accurate duals).  Where Clarabel ends 'AlmostSolved', another formulation may do better: the same
solve refined, or, with F requested, F's rows substituted out
(:mod:`countdp.design.reductions.substitute_f`) or kept.  Either formulation's duals can be the
poorer, so both are offered in turn, each next one only while the last ended 'AlmostSolved'.
"""

from __future__ import annotations

from collections.abc import Iterator

from countdp.design.policy import too_near_one
from countdp.design.reduce import ReducedLP
from countdp.design.reductions.substitute_f import lift, substitution
from countdp.design.settings import SolverSettings
from countdp.design.solvers.clarabel import objective_scale, run_clarabel
from countdp.design.solvers.scaling import scaled_model, scales, unscaled
from countdp.design.solvers.solved import INTERIOR_GUIDE, Solved
from countdp.design.watch import TimeLimitReached


def drops_implied_bounds(lp: ReducedLP, settings: SolverSettings) -> bool:
    """Whether Clarabel leaves out ``lp``'s implied bounds ``y >= 0``
    (:func:`countdp.design.solvers.clarabel.run_clarabel`): where alpha is too near 1 for a
    template (:func:`countdp.design.policy.too_near_one`), so that Clarabel's point is the answer."""
    return lp.problem is not None and too_near_one(lp.n, lp.problem.alpha, settings)


def scaled_points(lp: ReducedLP, scaled: ReducedLP, substituted_first: bool, tol: float | None = None, *,
                  settings: SolverSettings) -> Iterator[Solved]:
    """:func:`interior_points` in the units of ``scaled`` (:func:`countdp.design.solvers.scaling.scaled_model`
    of ``lp``), at Clarabel's tolerance ``tol`` (default ``settings.solver.guide_clarabel_tol``)."""
    tol = settings.solver.guide_clarabel_tol if tol is None else tol
    found = substitution(scaled)
    drop = drops_implied_bounds(lp, settings)

    def solve(substitute: bool, refine: bool) -> Solved:
        if substitute:
            try:
                sub = run_clarabel(found[0], objective_scale(lp), tol, refine, drop_implied_bounds=drop,
                                   settings=settings)
            except TimeLimitReached as stop:  # its point, carried back to the scaled model
                raise stop.mapped(scaled, lambda run: lift(scaled, found, run)) from None
            return lift(scaled, found, sub)
        return run_clarabel(scaled, objective_scale(lp), tol, refine, drop_implied_bounds=drop, settings=settings)

    if found is None:
        tries = ((False, False), (False, True))
    elif substituted_first:
        tries = ((True, False), (True, True), (False, False))
    else:
        tries = ((False, False), (True, False))
    for substitute, refine in tries:
        point = solve(substitute, refine)
        yield point
        if point.status == "Solved" or (found is None and point.primal_residual > settings.solver.refine_max_residual):
            break


def interior_points(lp: ReducedLP, note: str = "", substituted_first: bool = False, *,
                    settings: SolverSettings) -> Iterator[Solved]:
    """Clarabel's points on the scaled model, in ``lp``'s units, marked
    :data:`countdp.design.solvers.solved.INTERIOR_GUIDE` (+ ``note``); each next one only while the
    last ended 'AlmostSolved'.  A model without F's rows has two: the point, then the same refined
    when the first stalled with a primal residual of at most ``settings.solver.refine_max_residual`` (above
    it refinement stalls too).  With F's rows:

    * ``substituted_first``: F substituted out, then the same refined, then F's rows kept (the
      substituted model is the faster);
    * else F's rows kept, then substituted out: where a basis is guessed from the point, the
      templates were tuned on the model with F's rows."""
    col, row = scales(lp, settings=settings)
    try:
        for point in scaled_points(lp, scaled_model(lp, col, row), substituted_first, settings=settings):
            yield unscaled(point, col, row, INTERIOR_GUIDE + note)
    except TimeLimitReached as stop:  # its point, in lp's units
        raise stop.mapped(lp, lambda run: unscaled(run, col, row)) from None


def interior_point(lp: ReducedLP, *, settings: SolverSettings) -> Solved:
    """Clarabel's first point of :func:`interior_points`, as the guided simplex computes it."""
    return next(interior_points(lp, settings=settings))
