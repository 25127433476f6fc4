"""Mechanism design by linear programming (Section III and Theorem 2), and named designs.

The LP has one variable per entry of ``P`` (flattened row-major), the BasicDP constraints,
any subset of the seven properties, and a linear objective from :mod:`countdp.evaluate.metrics`.
alpha is exact (:mod:`countdp.values.alpha`); the solvers see ``float(alpha)``.  Every design
comes back as a :class:`Design` carrying its float matrix, certified alpha-DP on its final floats
(:mod:`countdp.privacy.certify`, with a bounded repair), and its released form: integer weights
certified alpha-DP in exact arithmetic (:mod:`countdp.privacy.rounding`, :mod:`countdp.privacy.exact`).
The LP stack (cvxpy, scipy, HiGHS, Clarabel) is imported only when an LP is solved, so the
closed forms (and ``countdp design GM``) start quickly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from countdp.design.forms import structural_form
from countdp.design.memory import LP_BYTES_PER_ENTRY
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.design.spread_proof import METHOD as SPREAD_METHOD
from countdp.design.spread_proof import SOLVER as SPREAD_SOLVER
from countdp.design.spread_proof import proven_spread, spread_serves
from countdp.mechanisms.closed_forms import CLOSED_FORMS
from countdp.privacy.certify import MAX_REPAIR_LAMBDA, Certificate, CertificationError, certify
from countdp.privacy.exact import RELEASE_K
from countdp.privacy.rounding import check_release_alpha, round_to_release
from countdp.structural.catalogue import NARROW_MAX_N, SPREADS, released_weights, served_as_structure
from countdp.structural.errors import structural_errors
from countdp.validation import BeyondMemory, check_distribution, check_fits_in_memory, check_n
from countdp.values.catalogue import MECHANISMS, NAMED_DESIGNS
from countdp.values.mechanism import Mechanism
from countdp.values.objectives import objective_value, parse_objective
from countdp.values.properties import parse_properties

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

CLOSED_FORM_BYTES_PER_ENTRY = 250
"""Peak memory of a closed-form design per matrix entry, for the size check (docs/performance.md)."""

SOLVERS = {
    "HIGHS": ("simplex", "ipm"),
    "CLARABEL": ("ipm",),
}
"""Solvers and methods: HiGHS simplex (vertex solutions, the default) or interior point."""

REDUCED_METHODS = {("HIGHS", "simplex"): "simplex", ("HIGHS", "ipm"): "ipm", ("CLARABEL", "ipm"): "clarabel"}
"""The reduced model's algorithm (:data:`countdp.design.request.METHODS`) for each solver and method."""


class DesignError(RuntimeError):
    """An LP design could not be solved; the message names its parameters."""


@dataclass
class Design:
    """A mechanism with how it was made.  ``matrix[i, j] = Pr[output i | input j]``.

    ``alpha`` is ``float(alpha_exact)``.  ``certificate`` certifies ``matrix`` on its floats
    (with ``objective_before_repair`` the objective of the solver's answer); ``released``
    holds the mechanism that :func:`countdp.privacy.sampling.release` samples (integer weights, or a
    structural form), certified in exact arithmetic.  A design held as structure
    (:func:`structural_named`) has no matrix and no float certificate (both ``None``).

        >>> gm = countdp.design_named("GM", 4, "1/2")
        >>> gm.status, gm.alpha_exact, gm.released.certificate.holds
        ('optimal', Alpha(1, 2), True)
        >>> bool((gm.released.weights.sum(axis=0) == 2 ** 62).all())
        True
    """

    mechanism: str
    n: int
    alpha: float
    matrix: np.ndarray | None
    objective: str
    properties_requested: tuple[str, ...]
    objective_value: float
    certificate: Certificate | None
    alpha_exact: Fraction
    released: Mechanism
    objective_before_repair: float
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


def finish_design(raw: np.ndarray, mechanism: str, n: int, alpha: Fraction, objective, properties: tuple[str, ...],
                  weights: np.ndarray | None = None, aggregate: str = "sum",
                  max_repair_lambda: float | None = MAX_REPAIR_LAMBDA, structure=None, **provenance) -> Design:
    """Certify a solver's (or a closed form's) matrix, round it to its released form, and record both.

    ``structure``: the mechanism's structural form (:mod:`countdp.structural`), whose weights are
    then the released ones, so the matrix and the structural sampler draw from one distribution;
    otherwise the matrix is rounded (:func:`countdp.privacy.rounding.round_to_release`).
    Raises :class:`DesignError` when the float repair needs more than ``max_repair_lambda``.
    ``provenance``: the remaining :class:`Design` fields (solver, method, status, ...).
    """
    a = float(alpha)
    w = np.full(n + 1, 1.0 / (n + 1)) if weights is None else weights
    LOG.info("certifying alpha-DP, then the exact integer weights for release")
    before = objective_value(raw, objective, w, aggregate)
    try:
        matrix, certificate = certify(raw, a, max_lambda=max_repair_lambda)
    except CertificationError as exc:
        solver = provenance.get("solver", "closed-form")
        raise DesignError(f"{solver} answer refused for {_label(n, a, properties, objective)}: {exc}") from None
    measure = lambda M: objective_value(M, objective, w, aggregate)  # noqa: E731
    released = round_to_release(matrix, alpha, objective=measure) if structure is None else \
        released_weights(structure, matrix, measure)
    return Design(mechanism=mechanism, n=n, alpha=a, matrix=matrix, objective=str(objective),
                  properties_requested=properties, objective_value=objective_value(matrix, objective, w, aggregate),
                  certificate=certificate, alpha_exact=alpha, released=released, objective_before_repair=before,
                  aggregate=aggregate, weights=None if weights is None else w.tolist(), **provenance)


def spread_design(name: str, n: int, alpha: Fraction, objective: object, lp_options: dict) -> Design | None:
    """The named template design ``name`` as its spread at size ``n``, proven optimal there
    (:mod:`countdp.design.spread_proof`), where the spread serves; else ``None`` (the LP then solves
    ``n``: logged when the spread's proof did not close); under ``lp_options["settings"]`` (default
    the engine's)."""
    settings = lp_options.get("settings", DEFAULT_SETTINGS)
    if not spread_serves(name, n, alpha, objective, lp_options, settings):
        return None
    form, matrix, record = proven_spread(name, n, alpha, settings)
    if matrix is None:
        LOG.warning("%s; solving the LP at n = %d instead", record["reason"], n)
        return None
    bound = lp_options.get("max_repair_lambda", MAX_REPAIR_LAMBDA)
    return finish_design(matrix, name, n, alpha, parse_objective(objective), NAMED_DESIGNS[name],
                         max_repair_lambda=bound, structure=form, solver=SPREAD_SOLVER, method=SPREAD_METHOD,
                         solver_objective=record["optimality"].get("primal_objective"), extra=record)


def check_solver(solver: str, method: str | None) -> tuple[str, str]:
    """Normalise a solver/method pair, or raise ``ValueError`` naming the allowed values."""
    name = str(solver).upper()
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; allowed: {', '.join(SOLVERS)}")
    chosen = SOLVERS[name][0] if method is None else str(method).lower()
    if chosen not in SOLVERS[name]:
        raise ValueError(f"solver {name} has no method {method!r}; allowed: {', '.join(SOLVERS[name])}")
    return name, chosen


def check_run_options(aggregate: str, backend: str, solver: str, time_limit: object) -> None:
    """Raise ``ValueError`` (one line) for an unknown aggregate or backend, the backend ``highs``
    with another solver than HiGHS, or a time limit that is not a positive finite number of seconds."""
    if aggregate not in ("sum", "max"):
        raise ValueError(f"aggregate must be 'sum' or 'max', got {aggregate!r}")
    if backend not in ("auto", "cvxpy", "highs"):
        raise ValueError(f"backend must be 'auto', 'cvxpy' or 'highs', got {backend!r}")
    if backend == "highs" and solver != "HIGHS":
        raise ValueError(f"backend 'highs' needs solver HIGHS, got {solver}")
    if time_limit is None:
        return
    try:
        seconds = float(time_limit)
    except (TypeError, ValueError):
        raise ValueError(f"time_limit must be a number of seconds, got {time_limit!r}") from None
    if not (np.isfinite(seconds) and seconds > 0):
        raise ValueError(f"time_limit must be a positive, finite number of seconds, got {time_limit!r}")


def design_lp(n: int, alpha: object, properties: object = (), objective: object = "L0",
              weights: object = None, solver: str = "HIGHS", method: str | None = None,
              aggregate: str = "sum", mechanism: str = "LP", backend: str = "auto",
              max_repair_lambda: float | None = MAX_REPAIR_LAMBDA,
              settings: SolverSettings = DEFAULT_SETTINGS, shortcuts: bool = False,
              time_limit: float | None = None) -> Design:
    """Solve the design LP: BasicDP + ``properties``, minimising ``objective``.

    ``alpha``: a number, ``"p/q"`` string or Fraction (exact; :func:`countdp.values.alpha.exact_alpha`).

    ``weights`` is a prior over inputs (default uniform); ``aggregate="max"`` minimises the
    worst input's loss instead of the weighted sum (minimax).  ``backend``: ``"cvxpy"`` the
    plain dense model; ``"highs"`` the reduced model and the strategies of
    :mod:`countdp.design.planner` (same optimal value; solver HIGHS; with ``method=None`` the
    planner chooses, and large models may go to Clarabel, recorded in ``Design.solver``);
    ``"auto"`` (default) uses ``"highs"`` when the solver is HiGHS and ``n`` is at least
    ``settings.solver.auto_min_n``.  ``Design.extra["backend"]`` records which one ran, and
    ``extra["attempted"]`` every strategy tried.  ``settings``: the engine's tuning
    (:class:`countdp.design.settings.SolverSettings`).  ``shortcuts``: with a ``method`` (or the
    solver Clarabel) asked for, keep the planner's shortcuts (closed forms, the template strategies;
    the spread of a named template design, :func:`design_named`): ``solver`` and ``method`` then
    choose only the backend of the general path, the reduced LP solved when no shortcut answers
    (Clarabel: its interior point on the reduced model).  Without it a method asked for is
    honoured alone, the plain LP (as the paper solved it); without a method the planner chooses anyway.
    ``time_limit``: seconds, then the best design proven feasible with its certified gap
    (:mod:`countdp.design.anytime`, ``extra["stopped"]``), also where the general path is over
    ``settings.solver.memory_bound``, which without a limit raises ``MemoryBoundError`` (a ``ValueError``).
    Raises ``ValueError`` for bad parameters and :class:`DesignError` when no strategy returns
    an answer, or returns one whose DP repair needs more than ``max_repair_lambda``.

        >>> round(countdp.objective_value(countdp.design_lp(4, "1/2").matrix, "L0"), 6)  # GM's 2a/(1+a)
        0.666667
    """
    n, alpha_q = check_n(n), check_release_alpha(alpha)
    a = float(alpha_q)
    check_fits_in_memory(n, LP_BYTES_PER_ENTRY, "an LP design")
    props, obj = parse_properties(properties), parse_objective(objective)
    method_given = method is not None
    solver, method = check_solver(solver, method)
    w = np.full(n + 1, 1.0 / (n + 1)) if weights is None else check_distribution(weights, n)
    check_run_options(aggregate, backend, solver, time_limit)
    # lazy: the LP stack (scipy, the solvers) loads only when an LP is designed (module docstring)
    from countdp.design.planner import solve, uses_reduced_model
    from countdp.design.request import DesignRequest  # lazy: as above (it imports scipy)
    from countdp.design.watch import watching  # lazy: with the planner

    request = DesignRequest(n, a, props, obj, None if weights is None else w, aggregate, solver=solver,
                            backend=backend, method=method, keep_shortcuts=shortcuts)
    if uses_reduced_model(request, settings):
        asked = method_given or solver != "HIGHS"
        request = replace(request, method=REDUCED_METHODS[solver, method] if asked else "auto")
    try:
        with watching(time_limit, settings.solver.progress_seconds):
            answer = solve(request, settings)
    except RuntimeError as exc:
        raise DesignError(f"design failed for {_label(n, a, props, obj)}: {exc}") from exc
    return finish_design(answer.matrix, mechanism, n, alpha_q, obj, props, None if weights is None else w,
                         aggregate, max_repair_lambda, solver=answer.solver, method=answer.method,
                         status=answer.status, solve_time=answer.solve_time,
                         solver_objective=answer.solver_objective, extra=answer.extra)


REPRESENTATION_CHOICES = ("auto", "matrix", "structural")
"""How :func:`design_named` holds a design: ``auto`` is a matrix up to :data:`NARROW_MAX_N` and, beyond, the
structural form wherever the release has one (:func:`countdp.structural.catalogue.served_as_structure`)."""


def structural_named(name: str, n: int, alpha: Fraction, objective: object = "L0") -> Design:
    """``name`` at size ``n`` as its structural form (:func:`countdp.design.forms.structural_form`): a table
    and a rule, certified alpha-DP by its structure, no matrix built (bytes, not gigabytes, at any ``n``).

    Its objective value is the exact expected error of the weights sampled (L0, L0,1 or L2 under a
    uniform prior, :func:`countdp.structural.errors.structural_errors`); NaN for another objective.
    Raises ``ValueError`` (one line) where the release has no structural form of ``name`` under ``objective``.
    """
    obj = parse_objective(objective)
    if not served_as_structure(name, max(n, NARROW_MAX_N + 1), str(obj)):
        raise ValueError(f"{name} has no structural form under {obj} (structural forms: GM, EM, UM, and "
                         f"{', '.join(sorted(SPREADS))} under L0)")
    form = structural_form(name, n, alpha)
    check, errors = form.certify(), structural_errors(form)
    value = {"L0": errors.l0_uniform, "L0d:1": errors.l01_uniform, "L2": errors.mse_uniform}.get(str(obj))
    optimality = "closed form" if name not in SPREADS else f"the template's spread; proven optimal as a matrix " \
        f"up to n = {NARROW_MAX_N} (countdp.design.spread_proof), not at this size"
    return Design(mechanism=name, n=n, alpha=float(alpha), matrix=None, objective=str(obj),
                  properties_requested=NAMED_DESIGNS.get(name, ()),
                  objective_value=float("nan") if value is None else float(value), certificate=None,
                  alpha_exact=alpha, released=form, objective_before_repair=float("nan"), solver="structural",
                  method=form.argument or "structural", extra={"structural_certificate": check.to_dict(),
                                                               "errors": errors.to_dict(), "optimality": optimality})


def _held_as_structure(name: str, n: int, objective: object, representation: str, lp_options: dict) -> bool:
    """Whether :func:`design_named` answers with :func:`structural_named` (see :data:`REPRESENTATION_CHOICES`)."""
    if representation not in REPRESENTATION_CHOICES:
        raise ValueError(f"representation must be one of {', '.join(REPRESENTATION_CHOICES)}, got {representation!r}")
    if representation != "auto":
        return representation == "structural"
    forced = set(lp_options) & {"solver", "method", "backend", "weights", "aggregate"}
    return n > NARROW_MAX_N and not forced and served_as_structure(name, n, str(parse_objective(objective)))


def design_named(mechanism: str, n: int, alpha: object, objective: object = "L0",
                 properties: object = (), representation: str = "auto", **lp_options) -> Design:
    """Build ``mechanism`` in GM, EM, UM (closed forms), WM, WH (named LPs) or LP (``properties``).

    Closed forms are certified like LP answers (GM's DP inequalities are all tight, so
    rounding can break one by an ulp; the certificate records any repair); their release
    weights are those of their structural form (:func:`countdp.design.forms.structural_form`),
    exactly alpha-DP, the same distribution a release without the matrix samples.
    ``lp_options`` go to :func:`design_lp`; a template design (WM under L0) is its proven spread
    where the spread serves unless an LP backend is asked for in place of the shortcuts
    (``solver``, ``method`` or ``backend`` without ``shortcuts=True``).  ``representation``
    (:data:`REPRESENTATION_CHOICES`): beyond :data:`NARROW_MAX_N`, where the release draws
    ``mechanism`` from a structural form, the design is that form (:func:`structural_named`), not a matrix.

        >>> em = countdp.design_named("EM", 4, "1/2")
        >>> em.status, bool(np.allclose(em.matrix, countdp.explicit_fair(4, 0.5)))
        ('optimal', True)
        >>> countdp.NAMED_DESIGNS["WM"]  # the properties of the named LP designs
        ('RM', 'CM', 'WH', 'S')
        >>> big = countdp.design_named("GM", 10**7, "9/10")  # a structural form: no matrix
        >>> big.matrix is None, big.released.representation, big.released.certify().holds
        (True, 'structural', True)
    """
    name = str(mechanism).upper()
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; allowed: {', '.join(MECHANISMS)}")
    if _held_as_structure(name, check_n(n), objective, representation, lp_options):
        return structural_named(name, check_n(n), check_release_alpha(alpha), objective)
    if name in CLOSED_FORMS:
        n, alpha_q = check_n(n), check_release_alpha(alpha)
        try:
            check_fits_in_memory(n, CLOSED_FORM_BYTES_PER_ENTRY, f"{name}'s matrix with its release weights")
        except BeyondMemory as exc:
            raise BeyondMemory(f"{exc}; countdp release draws {name} for groups of any size from its structure "
                               "(countdp.structural), without the matrix") from None
        obj = parse_objective(objective)
        bound = lp_options.get("max_repair_lambda", MAX_REPAIR_LAMBDA)
        return finish_design(CLOSED_FORMS[name](n, float(alpha_q)), name, n, alpha_q, obj, (),
                             max_repair_lambda=bound, structure=structural_form(name, n, alpha_q, RELEASE_K))
    props = NAMED_DESIGNS[name] if name in NAMED_DESIGNS else properties
    n, alpha = check_n(n), check_release_alpha(alpha)  # parsed once: an Alpha passes through design_lp as it is
    if name in SPREADS:
        spread = spread_design(name, n, alpha, objective, lp_options)
        if spread is not None:
            return spread
    try:
        return design_lp(n, alpha, props, objective, mechanism=name, **lp_options)
    except BeyondMemory as exc:
        if name in SPREADS and str(parse_objective(objective)) == "L0":
            raise BeyondMemory(f"{exc}; countdp release draws {name} under L0 beyond n = {NARROW_MAX_N} from its "
                               "template structure (countdp.design.forms), without the matrix") from None
        raise
