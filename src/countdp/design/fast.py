"""Fast LP mechanism design: the same optimum as :func:`countdp.design.designer.design_lp`, a smaller model.

The plain formulation (``design_lp(..., backend="cvxpy")``) hands cvxpy one variable per entry
of ``P`` and every constraint of :func:`countdp.design.constraints.constraint_system`.  This module
answers by a closed form where a theorem gives the optimum, else solves the *reduced* model of
:mod:`countdp.design.reduce` (built from the one definition in :mod:`countdp.design.model`)
with the backends of :mod:`countdp.design.backends`, without a modelling layer.  The optimal
value is the plain formulation's (tests compare against cvxpy to 1e-7 on a grid of ``n``,
``alpha``, property sets and objectives).

**Closed forms** (no LP at all), only where a theorem gives the optimum:

* ``GM``: objective L0 (= L0d:0), uniform weights, ``aggregate="sum"`` and GM satisfies
  every requested property (checked numerically on GM's matrix with the same operators as
  the LP, tolerance 1e-12).  Theorem 3: GM is an L0-optimal BasicDP mechanism, so the LP
  optimum with extra properties is >= L0(GM); GM is feasible, so it is optimal.  This covers
  BasicDP alone, and WH (+S, +RM, +RH) when ``n >= 2a/(1-a)`` (Lemma 2).  Checked by the
  explicit dual of ``GM remapped`` (for L0 the remap is the identity; measured 6 to 17 times
  faster than an LP dual at n = 10 to 128, with gaps of 1e-14), else as :data:`CHECK_CLOSED_FORM_MAX_N` says.
* ``GM remapped``: ``aggregate="sum"``, any prior and any objective (each loss is
  non-decreasing in ``|i - j|``), except where ``GM`` applies: GM followed by the best remap of
  its outputs (Ghosh, Roughgarden and Sundararajan) is an optimum of the LP without properties,
  so of the LP with every property it satisfies (checked numerically, as for GM; S, with the
  uniform prior), proven by an explicit dual, not by an LP (:mod:`countdp.design.remapped_gm`);
  if that certificate does not close, the LP is solved.
* ``EM``: objective L0 and ``F`` requested, any weights and either aggregate.  Under F
  every column's L0 loss is ``(n+1)/n (1 - y)``, independent of the weights, so the sum and
  the max are both that value; Theorem 4: EM maximises ``y`` among fair BasicDP mechanisms,
  and EM has all seven properties, so it is feasible for any property subset.

The reductions of the LP (implied rows dropped, symmetry folded, singleton rows as bounds,
duplicates dropped) are in :mod:`countdp.design.reduce`, each recorded in ``extra["reductions"]``.
Three more change the LP solved and prove the answer on the LP asked for: S folded in when not
requested, and S dropped (the answer then averaged with its mirror image) when the S-folded model
is not proven by the guided methods (both :mod:`countdp.design.mirror`), and CM relaxed to CH
where Clarabel's point would answer (:mod:`countdp.design.cm_relaxation`).

The algorithm is chosen by size and objective (``method="auto"``): HiGHS dual simplex (a
vertex) for small models; from :data:`IPM_MIN_NNZ` non-zeros, for L0, Clarabel's interior point
method (QDLDL factorisation: see :data:`CLARABEL_DIRECT_METHOD`; an optimal point, not
necessarily a vertex), which measured several times faster than HiGHS simplex or HiGHS IPX +
crossover on these models from n ~ 64 (benchmarks/), and for the other objectives ``guided``:
HiGHS simplex from a basis read off a guide point, a vertex
(:func:`countdp.design.backends.run_guided`).  The guide is the optimal vertex at a smaller
``n``, spread out (:mod:`countdp.design.seed`, from ``n = 160`` where ``alpha`` is far enough
from 1), else Clarabel's point on the scaled model.  That point itself is offered to the proof
(first from ``n = 160``, for L0,d with F before any template:
:func:`countdp.design.seed.point_before_template`; below, when the simplex from its basis does
not end within :data:`countdp.design.backends.QUICK_VERTEX_WORK`) and is the answer, not a
vertex, when proven.  An explicit
``method="simplex"`` or ``"ipm"`` (HiGHS IPX + crossover, a vertex) is honoured, so the figures
that need vertex solutions keep them.  The final matrix is certified alpha-DP with
:func:`countdp.privacy.certify.certify` like every other design.

**Accuracy and proof** (:func:`solve_proven`).  HiGHS runs on a scaled copy of the model
(column scale ``alpha^|i-j|``, floor :data:`countdp.design.backends.COL_SCALE_FLOOR`; row scale 1/max coefficient)
with feasibility tolerances :data:`HIGHS_TOL`; its vertex is then recomputed exactly from the
basis by one sparse LU (:mod:`countdp.design.polish`), which also gives the duals.  The duals are
mapped to the rows of the full model and checked by the independent weak-duality routine of
:mod:`countdp.design.optimality` on the matrix after :func:`countdp.privacy.certify.certify`; the result is
``extra["optimality"]``.  Where certify's UM mixture costs more than the gap allows (L2, whose
UM loss is ~n^2/6), the vertex's DP closure (:func:`countdp.design.polish.dp_closure`) is
certified and proven instead.  If the gap does not close (or a solver fails, e.g. Clarabel's
``AlmostSolved``), the next method of :data:`FALLBACKS` is tried; an answer no method proves
is returned with ``status = "not proven optimal"`` and every attempt listed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from countdp.design.backends import (  # noqa: F401 - re-exported: the solver settings live there
    CLARABEL_DIRECT_METHOD,
    CLARABEL_TOL,
    HIGHS_TOL,
    INTERIOR_GUIDE,
    TIGHT_ROW_SCALES,
    Solved,
    highs_lp,
    polish_run,
    run_clarabel,
    run_guided,
    run_highs,
)
from countdp.design.constraints import parse_properties, property_rows
from countdp.design.dual_repair import prove_dual
from countdp.design.polish import certified_and_proven, dp_closure, full_dual
from countdp.design.reduce import ReducedLP, build_reduced_lp, implied_drops  # noqa: F401 - re-exported
from countdp.evaluate.metrics import parse_objective

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

CLARABEL_GUIDED = "guided by clarabel"
"""The fallback after a ``guided`` answer that a smaller design guided and that is not proven: the
same method with Clarabel's guide, a different vertex (measured before the DP closure: LP with F,
L1, n = 256, alpha = 0.62, proven this way in 7.1 s instead of minutes of cold simplex)."""

METHODS = ("auto", "simplex", "ipm", "clarabel", "guided")
"""Algorithms for the reduced model: HiGHS dual simplex, HiGHS interior point + crossover
(both vertices), Clarabel's interior point (not a vertex), or HiGHS simplex started from a
basis read off Clarabel's point on the scaled model (a vertex:
:func:`countdp.design.backends.run_guided`); ``auto`` picks by model size and objective (see
:func:`choose_method`)."""

IPM_MIN_NNZ = 8_000
"""``method="auto"`` uses an interior point method from this many constraint non-zeros (n ~ 48)."""

LARGE_METHOD = "clarabel"
"""The interior point method ``auto`` uses on large models (measured fastest: benchmarks/)."""

AUTO_MIN_N = 16
"""``design_lp(backend="auto")`` uses the fast path from this ``n`` (smaller models go to cvxpy,
whose vertex choice the small-n figures were made with; both give the same optimal value)."""

CHECK_CLOSED_FORM_MAX_N = 128
"""Up to this ``n`` a closed-form shortcut (EM; GM where its explicit dual does not close) is also
checked with an LP dual (one reduced solve,
no fallbacks: with the whole fallback chain EM's check took 160-340 s at n = 128, alpha 0.5 and
0.62); above it, or when that dual does not close the gap (recorded as ``"lp_check"``: EM at
n = 128, alpha = 0.5 came within 1.7e-9), the theorem alone stands
(``extra["optimality"]["checked"] = False``).  ``GM remapped`` is checked at every ``n`` by its
explicit dual (no LP); where that does not close (rounding, L2 at large ``n``), the LP is solved
up to this ``n``, and above it the theorem stands (the dual's gap in ``"dual_check"``)."""

REMAPPED_GM = "GM remapped"
"""The closed form of :mod:`countdp.design.remapped_gm` (no property, any prior and objective)."""

GM_TOL = 1e-12
"""Largest property violation of GM's matrix accepted by the GM closed-form shortcut."""


@dataclass
class FastResult:
    """What the fast path found: ``matrix`` (uncertified), how, and the LP's size."""

    matrix: np.ndarray
    solver: str
    method: str
    status: str
    solve_time: float
    build_time: float
    solver_objective: float
    extra: dict


def _is_uniform(weights: np.ndarray | None, n: int) -> bool:
    return weights is None or bool(np.allclose(weights, 1.0 / (n + 1), rtol=0, atol=1e-15))


def choose_method(lp: ReducedLP) -> str:
    """``simplex`` below :data:`IPM_MIN_NNZ` constraint non-zeros, else :data:`LARGE_METHOD` for
    L0 and ``guided`` for the other objectives.  Their optima have entries down to ``alpha^n``;
    unscaled, Clarabel stops at 'AlmostSolved' with rows broken by far more than the gap allows
    to repair, and HiGHS simplex from a slack basis took 20-150 s at n = 256
    (benchmarks/bench_objectives.py).  Clarabel on the scaled model gets close in a few seconds,
    and the simplex started from the basis read off its point needs few pivots."""
    if lp.A.nnz < IPM_MIN_NNZ:
        return "simplex"
    return LARGE_METHOD if is_zero_one(lp.problem.objective) else "guided"


def is_zero_one(objective) -> bool:
    """Whether a parsed objective is L0 (= L0d:0)."""
    return objective.name == "L0" or (objective.name == "L0d" and objective.d == 0)


FALLBACKS = {"clarabel": ("clarabel", "ipm", "simplex"), "simplex": ("simplex", "ipm"), "ipm": ("ipm", "simplex"),
             "guided": ("guided", CLARABEL_GUIDED, "simplex", "ipm")}
"""Methods tried in turn until one answer is proven optimal (its certificate closes)."""


def prove(lp: ReducedLP, run: Solved, P: np.ndarray) -> dict:
    """The optimality certificate of the matrix ``P`` with ``run``'s duals mapped to the full model
    (:func:`countdp.design.polish.full_dual`), by the independent check of :mod:`countdp.design.optimality`;
    an interior point's dual (not ``run.polished``) is repaired first if it does not close
    (:mod:`countdp.design.dual_repair`).

    Weak duality does not care where the dual came from, so ``P`` may come from another solver."""
    full = lp.problem.lp()
    u, v = full_dual(lp, run.row_dual, run.col_dual)
    return prove_dual(full, lp.problem.point(P), u, v, repair=not run.polished)


def solve_proven(lp: ReducedLP, method: str, fallback: bool = True,
                 methods: tuple[str, ...] | None = None) -> tuple[np.ndarray, str, Solved, dict]:
    """Solve, polish and prove, falling back along :data:`FALLBACKS` (``fallback=False``: one
    attempt with ``method`` only; ``methods``: the methods of that chain to try, in its order).

    A HiGHS vertex whose DP repair was needed and whose certificate does not close is first
    re-solved from its basis with tightened rows (:data:`countdp.design.backends.TIGHT_ROW_SCALES`;
    ``optimality["tightened"]``): HiGHS's feasibility tolerance can leave the exact vertex
    breaking a row by ~1e-13, and the UM repair of that costs more than the gap allows.
    Returns ``(P, method, run, optimality)`` for the first proven answer, else for the answer
    with the smallest gap, with ``optimality["certified"] = False`` and every attempt listed;
    raises ``RuntimeError`` if no method returned an answer at all.
    """
    attempts, best, offered = [], None, []  # offered: (Clarabel's point, its proof) for run_guided's accept
    chain = FALLBACKS[method] if fallback else (method,)
    for chosen in chain if methods is None else tuple(m for m in chain if m in methods):
        if chosen == CLARABEL_GUIDED and (best is None or not best[2].guide.startswith("the design")):
            continue  # the guided run had no template guide (or no answer): the same again would not help
        if attempts:
            LOG.info("not proven (%s); next: %s", attempts[-1], chosen)
        previous = None

        def accept(point: Solved, used: str = chosen) -> bool:  # Clarabel's point, proven as it is
            offered.append((point, _proven_answer(lp, point, used, False)))
            return offered[-1][1][1]["certified"]

        for boost in (1.0, *TIGHT_ROW_SCALES) if chosen != "clarabel" and fallback else (1.0,):
            tight = boost != 1.0
            label = f"{chosen} (tightened {boost:g})" if tight else chosen
            try:
                run = (run_clarabel(lp) if chosen == "clarabel"
                       else run_guided(lp, template=chosen == "guided", accept=accept)
                       if chosen in ("guided", CLARABEL_GUIDED) and not tight
                       else run_highs(lp, "simplex" if tight else chosen, None,
                                      previous if tight else None, boost))
            except RuntimeError as exc:
                attempts.append(f"{label}: {exc}")
                break
            if tight:  # the re-solve starts from the vertex its guide led to
                run.guide = previous.guide
            previous, run = run, polish_run(lp, run)
            accepted = offered and offered[-1][0] is run  # its proof is already made
            P, optimality, repaired = offered[-1][1] if accepted else _proven_answer(lp, run, chosen, tight)
            if best is None or optimality["certified"] or _gap(optimality) < _gap(best[3]):
                best = (P, chosen, run, optimality)
            if optimality["certified"]:
                break
            attempts.append(f"{label}: certificate did not close (gap {optimality.get('gap')})")
            if not repaired:
                break  # tightening only helps a vertex that the DP repair had to move
        if best is not None and best[3]["certified"]:
            break
    if best is None:
        raise RuntimeError("; ".join(attempts))
    if attempts:
        best[3]["attempts"] = attempts
    return best


def _gap(optimality: dict) -> float:
    """The relative gap of a certificate (infinite when it has none)."""
    gap = optimality.get("gap")
    return float("inf") if gap is None else gap / max(1.0, abs(optimality["upper_bound"]))


def vertex_matrix(lp: ReducedLP, run: Solved) -> np.ndarray:
    """The matrix of ``run``'s point, before :func:`countdp.privacy.certify.certify`
    (:func:`countdp.design.polish.dp_closure` of it when ``run.dp_closure``)."""
    N = lp.n + 1
    P = (lp.expand @ run.y)[: N * N].reshape(N, N)
    return dp_closure(P, lp.problem.alpha) if run.dp_closure else P


def _proven_answer(lp: ReducedLP, run: Solved, chosen: str, tight: bool,
                   prover: Callable[[ReducedLP, Solved, np.ndarray], dict] | None = None
                   ) -> tuple[np.ndarray, dict, bool]:
    """The certified matrix of a (polished) run, its optimality certificate, and whether the DP
    certificate had to repair it.  When that repair (a UM mixture) keeps the certificate of a
    polished vertex, or of Clarabel's point offered by :func:`run_guided`, from closing, the DP
    closure of the point (:func:`countdp.design.polish.dp_closure`) is certified and proven
    instead, and kept if it closes (``run.dp_closure``, ``optimality["dp_closure"]``).  A plain
    ``clarabel`` answer falls back to a vertex instead.  ``prover``: proves a matrix on another
    LP than ``lp``'s (default :func:`prove`, on ``lp.problem``)."""
    prover = prover or prove
    closure = (run.polished or run.guide.startswith(INTERIOR_GUIDE)) and not run.dp_closure
    _, P, certificate, optimality = certified_and_proven(vertex_matrix(lp, run), lp.problem.alpha,
                                                         lambda P: prover(lp, run, P), closure)
    if optimality.get("dp_closure"):
        run.dp_closure = True
    optimality["method"], optimality["polished"] = chosen, run.polished
    if run.guide:
        optimality["guide"] = run.guide
    if tight:
        optimality["tightened"] = True
    return P, optimality, certificate.repair_lambda > 0


def proven_points(lp: ReducedLP, prover: Callable[[ReducedLP, Solved, np.ndarray], dict] | None = None,
                  what: str = "") -> Iterator[tuple[Solved | None, dict]]:
    """Each of Clarabel's points of ``lp`` (:func:`countdp.design.backends.interior_points`, F's
    rows substituted out first) with its certificate (:func:`_proven_answer`, ``prover`` as
    there), in turn; ``(None, why)`` when Clarabel fails before its first point (``what``
    prefixes the reason)."""
    from countdp.design.backends import interior_points

    run = None
    try:
        for run in interior_points(lp, substituted_first=True):
            yield run, _proven_answer(lp, run, "guided", False, prover)[1]
    except RuntimeError as exc:
        if run is None:
            yield None, {"certified": False, "reason": f"{what}{exc}"}


def proven_point(lp: ReducedLP, prover: Callable[[ReducedLP, Solved, np.ndarray], dict] | None = None,
                 what: str = "") -> tuple[Solved | None, dict]:
    """The first proven of :func:`proven_points`, else the last tried; ``(None, why)`` when
    Clarabel fails."""
    found = (None, {})
    for found in proven_points(lp, prover, what):
        if found[1]["certified"]:
            break
    return found


def closed_form(n: int, alpha: float, properties: tuple[str, ...], objective: object,
                weights: np.ndarray | None, aggregate: str) -> tuple[str, np.ndarray] | None:
    """``(name, matrix)`` when a theorem says it is an optimum of this LP (module docstring):
    ``name`` is ``"GM"``, ``"EM"`` or :data:`REMAPPED_GM`."""
    from countdp.mechanisms.closed_forms import CLOSED_FORMS

    obj = parse_objective(objective)
    zero_one = is_zero_one(obj)
    if zero_one and "F" in properties:
        return "EM", CLOSED_FORMS["EM"](n, alpha)
    if aggregate != "sum":
        return None
    if not (zero_one and _is_uniform(weights, n)):
        from countdp.design.remapped_gm import remapped_geometric

        P = remapped_geometric(n, alpha, obj, weights)
        return (REMAPPED_GM, P) if _satisfies(P, properties) else None
    P = CLOSED_FORMS["GM"](n, alpha)
    return ("GM", P) if _satisfies(P, properties) else None


def _satisfies(P: np.ndarray, properties: tuple[str, ...]) -> bool:
    """Whether ``P`` breaks no row of any of ``properties`` by more than :data:`GM_TOL`."""
    x = P.ravel()
    return all(property_rows(p, P.shape[0] - 1).violation(x) <= GM_TOL for p in properties)


def fast_design(n: int, alpha: float, properties: object = (), objective: object = "L0",
                weights: np.ndarray | None = None, aggregate: str = "sum", method: str = "auto",
                use_closed_forms: bool = True, fold_symmetry: bool = True,
                drop_implied: bool = True) -> FastResult:
    """Solve the design LP on the reduced model (or by a closed form), polished and proven.

    ``matrix`` is the polished answer before :func:`countdp.privacy.certify.certify` (which the caller
    applies; it is deterministic, so the certificate in ``extra["optimality"]`` is for the
    matrix the caller releases).  ``status`` is ``"optimal"`` only when that certificate
    closes, else ``"not proven optimal"``.
    """
    props = parse_properties(properties)
    start = time.perf_counter()
    unproven = None  # a closed form whose certificate did not close
    if use_closed_forms:
        found = closed_form(n, alpha, props, objective, weights, aggregate)
        if found is not None and found[0] == REMAPPED_GM:
            from countdp.design.remapped_gm import THEOREM, remap_certificate
            from countdp.evaluate.metrics import objective_value

            P = found[1]
            optimality = remap_certificate(n, alpha, objective, weights, P, props)
            optimality["checked"] = bool(optimality["certified"])
            if not optimality["certified"] and n > CHECK_CLOSED_FORM_MAX_N:  # as for GM and EM: the theorem stands
                optimality = {"certified": True, "proof": THEOREM, "checked": False, "dual_check": optimality}
            if optimality["certified"]:
                return FastResult(P, "closed-form", REMAPPED_GM, "optimal", time.perf_counter() - start, 0.0,
                                  objective_value(P, objective, weights, aggregate),
                                  {"backend": "highs", "reductions": [f"closed-form:{REMAPPED_GM}"],
                                   "optimality": optimality})
            found, unproven = None, {"closed_form": REMAPPED_GM, **optimality}  # solve the LP instead
        if found is not None:
            name, P = found
            theorem = "Theorem 4" if name == "EM" else "Theorem 3"
            from countdp.evaluate.metrics import objective_value

            value = objective_value(P, objective, weights, aggregate)
            optimality = {"certified": True, "proof": theorem, "checked": False}
            explicit = None
            if name == "GM":  # GM is GM remapped by the identity: its explicit dual, no LP
                from countdp.design.remapped_gm import remap_certificate

                explicit = remap_certificate(n, alpha, objective, weights, P, props)
            if explicit is not None and explicit["certified"]:
                optimality = {**explicit, "proof": f"{theorem}; explicit dual", "checked": True}
            elif n <= CHECK_CLOSED_FORM_MAX_N:  # also check it with an LP dual (weak duality)
                from countdp.privacy.certify import certify

                checked = prove_matrix(n, alpha, props, objective, weights, aggregate, certify(P, alpha)[0],
                                       fallback=False)
                if checked["certified"]:
                    optimality = {**checked, "proof": theorem, "checked": True}
                else:  # the theorem stands; the LP dual found did not confirm it to the gap
                    optimality = {**optimality, "lp_check": checked}
            return FastResult(P, "closed-form", name, "optimal", time.perf_counter() - start, 0.0, value,
                              {"backend": "highs", "reductions": [f"closed-form:{name} ({theorem})"],
                               "optimality": optimality})
    large = None
    from countdp.design import large_n  # large n, L0: a small template LP, proven on the full model

    if (method == "auto" and use_closed_forms and n >= large_n.MIN_N
            and large_n.applies(n, props, objective, weights, aggregate)):
        P, large = large_n.large_n_design(n, alpha, props, objective=objective, at_full_size=False)
        if P is None:
            LOG.info("large n: %s; the general path", large["reason"])
        else:
            return FastResult(P, "CLARABEL", "large-n template", "optimal",
                              time.perf_counter() - start, 0.0, large["optimality"]["primal_objective"],
                              {"backend": "highs", "reductions": ["large-n template"],
                               "optimality": large.pop("optimality"), "large_n": large})
    relaxed = None
    if method == "auto" and "CM" in props:
        from countdp.design.cm_relaxation import relaxed_design

        found, relaxed = relaxed_design(n, alpha, props, objective, weights, aggregate, drop_implied, start)
        if found is not None:
            if large is not None:
                found.extra["large_n"] = large
            return found
    folded = None
    if method == "auto" and fold_symmetry and "S" not in props:
        from countdp.design.mirror import folded_design

        found, folded = folded_design(n, alpha, props, objective, weights, aggregate, drop_implied, start)
        if found is not None:
            if large is not None:
                found.extra["large_n"] = large
            if relaxed is not None:
                found.extra["cm_relaxation"] = relaxed
            return found
    lp = build_reduced_lp(n, alpha, props, objective, weights, aggregate, fold_symmetry, drop_implied)
    build = time.perf_counter() - start
    chosen = choose_method(lp) if method == "auto" else method
    if chosen not in METHODS[1:]:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    LOG.info("the reduced LP: %s rows, %s columns; method %s", f"{lp.A.shape[0]:,}", f"{lp.A.shape[1]:,}", chosen)
    symmetrized = None
    if method == "auto" and chosen == "guided" and "S" in props:  # the LP without S before the cold methods
        found, symmetrized, solved = _guided_then_symmetrized(lp, n, alpha, props, objective, weights, aggregate,
                                                              drop_implied, start)
        if found is not None:
            for key, value in (("large_n", large), ("cm_relaxation", relaxed)):
                if value is not None:
                    found.extra[key] = value
            return found
    else:
        solved = solve_proven(lp, chosen)
    _, used, run, optimality = solved
    P = vertex_matrix(lp, run)
    extra = lp_extra(lp, build, optimality)
    if used == "clarabel":
        extra["kkt_solver"] = CLARABEL_DIRECT_METHOD
    solver, label = solver_label(used, run)
    if large is not None:
        extra["large_n"] = large
    if unproven is not None:
        extra["closed_form_check"] = unproven
    if folded is not None:
        extra["folded"] = folded
    if relaxed is not None:
        extra["cm_relaxation"] = relaxed
    if symmetrized is not None:
        extra["symmetrized"] = symmetrized
    status = "optimal" if optimality["certified"] else "not proven optimal"
    return FastResult(P, solver, label, status, run.seconds, build, run.objective, extra)


def _guided_then_symmetrized(lp: ReducedLP, n: int, alpha: float, props: tuple[str, ...], objective: object,
                             weights: np.ndarray | None, aggregate: str, drop_implied: bool,
                             start: float) -> tuple[FastResult | None, dict | None, tuple]:
    """An LP with S requested, ``guided``: the guided methods on its (folded) model, then Clarabel's
    point of the LP without S, symmetrized (:func:`countdp.design.mirror.symmetrized_design`), then
    the cold methods on the folded model.
    ``(found, why, solved)``: the symmetrized answer, why it was not (or ``None``), and otherwise
    :func:`solve_proven`'s answer (the better of its two stages when neither is proven)."""
    from countdp.design.mirror import symmetrized_design

    try:
        first = solve_proven(lp, "guided", methods=("guided", CLARABEL_GUIDED))
    except RuntimeError as exc:
        first, error = None, str(exc)
    if first is not None and first[3]["certified"]:
        return None, None, first
    found, why = symmetrized_design(n, alpha, props, objective, weights, aggregate, drop_implied, start)
    if found is not None:
        return found, None, first
    try:
        rest = solve_proven(lp, "guided", methods=("simplex", "ipm"))
    except RuntimeError as exc:
        if first is None:
            raise RuntimeError(f"{error}; {exc}") from exc
        return None, why, first
    if first is not None and not rest[3]["certified"] and _gap(first[3]) < _gap(rest[3]):
        return None, why, first
    earlier = first[3].get("attempts", []) if first is not None else [error]
    rest[3]["attempts"] = earlier + rest[3].get("attempts", [])
    return None, why, rest


SOLVER_LABELS = {"simplex": ("HIGHS", "simplex"), "ipm": ("HIGHS", "ipm+crossover"), "clarabel": ("CLARABEL", "ipm")}
"""``(solver, method)`` recorded for each method that answered (``guided``: :func:`solver_label`)."""


def solver_label(used: str, run: Solved) -> tuple[str, str]:
    """``(solver, method)`` recorded for the method that answered; a guided simplex names its guide."""
    if used in ("guided", CLARABEL_GUIDED):
        if run.guide.startswith(INTERIOR_GUIDE):
            return SOLVER_LABELS["clarabel"]
        return "HIGHS", "simplex guided by " + (run.guide.split(" (")[0] or "clarabel")
    return SOLVER_LABELS[used]


def lp_extra(lp: ReducedLP, build: float, optimality: dict) -> dict:
    """``FastResult.extra`` of an LP answer: the model's size, its reductions and the certificate."""
    return {"backend": "highs", "reductions": list(lp.reductions), "rows": int(lp.A.shape[0]),
            "cols": int(lp.A.shape[1]), "nnz": int(lp.A.nnz), "full_rows": int(lp.full_rows),
            "full_cols": int(lp.full_cols), "build_time": build, "optimality": optimality}


def proven_result(lp: ReducedLP, run: Solved, used: str, build: float, optimality: dict,
                  reductions: list[str], matrix: np.ndarray | None = None) -> FastResult:
    """The :class:`FastResult` of a proven answer found on ``lp`` by ``used`` (``matrix``: the
    released matrix before certify, default :func:`vertex_matrix`), with the reductions that
    changed the LP solved appended to ``lp``'s."""
    extra = lp_extra(lp, build, optimality)
    extra["reductions"] += reductions
    return FastResult(vertex_matrix(lp, run) if matrix is None else matrix, *solver_label(used, run), "optimal",
                      run.seconds, build, run.objective, extra)


def prove_matrix(n: int, alpha: float, properties: object, objective: object, weights: np.ndarray | None,
                 aggregate: str, matrix: np.ndarray, fallback: bool = True) -> dict:
    """``extra["optimality"]`` for a matrix found elsewhere (e.g. the plain cvxpy model).

    A dual of the design LP is computed on the reduced model (:func:`solve_proven`) and the
    independent check of :mod:`countdp.design.optimality` is run with *that* dual against ``matrix``:
    weak duality does not care where the dual came from, so this proves ``matrix`` optimal
    (to the gap) or reports that it is not.
    """
    lp = build_reduced_lp(n, alpha, parse_properties(properties), objective, weights, aggregate)
    try:
        _, used, run, _ = solve_proven(lp, choose_method(lp), fallback=fallback)
    except RuntimeError as exc:
        return {"certified": False, "reason": f"no dual: {exc}"}
    return {**prove(lp, run, matrix), "dual_from": f"reduced model, {used}"}
