"""The predicates that choose how a design is solved, in one place.

Each is a pure function of the request (or the model) and the :class:`SolverSettings`; the
strategies and the planner consult them, and none of them solves anything.  Conventions:
``N = n + 1``, ``alpha = e^-eps``.

Far from its corners an optimal design looks like GM (translation invariant along the diagonal,
decaying by ``alpha`` per step away from it), so a design at a smaller size, spread out, is a good
guess or even an exact template at large ``n`` — as long as the corners, about
``log(decay) / log(alpha)`` wide, fit in the template.  Near ``alpha = 1`` they do not, and
Clarabel's interior point, proven as it is, answers instead.
"""

from __future__ import annotations

import numpy as np

from countdp.design.request import is_zero_one, uniform_weights
from countdp.design.settings import SolverSettings
from countdp.design.template.square_trim import trimmed_unknowns

LARGE_N_OBJECTIVES = ("L0", "L0d", "L1", "L2")
"""Objectives of the large-n template path: L0 with its copied dual, the others with the support dual."""


def guide_width(n: int, alpha: float, settings: SolverSettings) -> int | None:
    """The corner width ``W`` of the guide template (size ``3 W + 4``), or ``None`` when no guide
    is built: ``n`` below :attr:`~TemplateTuning.template_min_n`, or a template that would be
    nearly as large as the model (``alpha`` near 1)."""
    if n < settings.template.template_min_n or not 0.0 < alpha < 1.0:
        return None
    W = max(int(np.ceil(np.log(settings.template.guide_decay) / np.log(alpha))),
            int(np.ceil(settings.template.guide_min_width_fraction * n)))
    return W if 3 * W + 4 <= settings.template.guide_max_template_fraction * n else None


def too_near_one(n: int, alpha: float, settings: SolverSettings) -> bool:
    """Whether ``n`` is large enough for a template but ``alpha`` too near 1 for one: Clarabel's
    point is then the answer, not a simplex's guide."""
    return n >= settings.template.template_min_n and 0.0 < alpha < 1.0 and guide_width(n, alpha, settings) is None


def guide_applies(problem, settings: SolverSettings) -> bool:
    """Whether a guide template can be built for the :class:`countdp.design.model.DesignProblem`
    ``problem`` (``None``: no) and is worth it: the sum aggregate, uniform weights (the template
    has its own uniform prior), a template width, and not L0,d (``d >= 1``) from
    :attr:`~TemplateTuning.face_alpha` (its optimal face is large; Clarabel's point answers)."""
    if problem is None:
        return False
    objective = problem.objective
    large_face = objective.name == "L0d" and objective.d >= 1 and problem.alpha >= settings.template.face_alpha
    return (problem.aggregate == "sum" and uniform_weights(problem.weights, problem.n) and not large_face
            and guide_width(problem.n, problem.alpha, settings) is not None)


def point_before_template(problem) -> bool:
    """Whether Clarabel's points are offered to the proof before a guide template is built, and the
    CM relaxation tried where a template applies: L0,d (``d >= 1``) with F, whose templates rarely
    guide."""
    objective = problem.objective
    return objective.name == "L0d" and objective.d >= 1 and "F" in problem.properties


def template_clarabel_tol(problem, settings: SolverSettings) -> float:
    """Clarabel's tolerances for the guide point of ``problem``'s template solve: looser for L1
    and L2 (the point only seeds a simplex), else those of a point proven as it is."""
    if problem.objective.name in ("L1", "L2"):
        return settings.solver.template_clarabel_tol
    return settings.solver.guide_clarabel_tol


def choose_method(lp, settings: SolverSettings) -> str:
    """The algorithm ``method="auto"`` runs on the reduced model ``lp``: dual simplex below
    :attr:`~SolverTuning.ipm_min_nnz` constraint non-zeros, else
    :attr:`~SolverTuning.large_method` for L0 and ``guided`` for the other objectives (their
    optima have entries down to ``alpha^n``: unscaled interior points stall and a cold simplex
    grinds; Clarabel on the scaled model gets close and the simplex from its basis needs few pivots)."""
    if lp.A.nnz < settings.solver.ipm_min_nnz:
        return "simplex"
    return settings.solver.large_method if is_zero_one(lp.problem.objective) else "guided"


def planner_may_shortcut(request) -> str | None:
    """``None`` when the planner may answer before the general path (the method is chosen by it, or
    asked for the general path only: ``keep_shortcuts``) and closed forms are allowed, as every
    template strategy needs (it answers instead of the LP asked for); else why not."""
    if request.method != "auto" and not request.keep_shortcuts:
        return f"method {request.method} asked for"
    if not request.use_closed_forms:
        return "shortcuts switched off (use_closed_forms=False)"
    return None


def large_n_applies(request, settings: SolverSettings) -> str | None:
    """``None`` when the large-n template path is meant for ``request`` (L0, L0,d, L1 or L2, uniform
    weights, the sum, CM or CH, no F, ``n`` from :attr:`~TemplateTuning.template_min_n`), else why not."""
    props = set(request.properties)
    if request.n < settings.template.template_min_n:
        return f"n below {settings.template.template_min_n}"
    if not (request.objective.name in LARGE_N_OBJECTIVES and request.aggregate == "sum" and request.uniform):
        return "not a uniform-prior sum of L0, L0d, L1 or L2"
    if "F" in props or not props & {"CM", "CH"}:
        return "needs CM or CH, and no F"
    return None


def template_widths(alpha: float, objective, settings: SolverSettings) -> tuple[int, ...]:
    """The large-n template widths tried in turn: for L0 the narrowest multiple of 4 that holds the
    corners (:attr:`~TemplateTuning.corner_decay`) and one :attr:`~TemplateTuning.widening` times
    wider; for the other objectives :attr:`~TemplateTuning.support_widths` where ``alpha^W`` is at
    most :attr:`~TemplateTuning.support_corner_decay`."""
    if objective.name != "L0":
        tuning = settings.template
        return tuple(W for W in tuning.support_widths if alpha ** W <= tuning.support_corner_decay)
    corner = np.log(settings.template.corner_decay) / np.log(alpha) if 0 < alpha < 1 else 0.0
    W = max(settings.template.min_width, 4 * int(np.ceil(corner / 4)))
    return W, 4 * int(np.ceil(settings.template.widening * W / 4))


def relaxed_width(alpha: float, objective, settings: SolverSettings) -> int | None:
    """The relaxed large-n template's corner width ``W`` for ``objective`` at ``alpha`` (``None``:
    no rule for the objective): ``ceil(k ln(1 - alpha) / ln alpha)`` for the objectives of
    :attr:`~ChainTuning.relaxed_width_log_factors` (L1, L2: corners where ``alpha^W`` is still
    above about ``(1 - alpha)^k``), ``ceil(k / (1 - alpha))`` for those of
    :attr:`~ChainTuning.relaxed_width_linear_factors` (L0, L0d), plus
    :attr:`~ChainTuning.relaxed_width_margin`."""
    if not 0.0 < alpha < 1.0:
        return None
    logs, linear = dict(settings.chains.relaxed_width_log_factors), dict(settings.chains.relaxed_width_linear_factors)
    if objective.name in logs:
        corner = logs[objective.name] * np.log(1.0 - alpha) / np.log(alpha)
    elif objective.name in linear:
        corner = linear[objective.name] / (1.0 - alpha)
    else:
        return None
    return int(np.ceil(corner)) + settings.chains.relaxed_width_margin


def relaxed_max_template_n(objective, settings: SolverSettings) -> int:
    """The widest relaxed template tried for ``objective``
    (:attr:`~ChainTuning.relaxed_max_template_n`; 0 for an objective it does not list)."""
    return dict(settings.chains.relaxed_max_template_n).get(objective.name, 0)


def relaxed_widths(n: int, alpha: float, objective, settings: SolverSettings) -> tuple[tuple[int, ...], str | None]:
    """``(widths, why)``: the relaxed template's widths tried in turn at ``n`` — the rule's
    (:func:`relaxed_width`), then :attr:`~ChainTuning.relaxed_widening` times it — each kept only
    if its template ``3 W + 4`` fits twice in ``n`` and within :func:`relaxed_max_template_n`;
    ``why`` says why the rule's own width is not tried (``None`` when it is)."""
    W = relaxed_width(alpha, objective, settings)
    if W is None:
        return (), f"no width rule for {objective.name}"
    widest = relaxed_max_template_n(objective, settings)
    widths = (W, int(np.ceil(W * settings.chains.relaxed_widening)))
    kept = tuple(w for w in dict.fromkeys(widths) if 2 * (3 * w + 4) <= n and 3 * w + 4 <= widest)
    if 2 * (3 * W + 4) > n:
        return kept, f"n={n} below twice the template of width {W} (alpha = {alpha:g})"
    if 3 * W + 4 > widest:
        return kept, f"the template of width {W} ({3 * W + 4} wide, alpha = {alpha:g}) is wider than {widest}"
    return kept, None


def square_chain_widths(n: int, alpha: float, objective, settings: SolverSettings,
                        narrow: bool = False) -> tuple[tuple[int, ...], str | None]:
    """``(widths, why)``: the square corners' widths tried in turn at ``n`` for the chain dual — the
    rule's, ``ceil(k ln(1 - alpha) / ln alpha)`` plus :attr:`~ChainTuning.relaxed_width_margin` with
    ``k`` from :attr:`~ChainTuning.square_chain_width_factors`, then
    :attr:`~ChainTuning.relaxed_widening` times it — each kept only if both corners fit in ``n``
    with a middle between them (:func:`corners_fit`) and the primal's unknowns
    (:func:`square_unknowns`) are at most :attr:`~ChainTuning.square_chain_max_unknowns`; ``why``
    says why the rule's own width is not tried (``None`` when it is).  ``narrow``: the widths below
    :attr:`~ChainTuning.square_chain_min_width` instead, tried after the relaxed template (where its
    certificate does not close) rather than before it."""
    tuning = settings.chains
    factor = dict(tuning.square_chain_width_factors).get(objective.name)
    if factor is None or not 0.0 < alpha < 1.0:
        return (), f"no square-corner width rule for {objective.name} at alpha = {alpha:g}"
    W = int(np.ceil(factor * np.log(1.0 - alpha) / np.log(alpha))) + tuning.relaxed_width_margin
    if narrow and W >= tuning.square_chain_min_width:
        return (), f"corners {W} wide, tried before the relaxed template (alpha = {alpha:g})"
    if not narrow and W < tuning.square_chain_min_width:
        return (), f"corners {W} wide, below {tuning.square_chain_min_width} (alpha = {alpha:g})"
    widths = (W, int(np.ceil(W * tuning.relaxed_widening)))
    kept = tuple(w for w in dict.fromkeys(widths)
                 if corners_fit(n, w) and square_unknowns(w, alpha, settings) <= tuning.square_chain_max_unknowns)
    if not corners_fit(n, W):
        return kept, f"n={n} leaves no middle between both corners of width {W} (alpha = {alpha:g})"
    unknowns = square_unknowns(W, alpha, settings)
    if unknowns > tuning.square_chain_max_unknowns:
        return kept, (f"corners of width {W} ({unknowns:,} unknowns, alpha = {alpha:g}) "
                      f"above {tuning.square_chain_max_unknowns:,}")
    return kept, None


def corners_fit(n: int, W: int) -> bool:
    """Whether both ``(W + 1)``-wide corners of the square-corner form fit in ``n`` with a middle of at
    least three columns between them (``2 W + 4 <= n``): the middle's column sums are then the two
    rows of :func:`countdp.design.template.square_geometry.middle_rows`, and every row and column tail
    is defined (:func:`countdp.design.template.square_geometry.primal_map`).  The chain dual and the
    certificate read the full LP, so nothing else asks for more room; L0's class dual
    (:mod:`countdp.design.template.square_proof`) keeps its own rule."""
    return W <= widest_corners(n)


def widest_corners(n: int) -> int:
    """The widest ``W`` whose corners fit in ``n`` with a middle (:func:`corners_fit`): ``(n - 4) // 2``."""
    return (n - 4) // 2


def square_unknowns(W: int, alpha: float, settings: SolverSettings) -> int:
    """The unknowns of the smallest square-corner primal tried at width ``W``: the trimmed square's
    (:attr:`~ChainTuning.square_chain_trim`) where set, else the full square's ``(W + 1)^2 + 1``."""
    trim = settings.chains.square_chain_trim
    return (W + 1) ** 2 + 1 if trim is None else trimmed_unknowns(W, alpha, trim)


def square_bound_width(n: int, alpha: float, objective, settings: SolverSettings) -> tuple[int, str | None]:
    """``(W, why)``: the square corners' width for the best design within the bound
    (:mod:`countdp.design.strategies.square_bound`): the widest whose primal has at most
    :attr:`~ChainTuning.square_chain_max_unknowns` unknowns and whose corners fit in ``n`` with a
    middle between them (:func:`widest_corners`; a wider square holds nearly every design of a
    narrower one), no wider than the rule's width of :func:`square_chain_widths` where the objective
    has one (its corners are wide enough), else than :func:`relaxed_width`'s (L0d: the primal of
    L0d's flat optimum is HiGHS's slowest); ``why`` says why there is none (``W = 0``)."""
    tuning = settings.chains
    W = min(int(np.sqrt(tuning.square_chain_max_unknowns - 1)) - 1, widest_corners(n))
    factor = dict(tuning.square_chain_width_factors).get(objective.name)
    if factor is not None and 0.0 < alpha < 1.0:
        W = min(W, int(np.ceil(factor * np.log(1.0 - alpha) / np.log(alpha))) + tuning.relaxed_width_margin)
    elif relaxed_width(alpha, objective, settings) is not None:
        W = min(W, relaxed_width(alpha, objective, settings))
    if W < 1:
        return 0, f"n={n} leaves no room for two corners"
    return W, None
