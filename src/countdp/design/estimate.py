"""The path a design will take and the memory it will need, predicted without solving anything.

:func:`estimate_named` takes one request as :func:`countdp.design.designer.design_named` takes it
(mechanism, ``n``, alpha, objective, properties and the LP options, the one
:class:`~countdp.design.settings.SolverSettings` passed in) and follows the designer's own choices:
a structural form (:func:`countdp.structural.catalogue.served_as_structure`, beyond
:data:`~countdp.structural.catalogue.NARROW_MAX_N`), a closed form's matrix, a template design's
proven spread (:func:`countdp.design.spread_proof.spread_serves`), then the planner's strategies in
order (:func:`countdp.design.planner.plan`), each asked whether it applies with its own ``accepts``
(and :meth:`~countdp.design.strategies.through_reductions.ThroughReductions.accepts`, whose method
check is answered from the reduced model's size, :func:`reduced_nnz`, not by building it).  The
first strategy expected to answer is the path.  A template strategy whose certificate does not
close hands over to the general LP; :attr:`DesignEstimate.required_bytes` covers that case anyway,
since :func:`~countdp.design.designer.design_lp` itself refuses an ``n`` whose LP would not fit
(:data:`~countdp.design.designer.LP_BYTES_PER_ENTRY`) before any strategy runs.

Why: a workflow config asking for a design this machine cannot hold should be refused when it is
read, not an hour into its job.  The estimate is arithmetic on ``(n + 1)^2`` and the planner's
predicates: well under a millisecond a request for ``n`` up to the hundreds, no LP, no matrix
beyond the closed forms' check at :data:`CLOSED_FORM_PROXY_N`.

Peak memory per path is ``PATH_OVERHEAD_BYTES + bytes_per_entry * (n + 1)^2`` of the resident set
growth over a process with the LP stack imported (:data:`PROCESS_BYTES` more).  Measured peak
RSS growth (``resource.getrusage``, a fresh process per design, alpha = 10/11 unless said; the
workflow's options ``solver="HIGHS", shortcuts=True``): GM's matrix at n = 2048, 586 MB (146 B an
entry, under :data:`~countdp.design.designer.CLOSED_FORM_BYTES_PER_ENTRY` = 250); the planner's
closed forms at n = 200, 18-21 MB; WM's large-n template at n = 200, 43 MB, and at n = 1024
(alpha 0.91, docs/performance.md) 858 MB resident (about 700 B an entry); WM's proven spread at
n = 1200, 1,091 MB (757 B an entry); the reduced LP (L1, WH+S) at n = 200, 52 MB, and at n = 512,
504 MB (1,917 B an entry, under :data:`~countdp.design.designer.LP_BYTES_PER_ENTRY` = 2,000).
``tests/design/test_estimate.py`` checks the estimate against fresh measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from countdp.design.designer import (
    CLOSED_FORM_BYTES_PER_ENTRY,
    REDUCED_METHODS,
    _held_as_structure,
    check_solver,
)
from countdp.design.forms import canonical_size_for
from countdp.design.memory import LP_BYTES_PER_ENTRY, MIB, PATH_OVERHEAD_BYTES, PROCESS_BYTES, lp_bytes, memory_refusal
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.spread_proof import spread_serves
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.rounding import check_release_alpha
from countdp.structural.catalogue import NARROW_MAX_N, SPREADS
from countdp.validation import available_memory, check_n
from countdp.values.catalogue import MECHANISMS, NAMED_DESIGNS
from countdp.values.objectives import parse_objective
from countdp.values.properties import parse_properties

TEMPLATE_BYTES_PER_ENTRY = 1_000
"""Peak memory of a template path (large-n, relaxed, square-corner) or a proven spread per matrix
entry: the full model's rows for the certificate, no factorisation (measured 700-760 B)."""
STRUCTURAL_BYTES = 32 * MIB
"""A closed form's structural form: a table of a few hundred integers and a rule."""
CLOSED_FORM_PROXY_N = 64
"""Beyond this ``n`` whether GM (or GM remapped) holds the requested properties is read off its
matrix at this size (properties other than WH do not change with ``n``); WH is Lemma 2's bound for
GM, and for GM remapped taken as broken (the LP path then predicted: an over-estimate, never under)."""
PLANNED_MAX_N = 2**20
"""Beyond this ``n`` the planner's strategies are not asked (their predicates build the request's
``(n + 1)``-sized arrays: at n = 10^12, terabytes): the path is the general one, ``"reduced LP"``,
whose matrix alone (:data:`~countdp.design.memory.LP_BYTES_PER_ENTRY`) needs petabytes there, and
which :func:`~countdp.design.designer.design_lp` refuses before any strategy runs."""
TIME_CLASSES = ((0.1, "milliseconds"), (60.0, "seconds"), (3600.0, "minutes"))
"""Expected seconds below each bound name the time class; beyond the last, ``"hours"``."""

STRUCTURAL, CLOSED_MATRIX, SPREAD = "structural form", "closed-form matrix", "template spread"
"""The designer's paths before the planner (the planner's are its strategies' names)."""
TEMPLATE_PATHS = ("relaxed large-n template", "square-corner template", "large-n template")
"""The planner's template strategies: a small LP and a certificate on the full model."""


@dataclass(frozen=True)
class DesignEstimate:
    """The predicted path of one design, its peak memory and its time class.

    ``peak_bytes``: the path's peak resident growth (module docstring); ``required_bytes``: what the
    design's process needs to run at all: the peak plus :data:`PROCESS_BYTES`, and at least what
    :func:`~countdp.design.designer.design_lp` asks of the machine before it starts (an LP request)."""

    mechanism: str
    n: int
    alpha: float
    objective: str
    properties: tuple[str, ...]
    path: str
    peak_bytes: int
    required_bytes: int
    time_class: str
    refusal: str | None = None
    """Why :func:`~countdp.design.designer.design_named` refuses the design without a time limit, or
    ``None``: its path is the general path, whose LP is above ``settings.solver.memory_bound``
    (:func:`countdp.design.memory.memory_refusal`; the planner's ``MemoryBoundError``)."""

    def fits(self, limit_bytes: int | None = None) -> bool:
        """Whether :attr:`required_bytes` is within ``limit_bytes`` (default: the memory available
        now, :func:`countdp.validation.available_memory`; unknown counts as fitting)."""
        limit = available_memory() if limit_bytes is None else limit_bytes
        return limit is None or self.required_bytes <= limit

    def describe(self) -> str:
        """One line: the design, its path, its estimate and time class."""
        props = "+".join(self.properties) or "none"
        refused = "" if self.refusal is None else f"; refused: {self.refusal}"
        return (f"{self.mechanism} n={self.n} alpha={self.alpha:g} {self.objective} properties={props}: {self.path}, "
                f"about {self.required_bytes / 2**30:,.2f} GiB, {self.time_class}{refused}")


def bound_bytes(n: int) -> int:
    """What no path of a design at ``n`` needs more than (:attr:`DesignEstimate.required_bytes` is at
    most this): the general LP's cost, the dearest per entry, with the process.  A caller with many
    requests asks :func:`estimate_named` only where this bound does not fit (no planner imported)."""
    return PROCESS_BYTES + lp_bytes(check_n(n))


def time_class(seconds: float) -> str:
    """The name of the class of ``seconds`` (:data:`TIME_CLASSES`)."""
    return next((name for bound, name in TIME_CLASSES if seconds < bound), "hours")


def reduced_nnz(n: int, properties: tuple[str, ...]) -> int:
    """The constraint non-zeros of the reduced model of BasicDP + ``properties`` at ``n`` (a
    uniform-prior sum): ``(5 n + 1)(n + 1)``, plus ``2 n (n + 1)`` with CH or CM (CM implies CH:
    one set kept) and ``2 n`` with F; halved, rounding up, when S folds the model.  Read off
    :func:`countdp.design.lp_solve.reduced_lp` at n = 20 to 60 for every property set tried (equal
    there, but for odd ``n`` with RM folded, a few more than the model's; the test compares), so
    that ``choose_method`` is answered without the model (wrong only within that margin of
    :attr:`~countdp.design.settings.SolverTuning.ipm_min_nnz`)."""
    props = set(properties)
    nnz = (5 * n + 1) * (n + 1) + (2 * n * (n + 1) if props & {"CH", "CM"} else 0) + (2 * n if "F" in props else 0)
    return (nnz + 1) // 2 if "S" in props else nnz


def _method_for(n: int, properties: tuple[str, ...], zero_one: bool, settings: SolverSettings) -> str:
    """:func:`countdp.design.policy.choose_method` of the reduced model of ``properties`` at ``n``."""
    if reduced_nnz(n, properties) < settings.solver.ipm_min_nnz:
        return "simplex"
    return settings.solver.large_method if zero_one else "guided"


def _gm_holds(request, settings: SolverSettings) -> str | None:
    """The closed form the planner's closed-form strategy answers with (``"GM"``, ``"EM"``,
    ``"GM remapped"``) or ``None``: :func:`countdp.design.strategies.closed_form.closed_form` at
    ``n`` up to :data:`CLOSED_FORM_PROXY_N`, beyond it at that size with WH decided as that
    constant says."""
    from countdp.design.request import DesignRequest  # lazy: the LP stack's shapes (scipy)
    from countdp.design.strategies.closed_form import closed_form  # lazy: as above

    if request.zero_one and "F" in request.properties:
        return "EM"
    if request.aggregate != "sum":
        return None
    gm = request.zero_one and request.uniform
    if request.n <= CLOSED_FORM_PROXY_N:
        found = closed_form(request, settings)
        return None if found is None else found[0]
    if "WH" in request.properties:
        alpha = Fraction(request.alpha).limit_denominator(10**12)
        if not gm or request.n < 2 * alpha / (1 - alpha):
            return None
    rest = tuple(p for p in request.properties if p != "WH")
    proxy = DesignRequest.of(CLOSED_FORM_PROXY_N, request.alpha, rest, request.objective, aggregate=request.aggregate)
    found = closed_form(proxy, settings)
    return None if found is None else found[0]


def _through_reductions(strategy, request, settings: SolverSettings) -> bool:
    """Whether a strategy of :mod:`~countdp.design.strategies.through_reductions` solves its model:
    the planner's method for it (:func:`_method_for`, on its chain's problem) is the strategy's."""
    reduced, _ = strategy.chain(request.problem).apply(request.problem)
    chosen = _method_for(request.n, reduced.properties, request.zero_one, settings)
    return chosen == strategy.method(request, settings)


def _template_answers(strategy, request, settings: SolverSettings) -> bool:
    """Whether the large-n template tries a width: its first fits twice in ``n`` (its attempt)."""
    from countdp.design.policy import template_widths  # lazy: the planner's predicates, with their stack

    if strategy.name != "large-n template":
        return True
    widths = template_widths(request.alpha, request.objective, settings)
    return bool(widths) and 2 * (3 * widths[0] + 4) <= request.n


def planner_path(request, settings: SolverSettings = DEFAULT_SETTINGS) -> str:
    """The name of the planner's strategy expected to answer ``request`` (a
    :class:`countdp.design.request.DesignRequest`): the first of :func:`countdp.design.planner.plan`
    that accepts it and would answer (module docstring); nothing is solved."""
    from countdp.design.planner import plan  # lazy: the LP stack (module docstring of designer)
    from countdp.design.strategies.through_reductions import ThroughReductions  # lazy: as above

    for strategy in plan(request, settings):
        if strategy.accepts(request, settings) is not None:
            continue
        if strategy.name == "closed form":
            if _gm_holds(request, settings) is not None:
                return strategy.name
        elif isinstance(strategy, ThroughReductions):
            if _through_reductions(strategy, request, settings):
                return strategy.name
        elif _template_answers(strategy, request, settings):
            return strategy.name
    return "reduced LP"


def _lp_request(n: int, alpha: float, properties: tuple[str, ...], objective, lp_options: dict,
                settings: SolverSettings):
    """The :class:`~countdp.design.request.DesignRequest` :func:`~countdp.design.designer.design_lp` builds."""
    from countdp.design.planner import uses_reduced_model  # lazy: as planner_path
    from countdp.design.request import DesignRequest  # lazy: as above

    method = lp_options.get("method")
    solver, chosen = check_solver(lp_options.get("solver", "HIGHS"), method)
    request = DesignRequest(n, alpha, properties, objective, None, lp_options.get("aggregate", "sum"), solver=solver,
                            backend=lp_options.get("backend", "auto"), method=chosen,
                            keep_shortcuts=bool(lp_options.get("shortcuts", False)))
    if uses_reduced_model(request, settings):
        asked = method is not None or solver != "HIGHS"
        request = replace(request, method=REDUCED_METHODS[solver, chosen] if asked else "auto")
    return request


def path_cost(path: str, n: int, alpha: Fraction, settings: SolverSettings) -> tuple[int, float]:
    """``(peak bytes, expected seconds)`` of ``path`` at ``n`` (module docstring's measurements; the
    seconds are rough: 0.75 s (n/128)^3 for an LP, as the workflow's run-time budget assumes)."""
    entries = (n + 1) ** 2
    if path == STRUCTURAL:
        return STRUCTURAL_BYTES, 0.01
    if path in (CLOSED_MATRIX, "closed form"):
        return PATH_OVERHEAD_BYTES + CLOSED_FORM_BYTES_PER_ENTRY * entries, 1e-6 * entries
    if path == SPREAD or path in TEMPLATE_PATHS:
        return PATH_OVERHEAD_BYTES + TEMPLATE_BYTES_PER_ENTRY * entries, 3e-5 * entries + 1.0
    if path == "dense cvxpy model":
        return PATH_OVERHEAD_BYTES + LP_BYTES_PER_ENTRY * entries, 0.05 * entries ** 1.5 / 1e3 + 0.5
    return lp_bytes(n), 0.75 * (n / 128) ** 3 + 0.5


def _structural_cost(name: str, alpha: Fraction, settings: SolverSettings) -> tuple[int, float]:
    """A structural form's cost: a closed form's table, or a template design's canonical design
    (at its canonical size, at most :data:`NARROW_MAX_N`: the corner form's source is no larger)."""
    if name not in SPREADS:
        return STRUCTURAL_BYTES, 0.01
    m = min(canonical_size_for(alpha, settings=settings), NARROW_MAX_N)
    peak, seconds = path_cost("large-n template", m, alpha, settings)
    return max(peak, STRUCTURAL_BYTES), seconds


def named_path(mechanism: str, n: int, alpha: object, objective: object = "L0", properties: object = (),
               settings: SolverSettings = DEFAULT_SETTINGS, **lp_options) -> str:
    """The path :func:`countdp.design.designer.design_named` takes for these arguments (module
    docstring): :data:`STRUCTURAL`, :data:`CLOSED_MATRIX`, :data:`SPREAD` or a planner strategy's name.
    Raises ``ValueError`` for an unknown mechanism, a bad ``n`` or alpha, as the designer does."""
    name = str(mechanism).upper()
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; allowed: {', '.join(MECHANISMS)}")
    n, alpha_q = check_n(n), check_release_alpha(alpha)
    if _held_as_structure(name, n, objective, "auto", lp_options):
        return STRUCTURAL
    if name in CLOSED_FORMS:
        return CLOSED_MATRIX
    if name in SPREADS and spread_serves(name, n, alpha_q, objective, {**lp_options, "settings": settings}, settings):
        return SPREAD
    props = NAMED_DESIGNS[name] if name in NAMED_DESIGNS else parse_properties(properties)
    if n > PLANNED_MAX_N:
        return "reduced LP"
    request = _lp_request(n, float(alpha_q), props, parse_objective(objective), lp_options, settings)
    return planner_path(request, settings)


def estimate_named(mechanism: str, n: int, alpha: object, objective: object = "L0", properties: object = (),
                   settings: SolverSettings = DEFAULT_SETTINGS, **lp_options) -> DesignEstimate:
    """The :class:`DesignEstimate` of ``design_named(mechanism, n, alpha, objective, properties,
    **lp_options)`` under ``settings``: its path (:func:`named_path`), peak memory and time class,
    nothing solved (module docstring)."""
    name = str(mechanism).upper()
    path = named_path(name, n, alpha, objective, properties, settings, **lp_options)
    n, alpha_q = check_n(n), check_release_alpha(alpha)
    if path == STRUCTURAL:
        peak, seconds = _structural_cost(name, Fraction(alpha_q), settings)
    else:
        peak, seconds = path_cost(path, n, Fraction(alpha_q), settings)
    required = peak + PROCESS_BYTES
    if path not in (STRUCTURAL, CLOSED_MATRIX, SPREAD):  # design_lp's own size check comes first
        required = max(required, LP_BYTES_PER_ENTRY * (n + 1) ** 2)
    props = () if name in CLOSED_FORMS else (NAMED_DESIGNS.get(name) or parse_properties(properties))
    refusal = None if lp_options.get("time_limit") is not None else bound_refusal(path, n, settings)
    return DesignEstimate(name, n, float(alpha_q), str(parse_objective(objective)), tuple(props), path, int(peak),
                          int(required), time_class(seconds), refusal)


def bound_refusal(path: str, n: int, settings: SolverSettings = DEFAULT_SETTINGS) -> str | None:
    """Why the planner refuses ``path`` at ``n`` without a time limit: ``path`` is a strategy of the
    general path (:data:`countdp.design.planner.GENERAL_PATH`) and its LP's estimate is above
    ``settings.solver.memory_bound`` (:func:`countdp.design.memory.memory_refusal`); else ``None``.
    Under a time limit the planner answers there with the best design within the bound instead."""
    refused = memory_refusal(n, settings)
    if refused is None:  # most requests: the planner (and its LP stack) is not imported
        return None
    from countdp.design.planner import GENERAL_PATH  # lazy: the LP stack (module docstring of designer)

    return refused.reason if path in {strategy.name for strategy in GENERAL_PATH} else None


__all__ = ["CLOSED_MATRIX", "PLANNED_MAX_N", "SPREAD", "STRUCTURAL", "DesignEstimate", "bound_bytes", "bound_refusal",
           "estimate_named", "named_path", "path_cost", "planner_path", "reduced_nnz", "time_class"]
