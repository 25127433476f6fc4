"""WM under L0 for groups of any size: what a proven template design looks like when spread.

The design engine proves WM's template design once per alpha (:mod:`countdp.design.forms`) and
passes it here as a :class:`CanonicalDesign`: its integer form
(:func:`countdp.structural.spread_build.spread_mechanism`) serves every size from the canonical
size up, certified alpha-DP by its structure, or near alpha = 1 its corner square
(:func:`countdp.structural.corners_build.corner_mechanism`) serves the sizes beyond
:data:`~countdp.structural.form.NARROW_MAX_N`.  This module holds the records' wording, the
source sizes' bounds and the rebuilding of a stored table; it imports nothing of the engine.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np

from countdp.structural.corners import StructuralCorners
from countdp.structural.form import NARROW_MAX_N
from countdp.structural.spread import StructuralSpread
from countdp.values.catalogue import NAMED_DESIGNS

TEMPLATE_MECHANISMS = {"WM": NAMED_DESIGNS["WM"]}
"""Mechanisms with a spread structure, and their property sets (under L0)."""

OPTIMALITY_BEYOND = (f"proven at each size up to {NARROW_MAX_N} that is designed as a matrix (the template's dual "
                     f"copied to that size); beyond {NARROW_MAX_N} not proven (the same corners and middle column "
                     "as the proven designs)")
"""What the record says of the spread's optimality away from its canonical size."""

CORNER_OPTIMALITY = (f"proven at the source size n_s; the sizes beyond {NARROW_MAX_N} it serves have the same corner "
                     "squares, geometric tails and GM middle as the proven designs, and are not proven")
"""What the record says of a corner form's optimality at the sizes it serves."""

SOURCE_MIN_BITS = 24
"""The least separation a source design may leave between its corners, ``alpha^(n_s - 2W - 2) <= 2^-24``:
the far corner's tails in its column sums then cost the floor a uniform share of about ``10^-6`` at
most (``1.8e-7`` at alpha = 0.99).  Closer to 1 (above about 0.9905) WM has no structure."""

SOURCE_TAIL_BITS = 40
"""The source size leaves ``alpha^(n_s - 2W) <= 2^-40`` between the corners (or is :data:`NARROW_MAX_N`):
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


__all__ = ["CORNER_OPTIMALITY", "OPTIMALITY_BEYOND", "SOURCE_MIN_BITS", "SOURCE_TAIL_BITS", "TEMPLATE_MECHANISMS",
           "CanonicalDesign", "stored_spread"]
