"""Refuse a config whose designs would not fit this machine's memory (config_check's third layer).

Part of the workflow, not of the library: :mod:`config_check` adds :func:`fit_errors` to its
semantic checks.  For every config key whose group sizes the design sweeps design (the studies'
``n`` keys, as ``workflow/rules/targets.smk`` turns them into artifacts), each design is
estimated by :func:`countdp.design.estimate.estimate_named` with the options the sweep passes
(:func:`countdp.studies.sweeps.lp_options` of the config's ``solver``): its path, nothing solved.
A design whose estimate exceeds the limit is one line naming the key, the design, the estimate and
the limit, as config_check's other lines.  The limit is ``design_memory_mb`` when the config gives
it (a cluster node's memory, or a test's), else the memory available on this machine now
(:func:`countdp.validation.available_memory`).

Only the largest ``n`` of a key, and its largest ``n`` within the matrix path
(:data:`countdp.structural.catalogue.NARROW_MAX_N`), are estimated: within the matrix path a design's
need grows with ``n`` (``design_lp`` asks for the general LP's memory whatever path answers), and
beyond it only structural forms remain.  A request whose bound (:func:`countdp.design.estimate.bound_bytes`)
fits is not estimated at all, so a config of small designs loads no LP stack here, unless its ``n``
is past the design engine's own memory bound for the general path (``settings.solver.memory_bound``,
:func:`countdp.design.memory.memory_refusal`; the sweeps give no time limit and keep the default
bound): such a design is refused when no fast path is predicted to answer it
(:attr:`countdp.design.estimate.DesignEstimate.refusal`), with one line naming the key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping

from config_routing import FIGURE_MECHANISMS, L0_ONLY, fig09_groups

from countdp.design import estimate
from countdp.design.memory import memory_refusal
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.evaluate.routing import ROUTING
from countdp.structural.catalogue import NARROW_MAX_N
from countdp.studies.naming import alpha_spelling, lp_name, objective_slug, parse_alpha
from countdp.studies.sweeps import lp_options
from countdp.validation import available_memory
from countdp.values.alpha import alpha_text, exact_alpha
from countdp.values.catalogue import CLOSED_FORM_MECHANISMS

__all__ = ["FIT_SOURCES", "asks_for", "candidate_ns", "design_groups", "fit_errors", "fit_line", "memory_limit",
           "refused_line", "solver_options", "sweep_keys"]

FIT_SOURCES = (__file__, estimate.__file__, sys.modules[lp_options.__module__].__file__,
               sys.modules[memory_refusal.__module__].__file__, sys.modules[type(DEFAULT_SETTINGS).__module__].__file__)
"""The sources the fit check reads (config_cache fingerprints them: a new estimate re-checks)."""
SOLVER_FIRST = {"HIGHS": "simplex", "CLARABEL": "ipm"}
"""The method ``solver.plain`` without a method runs (config_check.SOLVER_METHODS' first)."""


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def candidate_ns(spec) -> list[int]:
    """The largest n of an n spec ({from, to, step}, a list or one n) and its largest n up to
    :data:`NARROW_MAX_N` (module docstring); a range is not expanded."""
    if isinstance(spec, Mapping):
        start, stop, step = int(spec["from"]), int(spec["to"]), int(spec.get("step", 1))
        last = start + (stop - start) // step * step
        capped = start + (min(stop, NARROW_MAX_N) - start) // step * step if start <= NARROW_MAX_N else None
        return sorted({last} | ({capped} if capped is not None else set()))
    ns = sorted({int(n) for n in _as_list(spec)})
    within = [n for n in ns if n <= NARROW_MAX_N]
    return sorted({ns[-1], *within[-1:]})


def _intrinsic(config: Mapping) -> Iterator[tuple]:
    """``(key, mechanism, properties, objective, alphas, n spec, routed)`` of Figures 1-8."""
    if isinstance(c := config.get("fig01"), Mapping):
        for i, panel in enumerate(c.get("panels", [])):
            yield f"fig01.panels[{i}].n", "LP", (), panel["objective"], [c["alpha"]], panel["n"], None
        if isinstance(search := c.get("l2_search"), Mapping):
            yield "fig01.l2_search.n", "LP", (), "L2", _as_list(search["alpha"]), search["n"], None
    if isinstance(c := config.get("fig02"), Mapping):
        props = tuple(c["properties"])
        for i, panel in enumerate(c.get("panels", [])):
            yield f"fig02.panels[{i}].n", "LP", props, panel["objective"], [c["alpha"]], panel["n"], None
    for fig in ("fig06", "fig07"):
        if isinstance(c := config.get(fig), Mapping):
            for m in c["mechanisms"]:
                yield f"{fig}.n", m, (), "L0", _as_list(c["alpha"]), c["n"], None
    if isinstance(c := config.get("fig08"), Mapping):
        base = list(c.get("base", ["WH", "S"]))
        sets = [("LP", tuple(base + list(comb))) for comb in c["combinations"]] + [("GM", ()), ("EM", ())]
        for m, props in sets:
            yield "fig08.vs_n.n", m, props, "L0", [c["vs_n"]["alpha"]], c["vs_n"]["n"], None
            yield "fig08.vs_alpha.n", m, props, "L0", _as_list(c["vs_alpha"]["alpha"]), c["vs_alpha"]["n"], None


def _figures(config: Mapping) -> Iterator[tuple]:
    """The same of Figures 9-13 (``routed``: L0 alone or not, for a point evaluated as structure)."""
    if isinstance(block := config.get("fig09"), Mapping):
        objectives = list(block.get("objectives", ["L0"]))
        for key, mechanisms, spec in fig09_groups(block):
            for m in mechanisms:
                for objective in objectives:
                    routed = True if objective == "L0" else None
                    yield key, m, (), objective, _as_list(block["alpha"]), spec, routed
        if isinstance(check := block.get("convergence_check"), Mapping):
            for m in ("GM", "WM", "WH"):
                yield "fig09.convergence_check.n", m, (), "L0", [check["alpha"]], check["n"], True
    for fig in ("fig10", "fig11", "fig12", "fig13"):
        if isinstance(block := config.get(fig), Mapping):
            for m in block.get("mechanisms", FIGURE_MECHANISMS):
                yield f"{fig}.n", m, (), "L0", _as_list(block["alpha"]), block["n"], L0_ONLY[fig]


def design_groups(config: Mapping) -> Iterator[tuple[str, str, tuple, str, object, int]]:
    """``(key, mechanism, properties, objective, alpha, n)`` of every design the sweeps would make at
    the candidate sizes (:func:`candidate_ns`); a point Figures 9-13 evaluate as structure is not designed."""
    for key, m, props, objective, alphas, spec, routed in (*_intrinsic(config), *_figures(config)):
        for alpha in alphas:
            for n in candidate_ns(spec):
                if routed is not None and ROUTING.structural(m, n, alpha_text(exact_alpha(str(alpha))), routed):
                    continue
                yield key, m, tuple(props), objective, alpha, n


def sweep_keys(config: Mapping, mechanism: str, objective: str, alpha: str) -> list[tuple[str, object]]:
    """``(key, n spec)`` of every config key whose designs include the sweep of ``mechanism`` (as an
    artifact path names it: ``WM``, ``LP-WH+S``) under ``objective`` (its slug) at ``alpha`` (its
    spelling): the keys a design job names when the engine refuses one of its designs."""
    found = []
    for key, m, props, goal, alphas, spec, _ in (*_intrinsic(config), *_figures(config)):
        if (lp_name(props) if m == "LP" else m) != mechanism or objective_slug(goal) != objective:
            continue
        if any(alpha_spelling(parse_alpha(a)) == alpha for a in alphas):
            found.append((key, spec))
    return found


def asks_for(spec, n: int) -> bool:
    """Whether an n spec ({from, to, step}, a list or one n) holds ``n``."""
    if isinstance(spec, Mapping):
        start, step = int(spec["from"]), int(spec.get("step", 1))
        return start <= n <= int(spec["to"]) and (n - start) % step == 0
    return n in {int(m) for m in _as_list(spec)}


def solver_options(solver: Mapping | None) -> dict:
    """The ``design_named`` options of a solver block (the config's ``solver``, or ``extensions.solver``),
    as the sweeps pass them."""
    solver = solver or {}
    name = solver.get("name", "HIGHS")
    method = solver.get("method") or (SOLVER_FIRST.get(name, "simplex") if solver.get("plain") else "auto")
    return lp_options(f"{name}/{method}" + ("/plain" if solver.get("plain") else ""))


def memory_limit(config: Mapping) -> tuple[int | None, str]:
    """The memory limit in bytes (``None``: unknown, no check) and how it is named in a message."""
    mb = config.get("design_memory_mb")
    if isinstance(mb, int) and not isinstance(mb, bool) and mb > 0:
        return mb * 2**20, f"design_memory_mb = {mb:,} MB"
    have = available_memory()
    return have, "available" if have is None else f"{have / 2**30:,.1f} GiB available"


def fit_line(key: str, found: estimate.DesignEstimate, alpha, what: str) -> str:
    name = found.mechanism if found.mechanism != "LP" else "LP-" + ("+".join(found.properties) or "none")
    return (f"config key '{key}': n = {found.n} does not fit in memory for {name} under {found.objective} at "
            f"alpha = {alpha} ({found.path}: needs about {found.required_bytes / 2**30:,.2f} GiB, {what}); "
            f"allowed: group sizes whose designs fit, design_memory_mb of a larger machine, or the key's "
            f"largest n lowered")


def refused_line(key: str, found: estimate.DesignEstimate, alpha) -> str:
    name = found.mechanism if found.mechanism != "LP" else "LP-" + ("+".join(found.properties) or "none")
    return (f"config key '{key}': n = {found.n} is refused by the design engine for {name} under {found.objective} "
            f"at alpha = {alpha} (no fast path answers, and {found.refusal}); allowed: group sizes or alphas a fast "
            f"path answers (docs/design.md), or the key's largest n lowered")


def fit_errors(config: Mapping) -> list[str]:
    """A design of the config predicted not to fit the memory limit, or to be refused by the design
    engine's own memory bound (the general path above ``settings.solver.memory_bound``, which the sweeps
    do not raise): one line per key, its largest need or its refusal."""
    limit, what = memory_limit(config)
    try:
        options, groups = solver_options(config.get("solver")), list(design_groups(config))
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        return []  # a malformed block or solver: the schema's messages say so
    designs = ((key, m, props, objective, alpha, n, {} if m in CLOSED_FORM_MECHANISMS else options)
               for key, m, props, objective, alpha, n in groups)
    return design_lines(designs, limit, what)


def design_lines(designs: Iterable[tuple], limit: int | None, what: str,
                 parse: Callable[[object], object] = lambda alpha: alpha) -> list[str]:
    """One line per config key of ``designs`` (``(key, mechanism, properties, objective, alpha, n, options)``,
    ``options`` those of ``design_named``) whose largest design is predicted not to fit ``limit`` bytes
    (:func:`fit_line`, ``what`` naming the limit), else whose design the engine refuses (:func:`refused_line`);
    ``parse`` turns a config's alpha into the estimate's.  Only the sizes the quick bound does not clear are
    estimated; a bad alpha or objective is left to its own message."""
    worst, refused = {}, {}
    for key, m, props, objective, alpha, n, options in designs:
        if (limit is None or estimate.bound_bytes(n) <= limit) and memory_refusal(n, DEFAULT_SETTINGS) is None:
            continue
        try:
            found = estimate.estimate_named(m, n, parse(alpha), objective, props, **options)
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if limit is not None and not found.fits(limit) and \
                (key not in worst or found.required_bytes > worst[key][0].required_bytes):
            worst[key] = (found, alpha)
        elif found.refusal is not None:
            refused.setdefault(key, (found, alpha))
    return [fit_line(key, found, alpha, what) for key, (found, alpha) in worst.items()] + \
        [refused_line(key, found, alpha) for key, (found, alpha) in refused.items() if key not in worst]
