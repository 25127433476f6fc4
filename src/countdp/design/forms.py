"""The structural forms by name, WM's template spread included: the engine proves the design it spreads.

:func:`structural_form` is the one entry point by name: GM, EM and UM build their tables from their closed
forms (:mod:`countdp.structural`); WM under L0 spreads the design proven here, which structural
construction receives as a parameter (:class:`countdp.structural.template.CanonicalDesign`).

WM

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
most :data:`NARROW_MAX_N`), whose tails are geometric and whose middle is GM, serving every size
beyond :data:`NARROW_MAX_N` (the matrix path designs and proves each size up to it).  Corners
and tails too long for any source size (:data:`SOURCE_MIN_BITS`: alpha above about 0.9905) have no
structure, and say so.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings
from countdp.privacy.exact import MIN_RELEASE_K
from countdp.structural.catalogue import (
    CLOSED_STRUCTURES,
    SPREADS,
    STRUCTURAL_MECHANISMS,
    GroupMechanism,
    certified_form,
)
from countdp.structural.chain import log_inverse
from countdp.structural.corners import StructuralCorners
from countdp.structural.corners_build import corner_mechanism
from countdp.structural.form import NARROW_MAX_N, StructuralMechanism
from countdp.structural.spread import StructuralSpread
from countdp.structural.spread_build import MAX_DENOMINATOR, canonical_size, size_range, spread_mechanism
from countdp.structural.template import (
    CORNER_OPTIMALITY,
    OPTIMALITY_BEYOND,
    SOURCE_MIN_BITS,
    SOURCE_TAIL_BITS,
    TEMPLATE_MECHANISMS,
    CanonicalDesign,
)
from countdp.values.alpha import exact_alpha
from countdp.values.objectives import parse_objective


def engine_settings(settings: SolverSettings | None = None) -> SolverSettings:
    """``settings``, or the design engine's defaults when ``None`` (the structural forms' own callers pass none)."""
    return DEFAULT_SETTINGS if settings is None else settings


@functools.lru_cache(maxsize=8)
def canonical_design(mechanism: str, alpha: Fraction, K: int, settings: SolverSettings) -> CanonicalDesign:
    """The proven template design of ``mechanism`` at its canonical size, its record and its template dual,
    solved under the design engine's ``settings``."""
    # lazy: the design engine (HiGHS, Clarabel, scipy) loads only when a template design is built
    from countdp.design import planner, request

    # lazy: the same engine's template strategy
    from countdp.design.strategies import large_n_template

    objective = parse_objective("L0")
    m = canonical_size_for(alpha, K, settings=settings)
    if m > NARROW_MAX_N:
        raise ValueError(f"{mechanism} at alpha = {float(alpha):.6g} has no spread: its canonical size "
                         f"{m:,} is beyond {NARROW_MAX_N} (the corners and tails are too long)")
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


def spread_sizes(n: int, alpha: Fraction, K: int = 62, mechanism: str = "WM",
                 settings: SolverSettings | None = None) -> tuple[int, int]:
    """The size range whose table serves ``n`` (a spread's, or beyond :data:`NARROW_MAX_N` a corner
    form's), known without solving the canonical design (for finding a stored table)."""
    m = canonical_size_for(alpha, K, settings=engine_settings(settings))
    return size_range(n, m if m <= NARROW_MAX_N else NARROW_MAX_N + 1)


def corner_width(alpha: Fraction, settings: SolverSettings) -> int:
    """The square-corner template's width at ``alpha`` under the design engine's ``settings``
    (:func:`countdp.design.template.square_proof.square_width`)."""
    # lazy: the design engine's square-corner template loads only when a template design is looked up
    from countdp.design.template.square_proof import square_width

    return square_width(float(alpha), settings)


def corner_source_size(alpha: Fraction, settings: SolverSettings) -> int:
    """``n_s``: the size whose proven design gives the corner square, ``2 W + 2 + SOURCE_TAIL_BITS ln 2 /
    ln(1/alpha)`` or :data:`NARROW_MAX_N`, whichever is smaller, and at least the template's ``4 (W + 1)``."""
    W = corner_width(alpha, settings)
    apart = int(np.ceil(SOURCE_TAIL_BITS * np.log(2) / log_inverse(alpha)))
    return max(4 * (W + 1), min(NARROW_MAX_N, 2 * W + 2 + apart))


def template_problem(alpha: Fraction, K: int = 62, settings: SolverSettings | None = None) -> str | None:
    """Why WM has no structure at ``alpha`` (one line), or ``None``; cheap (no solve): a denominator
    too large for the integer closure, or corners too wide for any source size to keep
    ``alpha^(n_s - 2W - 2) <= 2^-SOURCE_MIN_BITS`` between them."""
    a = Fraction(alpha)
    if a.denominator > MAX_DENOMINATOR:
        return f"WM at alpha = {float(a):.6g} has no structure: the denominator of alpha passes {MAX_DENOMINATOR:,}"
    settings = engine_settings(settings)
    if canonical_size_for(a, K, settings=settings) <= NARROW_MAX_N:
        return None
    W = corner_width(a, settings)
    apart = int(np.ceil(SOURCE_MIN_BITS * np.log(2) / log_inverse(a)))
    if 2 * W + 2 + apart > NARROW_MAX_N:
        return (f"WM at alpha = {float(a):.6g} has no structure: its corners ({W} wide) and their tails do not fit "
                f"twice in n = {NARROW_MAX_N}")
    return None


@functools.lru_cache(maxsize=8)
def corner_design(mechanism: str, alpha: Fraction, settings: SolverSettings) -> CanonicalDesign:
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


def canonical_size_for(alpha: Fraction, K: int = 62, *, settings: SolverSettings) -> int:
    """The canonical size of WM's template design at ``alpha`` under the design engine's ``settings``
    (no solve): beyond :data:`NARROW_MAX_N` the design is held as its corner square instead (module docstring)."""
    # lazy: the design engine's policy loads only when a template design is looked up
    from countdp.design import policy

    widths = policy.template_widths(float(alpha), parse_objective("L0"), settings)
    return canonical_size(widths[0], Fraction(alpha), K) if widths else NARROW_MAX_N + 1


def template_form(n: int, alpha: Fraction, K: int, mechanism: str = "WM",
                  settings: SolverSettings | None = None) -> StructuralSpread | StructuralCorners:
    """``mechanism`` (WM) under L0 for groups of size ``n`` over ``2**K`` (62 only), certified: the spread
    where its canonical size is at most :data:`NARROW_MAX_N`, else the corner form (module docstring).

    Raises ``ValueError`` (one line) for another ``K``, an alpha whose design has no structure,
    or ``n`` below the sizes the structure serves.
    """
    if K != 62:
        raise ValueError(f"{mechanism}'s structure is over 2^62 only, not 2^{K}")
    a, settings = exact_alpha(alpha), engine_settings(settings)
    if canonical_size_for(a, K, settings=settings) <= NARROW_MAX_N:
        design = canonical_design(mechanism, a, K, settings)
        return spread_mechanism(mechanism, design.matrix, n, a, K, design.source)
    problem = template_problem(a, K, settings)
    if problem is not None:
        raise ValueError(problem)
    if n <= NARROW_MAX_N:
        raise ValueError(f"{mechanism} at alpha = {float(a):.6g} is designed as a matrix up to n = {NARROW_MAX_N}; "
                         f"its structure serves larger groups, not {n}")
    design = corner_design(mechanism, a, settings)
    return corner_mechanism(mechanism, design.matrix, n, a, K, NARROW_MAX_N + 1, design.source)


FORMS = {name: CLOSED_STRUCTURES.get(name) or functools.partial(template_form, mechanism=name)
         for name in STRUCTURAL_MECHANISMS}
"""The mechanisms with a structural form: the closed forms, and WM under L0 (a template design spread)."""


def structural_form(mechanism: str, n: object, alpha: object, K: int | None = None,
                    settings: SolverSettings | None = None) -> StructuralMechanism:
    """``mechanism`` (GM, EM, UM or WM) for groups of size ``n``, certified alpha-DP by its structure
    (:func:`countdp.structural.catalogue.certified_form`: the default ``K`` and the one-line errors).
    ``settings``: the design engine's, for a template design's canonical solve (``None``: its defaults)."""
    name = str(mechanism).upper()
    if name not in FORMS:
        raise ValueError(f"{mechanism!r} has no structural form; structural forms: {', '.join(FORMS)}")
    build = functools.partial(FORMS[name], settings=settings) if name in SPREADS else FORMS[name]
    return certified_form(build, name, n, alpha, K)


def structure_problem(mechanism: str, alpha: object, settings: SolverSettings | None = None) -> str | None:
    """Why ``mechanism`` has no structural form at ``alpha`` (one line), or ``None``; cheap (no solve):
    a template design whose corners are too wide for any structure under the design engine's
    ``settings`` (:func:`template_problem`; ``None``: the engine's defaults)."""
    if mechanism not in FORMS:
        return f"{mechanism} has no structural form; structural forms: {', '.join(FORMS)}"
    if mechanism in SPREADS:  # a config's 0.9 is the workflow's 9/10 (countdp.values.alpha.exact_alphas_in)
        exact = alpha if isinstance(alpha, Fraction) else exact_alpha(str(alpha))
        return template_problem(exact, settings=settings)
    return None


def structural_design(mechanism: str, n: int, alpha: object, K: int | None = None) -> GroupMechanism:
    """:func:`structural_form` for a release (``K``, if given, at least the release's minimum)."""
    if K is not None and K < MIN_RELEASE_K:
        raise ValueError(f"a released mechanism needs K >= {MIN_RELEASE_K}, got {K}")
    form = structural_form(mechanism, n, alpha, K)
    return GroupMechanism(form.mechanism, form.n, "L0", form)


__all__ = ["FORMS", "canonical_design", "canonical_size_for", "corner_design", "corner_source_size", "corner_width",
           "spread_sizes", "structural_design", "structural_form", "structure_problem", "template_form",
           "template_problem"]
