"""Refuse a config whose studies beyond the paper would not fit this machine's memory (config_check's
third layer, beside :mod:`config_fit`).

Part of the workflow, not of the library.  The minimax, prior and subsets studies
(``extensions.minimax``, ``extensions.prior``, ``extensions.subsets``) do not go through the design
engine: each solves the whole design LP in one HiGHS model (:mod:`countdp.design.full_model`), so
neither the design estimate nor the engine's memory bound sees them.  For each such key, the study at
its largest ``n`` is estimated by :func:`countdp.design.full_model.full_model_bytes` (the minimax and
prior studies' lexicographic solves, the subsets study's 128 models and their QPs), its model of all
seven properties the largest it builds; one that needs more than the limit is one line naming the
key, the model's size, the estimate and the limit.  The limit there is also at most the engine's
own memory bound for a whole LP (``settings.solver.memory_bound``, 2 GiB by default, which the
workflow does not raise): the engine does not run its general
LP above it without a time limit, and these studies solve the same LP, larger, with none.  The
objectives and derivability studies (``extensions.objectives``, ``extensions.derivability``) do go
through the engine (``design_lp`` with ``extensions.solver``'s options, and ``design_named`` for WM
and WH with HiGHS alone), and are estimated as :mod:`config_fit` estimates the sweeps' designs: a
need above the limit, or a design the engine would refuse at once, is one line naming the key.
The limit is config_fit's (:func:`config_fit.memory_limit`).  The estimate is arithmetic; the
engine's designs are estimated only where their bound (:func:`countdp.design.estimate.bound_bytes`)
does not fit.

The same estimate sizes each extension job's request (its rule's ``mem_mb``, what a cluster job asks
for: :func:`study_mem_mb`): :func:`study_bytes`, at least :data:`MEM_FLOOR_MB` and at most the limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from config_fit import candidate_ns, design_lines, memory_limit

from countdp.design import estimate, full_model
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.studies.naming import parse_alpha

__all__ = ["EXTENSION_SOURCES", "MEM_FLOOR_MB", "extension_errors", "study_bytes", "study_keys", "study_mem_mb"]

EXTENSION_SOURCES = (__file__, full_model.__file__)
"""The sources this check reads beyond config_fit's (config_cache fingerprints them)."""
LEXICOGRAPHIC, SUBSET_MAP = full_model.LEXICOGRAPHIC_BYTES_PER_ENTRY, full_model.SUBSET_MAP_BYTES_PER_ENTRY
FULL_MODEL_STUDIES = (("minimax", "the minimax study's lexicographic designs", LEXICOGRAPHIC),
                      ("prior", "the prior study's lexicographic designs", LEXICOGRAPHIC),
                      ("subsets", "the subsets study's 128 models and their QPs", SUBSET_MAP))
"""``(study, what it solves, bytes an entry)`` of each study that solves the whole LP itself."""
OBJECTIVES = ("L0", "L1", "L2")
"""The objectives the objectives study designs (countdp.studies.objectives.objective_study)."""
ENGINE_STUDIES = ("objectives", "derivability")
"""The studies whose designs go through the design engine (:func:`_engine_designs`)."""
MEM_FLOOR_MB = 1000
"""The least an extension job asks for (MB), whatever its estimate: a Snakemake with the library, pandas
and matplotlib (what the figure rules ask); the estimates of small studies are below it."""


def study_keys(config: Mapping, study: str) -> list[tuple[str, object]]:
    """``(key, n spec)`` of extension study ``study``'s group sizes: the key its job names when the engine
    refuses one of its designs (:mod:`engine_refusal`), as :func:`config_fit.sweep_keys` for a sweep."""
    return [(f"extensions.{study}.n", config["extensions"][study]["n"])]


def _largest_n(spec) -> int:
    return max(candidate_ns(spec)) if isinstance(spec, Mapping | list) else int(spec)


def full_model_line(key: str, n: int, what: str, need: int, limit_text: str) -> str:
    """The line of a study whose whole LP does not fit (module docstring)."""
    size = full_model.full_model_size(n, full_model.ALL_PROPERTIES)
    return (f"config key '{key}': n = {n} does not fit in memory for {what} (the whole design LP, solved "
            f"outside the design engine, up to {size.describe()}: needs about {need / 2**30:,.2f} GiB, "
            f"{limit_text}); allowed: group sizes whose LPs fit, or the key's largest n lowered")


def _full_model_errors(block: Mapping, limit: int | None, limit_text: str) -> list[str]:
    bound = DEFAULT_SETTINGS.solver.memory_bound
    if limit is None or bound < limit:
        limit, limit_text = bound, (f"above the memory bound of {bound / 2**30:,.2f} GiB the design engine keeps "
                                    "for a whole LP (settings.solver.memory_bound)")
    lines = []
    for study, what, _ in FULL_MODEL_STUDIES:
        if not isinstance(spec := (block.get(study) or {}).get("n"), Mapping | list | int):
            continue
        n, need = _largest_n(spec), study_bytes(block, study)
        if need > limit:
            lines.append(full_model_line(f"extensions.{study}.n", n, what, need, limit_text))
    return lines


def _engine_designs(block: Mapping) -> Iterator[tuple[str, str, tuple, str, object, int, dict]]:
    """``(key, mechanism, properties, objective, alpha, n, options)`` of the engine's designs of the
    objectives and derivability studies at their largest n."""
    if isinstance(c := block.get("objectives"), Mapping):
        from countdp.studies.objectives import fig8_property_sets  # lazy: the study's tables (pandas)

        solver = block.get("solver") or {}  # as jobs_extensions.objectives passes it to design_lp
        options = {"solver": solver.get("name", "HIGHS"), "shortcuts": not solver.get("plain", False),
                   **({"method": solver["method"]} if solver.get("method") else {})}
        for props in fig8_property_sets().values():
            for objective in OBJECTIVES:
                yield "extensions.objectives.n", "LP", props, objective, c["alpha"], int(c["n"]), options
    if isinstance(c := block.get("derivability"), Mapping):
        n = _largest_n(c["n"])
        for alpha in c["alpha"]:
            for m in ("WM", "WH"):
                yield "extensions.derivability.n", m, (), "L0", alpha, n, {"solver": "HIGHS"}


def _engine_errors(block: Mapping, limit: int | None, limit_text: str) -> list[str]:
    return design_lines(_engine_designs(block), limit, limit_text, parse_alpha)


def study_bytes(block: Mapping, study: str) -> int:
    """What extension study ``study``'s job needs at its largest n (``block``: the config's ``extensions``),
    by the estimates the check holds it to: the whole LP of the minimax, prior and subsets studies
    (:func:`countdp.design.full_model.full_model_bytes`; the prior study's WH and WM designs need less);
    the dearest engine design of the objectives and derivability studies
    (:func:`countdp.design.estimate.estimate_named`, asked only where their bound is above
    :data:`MEM_FLOOR_MB`: below it the bound, so a small study imports nothing); 0 for the baselines
    study, which designs nothing (closed forms and baselines of a few hundred entries)."""
    for name, _, per_entry in FULL_MODEL_STUDIES:
        if name == study:
            return full_model.full_model_bytes(_largest_n(block[study]["n"]), per_entry)
    if study not in ENGINE_STUDIES:
        return 0
    bound = estimate.bound_bytes(_largest_n(block[study]["n"]))
    if bound <= MEM_FLOOR_MB * 2**20:
        return bound
    designs = _engine_designs({"solver": block.get("solver"), study: block[study]})
    return max(estimate.estimate_named(m, n, parse_alpha(alpha), objective, props, **options).required_bytes
               for _, m, props, objective, alpha, n, options in designs)


def study_mem_mb(config: Mapping, study: str) -> int:
    """The memory (MB of 2^20 bytes, as ``design_memory_mb`` and SLURM's ``--mem`` count them) extension
    study ``study``'s job asks for (its rule's ``mem_mb``): :func:`study_bytes` rounded up, at least
    :data:`MEM_FLOOR_MB`, and at most the limit the check holds the study to (:func:`config_fit.memory_limit`:
    ``design_memory_mb``, else what is available), which a config that passed the check needs no more than."""
    need_mb = max(MEM_FLOOR_MB, -(-study_bytes(config["extensions"], study) // 2**20))
    limit, _ = memory_limit(config)
    return need_mb if limit is None else min(need_mb, limit // 2**20)


def extension_errors(config: Mapping) -> list[str]:
    """A study of ``extensions`` predicted not to fit the memory limit, or whose design the engine
    would refuse: one line per key (module docstring)."""
    block = config.get("extensions")
    if not isinstance(block, Mapping):
        return []
    limit, limit_text = memory_limit(config)
    lines = []
    for check in (_full_model_errors, _engine_errors):
        try:
            lines += check(block, limit, limit_text)
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
            continue  # a malformed block: the schema's messages say so
    return lines

