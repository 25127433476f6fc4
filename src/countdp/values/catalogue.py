"""The catalogue of named mechanisms: each name, and the property set of each LP design, defined once.

The closed forms (GM, EM, UM) are :mod:`countdp.mechanisms.closed_forms`; the LP designs with a
name solve BasicDP plus the property set given here, for every representation: the matrix
(:func:`countdp.design.designer.design_named`), the large-n template
(:mod:`countdp.design.forms`), the studies and the CLI.
"""

from __future__ import annotations

from countdp.values.properties import parse_properties

CLOSED_FORM_MECHANISMS = ("GM", "EM", "UM")
"""The paper's mechanisms with a closed form: geometric, explicit fair, uniform."""

NAMED_DESIGNS: dict[str, tuple[str, ...]] = {
    "WM": parse_properties(("RM", "CM", "WH", "S")),  # the paper's text: WH + RM + CM (S is free, Theorem 1)
    "WH": parse_properties(("WH", "S")),  # weak honesty alone: matches the paper's Figure 9 narrative
}
"""LP designs with a name: the property set each one solves for (in the canonical order)."""

MECHANISMS = (*CLOSED_FORM_MECHANISMS, *NAMED_DESIGNS, "LP")
"""Every name a design request accepts (``LP``: BasicDP plus the properties the caller gives)."""

CHAIN_MECHANISMS = ("GM", "EM", "WM", "WH")
"""Mechanisms a multi-level chain can release (where their pairs are derivable,
:mod:`countdp.multilevel.families`)."""
