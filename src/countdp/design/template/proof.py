"""One template width, end to end: the restricted LPs, their expansion to the full size, and the
certificate of optimality on the full model.

Correctness does not rest on the template's structure.  The expanded primal ``E z`` (after the
float DP certificate of :func:`countdp.privacy.certify.certify`) and the expanded dual ``F y0``
(or the support dual's vertex and dual) are checked by the independent weak-duality routine
:func:`countdp.design.optimality.check_optimality` on the full model; only a closed gap is
reported as certified.
"""

from __future__ import annotations

import numpy as np

from countdp.design.model import DesignProblem
from countdp.design.optimality import check_optimality, lower_column_multipliers, not_proven
from countdp.design.polish import certified_and_proven, dp_closure
from countdp.design.reductions.relax_cm import spread_dual
from countdp.design.strategy import SolveContext
from countdp.design.template.restricted import dual_properties, solve_template, template_maps
from countdp.design.template.support_dual import support_dual


def prove_width(problem: DesignProblem, W: int, *, template_size: int | None = None,
                context: SolveContext) -> dict:
    """One template width ``W``: the restricted LPs (at ``template_size``, default ``n``), then the
    expansion to size ``n`` and the certificate on the full model, ``problem.lp()``.

    Returns the certificate of :func:`certify_expansion` (``"certified"``, the gap, ...) with the
    expanded ``"matrix"`` and the full model's multipliers ``"u"``, ``"v"``, or
    ``{"certified": False, "reason": ...}`` when a restricted LP or the support dual fails.  The
    general sub-solve of the support dual and every tuning constant come from ``context``."""
    settings = context.settings
    n, alpha, props, objective, full = problem.n, problem.alpha, problem.properties, problem.objective, problem.lp()
    N, n0 = n + 1, 3 * W + 4
    m = min(n, template_size or n)
    l0 = objective.name == "L0"
    dual_props = dual_properties(props) if l0 else props
    maps = template_maps(n, n0, W, alpha, dual_props)  # F copies the rows of the LP whose dual is copied
    z, duals, info = solve_template(full, maps, n, alpha, props, W, m, l0, settings=settings)
    if z is None:
        return not_proven(info)
    info = {"template_n": n0, "width": W, "solved_at_n": m, **info}
    E, F = maps[0], maps[1]
    raw = (E @ z).reshape(N, N)
    if not l0:
        try:
            y, raw = support_dual(full, maps, raw, alpha, props, objective, W, context)
        except ValueError as exc:
            return not_proven(f"W={W}: {exc}")
        return certify_expansion(problem, raw, y, props, info)
    if "S" in props:  # the template was solved without S (countdp.design.template.restricted)
        raw = (raw + raw[::-1, ::-1]) / 2.0
    if dual_props != props:
        info["dual"] = "the template's with CH in place of CM, CH's multipliers spread over the CM rows"
    result = not_proven(f"W={W}: restricted dual not solved")
    for y0 in duals:  # the objective's costs are 1/n: the same dual, rescaled
        result = prove_copied_dual(problem, raw, y0 * m, W, info, F)
        if result["certified"]:
            break
    return result


def prove_copied_dual(problem: DesignProblem, raw: np.ndarray, template_dual: np.ndarray, W: int, info: dict,
                      F=None) -> dict:
    """L0: ``raw`` proven on ``problem``'s full model with the template dual copied to its size.

    ``template_dual`` is the restricted dual of the width-``W`` template in units where the costs are
    1 (it does not depend on ``n``: its rows are local), of the LP with
    :func:`~countdp.design.template.restricted.dual_properties`; ``F`` its copy map at ``problem.n``
    (built when not given).  The result of :func:`certify_expansion`, with ``"template_dual"``."""
    n, props = problem.n, problem.properties
    dual_props = dual_properties(props)
    if F is None:
        F = template_maps(n, 3 * W + 4, W, problem.alpha, dual_props).F
    result = certify_expansion(problem, raw, F @ (template_dual / n), dual_props, info)
    result["template_dual"] = template_dual
    return result


def certify_expansion(problem: DesignProblem, raw: np.ndarray, y: np.ndarray, dual_props: tuple[str, ...],
                      info: dict, closure_first: bool = False) -> dict:
    """The certificate of ``certify(raw)`` on ``problem``'s LP with the multipliers ``y`` of the
    inequality rows and column sums of the LP with ``dual_props`` (CH's spread over CM's rows where
    ``dual_props`` has CH for CM; the rows of properties ``dual_props`` lacks, such as S or WH, given 0).

    The result of :func:`countdp.design.optimality.check_optimality` (``"certified"`` only when
    the weak-duality gap closes) with ``repair_lambda``, ``info``, the ``"matrix"`` proven (``raw``
    or its DP closure, ``"dp_closure"``) and the full model's multipliers ``"u"``, ``"v"``.
    ``closure_first``: prove the DP closure of ``raw`` at once (a vertex whose UM repair is known to
    cost more than the gap allows, as L2's at large ``n``)."""
    full, N = problem.lp(), problem.N
    u, v = y[: y.size - N], np.concatenate([y[y.size - N:], np.zeros(full.b_eq.size - N)])
    if dual_props != problem.properties:  # a dual of the LP with CH for CM, or without S or WH
        relaxed = DesignProblem(problem.n, problem.alpha, dual_props, problem.objective, problem.weights,
                                problem.aggregate)
        spread = "CM" in problem.properties and "CM" not in dual_props
        u, v = spread_dual(relaxed, problem, u, v) if spread else problem.dual_from(relaxed, u, v)
    # Tiny dual infeasibility (rounding) is moved into each column's sum multiplier, beyond the
    # check's own rounding bound per entry
    v = lower_column_multipliers(full, u, v)
    # UM's repair of an interior point costs lambda times UM's loss; where that keeps the gap open
    # the DP closure, which moves each column by about the violation, is proven instead
    if closure_first:
        raw = dp_closure(raw, problem.alpha)
    raw, _, repair, result = certified_and_proven(
        raw, problem.alpha, lambda P: check_optimality(full, P.ravel(), u, v), closure=not closure_first)
    result.update({"repair_lambda": repair.repair_lambda, **info})
    if closure_first:
        result["dp_closure"] = True
    result["matrix"], result["u"], result["v"] = raw, u, v
    return result
