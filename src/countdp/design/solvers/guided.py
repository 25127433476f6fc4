"""HiGHS's simplex from a basis guessed off a guide point: a vertex in a few pivots when the guess is good.

The guide is, where the caller supplies one (``guide``, e.g.
:func:`countdp.design.solvers.template_guide.template_guide`), the optimal vertex of the same LP at
a smaller ``n``, spread out; else Clarabel's point on the scaled model
(:mod:`countdp.design.solvers.interior`; its 'AlmostSolved' is fine: the point only seeds the
basis).  The caller's proof may accept Clarabel's point itself (``accept``): DP-closed, it is often
proven outright where the simplex grinds (large optimal faces; alpha near 1).  Every simplex is
limited by iterations (times rows) and by nothing else, so the path taken is the same on any
machine and under any load; the seconds recorded are for the record only.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from countdp.design.policy import point_before_template
from countdp.design.reduce import ReducedLP
from countdp.design.settings import SolverSettings
from countdp.design.solvers.basis_guess import guess_basis
from countdp.design.solvers.highs import run_highs, work_limits
from countdp.design.solvers.interior import scaled_points
from countdp.design.solvers.scaling import scaled_model, scales, unscaled
from countdp.design.solvers.solved import INTERIOR_GUIDE, Solved
from countdp.design.watch import TimeLimitReached

Guide = Callable[[ReducedLP], "tuple | None"]
"""A guide builder: ``lp -> (guide, basic, active, n0)`` (a point of ``lp``, basis statuses or
``None``, the size it came from), ``None`` when it does not apply; ``RuntimeError`` when it fails."""


def run_guided(lp: ReducedLP, iterations: int | tuple[int, int] | None = None, template: bool = True,
               accept: Callable[[Solved], bool] | None = None, tol: float | None = None, *,
               guide: Guide | None = None, settings: SolverSettings) -> Solved:
    """HiGHS simplex from the basis :func:`countdp.design.solvers.basis_guess.guess_basis` reads off a
    guide point, in ``lp``'s units; ``Solved.guide`` says which guide was used, and why ``guide`` did not.

    ``guide`` (tried when ``template``): its point with its basis statuses first, then its point
    alone, each by a dual simplex of ``settings.template.template_simplex_iterations``; else Clarabel's point.
    From Clarabel's basis the dual simplex, then the primal one (the dual stops at the huge duals of
    an ill-conditioned guess), each of ``iterations`` (one limit, or the dual's and the primal's;
    default ``settings.solver.guided_simplex_iterations``).  ``RuntimeError`` when the last step fails.

    ``accept``: a test of Clarabel's point (in ``lp``'s units); when it passes, that point is
    returned as it is (no basis; ``guide`` :data:`~countdp.design.solvers.solved.INTERIOR_GUIDE`).
    From ``settings.template.template_min_n`` the point is tested before any simplex, and when Clarabel
    ended 'AlmostSolved' nothing else is tried; below, only when the simplex from its basis has
    not ended within ``settings.solver.quick_vertex_work``.  Where
    :func:`countdp.design.policy.point_before_template`, from ``template_min_n`` Clarabel's points (F
    substituted out first) are offered before ``guide`` is called.  ``tol``: Clarabel's
    tolerances for its points (default ``settings.solver.guide_clarabel_tol``)."""
    col, row = scales(lp, settings=settings)
    scaled = scaled_model(lp, col, row)
    try:
        return _run_guided(lp, scaled, (col, row), iterations, template, accept, tol, guide, settings)
    except TimeLimitReached as stop:  # a point of the scaled model (Clarabel's) is carried to lp's units
        if stop.lp is not scaled:
            raise
        raise stop.mapped(lp, lambda run: unscaled(run, col, row)) from None


def _run_guided(lp: ReducedLP, scaled: ReducedLP, scale: tuple[np.ndarray, np.ndarray], iterations, template: bool,
                accept, tol: float | None, guide: Guide | None, settings: SolverSettings) -> Solved:
    """:func:`run_guided` on ``scaled``, ``lp`` scaled by ``scale``."""
    col, row = scale
    began, spent = time.perf_counter(), 0.0
    early = accept is not None and lp.n >= settings.template.template_min_n and point_before_template(lp.problem)
    points, offered = scaled_points(lp, scaled, early, tol, settings=settings), []
    if early:  # Clarabel's points (F substituted first) offered before any template
        for point in points:
            offered.append(point)
            interior = unscaled(point, col, row)
            if accept(interior):
                interior.seconds = time.perf_counter() - began
                return interior
        spent = time.perf_counter() - began
    run, note, spent = _from_template(lp, scaled, (col, row), guide if template else None, spent, settings)
    if run is not None:
        return run
    limits = settings.solver.guided_simplex_iterations if iterations is None else iterations
    return _from_interior(lp, scaled, (col, row), points, offered, note, spent, limits, accept, settings)


def _from_template(lp: ReducedLP, scaled: ReducedLP, scale: tuple[np.ndarray, np.ndarray], guide: Guide | None,
                   spent: float, settings: SolverSettings) -> tuple[Solved | None, str, float]:
    """``(run, note, spent)``: the simplex from ``guide``'s basis (its statuses, then its point
    alone), or ``None`` with the note of why not; ``spent`` counts the seconds so far."""
    col, row = scale
    began, note = time.perf_counter(), ""
    try:
        found = guide(lp) if guide is not None else None
    except RuntimeError as exc:
        found, note = None, f" ({exc})"
    spent += time.perf_counter() - began
    if found is None:
        return None, note, spent
    start, basic, active, n0 = found
    point = replace(start, y=start.y / col, row_dual=start.row_dual / row, col_dual=start.col_dual * col)
    for prior in ((basic, active), None) if basic is not None else (None,):
        began = time.perf_counter()
        try:
            run = run_highs(lp, "simplex", start=guess_basis(scaled, point, prior, settings=settings),
                            iterations=settings.template.template_simplex_iterations, settings=settings)
        except RuntimeError as exc:
            spent += time.perf_counter() - began
            note = f" (the design at n = {n0} did not guide: {exc})"
            if "limit reached" in str(exc):
                break  # the guess was feasible to work with, just far: the other one is no nearer
        else:
            run.seconds += spent
            run.guide = f"the design at n = {n0}" + ("" if prior is not None else ", its point only")
            return run, note, spent
    return None, note, spent


def _steps(lp: ReducedLP, ipm: Solved, iterations: int | tuple[int, int], accept, settings: SolverSettings):
    """The steps from Clarabel's point ``ipm``: ``(limit, primal)`` simplices and ``("point", None)``
    (offer Clarabel's points to ``accept``), in :func:`run_guided`'s order."""
    dual_limit, primal_limit = iterations if isinstance(iterations, tuple) else (iterations, iterations)
    if accept is None:  # the dual simplex, then the primal one (the dual stops at huge duals)
        return ((dual_limit, False), (primal_limit, True))
    if lp.n < settings.template.template_min_n:  # a vertex if a few pivots find one, then the point, then more pivots
        quick_dual, quick_primal = work_limits(settings.solver.quick_vertex_work, lp)
        return ((quick_dual, False), (quick_primal, True), ("point", None), (primal_limit, True))
    if ipm.status == "Solved":
        return (("point", None), (dual_limit, False), (primal_limit, True))
    return (("point", None),)  # an inaccurate point: its basis sends the simplex grinding


def _from_interior(lp: ReducedLP, scaled: ReducedLP, scale: tuple[np.ndarray, np.ndarray],
                   points: Iterator[Solved], offered: list[Solved], note: str, spent: float,
                   iterations: int | tuple[int, int], accept, settings: SolverSettings) -> Solved:
    """The steps of :func:`_steps` from Clarabel's first point (``offered[0]`` if it was offered
    already, else the next of ``points``): the first simplex that ends, or a point ``accept`` passes."""
    col, row = scale
    ipm = offered[0] if offered else next(points)
    began, start = time.perf_counter(), []  # start: the basis read off ipm, once a simplex needs it
    interior = () if offered else (unscaled(ipm, col, row, INTERIOR_GUIDE + note),)
    rest = (unscaled(point, col, row, INTERIOR_GUIDE + note) for point in points)
    order = _steps(lp, ipm, iterations, accept, settings)
    for step, (limit, primal) in enumerate(order, 1):
        if limit == "point":  # Clarabel's points not yet offered
            for point in itertools.chain(interior, rest):
                if accept(point):
                    point.seconds += spent + time.perf_counter() - began
                    return point
            if step == len(order):
                raise RuntimeError(f"Clarabel's point ({ipm.status}) not proven; its basis not tried")
            continue
        try:
            if not start:
                start.append(guess_basis(scaled, ipm, settings=settings))
            run = run_highs(lp, "simplex", start=start[0], primal=primal, iterations=limit, settings=settings)
            break
        except RuntimeError:
            if step == len(order):  # the last simplex failed too
                raise
    run.seconds = ipm.seconds + spent + time.perf_counter() - began
    run.guide = "clarabel" + note
    return run
