"""WM under L0 for groups of any size: the design engine's proven template design, spread.

The canonical design is :func:`countdp.design.strategies.large_n_template.large_n_design` at the
canonical size ``m`` (:func:`countdp.structural.spread_build.canonical_size`): the template
solved at twice its size, expanded to ``m`` and proven optimal on the full model there.  Its
integer form (:func:`countdp.structural.spread_build.spread_mechanism`) serves every size from
``m`` up, certified alpha-DP by its structure.  Optimality is proven at ``m``; up to ``n = 2048``
:mod:`countdp.design.spread_proof` proves each size that is designed as a matrix (the spread is
then the matrix), with the template's dual copied to that size.  Beyond, a size gets the same
corners and middle column, which is how every proven size looks, but it is not proven there: the
record says so.

The canonical design is solved once per (mechanism, alpha) in a process, and rebuilt (seconds)
in the next.  A design whose ``m`` exceeds the matrix path's sizes (alpha near 1: the corners and
the tails are long) has no structure yet, and says so.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from countdp.evaluate.metrics import parse_objective
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_build import canonical_size, size_range, spread_mechanism

TEMPLATE_MECHANISMS = {"WM": ("WH", "RM", "CM", "S")}
"""Mechanisms with a spread structure, and their property sets (under L0)."""

MAX_CANONICAL = 2048
"""Largest canonical size solved: the matrix path's largest default size."""

OPTIMALITY_BEYOND = (f"proven at each size up to {MAX_CANONICAL} that is designed as a matrix (the template's dual "
                     f"copied to that size); beyond {MAX_CANONICAL} not proven (the same corners and middle column "
                     "as the proven designs)")
"""What the record says of the spread's optimality away from its canonical size."""


class CanonicalDesign(NamedTuple):
    """A template design at its canonical size, as the design engine proved it."""

    matrix: np.ndarray
    """The proven design (floats, read-only)."""
    source: dict
    """Its record: the strategy, the template width, the size and gap it was proven at."""
    dual: np.ndarray
    """The template's restricted dual in units where the costs are 1 (read-only): its rows are local,
    so copied to any size it proves that size's spread (:func:`countdp.design.template.proof.prove_copied_dual`)."""


@functools.lru_cache(maxsize=8)
def canonical_design(mechanism: str, alpha: Fraction, K: int) -> CanonicalDesign:
    """The proven template design of ``mechanism`` at its canonical size, its record and its template dual."""
    # lazy: the design engine (HiGHS, Clarabel, scipy) loads only when a template design is built
    from countdp.design import planner, request

    # lazy: the same engine's template strategy
    from countdp.design.strategies import large_n_template

    objective = parse_objective("L0")
    m = canonical_size_for(alpha, K)
    if m > MAX_CANONICAL:
        raise ValueError(f"{mechanism} at alpha = {float(alpha):.6g} has no structure yet: its canonical size "
                         f"{m:,} is beyond {MAX_CANONICAL} (the corners and tails are too long)")
    asked = request.DesignRequest(m, float(alpha), TEMPLATE_MECHANISMS[mechanism], objective)
    P, info = large_n_template.large_n_design(asked, at_full_size=False, context=planner.make_context())
    if P is None:
        raise ValueError(f"{mechanism} at alpha = {float(alpha):.6g}: the template design at n = {m} was not "
                         f"proven ({info.get('reason')})")
    proof = info["optimality"]
    source = {"canonical_design": "large-n template", "template_width": int(info["width"]),
              "optimal_proven_at_n": m, "optimality_gap": float(proof.get("gap", float("nan"))),
              "optimality_beyond": OPTIMALITY_BEYOND}
    P, dual = np.array(P, dtype=float), np.array(info["template_dual"], dtype=float)
    P.setflags(write=False)
    dual.setflags(write=False)
    return CanonicalDesign(P, source, dual)


def spread_sizes(n: int, alpha: Fraction, K: int = 62, mechanism: str = "WM") -> tuple[int, int]:
    """The size range whose table serves ``n`` (:func:`countdp.structural.spread_build.spread_mechanism`),
    known without solving the canonical design (for finding a stored table)."""
    return size_range(n, canonical_size_for(alpha, K))


def canonical_size_for(alpha: Fraction, K: int = 62) -> int:
    """The canonical size of WM's template design at ``alpha`` (no solve): beyond :data:`MAX_CANONICAL`
    it has no structure yet."""
    # lazy: the design engine's policy and settings load only when a template design is looked up
    from countdp.design import policy, settings

    widths = policy.template_widths(float(alpha), parse_objective("L0"), settings.DEFAULT_SETTINGS)
    return canonical_size(widths[0], Fraction(alpha), K) if widths else MAX_CANONICAL + 1


def stored_spread(record: dict, S: np.ndarray, delta: np.ndarray) -> StructuralSpread:
    """A spread from a cache's record and its tables (the caller compares its description with the record)."""
    lo, hi = (int(x) for x in record["sizes"])
    source = {key: record[key] for key in ("canonical_design", "template_width", "optimal_proven_at_n",
                                           "optimality_gap", "optimality_beyond") if key in record}
    return StructuralSpread(record["mechanism"], lo, Fraction(record["alpha_exact"]), int(record["K"]),
                            int(record["reserve"]), S, delta, int(record["sigma"]), (lo, hi), source)


def template_form(n: int, alpha: Fraction, K: int, mechanism: str = "WM") -> StructuralSpread:
    """``mechanism`` (WM) under L0 for groups of size ``n`` over ``2**K`` (62 only), certified.

    Raises ``ValueError`` (one line) for another ``K``, an alpha whose design has no structure,
    or ``n`` below the canonical size.
    """
    if K != 62:
        raise ValueError(f"{mechanism}'s structure is over 2^62 only, not 2^{K}")
    design = canonical_design(mechanism, Fraction(alpha), K)
    return spread_mechanism(mechanism, design.matrix, n, Fraction(alpha), K, design.source)


__all__ = ["MAX_CANONICAL", "OPTIMALITY_BEYOND", "TEMPLATE_MECHANISMS", "CanonicalDesign", "canonical_design",
           "canonical_size_for", "spread_sizes", "stored_spread", "template_form"]
