"""The checks of the group sizes of Figures 9-13 that a schema cannot express (config_check's second layer).

Part of the workflow, not of the library: :mod:`config_check` adds :func:`routing_errors` to its
semantic checks.  Each problem is one line naming the key, as config_check's other lines:

- every mechanism of Figures 9-13 can be evaluated at every n asked for
  (:func:`countdp.evaluate.routing.routing_problem`: beyond the matrix path only mechanisms with a
  structural form, and WH as GM under L0 where GM is weakly honest);
- Figure 9's objectives other than L0 (``fig09.objectives``: L1, L2) are evaluated on designed
  matrices only, so every n of every mechanism stays on the matrix path;
- ``fig09.n_by_mechanism`` names only mechanisms the study plots (a size given for a mechanism
  that is not drawn would be ignored without a word).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping

from countdp.design.forms import structural_form
from countdp.evaluate.routing import ROUTING, routing_problem

__all__ = ["FIGURE_MECHANISMS", "L0_ONLY", "ROUTING_SOURCES", "fig09_groups", "routing_errors"]

FIGURE_MECHANISMS = ("GM", "WM", "EM", "UM")
"""The mechanisms of Figures 10-13 when their block names none (targets.smk reads it from here)."""
ROUTING_SOURCES = (__file__, sys.modules[routing_problem.__module__].__file__,
                   sys.modules[structural_form.__module__].__file__)
"""The sources the routing checks read (config_cache fingerprints them: a new structural form re-checks)."""
L0_ONLY = {"fig09": True, "fig10": True, "fig11": False, "fig12": False, "fig13": False}
"""The studies of Figures 9-13, and whether each measures L0 alone (where WH may be evaluated as GM)."""


def _integer(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{value!r} is not an integer")
    return value


def _beyond(spec) -> list[int]:
    """The smallest and largest n of an n range ({from, to, step}), list or single n that lie beyond the
    matrix path and within the largest n allowed (``[]`` if none); TypeError/KeyError if malformed.
    A range is not expanded: its members in that window are found by arithmetic."""
    lo, hi = ROUTING.matrix_max_n + 1, ROUTING.max_n
    if isinstance(spec, Mapping):
        start, stop, step = _integer(spec["from"]), _integer(spec["to"]), _integer(spec.get("step", 1))
        if step < 1:
            return []
        first = start if start >= lo else start + -(-(lo - start) // step) * step
        last = start + (min(stop, hi) - start) // step * step
        return [first, last] if first <= last and first <= min(stop, hi) else []
    ns = [n for n in map(_integer, spec if isinstance(spec, list) else [spec]) if lo <= n <= hi]
    return [min(ns), max(ns)] if ns else []


def fig09_groups(block: Mapping) -> list[tuple[str, list[str], object]]:
    """``(key of n, mechanisms, n spec)`` of Figure 9: each mechanism of ``fig09.n_by_mechanism`` with its
    own sizes, the others with ``fig09.n`` (a mechanism the study does not plot is left out)."""
    mechanisms = list(block.get("mechanisms", FIGURE_MECHANISMS))
    own = block.get("n_by_mechanism") or {}
    own = {m: spec for m, spec in own.items() if m in mechanisms} if isinstance(own, Mapping) else {}
    rest = [m for m in mechanisms if m not in own]
    return ([("fig09.n", rest, block["n"])] if rest else []) + [
        (f"fig09.n_by_mechanism.{m}", [m], spec) for m, spec in own.items()]


def _figure_points(config: Mapping) -> Iterator[tuple[str, list[int], list, list, bool]]:
    """(key of n, its extreme n beyond the matrix path, alphas, mechanisms, L0 alone) of each study of
    Figures 9-13 and Figure 9's convergence check; a block the schema rejects is left to its message."""
    for fig, l0_only in L0_ONLY.items():
        block = config.get(fig)
        if not isinstance(block, Mapping):
            continue
        try:
            alphas = block["alpha"] if isinstance(block.get("alpha"), list) else [block["alpha"]]
            groups = fig09_groups(block) if fig == "fig09" else [
                (f"{fig}.n", list(block.get("mechanisms", FIGURE_MECHANISMS)), block["n"])]
            for key, mechanisms, spec in groups:
                yield key, _beyond(spec), alphas, mechanisms, l0_only
            check = block.get("convergence_check")
            if fig == "fig09" and isinstance(check, Mapping):
                yield f"{fig}.convergence_check.n", _beyond(check["n"]), [check["alpha"]], ["GM", "WM", "WH"], True
        except (KeyError, TypeError, ValueError, AttributeError):
            continue


def _problem(mechanism, n: int, alpha, l0_only: bool) -> str | None:
    try:
        return routing_problem(mechanism, n, alpha, l0_only)
    except (ValueError, TypeError, ZeroDivisionError):
        return None  # a bad alpha or mechanism: its own message says so


def _evaluation_errors(config: Mapping) -> list[str]:
    """A mechanism of Figures 9-13 asked for at an n it cannot be evaluated at: one line per key.

    Only n beyond the matrix path can fail (n above the largest allowed is the schema's to report);
    having no structural form fails at any such n, and GM's weak honesty (WH's route) is monotone
    in n, so the smallest and largest of them decide.
    """
    errors = []
    for key, beyond, alphas, mechanisms, l0_only in _figure_points(config):
        problems = [(m, n, problem) for m in mechanisms for a in alphas for n in beyond
                    if (problem := _problem(m, n, a, l0_only))]
        if problems:
            m, n, problem = problems[0]
            errors.append(f"config key '{key}': n = {n} is not allowed for {m} ({problem}); allowed: n <= "
                          f"{ROUTING.matrix_max_n} for {m}, or {m} left out of the study")
    return errors


def _fig09_objective_errors(config: Mapping) -> list[str]:
    """Figure 9 under L1 or L2 asked for beyond the matrix path, and sizes of a mechanism it does not plot."""
    block = config.get("fig09")
    if not isinstance(block, Mapping):
        return []
    errors = []
    try:
        mechanisms = list(block.get("mechanisms", FIGURE_MECHANISMS))
        own = block.get("n_by_mechanism") or {}
        errors += [f"config key 'fig09.n_by_mechanism.{m}': {m} is not plotted in Figure 9; allowed: a mechanism "
                   f"of fig09.mechanisms ({', '.join(mechanisms)})" for m in own if m not in mechanisms]
        objectives = [o for o in block.get("objectives", ["L0"]) if o != "L0"]
        for key, group, spec in fig09_groups(block) if objectives else []:
            beyond = _beyond(spec)
            if beyond:
                errors.append(f"config key '{key}': n = {beyond[0]} is not allowed for {group[0]} under "
                              f"{objectives[0]} (beyond L0 every point is a designed matrix, up to n = "
                              f"{ROUTING.matrix_max_n}); allowed: n <= {ROUTING.matrix_max_n}, or "
                              f"{objectives[0]} left out of fig09.objectives")
    except (KeyError, TypeError, ValueError, AttributeError):
        return errors  # a malformed block: the schema's messages say so
    return errors


def routing_errors(config: Mapping) -> list[str]:
    """Every problem of the group sizes of Figures 9-13 (module docstring), one line per key (the first found)."""
    lines = {}
    for line in _fig09_objective_errors(config) + _evaluation_errors(config):
        lines.setdefault(line.split("'")[1], line)
    return list(lines.values())
