"""What each mechanism family brings to a multi-level chain: its first level, its transitions, its references.

A chain releases level 0 from ``M(n, alpha_0)`` and level ``k+1`` through ``T_k`` with
``M(n, alpha_{k+1}) = T_k M(n, alpha_k)``, ``T_k >= 0`` column-stochastic (rows new output,
columns old output).  Such a ``T_k`` exists only where the study :mod:`countdp.studies.levels`
found the pair derivable; elsewhere the chain is refused with one line naming n and the pair.

* **GM**: the closed-form ``T`` (:func:`~countdp.multilevel.transitions.gm_transition_table`),
  ``>= 0`` for every pair (Gupte-Sundararajan Lemma 3).  Level 0 is rounded from the exact GM
  table by the chain itself, which aims its mixing weight.
* **EM**: the unique ``T = EM_beta EM_alpha^-1`` in Fractions
  (:func:`~countdp.multilevel.derivable.exact_transition`) up to ``ChainSettings.exact_em_n``;
  its columns sum to 1 automatically, and the pair is refused unless every entry is ``>= 0`` (it
  is for every pair tried at n <= 7, not for close pairs from n = 8 on).  Beyond, the Fractions
  grow too long (``O(n^3)`` operations on numbers of ``O(n)`` digits), and ``T`` is the float
  solve of :func:`~countdp.multilevel.derivable.derive` on exact EM rounded to floats (its
  tolerance set by that rounding, :data:`EM_FLOAT_ACCURACY`), decided and handled like an LP
  design's below.  Level 0 is EM's own release weights.
* **WM, WH**: the project's LP designs (floats, :func:`countdp.design.designer.design_named`).
  ``T`` comes from the two-sided LP :func:`~countdp.multilevel.derivable.derive`; the pair is
  refused unless it is derivable within the LP's tolerance.  The LP's ``T`` is made exactly
  column-stochastic (:func:`~countdp.multilevel.exact_forms.stochastic_table`), but
  ``T M_alpha`` equals ``M_beta`` only up to the LP's residual, so the chain's mixing also covers
  the float DP deficit of each unrounded level (``exact = False``).  Beyond
  ``DerivabilitySettings.lp_max_n`` the LP is out of reach and ``derive`` solves
  ``T = M_beta M_alpha^-1`` instead; that ``T`` is made exact on the grid ``2**-62``
  (:func:`~countdp.multilevel.exact_forms.grid_table`, no Fraction per entry).  Level 0 is the
  design's own release weights.

Whatever the family, privacy is decided by the chain's exact certificate on the sampled weights;
the plan only says what to round.  ``countdp.design`` is imported at module level: it does not
import :mod:`countdp.multilevel`, so there is no cycle (its LP stack stays lazy inside it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from countdp.design.designer import Design, design_named
from countdp.multilevel.derivable import DerivabilitySettings, derive, exact_transition
from countdp.multilevel.exact_forms import (
    ExactTable,
    GridTable,
    em_exact,
    em_table,
    fraction_table,
    gm_table,
    grid_table,
    stochastic_table,
)
from countdp.multilevel.transitions import gm_transition_table
from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.rounding import round_to_release
from countdp.values.alpha import alpha_text
from countdp.values.catalogue import CHAIN_MECHANISMS

EM_FLOAT_ACCURACY = 2.0**-53
"""How far EM's float matrix is from exact EM per entry (each exact value in [0, 1] rounded once): the
``input_accuracy`` of its solved pairs, so their verdict's tolerance is ``2 N^2 2**-53``, not an LP design's."""

EXACT_FAMILIES = ("GM", "EM")
"""Families whose transitions are exact: ``T_k M(n, alpha_k) = M(n, alpha_{k+1})`` in Fractions."""


@dataclass(frozen=True, eq=False)
class LevelPlan:
    """What a chain of one family is rounded from.

    ``transitions[k]``: ``T_k`` exactly (non-negative, columns summing to exactly 1; a table of
    distinct values, or a grid table for a solved ``T``);
    ``reference[k]``: ``M(n, alpha_k)`` as floats (for the deviation the certificate reports);
    ``released``: level 0's release weights, or None when the chain rounds level 0 itself (GM);
    ``exact``: whether ``T_k M_k = M_{k+1}`` holds exactly (else only within an LP's residual).
    """

    mechanism: str
    transitions: tuple[ExactTable | GridTable, ...]
    reference: tuple[np.ndarray, ...]
    released: IntegerMechanism | None
    exact: bool


def check_mechanism(mechanism: object) -> str:
    """The family's name in upper case, or a one-line ``ValueError`` naming the allowed ones."""
    name = str(mechanism).upper()
    if name not in CHAIN_MECHANISMS:
        raise ValueError(f"multi-level release supports mechanisms {', '.join(CHAIN_MECHANISMS)}, got {mechanism!r}")
    return name


def refusal(mechanism: str, n: int, alpha: Fraction, beta: Fraction, detail: str) -> str:
    """The one-line reason a pair of levels cannot be chained."""
    a, b = alpha_text(alpha), alpha_text(beta)
    return (f"{mechanism} at n = {n} cannot be released at levels {a} then {b}: {mechanism}({n}, {b}) is not a "
            f"post-processing of {mechanism}({n}, {a}) ({detail}; see docs/multilevel.md)")


def em_transition_table(n: int, alpha: Fraction, beta: Fraction) -> ExactTable:
    """The exact ``T`` with ``EM(n, beta) = T EM(n, alpha)``, or the one-line refusal if an entry is negative."""
    T = exact_transition(em_exact(n, alpha), em_exact(n, beta))
    if T is None:
        raise ValueError(refusal("EM", n, alpha, beta, f"EM({n}, {alpha_text(alpha)}) is singular"))
    negative = int((T < 0).sum())
    if negative:
        raise ValueError(refusal("EM", n, alpha, beta, f"the unique T = EM_beta EM_alpha^-1 has {negative} "
                                                       "negative entries"))
    return fraction_table(T)


def design_transition_table(mechanism: str, n: int, alpha: Fraction, beta: Fraction, source: np.ndarray,
                            target: np.ndarray, settings: DerivabilitySettings | None = None
                            ) -> ExactTable | GridTable:
    """The stochastic ``T`` with ``target ~ T source`` (the LP's, or the solve's beyond its size), made
    exact, or the one-line refusal."""
    d = derive(source, target, settings)
    if not d.derivable:
        how = "LP" if d.method == "lp" else f"solved T = {mechanism}_beta {mechanism}_alpha^-1"
        if d.certain:
            detail = f"{how}: every T leaves an L1 residual of at least {d.lower:.2g}, tolerance {d.tolerance:.2g}"
        else:
            detail = (f"{how}: the best L1 residual lies between {d.lower:.2g} and {d.upper:.2g}, above the "
                      f"tolerance {d.tolerance:.2g} as far as it can tell")
        raise ValueError(refusal(mechanism, n, alpha, beta, detail))
    return grid_table(d.T) if d.method == "solve" else stochastic_table(d.T)


def release_weights(design: Design, alpha: Fraction, K: int) -> IntegerMechanism:
    """The design's own release weights (re-rounded only if the chain asks for another ``K``)."""
    released = design.released
    return released if released.K == K else round_to_release(design.matrix, alpha, K)


def _pairs(levels: Sequence[Fraction]) -> list[tuple[Fraction, Fraction]]:
    return list(zip(levels, levels[1:], strict=False))


def level_plan(mechanism: str, n: int, levels: Sequence[Fraction], K: int,
               derivability: DerivabilitySettings | None = None, exact_em_n: int = 60) -> LevelPlan:
    """The transitions, references and first level of a chain of ``mechanism`` at ``levels`` (increasing).

    Pairs are refused (``ValueError``, one line) before any rounding: EM where its exact ``T`` has
    a negative entry (up to ``exact_em_n``; beyond, where the solve does not find it derivable),
    WM/WH where the LP (or the solve) does not find them derivable.
    """
    m = check_mechanism(mechanism)
    if m == "GM":
        return LevelPlan(m, tuple(gm_transition_table(n, a, b) for a, b in _pairs(levels)),
                         reference_matrices(m, n, levels), None, True)
    if m == "EM":
        reference = reference_matrices(m, n, levels)
        first = release_weights(design_named("EM", n, levels[0]), levels[0], K)
        if n <= exact_em_n:
            return LevelPlan(m, tuple(em_transition_table(n, a, b) for a, b in _pairs(levels)), reference, first, True)
        settings = derivability or DerivabilitySettings()
        exact_floats = replace(settings, input_accuracy=min(settings.input_accuracy, EM_FLOAT_ACCURACY))
        tables = tuple(design_transition_table(m, n, a, b, ra, rb, exact_floats)
                       for (a, b), ra, rb in zip(_pairs(levels), reference[:-1], reference[1:], strict=True))
        return LevelPlan(m, tables, reference, first, False)
    designs = [design_named(m, n, a) for a in levels]
    tables = tuple(design_transition_table(m, n, a, b, da.matrix, db.matrix, derivability)
                   for (a, b), da, db in zip(_pairs(levels), designs[:-1], designs[1:], strict=True))
    return LevelPlan(m, tables, tuple(d.matrix for d in designs), release_weights(designs[0], levels[0], K), False)


def reference_matrices(mechanism: str, n: int, levels: Sequence[Fraction]) -> tuple[np.ndarray, ...]:
    """``M(n, alpha_k)`` as floats for the exact families (each exact value rounded once); LP designs have none."""
    m = check_mechanism(mechanism)
    if m not in EXACT_FAMILIES:
        raise ValueError(f"a {m} chain needs its designs as references (build it with build_level_chain)")
    form = gm_table if m == "GM" else em_table
    return tuple(form(n, a).floats() for a in levels)


__all__ = ["CHAIN_MECHANISMS", "EM_FLOAT_ACCURACY", "EXACT_FAMILIES", "LevelPlan", "check_mechanism",
           "design_transition_table", "em_transition_table", "level_plan", "reference_matrices", "refusal",
           "release_weights"]
