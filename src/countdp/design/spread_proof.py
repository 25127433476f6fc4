"""A template design at the sizes its spread serves within the matrix path: the spread itself, proven there.

WM under L0 has a structural form from its canonical size ``m`` up
(:mod:`countdp.structural.template`): the canonical integer matrix with its middle column
repeated.  From ``m`` to :data:`~countdp.structural.catalogue.NARROW_MAX_N` the named design *is*
that spread: its released weights are the spread's, generated column by column, so the matrix
form and the structural form are one distribution at every size, and a release draws the same
mechanism with or without the matrix.

Optimality is proven at each such ``n`` on the full model: the canonical template's restricted
dual, whose rows are local and so do not depend on the size, is copied to ``n``
(:func:`countdp.design.template.proof.prove_copied_dual`) and checked against the spread's
weights by the independent weak-duality routine.  Only a closed gap proves; otherwise the caller
solves the LP at ``n`` instead, and says why.
"""

from __future__ import annotations

import logging
from fractions import Fraction

import numpy as np

from countdp.design.forms import canonical_design, canonical_size_for, structural_form, structure_problem
from countdp.design.settings import SolverSettings
from countdp.structural.catalogue import NARROW_MAX_N, SPREADS
from countdp.structural.spread import StructuralSpread
from countdp.structural.template import TEMPLATE_MECHANISMS
from countdp.values.objectives import parse_objective

LOG = logging.getLogger(__name__)  # stage messages (INFO): countdp.progress.StageLog shows them

METHOD = "template spread"
"""The method recorded on a design that is its spread."""
SOLVER = "CLARABEL"
"""The solver of the canonical template (its restricted LPs), recorded on a spread's design."""
LP_CHOICES = ("solver", "method", "backend")
"""Options of :func:`countdp.design.designer.design_lp` that ask for the LP itself, not the spread."""


def spread_serves(name: str, n: int, alpha: Fraction, objective: object, options: dict,
                  settings: SolverSettings) -> bool:
    """Whether the named design ``name`` at ``(n, alpha)`` under ``objective`` is its spread: a
    template design under L0, ``n`` from its canonical size up to the matrix path's largest, an alpha
    with a structure, and no LP backend or method asked for in place of the planner's shortcuts (a
    solver and method given with ``shortcuts=True`` are the general path's, and leave the spread)."""
    asked = set(options) & set(LP_CHOICES)
    if options.get("shortcuts"):
        asked -= {"solver", "method"}
    if name not in SPREADS or str(parse_objective(objective)) != "L0" or asked:
        return False
    if n > NARROW_MAX_N or structure_problem(name, alpha, settings) is not None:
        return False
    return n >= canonical_size_for(Fraction(alpha), settings=settings)


def proven_spread(name: str, n: int, alpha: Fraction,
                  settings: SolverSettings) -> tuple[StructuralSpread, np.ndarray | None, dict]:
    """``(form, matrix, record)``: ``name``'s spread at size ``n`` under the design engine's
    ``settings`` (certified by its structure), the
    float matrix its weights stand for, proven optimal at ``n`` (or ``None`` when the gap stays
    open: ``record["reason"]``), and the record of the proof (the certificate of
    :func:`countdp.design.optimality.check_optimality` without its arrays, the canonical design's)."""
    form = structural_form(name, n, alpha, settings=settings)
    design = canonical_design(name, Fraction(alpha), form.K, settings)
    width = int(design.source["template_width"])
    LOG.info("%s n = %d: the spread of its canonical design (n = %d), proven with the template's dual", name, n,
             form.m)
    # lazy: the LP stack (scipy) loads only when a design is proven (countdp.design.designer)
    from countdp.design.model import DesignProblem

    # lazy: as above
    from countdp.design.template.proof import prove_copied_dual

    raw = form.dense_weights() / float(form.denominator)
    problem = DesignProblem(n, float(alpha), TEMPLATE_MECHANISMS[name], parse_objective("L0"))
    result = prove_copied_dual(problem, raw, design.dual, width, {"canonical_n": form.m, "width": width})
    matrix = result.pop("matrix", None)
    for key in ("u", "v", "template_dual"):
        result.pop(key, None)
    record = {"optimality": result, "spread": {**design.source, "canonical_n": form.m,
                                                "rounding_lambda": form.uniform_share}}
    if not result.get("certified"):
        record["reason"] = f"{name} n={n}: the spread's optimality gap did not close ({result.get('reason', 'gap')})"
        return form, None, record
    return form, matrix, record


__all__ = ["LP_CHOICES", "METHOD", "SOLVER", "proven_spread", "spread_serves"]
