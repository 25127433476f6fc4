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
in the next.

Near alpha = 1 the corners and tails are long, and ``m`` exceeds the matrix path's sizes.  There
the design is held as its corner square instead (:mod:`countdp.structural.corners`): the square of
the square-corner template's proven design at a source size ``n_s`` (:func:`corner_source_size`, at
most :data:`MAX_CANONICAL`), whose tails are geometric and whose middle is GM, serving every size
beyond :data:`MAX_CANONICAL` (the matrix path designs and proves each size up to it).  Corners
and tails too long for any source size (:data:`SOURCE_MIN_BITS`: alpha above about 0.9905) have no
structure, and say so.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from countdp.evaluate.metrics import parse_objective
from countdp.structural.corners import StructuralCorners
from countdp.structural.corners_build import corner_mechanism
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_build import MAX_DENOMINATOR, canonical_size, size_range, spread_mechanism

TEMPLATE_MECHANISMS = {"WM": ("WH", "RM", "CM", "S")}
"""Mechanisms with a spread structure, and their property sets (under L0)."""

MAX_CANONICAL = 2048
"""Largest canonical size solved: the matrix path's largest default size."""

OPTIMALITY_BEYOND = (f"proven at each size up to {MAX_CANONICAL} that is designed as a matrix (the template's dual "
                     f"copied to that size); beyond {MAX_CANONICAL} not proven (the same corners and middle column "
                     "as the proven designs)")
"""What the record says of the spread's optimality away from its canonical size."""

CORNER_OPTIMALITY = (f"proven at the source size n_s; the sizes beyond {MAX_CANONICAL} it serves have the same corner "
                     "squares, geometric tails and GM middle as the proven designs, and are not proven")
"""What the record says of a corner form's optimality at the sizes it serves."""

SOURCE_MIN_BITS = 24
"""The least separation a source design may leave between its corners, ``alpha^(n_s - 2W - 2) <= 2^-24``:
the far corner's tails in its column sums then cost the floor a uniform share of about ``10^-6`` at
most (``1.8e-7`` at alpha = 0.99).  Closer to 1 (above about 0.9905) WM has no structure."""

SOURCE_TAIL_BITS = 40
"""The source size leaves ``alpha^(n_s - 2W) <= 2^-40`` between the corners (or is :data:`MAX_CANONICAL`):
the far corner's tails, which the source design's column sums include, then move no column of a
larger size by more than that share."""


class CanonicalDesign(NamedTuple):
    """A template design at its canonical size, as the design engine proved it."""

    matrix: np.ndarray
    """The proven design (floats, read-only)."""
    source: dict
    """Its record: the strategy, the template width, the size and gap it was proven at."""
    dual: np.ndarray
    """The template's restricted dual in units where the costs are 1 (read-only): its rows are local,
    so copied to any size it proves that size's spread (:func:`countdp.design.template.proof.prove_copied_dual`)."""


def engine_settings(settings=None):
    """``settings``, or the design engine's defaults when ``None`` (the structural forms' own callers pass none)."""
    if settings is not None:
        return settings
    # lazy: the design engine's settings load only when a template design is looked up
    from countdp.design.settings import DEFAULT_SETTINGS

    return DEFAULT_SETTINGS


@functools.lru_cache(maxsize=8)
def canonical_design(mechanism: str, alpha: Fraction, K: int, settings) -> CanonicalDesign:
    """The proven template design of ``mechanism`` at its canonical size, its record and its template dual,
    solved under the design engine's ``settings``."""
    # lazy: the design engine (HiGHS, Clarabel, scipy) loads only when a template design is built
    from countdp.design import planner, request

    # lazy: the same engine's template strategy
    from countdp.design.strategies import large_n_template

    objective = parse_objective("L0")
    m = canonical_size_for(alpha, K, settings=settings)
    if m > MAX_CANONICAL:
        raise ValueError(f"{mechanism} at alpha = {float(alpha):.6g} has no spread: its canonical size "
                         f"{m:,} is beyond {MAX_CANONICAL} (the corners and tails are too long)")
    asked = request.DesignRequest(m, float(alpha), TEMPLATE_MECHANISMS[mechanism], objective)
    P, info = large_n_template.large_n_design(asked, at_full_size=False, context=planner.make_context(settings))
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


def spread_sizes(n: int, alpha: Fraction, K: int = 62, mechanism: str = "WM", settings=None) -> tuple[int, int]:
    """The size range whose table serves ``n`` (a spread's, or beyond :data:`MAX_CANONICAL` a corner
    form's), known without solving the canonical design (for finding a stored table)."""
    m = canonical_size_for(alpha, K, settings=engine_settings(settings))
    return size_range(n, m if m <= MAX_CANONICAL else MAX_CANONICAL + 1)


def corner_width(alpha: Fraction, settings) -> int:
    """The square-corner template's width at ``alpha`` under the design engine's ``settings``
    (:func:`countdp.design.template.square_proof.square_width`)."""
    # lazy: the design engine's square-corner template loads only when a template design is looked up
    from countdp.design.template.square_proof import square_width

    return square_width(float(alpha), settings)


def corner_source_size(alpha: Fraction, settings) -> int:
    """``n_s``: the size whose proven design gives the corner square, ``2 W + 2 + SOURCE_TAIL_BITS ln 2 /
    ln(1/alpha)`` or :data:`MAX_CANONICAL`, whichever is smaller, and at least the template's ``4 (W + 1)``."""
    W = corner_width(alpha, settings)
    apart = int(np.ceil(SOURCE_TAIL_BITS * np.log(2) / np.log(1 / float(alpha))))
    return max(4 * (W + 1), min(MAX_CANONICAL, 2 * W + 2 + apart))


def structure_problem(alpha: Fraction, K: int = 62, settings=None) -> str | None:
    """Why WM has no structure at ``alpha`` (one line), or ``None``; cheap (no solve): a denominator
    too large for the integer closure, or corners too wide for any source size to keep
    ``alpha^(n_s - 2W - 2) <= 2^-SOURCE_MIN_BITS`` between them."""
    a = Fraction(alpha)
    if a.denominator > MAX_DENOMINATOR:
        return f"WM at alpha = {float(a):.6g} has no structure: the denominator of alpha passes {MAX_DENOMINATOR:,}"
    settings = engine_settings(settings)
    if canonical_size_for(a, K, settings=settings) <= MAX_CANONICAL:
        return None
    W = corner_width(a, settings)
    apart = int(np.ceil(SOURCE_MIN_BITS * np.log(2) / np.log(1 / float(a))))
    if 2 * W + 2 + apart > MAX_CANONICAL:
        return (f"WM at alpha = {float(a):.6g} has no structure: its corners ({W} wide) and their tails do not fit "
                f"twice in n = {MAX_CANONICAL}")
    return None


@functools.lru_cache(maxsize=8)
def corner_design(mechanism: str, alpha: Fraction, settings) -> CanonicalDesign:
    """The proven square-corner design of ``mechanism`` at :func:`corner_source_size` under the design
    engine's ``settings``: its corner square (read-only), its record, and no dual."""
    # lazy: the design engine (HiGHS, Clarabel, scipy) loads only when a template design is built
    from countdp.design import request

    # lazy: as above, its square-corner template
    from countdp.design.template.square_proof import prove_square

    W, n_s = corner_width(alpha, settings), corner_source_size(alpha, settings)
    problem = request.DesignRequest.of(n_s, float(alpha), TEMPLATE_MECHANISMS[mechanism], "L0").problem
    result = prove_square(problem, W, settings=settings)
    if not result.get("certified"):
        raise ValueError(f"{mechanism} at alpha = {float(alpha):.6g}: the square-corner design at n = {n_s} was not "
                         f"proven ({result.get('reason', 'the certificate did not close')})")
    square = np.array(result["matrix"][:W + 1, :W + 1], dtype=float)
    square.setflags(write=False)
    source = {"canonical_design": "square-corner template", "template_width": W, "optimal_proven_at_n": n_s,
              "optimality_gap": float(result.get("gap", float("nan"))), "optimality_beyond": CORNER_OPTIMALITY}
    return CanonicalDesign(square, source, np.zeros(0))


def canonical_size_for(alpha: Fraction, K: int = 62, *, settings) -> int:
    """The canonical size of WM's template design at ``alpha`` under the design engine's ``settings``
    (no solve): beyond :data:`MAX_CANONICAL` the design is held as its corner square instead (module docstring)."""
    # lazy: the design engine's policy loads only when a template design is looked up
    from countdp.design import policy

    widths = policy.template_widths(float(alpha), parse_objective("L0"), settings)
    return canonical_size(widths[0], Fraction(alpha), K) if widths else MAX_CANONICAL + 1


def stored_spread(record: dict, tables) -> StructuralSpread | StructuralCorners:
    """A spread or corner form from a cache's record and its named tables (``S``, ``delta``, or ``strip``,
    ``lower``, ``band``); the caller compares its description with the record."""
    lo, hi = (int(x) for x in record["sizes"])
    source = {key: record[key] for key in ("canonical_design", "template_width", "optimal_proven_at_n",
                                           "optimality_gap", "optimality_beyond") if key in record}
    alpha, K, sigma = Fraction(record["alpha_exact"]), int(record["K"]), int(record["sigma"])
    if record.get("structure") == "square corners":
        return StructuralCorners(record["mechanism"], lo, alpha, K, tables["strip"], tables["lower"], tables["band"],
                                 sigma, (lo, hi), source)
    return StructuralSpread(record["mechanism"], lo, alpha, K, int(record["reserve"]), tables["S"], tables["delta"],
                            sigma, (lo, hi), source)


def template_form(n: int, alpha: Fraction, K: int, mechanism: str = "WM",
                  settings=None) -> StructuralSpread | StructuralCorners:
    """``mechanism`` (WM) under L0 for groups of size ``n`` over ``2**K`` (62 only), certified: the spread
    where its canonical size is at most :data:`MAX_CANONICAL`, else the corner form (module docstring).

    Raises ``ValueError`` (one line) for another ``K``, an alpha whose design has no structure,
    or ``n`` below the sizes the structure serves.
    """
    if K != 62:
        raise ValueError(f"{mechanism}'s structure is over 2^62 only, not 2^{K}")
    a, settings = Fraction(alpha), engine_settings(settings)
    if canonical_size_for(a, K, settings=settings) <= MAX_CANONICAL:
        design = canonical_design(mechanism, a, K, settings)
        return spread_mechanism(mechanism, design.matrix, n, a, K, design.source)
    problem = structure_problem(a, K, settings)
    if problem is not None:
        raise ValueError(problem)
    if n <= MAX_CANONICAL:
        raise ValueError(f"{mechanism} at alpha = {float(a):.6g} is designed as a matrix up to n = {MAX_CANONICAL}; "
                         f"its structure serves larger groups, not {n}")
    design = corner_design(mechanism, a, settings)
    return corner_mechanism(mechanism, design.matrix, n, a, K, MAX_CANONICAL + 1, design.source)


__all__ = ["CORNER_OPTIMALITY", "MAX_CANONICAL", "OPTIMALITY_BEYOND", "SOURCE_MIN_BITS", "SOURCE_TAIL_BITS",
           "TEMPLATE_MECHANISMS",
           "CanonicalDesign", "canonical_design", "canonical_size_for", "corner_design", "corner_source_size",
           "corner_width", "spread_sizes", "stored_spread", "structure_problem", "template_form"]
